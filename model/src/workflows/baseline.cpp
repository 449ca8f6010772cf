#include "stripesim/model/workflows/baseline.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>
#include <limits>
#include <optional>
#include <utility>

#include "stripesim/model/flops/tms.hpp"
#include "stripesim/model/io/input_error.hpp"
#include "stripesim/model/io/json_fields.hpp"
#include "stripesim/model/workflows/experiment_files.hpp"
#include "stripesim/model/workflows/analysis.hpp"

namespace stripesim::model {
namespace {

TmsRequest tms_request_from_json(const nlohmann::json& doc, const std::string& label, const ConfigCatalog& catalog) {
  const JsonFields f(doc, label);
  f.allow_only({"model", "hardware", "devices", "model_parallel", "seq_len", "tile", "tiling", "convention"});
  TmsRequest q;
  // Named at their fields, as a simulate entry's are (the flags are not the command's).
  for (const char* field : {"model", "hardware"}) (void)f.non_empty_string(field);
  q.model = f.parsed("model", [&](const std::string& name) { return catalog.model(name); });
  q.hardware = f.parsed("hardware", [&](const std::string& name) { return catalog.hardware(name); });
  q.devices = f.positive_count("devices");
  q.model_parallel = f.positive_count_or("model_parallel", 1);
  q.seq_len = f.positive_count("seq_len");
  if (f.has("tile")) q.tile = f.parsed("tile", parse_tile_shape);
  if (f.has("tiling")) q.tiling = parse_tiling(f.string("tiling"), f.where("tiling"));
  if (f.has("convention")) q.convention = f.parsed("convention", parse_flop_convention);
  return q;
}

// Labels name the tiling when it is not the default (fixed).
std::string tiling_label(Tiling tiling) {
  return tiling == Tiling::fixed ? "" : fmt::format(" tiling={}", tiling_name(tiling));
}

std::string analyze_label(const AnalyzeConfig& c) {
  return fmt::format("analyze n={} N={} tile={}{} mask={}", c.seq_len, c.devices, c.tile.to_string(),
                     tiling_label(c.tiling), c.mask);
}

std::string tms_label(const TmsRequest& q) {
  return fmt::format("tms {} {} N={} M={} n={}{} {}", q.model.name, q.hardware.name, q.devices, q.model_parallel,
                     q.seq_len, tiling_label(q.tiling), to_string(q.convention));
}

// The configuration as the experiment gives it, with the tiling its numbers were counted under
// (a baseline without one was counted under fixed tiling).
nlohmann::json recorded_config(nlohmann::json config, Tiling tiling) {
  config["tiling"] = tiling_name(tiling);
  return config;
}

// The analysis counted, its metrics named after the layouts as the entry writes them (`written`,
// a permutation's relative path included), not as they were resolved.
nlohmann::ordered_json analyze_metrics(const AnalysisPlan& plan, const std::vector<std::string>& written) {
  const Analysis analysis = run_analysis(plan);
  nlohmann::ordered_json metrics;
  for (size_t i = 0; i < analysis.results.size(); ++i) {
    const LayoutResult& r = analysis.results[i];
    for (const auto& [unit, m, vs] : {std::tuple{"elements", r.elements, r.elements_lockstep_speedup_vs_contiguous},
                                      std::tuple{"tiles", r.tiles, r.tiles_lockstep_speedup_vs_contiguous}}) {
      const std::string prefix = fmt::format("{}.{}.", written[i], unit);
      metrics[prefix + "imbalance"] = m.imbalance;
      metrics[prefix + "spread"] = m.spread;
      metrics[prefix + "speedup"] = m.speedup;
      metrics[prefix + "lockstep_speedup"] = m.lockstep_speedup;
      metrics[prefix + "idle_fraction"] = m.idle_fraction;
      metrics[prefix + "lockstep_speedup_vs_contiguous"] = vs;
    }
  }
  return metrics;
}

nlohmann::ordered_json tms_metrics(const TmsPlan& plan) {
  const TmsResult r = run_tms(plan);
  return {{"tms", r.layout("striped").tms},
          {"tms_tiles", r.layout("striped").tms_tiles},
          {"tms_zigzag", r.layout("zigzag").tms},
          {"tms_tiles_zigzag", r.layout("zigzag").tms_tiles}};
}

const nlohmann::json& array_field(const JsonFields& f, const std::string& key) {
  static const nlohmann::json empty = nlohmann::json::array();
  if (!f.has(key)) return empty;
  const auto& value = f.raw(key);
  if (!value.is_array()) throw InputError(fmt::format("{}: expected an array", f.where(key)));
  return value;
}

const BaselineEntryKind& kind_of(const std::vector<BaselineEntryKind>& kinds, const std::string& command,
                                 const std::string& where) {
  for (const auto& kind : kinds) {
    if (kind.command == command) return kind;
  }
  std::string known;
  for (const auto& kind : kinds) known += (known.empty() ? "" : ", ") + kind.command;
  throw InputError(fmt::format("{}: command \"{}\" is not one of {}", where, command, known));
}

// The first of the first `i` (command, config) pairs that is pair i again: check refuses a
// baseline holding one entry twice (its metrics would be checked twice), and so the writer does
// not write one.
std::optional<size_t> earlier_same_entry(const std::vector<std::pair<nlohmann::json, nlohmann::json>>& entries, size_t i) {
  const auto end = entries.begin() + static_cast<std::ptrdiff_t>(i);
  const auto same = std::find(entries.begin(), end, entries[i]);
  return same == end ? std::nullopt : std::optional<size_t>(static_cast<size_t>(same - entries.begin()));
}

}  // namespace

BaselineWritePlan plan_write_baseline(const nlohmann::json& experiment, const std::string& label,
                                      const std::vector<BaselineEntryKind>& kinds, const std::string& experiment_dir,
                                      const std::string& baseline_dir) {
  const JsonFields f(experiment, label);
  std::vector<std::string_view> known{"description"};
  for (const auto& kind : kinds) known.push_back(kind.command);
  f.allow_only(known);
  BaselineWritePlan plan;
  std::vector<std::pair<nlohmann::json, nlohmann::json>> written;  // (command, config) as the baseline records them
  std::string commands;
  for (const auto& kind : kinds) {
    commands += (commands.empty() ? "" : " or ") + kind.command;
    const auto& configs = array_field(f, kind.command);
    const size_t first = plan.entries.size();  // the kind's configs[0]
    for (size_t i = 0; i < configs.size(); ++i) {
      const std::string where = fmt::format("{} {}[{}]", label, kind.command, i);
      // Recorded as the baseline's folder reads it, which is where check reads it from.
      const nlohmann::json recorded = with_files_moved(configs[i], experiment_dir, baseline_dir);
      plan.entries.push_back({kind.command, kind.plan(recorded, with_files_from(recorded, baseline_dir), where)});
      written.emplace_back(kind.command, plan.entries.back().planned.recorded_config);
      if (const std::optional<size_t> j = earlier_same_entry(written, written.size() - 1)) {
        throw InputError(fmt::format("{}: the config of {}[{}] again (its metrics would be recorded and checked twice)", where,
                                     kind.command, *j - first));
      }
    }
  }
  if (plan.entries.empty()) throw InputError(fmt::format("{}: lists no {} configuration", label, commands));
  plan.description = f.string_or("description", "");
  return plan;
}

nlohmann::ordered_json write_baseline(const BaselineWritePlan& plan) {
  nlohmann::ordered_json entries = nlohmann::ordered_json::array();
  for (const auto& [command, planned] : plan.entries) {
    entries.push_back({{"command", command}, {"config", planned.recorded_config}, {"metrics", planned.measure()}});
  }
  return {{"schema", kBaselineSchema}, {"description", plan.description}, {"entries", std::move(entries)}};
}

namespace {

// Every pattern of `rules` must have work to do, or it would be silently unused: a --metrics
// pattern names a metric of the baseline, a --limit one that is checked, and a --tolerance
// pattern decides the tolerance of a checked metric (one no limit judges and no earlier
// tolerance pattern takes: "the first match wins").
void check_patterns_match(const CheckRules& rules, const std::vector<std::string>& names) {
  const auto matches_any = [](const std::string& pattern, const std::vector<std::string>& among) {
    return std::ranges::any_of(among, [&](const std::string& name) { return metric_matches(pattern, name); });
  };
  const auto no_metric = [](std::string_view flag, std::string_view item) {
    return InputError(fmt::format("{} '{}': matches no metric of the baseline (metric names look like "
                                  "zigzag.tiles.imbalance; a pattern matches the whole name or its last parts, * is a wildcard)",
                                  flag, item));
  };
  for (const auto& pattern : rules.metrics) {
    if (!matches_any(pattern, names)) throw no_metric("--metrics", pattern);
  }
  // A pattern whose every metric another pattern selects too adds nothing: listed, it reads as
  // a wider check than the one run (tiles.imbalance beside imbalance).
  for (size_t i = 0; i < rules.metrics.size(); ++i) {
    const auto selected_by_another = [&](const std::string& name) {
      for (size_t j = 0; j < rules.metrics.size(); ++j) {
        if (j != i && metric_matches(rules.metrics[j], name)) return true;
      }
      return false;
    };
    if (std::ranges::all_of(names, [&](const std::string& name) {
          return !metric_matches(rules.metrics[i], name) || selected_by_another(name);
        })) {
      throw InputError(fmt::format("--metrics '{}': selects no metric the other patterns do not select too; drop it",
                                   rules.metrics[i]));
    }
  }
  std::vector<std::string> checked;
  std::ranges::copy_if(names, std::back_inserter(checked), [&](const std::string& name) { return selected(rules, name); });
  // One bound a direction for a pattern: a second would leave the looser deciding nothing, and a
  // lower bound above the upper one is a range no value meets (every metric it names would fail).
  for (size_t i = 0; i < rules.limits.size(); ++i) {
    const MetricLimit& limit = rules.limits[i];
    for (size_t j = 0; j < i; ++j) {
      const MetricLimit& earlier = rules.limits[j];
      if (earlier.pattern != limit.pattern) continue;
      if (earlier.at_most == limit.at_most) {
        throw InputError(fmt::format("--limit '{}': '{}' already bounds {} from {}; give one", limit.to_string(),
                                     earlier.to_string(), limit.pattern, limit.at_most ? "above" : "below"));
      }
      const double upper = limit.at_most ? limit.value : earlier.value;
      const double lower = limit.at_most ? earlier.value : limit.value;
      if (lower > upper) {
        throw InputError(fmt::format("--limit '{}': contradicts '{}' (no value is at least {:g} and at most {:g})",
                                     limit.to_string(), earlier.to_string(), lower, upper));
      }
    }
  }
  for (const auto& limit : rules.limits) {
    if (matches_any(limit.pattern, checked)) continue;
    if (!matches_any(limit.pattern, names)) throw no_metric("--limit", limit.pattern);
    throw InputError(fmt::format("--limit '{}': matches no metric --metrics selects", limit.to_string()));
  }
  std::vector<bool> decides(rules.tolerances.size(), false);
  for (const auto& name : checked) {
    if (const std::optional<size_t> i = deciding_tolerance(rules, name)) decides[*i] = true;
  }
  // A tolerance for every metric judges those no limit and no pattern's tolerance takes: given
  // where none is left, it would change nothing (a tightened check that passes as before).
  if (!rules.tolerance_given.empty() &&
      std::ranges::all_of(checked, [&](const std::string& name) { return limited(rules, name) || deciding_tolerance(rules, name); })) {
    throw InputError(fmt::format("--tolerance '{}': decides no metric's tolerance (each checked metric is judged by a --limit or "
                                 "takes a PATTERN=T tolerance)",
                                 rules.tolerance_given));
  }
  for (size_t i = 0; i < rules.tolerances.size(); ++i) {
    const auto& [pattern, value] = rules.tolerances[i];
    const std::string item = fmt::format("{}={:g}", pattern, value);
    if (decides[i]) continue;
    if (!matches_any(pattern, names)) throw no_metric("--tolerance", pattern);
    throw InputError(fmt::format("--tolerance '{}': decides no metric's tolerance (each metric it matches is left out by "
                                 "--metrics, judged by a --limit, or takes an earlier --tolerance pattern's)",
                                 item));
  }
}

}  // namespace

BaselineComparePlan plan_compare_with_baseline(const nlohmann::json& baseline, const std::string& label,
                                               const std::vector<BaselineEntryKind>& kinds, const CheckRules& rules,
                                               const std::string& base_dir) {
  const JsonFields f(baseline, label);
  f.allow_only({"schema", "description", "entries"});
  f.require_schema(kBaselineSchema);
  const auto& entries = f.non_empty_array("entries");
  // The file's own errors first (the metric names the patterns must match included), then each
  // configuration's.
  std::vector<std::string> names;
  std::vector<std::pair<nlohmann::json, nlohmann::json>> recorded_entries;  // (command, config)
  for (size_t i = 0; i < entries.size(); ++i) {
    const JsonFields e(entries[i], fmt::format("{} entries[{}]", label, i));
    e.allow_only({"command", "config", "metrics"});
    (void)kind_of(kinds, e.string("command"), e.where("command"));
    recorded_entries.emplace_back(e.raw("command"), e.raw("config"));
    if (const std::optional<size_t> j = earlier_same_entry(recorded_entries, i)) {
      throw InputError(fmt::format("{}: the command and config of entries[{}] again (its metrics would be checked twice)", e.label(), *j));
    }
    const auto& recorded = e.raw("metrics");
    if (!recorded.is_object()) throw InputError(fmt::format("{}: expected an object of numbers", e.where("metrics")));
    // An entry with nothing recorded would pass every check without checking anything.
    if (recorded.empty()) throw InputError(fmt::format("{}: records no metric", e.where("metrics")));
    for (const auto& [metric, value] : recorded.items()) {
      if (!value.is_number()) throw InputError(fmt::format("{}: metric \"{}\" is not a number", e.where("metrics"), metric));
      // Every metric is a count, a time, a size or a ratio: none is negative, none reaches 1e18.
      constexpr double kMostMetric = 1e18;
      if (const double v = value.get<double>(); !(v >= 0 && v <= kMostMetric)) {
        throw InputError(fmt::format("{}: metric \"{}\" = {:g} is outside [0, {:g}], where every count, time, size and ratio "
                                     "checked lies", e.where("metrics"), metric, v, kMostMetric));
      }
      names.push_back(metric);
    }
  }
  check_patterns_match(rules, names);
  BaselineComparePlan plan;
  plan.rules = rules;
  for (size_t i = 0; i < entries.size(); ++i) {
    const std::string where = fmt::format("{} entries[{}]", label, i);
    const JsonFields e(entries[i], where);
    const auto& config = e.raw("config");
    plan.entries.push_back({kind_of(kinds, e.string("command"), where).plan(config, with_files_from(config, base_dir),
                                                                            where + " config"),
                            e.raw("metrics")});
  }
  // Entries the labels still do not tell apart (two layout lists, one length spelled 4k and 4096)
  // say which they are: a label names one table group and one JUnit suite.
  std::map<std::string, int> uses;
  for (const auto& entry : plan.entries) ++uses[entry.planned.configuration];
  for (size_t i = 0; i < plan.entries.size(); ++i) {
    std::string& configuration = plan.entries[i].planned.configuration;
    if (uses.at(configuration) > 1) configuration += fmt::format(" (entries[{}])", i);
  }
  return plan;
}

std::vector<CheckedMetric> compare_with_baseline(const BaselineComparePlan& plan) {
  std::vector<CheckedMetric> checked;
  for (const auto& [planned, recorded] : plan.entries) {
    const nlohmann::ordered_json now = planned.measure();
    for (const auto& [metric, value] : recorded.items()) {
      if (!selected(plan.rules, metric)) continue;
      CheckedMetric m;
      m.configuration = planned.configuration;
      m.metric = metric;
      m.baseline = value.get<double>();
      if (now.contains(metric)) m.now = now.at(metric).get<double>();
      m.outcome = judge(plan.rules, metric, m.baseline, m.now, m.rule);
      checked.push_back(std::move(m));
    }
  }
  return checked;
}

std::vector<BaselineEntryKind> model_baseline_kinds(const ConfigCatalog& catalog) {
  BaselineEntryKind analyze{"analyze", [](const nlohmann::json& written, const nlohmann::json& resolved,
                                          const std::string& where) {
                              const AnalyzeConfig config = analyze_config_from_json(resolved, {}, where);
                              const AnalyzeConfig as_written = analyze_config_from_json(written, {}, where);
                              const InputOrigins origins = entry_origins(written, where);
                              return PlannedBaselineEntry{
                                  label_with_other_fields(analyze_label(as_written), written, {"seq_len", "devices", "tile", "tiling", "mask"}),
                                  recorded_config(written, config.tiling),
                                  [plan = origins.run([&] { return plan_analysis(config); }), names = as_written.layouts, origins] {
                                    return origins.run([&] { return analyze_metrics(plan, names); });
                                  }};
                            }};
  BaselineEntryKind tms{"tms", [&catalog](const nlohmann::json& written, const nlohmann::json& resolved,
                                          const std::string& where) {
                          const TmsRequest request = tms_request_from_json(resolved, where, catalog);
                          const InputOrigins origins = entry_origins(written, where);
                          return PlannedBaselineEntry{label_with_other_fields(tms_label(request), written,
                                                                              {"model", "hardware", "devices", "model_parallel", "seq_len",
                                                                               "tiling", "convention"}),
                                                      recorded_config(written, request.tiling),
                                                      [plan = origins.run([&] { return plan_tms(request); }), origins] {
                                                        return origins.run([&] { return tms_metrics(plan); });
                                                      }};
                        }};
  return {std::move(analyze), std::move(tms)};
}

std::string label_with_other_fields(std::string label, const nlohmann::json& written, std::initializer_list<std::string_view> shown) {
  if (!written.is_object()) return label;
  for (const auto& [key, value] : written.items()) {
    if (key == "layouts" || key == "description" || std::ranges::find(shown, key) != shown.end()) continue;
    label += fmt::format(" {}={}", key, value.is_string() ? value.get<std::string>() : value.dump());
  }
  return label;
}

InputOrigins entry_origins(const nlohmann::json& written, const std::string& where) {
  return InputOrigins::of_file(written, where, [](Input) { return false; });
}

std::size_t baseline_metric_count(const nlohmann::json& baseline) {
  std::size_t count = 0;
  for (const auto& entry : baseline.at("entries")) count += entry.at("metrics").size();
  return count;
}

}  // namespace stripesim::model
