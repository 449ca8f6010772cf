#include "stripesim/model/baseline.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "stripesim/model/analysis.hpp"
#include "stripesim/model/input_error.hpp"
#include "stripesim/model/json_fields.hpp"
#include "stripesim/model/tms.hpp"

namespace stripesim::model {
namespace {

TmsRequest tms_request_from_json(const nlohmann::json& doc, const std::string& label, const ConfigCatalog& catalog) {
  const JsonFields f(doc, label);
  f.allow_only({"model", "hardware", "devices", "model_parallel", "seq_len", "tile", "tiling", "convention"});
  TmsRequest q;
  q.model = catalog.model(f.string("model"));
  q.hardware = catalog.hardware(f.string("hardware"));
  q.devices = f.positive_count("devices");
  q.model_parallel = f.positive_count_or("model_parallel", 1);
  q.seq_len = f.positive_count("seq_len");
  if (f.has("tile")) q.tile = parse_tile_shape(f.string("tile"));
  if (f.has("tiling")) q.tiling = parse_tiling(f.string("tiling"), f.where("tiling"));
  q.convention = parse_flop_convention(f.string_or("convention", "paper"));
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

// `measure` false (checking inputs only): every check a run makes, nothing counted, no metrics.
nlohmann::ordered_json analyze_metrics(const AnalyzeConfig& config, bool measure) {
  if (!measure) {
    (void)plan_analysis(config);
    return nlohmann::ordered_json::object();
  }
  const Analysis analysis = run_analysis(config);
  nlohmann::ordered_json metrics;
  for (const auto& r : analysis.results) {
    for (const auto& [unit, m, vs] : {std::tuple{"elements", r.elements, r.elements_lockstep_speedup_vs_contiguous},
                                      std::tuple{"tiles", r.tiles, r.tiles_lockstep_speedup_vs_contiguous}}) {
      const std::string prefix = fmt::format("{}.{}.", r.layout, unit);
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

nlohmann::ordered_json tms_metrics(const TmsRequest& request, bool measure) {
  if (!measure) {
    check_tms_request(request);
    return nlohmann::ordered_json::object();
  }
  const TmsResult r = compute_tms(request);
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

nlohmann::ordered_json write_baseline(const nlohmann::json& experiment, const std::string& label,
                                      const ConfigCatalog& catalog, bool measure) {
  const JsonFields f(experiment, label);
  f.allow_only({"description", "analyze", "tms"});
  nlohmann::ordered_json entries = nlohmann::ordered_json::array();
  const auto& analyze = array_field(f, "analyze");
  for (size_t i = 0; i < analyze.size(); ++i) {
    const AnalyzeConfig config = analyze_config_from_json(analyze[i], {}, fmt::format("{} analyze[{}]", label, i));
    entries.push_back({{"command", "analyze"},
                       {"config", recorded_config(analyze[i], config.tiling)},
                       {"metrics", analyze_metrics(config, measure)}});
  }
  const auto& tms = array_field(f, "tms");
  for (size_t i = 0; i < tms.size(); ++i) {
    const TmsRequest request = tms_request_from_json(tms[i], fmt::format("{} tms[{}]", label, i), catalog);
    entries.push_back({{"command", "tms"},
                       {"config", recorded_config(tms[i], request.tiling)},
                       {"metrics", tms_metrics(request, measure)}});
  }
  if (entries.empty()) throw InputError(fmt::format("{}: lists no analyze or tms configuration", label));
  return {{"schema", kBaselineSchema}, {"description", f.string_or("description", "")}, {"entries", std::move(entries)}};
}

std::vector<MovedMetric> check_baseline(const nlohmann::json& baseline, const std::string& label,
                                        const ConfigCatalog& catalog, double tolerance, bool measure) {
  const JsonFields f(baseline, label);
  f.allow_only({"schema", "description", "entries"});
  if (f.string("schema") != kBaselineSchema) {
    throw InputError(fmt::format("{}: schema \"{}\" is not {}", label, f.string("schema"), kBaselineSchema));
  }
  const auto& entries = f.raw("entries");
  if (!entries.is_array() || entries.empty()) throw InputError(fmt::format("{}: expected a non-empty array", f.where("entries")));
  std::vector<MovedMetric> moved;
  for (size_t i = 0; i < entries.size(); ++i) {
    const std::string where = fmt::format("{} entries[{}]", label, i);
    const JsonFields e(entries[i], where);
    e.allow_only({"command", "config", "metrics"});
    const std::string command = e.string("command");
    nlohmann::ordered_json now;
    std::string configuration;
    if (command == "analyze") {
      const AnalyzeConfig config = analyze_config_from_json(e.raw("config"), {}, where + " config");
      configuration = analyze_label(config);
      now = analyze_metrics(config, measure);
    } else if (command == "tms") {
      const TmsRequest request = tms_request_from_json(e.raw("config"), where + " config", catalog);
      configuration = tms_label(request);
      now = tms_metrics(request, measure);
    } else {
      throw InputError(fmt::format("{}: command \"{}\" is not analyze or tms", e.where("command"), command));
    }
    const auto& recorded = e.raw("metrics");
    if (!recorded.is_object()) throw InputError(fmt::format("{}: expected an object of numbers", e.where("metrics")));
    for (const auto& [metric, value] : recorded.items()) {
      if (!value.is_number()) throw InputError(fmt::format("{}: metric \"{}\" is not a number", e.where("metrics"), metric));
      if (!measure) continue;
      const double base = value.get<double>();
      if (!now.contains(metric)) {
        moved.push_back({configuration, metric, base, std::numeric_limits<double>::quiet_NaN()});
        continue;
      }
      const double current = now.at(metric).get<double>();
      if (std::abs(current - base) > tolerance * std::abs(base)) moved.push_back({configuration, metric, base, current});
    }
  }
  return moved;
}

}  // namespace

nlohmann::ordered_json write_baseline(const nlohmann::json& experiment, const std::string& label,
                                      const ConfigCatalog& catalog) {
  return write_baseline(experiment, label, catalog, true);
}

void check_baseline_experiment(const nlohmann::json& experiment, const std::string& label, const ConfigCatalog& catalog) {
  (void)write_baseline(experiment, label, catalog, false);
}

std::size_t baseline_metric_count(const nlohmann::json& baseline) {
  std::size_t count = 0;
  for (const auto& entry : baseline.at("entries")) count += entry.at("metrics").size();
  return count;
}

std::vector<MovedMetric> check_baseline(const nlohmann::json& baseline, const std::string& label,
                                        const ConfigCatalog& catalog, double tolerance) {
  return check_baseline(baseline, label, catalog, tolerance, true);
}

void check_baseline_document(const nlohmann::json& baseline, const std::string& label, const ConfigCatalog& catalog) {
  (void)check_baseline(baseline, label, catalog, 0, false);
}

}  // namespace stripesim::model
