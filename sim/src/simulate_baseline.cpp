#include "stripesim/sim/simulate_baseline.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <string_view>

#include "stripesim/sim/simulation.hpp"

namespace stripesim::sim {
namespace {

// Row columns that repeat the configuration: not results.
constexpr std::array<std::string_view, 4> kConfigColumns{"model_parallel", "devices", "data_parallel", "seq_len"};

// Times are kept to the nanosecond: below it a sum of floating-point times holds only rounding
// noise (an idle time of 4e-9 us that is zero), which would fail a relative tolerance from one
// compiler's arithmetic to another's.
double to_nanosecond(double us) { return std::round(us * 1e3) / 1e3; }

std::string simulate_label(const SimulateConfig& c) {
  return fmt::format("simulate {} {} n={} N={} {} cp={} mask={}", c.hardware, c.topology.empty() ? "nvswitch" : c.topology,
                     c.seq_len, c.devices, to_string(c.pass), c.cp, c.mask);
}

// The simulation run, its rows' numbers named "<layout>.<column>" after the layouts as the entry
// writes them (`names`: a permutation's relative path).
nlohmann::ordered_json simulate_metrics(const SimulationPlan& plan, const std::vector<std::string>& names) {
  nlohmann::ordered_json metrics = nlohmann::ordered_json::object();
  const auto rows = simulation_rows(run_simulation(plan));
  for (size_t i = 0; i < rows.size(); ++i) {
    const std::string& layout = i < names.size() ? names[i] : rows[i].at("layout").get_ref<const std::string&>();
    for (const auto& [column, value] : rows[i].items()) {
      if (!value.is_number() || std::ranges::find(kConfigColumns, column) != kConfigColumns.end()) continue;
      const double number = value.get<double>();
      metrics[layout + "." + column] = column.ends_with("_us") ? to_nanosecond(number) : number;
    }
  }
  return metrics;
}

}  // namespace

model::BaselineEntryKind simulate_baseline_kind(const model::ConfigCatalog& catalog) {
  return {"simulate", [&catalog](const nlohmann::json& written, const nlohmann::json& resolved, const std::string& where) {
            const SimulateConfig config = simulate_config_from_json(resolved, where);
            const model::InputOrigins origins = model::entry_origins(written, where);
            return model::PlannedBaselineEntry{
                model::label_with_other_fields(simulate_label(simulate_config_from_json(written, where)), written,
                                               {"hardware", "topology", "seq_len", "devices", "pass", "cp", "mask"}),
                written,
                [plan = origins.run([&] { return plan_simulation(config, catalog); }),
                 names = simulate_config_from_json(written, where).layouts, origins] {
                  return origins.run([&] { return simulate_metrics(plan, names); });
                }};
          }};
}

}  // namespace stripesim::sim
