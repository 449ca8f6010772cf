#pragma once
// How `check` judges one recorded number against today's: which metrics it looks at, the
// relative tolerance each gets, absolute limits that replace the tolerance, and which way each
// metric gets better (a move the good way is an improvement, reported but not a failure).
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace stripesim::model {

// A metric pattern matches a metric's whole name ("zigzag.tiles.imbalance") or its trailing
// dot-separated part ("imbalance", "tiles.imbalance"); '*' and '?' are wildcards (fnmatch).
[[nodiscard]] bool metric_matches(std::string_view pattern, std::string_view metric);

// Which way a metric gets better, from the last part of its name: imbalance, spread, cv,
// idle_fraction, times (*_us) and bytes (*_bytes) lower; speedups, TMS, MFU and tokens per
// second higher. Anything else has no better way: every move beyond the tolerance fails.
enum class Better { lower, higher, neither };
[[nodiscard]] Better better_direction(std::string_view metric);

// An absolute limit: "imbalance<=1.10", "zigzag.*.speedup>=7.5".
struct MetricLimit {
  std::string pattern;
  bool at_most = true;  // <= (else >=)
  double value = 0;
  [[nodiscard]] std::string to_string() const;  // "imbalance<=1.1"
};

struct CheckRules {
  double tolerance = 1e-6;  // relative, for metrics no pattern below names
  std::string tolerance_given;  // the "T" item --tolerance gave for every metric, if any (it must decide one)
  std::vector<std::pair<std::string, double>> tolerances;  // pattern=T; the first match wins
  std::vector<MetricLimit> limits;  // a metric a limit names is judged by it, not by a tolerance
  std::vector<std::string> metrics;  // only the metrics these patterns match (empty: all)
};

// Parses --tolerance items: "T" (every metric) or "PATTERN=T" (relative, non-negative), into
// `rules`; `flag` names the input in messages.
void parse_tolerances(const std::vector<std::string>& items, CheckRules& rules, std::string_view flag);
// Parses "PATTERN<=V" or "PATTERN>=V".
[[nodiscard]] MetricLimit parse_metric_limit(std::string_view text, std::string_view flag);

enum class Outcome { within, improved, moved, missing, within_limit, over_limit };
[[nodiscard]] const char* to_string(Outcome outcome);
[[nodiscard]] inline bool failed(Outcome o) { return o == Outcome::moved || o == Outcome::missing || o == Outcome::over_limit; }

// Whether `rules` select the metric at all.
[[nodiscard]] bool selected(const CheckRules& rules, std::string_view metric);
// Whether a limit judges the metric (then no tolerance does).
[[nodiscard]] bool limited(const CheckRules& rules, std::string_view metric);
// The tolerance pattern that decides the metric's tolerance (the first that matches), if no
// limit judges it; none for the default tolerance.
[[nodiscard]] std::optional<size_t> deciding_tolerance(const CheckRules& rules, std::string_view metric);
// The judgement of one selected metric; `now` empty when today's run no longer has it. `rule`
// receives what it was judged by ("tolerance 1e-06", "imbalance<=1.1").
[[nodiscard]] Outcome judge(const CheckRules& rules, std::string_view metric, double baseline, std::optional<double> now,
                            std::string& rule);

}  // namespace stripesim::model
