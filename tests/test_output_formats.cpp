// Every printer renders exactly the formats it offers: each format of its list (what the
// command's --format accepts) gives output, every other one is refused. A new format for a
// result is a case in its render and an entry in its list, and this test holds the two together.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <span>
#include <stdexcept>
#include <string>

#include "stripesim/model/flops/tms.hpp"
#include "stripesim/model/io/config_catalog.hpp"
#include "stripesim/model/workflows/analysis.hpp"
#include "stripesim/output/accuracy_printers.hpp"
#include "stripesim/output/analysis_printers.hpp"
#include "stripesim/output/number_text.hpp"
#include "stripesim/output/plan_printers.hpp"
#include "stripesim/output/rows.hpp"
#include "stripesim/output/simulation_printers.hpp"
#include "stripesim/output/step_fit_printers.hpp"
#include "stripesim/output/tms_printers.hpp"
#include "stripesim/output/validation_printers.hpp"
#include "stripesim/sim/plan.hpp"
#include "stripesim/sim/simulation.hpp"

namespace stripesim::output {
namespace {

const model::ConfigCatalog& catalog() {
  static const model::ConfigCatalog shipped(std::string(STRIPESIM_SOURCE_DIR) + "/configs");
  return shipped;
}

template <typename Render>
void expect_offers_exactly(const char* what, std::span<const OutputFormat> offered, Render render) {
  ASSERT_FALSE(offered.empty()) << what;
  for (const OutputFormat format : kOutputFormats) {
    const bool offers = std::ranges::find(offered, format) != offered.end();
    if (offers) {
      EXPECT_FALSE(render(format).empty()) << what << " " << format_name(format);
    } else {
      EXPECT_THROW((void)render(format), std::logic_error) << what << " " << format_name(format);
    }
  }
}

TEST(OutputFormats, EveryPrinterRendersWhatItOffersAndRefusesTheRest) {
  model::AnalyzeConfig analyze;
  analyze.seq_len = 1024;
  analyze.devices = 4;
  analyze.tile = {64, 64};
  const model::Analysis analysis = model::run_analysis(model::plan_analysis(analyze));
  expect_offers_exactly("analysis", kAnalysisFormats, [&](OutputFormat f) { return render(analysis, f, false); });

  model::TmsRequest tms;
  tms.model = catalog().model("1b");
  tms.hardware = catalog().hardware("h100");
  tms.devices = 4;
  tms.seq_len = 16384;
  const model::TmsResult tms_result = model::compute_tms(tms);
  expect_offers_exactly("tms", kTmsFormats, [&](OutputFormat f) { return render(tms_result, f); });

  sim::SimulateConfig simulate;
  simulate.hardware = "h100";
  simulate.seq_len = 16384;
  simulate.devices = 4;
  const sim::Simulation simulation = sim::run_simulation(simulate, catalog());
  expect_offers_exactly("simulation", kSimulationFormats, [&](OutputFormat f) { return render(simulation, f, false); });

  sim::PlanRequest plan_request;
  plan_request.base.model = "1b";
  plan_request.base.hardware = "h100";
  plan_request.base.seq_len = 16384;
  plan_request.gpus = 4;
  plan_request.threads = 2;
  const sim::Plan plan = sim::run_plan(sim::plan_search(plan_request, catalog()));
  expect_offers_exactly("plan", kPlanFormats, [&](OutputFormat f) { return render(plan, f); });

  SweepTable sweep;
  sweep.schema = "stripesim.sweep/1";
  sweep.rows.push_back({{"n_seq", 16384}, {"tms", 1.5}});
  expect_offers_exactly("sweep", kSweepFormats, [&](OutputFormat f) { return render(sweep, f); });

  // Results with nothing in them still render every format they offer.
  expect_offers_exactly("step fit", kStepFitFormats, [](OutputFormat f) { return render(sim::StepFit{}, f); });
  expect_offers_exactly("validation", kValidationFormats,
                        [](OutputFormat f) { return render(validate::ValidationReport{}, f); });
  expect_offers_exactly("kernel accuracy", kAccuracyFormats,
                        [](OutputFormat f) { return render(validate::KernelAccuracy{}, f); });
}

// A difference a hair below zero (a predicted speedup 1e-5 under the measured one) prints as
// zero, not as -0.0000; one that shows at the precision keeps its sign.
TEST(OutputFormats, ValuesThatRoundToZeroPrintWithoutASign) {
  EXPECT_EQ(cell_text(nlohmann::ordered_json(-1.0837e-05), true), "0.0000");
  EXPECT_EQ(cell_text(nlohmann::ordered_json(-0.0), true), "0.0000");
  EXPECT_EQ(cell_text(nlohmann::ordered_json(-0.00006), true), "-0.0001");
  EXPECT_EQ(cell_text(nlohmann::ordered_json(-1.0837e-05), false), "-1.0837e-05");  // CSV keeps the exact value
  EXPECT_EQ(fmt::format("{:+.1f}%", as_printed(-0.04, 1)), "+0.0%");
  EXPECT_EQ(fmt::format("{:+.1f}%", as_printed(-0.05, 1)), "-0.1%");
  EXPECT_EQ(fmt::format("{:+.3f}", as_printed(2e-4, 3)), "+0.000");
}

}  // namespace
}  // namespace stripesim::output
