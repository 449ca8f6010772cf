#include "stripesim/model/workflows/baseline_rules.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <fnmatch.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "stripesim/model/io/input_error.hpp"
#include "stripesim/model/io/size_parse.hpp"

namespace stripesim::model {
namespace {

bool glob(const std::string& pattern, const std::string& name) { return fnmatch(pattern.c_str(), name.c_str(), 0) == 0; }

void check_pattern(std::string_view pattern, std::string_view text, std::string_view flag) {
  if (pattern.empty()) throw InputError(fmt::format("{} '{}': the metric pattern is empty", flag, text));
}

}  // namespace

bool metric_matches(std::string_view pattern, std::string_view metric) {
  const std::string name(metric);
  return glob(std::string(pattern), name) || glob("*." + std::string(pattern), name);
}

Better better_direction(std::string_view metric) {
  const std::string_view last = metric.substr(metric.rfind('.') + 1);  // npos + 1 == 0: the whole name
  if (last == "imbalance" || last == "spread" || last == "cv" || last == "idle_fraction" || last.ends_with("_us") ||
      last.ends_with("_bytes")) {
    return Better::lower;
  }
  if (last.find("speedup") != std::string_view::npos || last.starts_with("tms") || last == "mfu" ||
      last == "tokens_per_second") {
    return Better::higher;
  }
  return Better::neither;
}

std::string MetricLimit::to_string() const { return fmt::format("{}{}{:g}", pattern, at_most ? "<=" : ">=", value); }

void parse_tolerances(const std::vector<std::string>& items, CheckRules& rules, std::string_view flag) {
  bool default_given = false;
  for (const std::string& item : items) {
    const size_t eq = item.find('=');
    const std::string_view value_text = eq == std::string::npos ? std::string_view(item) : std::string_view(item).substr(eq + 1);
    const double value = parse_number(value_text, std::string(flag));  // names the value: "--tolerance 'abc'"
    if (value < 0) throw InputError(fmt::format("{} '{}': must be a non-negative number (relative difference)", flag, item));
    if (eq == std::string::npos) {
      if (default_given) throw InputError(fmt::format("{} '{}': a second tolerance for every metric (give one, and PATTERN=T for others)", flag, item));
      default_given = true;
      rules.tolerance = value;
      rules.tolerance_given = item;
    } else {
      check_pattern(std::string_view(item).substr(0, eq), item, flag);
      rules.tolerances.emplace_back(item.substr(0, eq), value);
    }
  }
}

MetricLimit parse_metric_limit(std::string_view text, std::string_view flag) {
  for (const auto& [op, at_most] : {std::pair{std::string_view("<="), true}, std::pair{std::string_view(">="), false}}) {
    const size_t at = text.find(op);
    if (at == std::string_view::npos) continue;
    check_pattern(text.substr(0, at), text, flag);
    return {std::string(text.substr(0, at)), at_most,
            parse_number(text.substr(at + op.size()), fmt::format("{} '{}' limit", flag, text))};
  }
  throw InputError(fmt::format("{} '{}': expected METRIC<=VALUE or METRIC>=VALUE (e.g. imbalance<=1.10)", flag, text));
}

const char* to_string(Outcome outcome) {
  switch (outcome) {
    case Outcome::within: return "within tolerance";
    case Outcome::improved: return "improved";
    case Outcome::moved: return "moved";
    case Outcome::missing: return "missing";
    case Outcome::within_limit: return "within limit";
    case Outcome::over_limit: return "over limit";
  }
  return "?";
}

bool selected(const CheckRules& rules, std::string_view metric) {
  if (rules.metrics.empty()) return true;
  for (const auto& pattern : rules.metrics) {
    if (metric_matches(pattern, metric)) return true;
  }
  return false;
}

bool limited(const CheckRules& rules, std::string_view metric) {
  return std::ranges::any_of(rules.limits, [&](const MetricLimit& limit) { return metric_matches(limit.pattern, metric); });
}

std::optional<size_t> deciding_tolerance(const CheckRules& rules, std::string_view metric) {
  if (limited(rules, metric)) return std::nullopt;
  for (size_t i = 0; i < rules.tolerances.size(); ++i) {
    if (metric_matches(rules.tolerances[i].first, metric)) return i;
  }
  return std::nullopt;
}

Outcome judge(const CheckRules& rules, std::string_view metric, double baseline, std::optional<double> now,
              std::string& rule) {
  // Every limit that matches applies (imbalance>=1,imbalance<=1.2 is a band): the first one
  // broken is the rule reported, else all of them.
  std::vector<std::string> matched;
  for (const MetricLimit& limit : rules.limits) {
    if (!metric_matches(limit.pattern, metric)) continue;
    matched.push_back(limit.to_string());
    if (now && !(limit.at_most ? *now <= limit.value : *now >= limit.value)) {
      rule = matched.back();
      return Outcome::over_limit;
    }
  }
  if (!matched.empty()) {
    rule = fmt::format("{}", fmt::join(matched, ","));
    return now ? Outcome::within_limit : Outcome::missing;
  }
  const std::optional<size_t> decided_by = deciding_tolerance(rules, metric);
  const double tolerance = decided_by ? rules.tolerances[*decided_by].second : rules.tolerance;
  rule = fmt::format("tolerance {:g}", tolerance);
  if (!now) return Outcome::missing;
  if (std::abs(*now - baseline) <= tolerance * std::abs(baseline)) return Outcome::within;
  const Better better = better_direction(metric);
  const bool improved = (better == Better::lower && *now < baseline) || (better == Better::higher && *now > baseline);
  return improved ? Outcome::improved : Outcome::moved;
}

}  // namespace stripesim::model
