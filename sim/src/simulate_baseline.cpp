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

}  // namespace

model::BaselineEntryKind simulate_baseline_kind(const model::ConfigCatalog& catalog) {
  return {"simulate", [&catalog](const nlohmann::json& written, const nlohmann::json& resolved, const std::string& where,
                                 bool measure) {
            const SimulateConfig config = simulate_config_from_json(resolved, where);
            const std::vector<std::string> names = simulate_config_from_json(written, where).layouts;
            model::BaselineRun run{simulate_label(config), written, nlohmann::ordered_json::object()};
            SimulationPlan plan = plan_simulation(config, catalog);
            if (!measure) return run;
            const Simulation simulation = run_simulation(std::move(plan));
            const auto rows = simulation_rows(simulation);
            for (size_t i = 0; i < rows.size(); ++i) {
              // Named after the layout as the entry writes it (a permutation's relative path).
              const std::string& layout = i < names.size() ? names[i] : rows[i].at("layout").get_ref<const std::string&>();
              for (const auto& [column, value] : rows[i].items()) {
                if (!value.is_number() || std::ranges::find(kConfigColumns, column) != kConfigColumns.end()) continue;
                const double number = value.get<double>();
                run.metrics[layout + "." + column] = column.ends_with("_us") ? to_nanosecond(number) : number;
              }
            }
            return run;
          }};
}

}  // namespace stripesim::sim
