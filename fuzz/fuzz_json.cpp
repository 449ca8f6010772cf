// libFuzzer target: every reader of a user-written JSON document (analyze configs, TMS and
// balance experiments, model and hardware profiles, topologies, simulate experiments, permutation
// blocks, kernel profiles, saved validate reports, kernel measurements and block costs), and for
// small analyze configs the whole analysis, for small measured workloads their calls counted and
// priced. The first byte picks the reader (mod 12: bytes 0-9 pick what they picked under mod 10).
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "stripesim/model/flops/hardware_profile.hpp"
#include "stripesim/model/flops/transformer_model.hpp"
#include "stripesim/model/io/input_error.hpp"
#include "stripesim/model/work/layout.hpp"
#include "stripesim/model/workflows/analysis.hpp"
#include "stripesim/model/workflows/balance_sweep.hpp"
#include "stripesim/model/workflows/sweep.hpp"
#include "stripesim/output/analysis_printers.hpp"
#include "stripesim/sim/kernel_time.hpp"
#include "stripesim/sim/simulation.hpp"
#include "stripesim/sim/topology.hpp"
#include "stripesim/validate/kernel_fit.hpp"
#include "stripesim/validate/kernel_measurements.hpp"
#include "stripesim/validate/saved_report.hpp"

using namespace stripesim;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const nlohmann::json doc = nlohmann::json::parse(data + 1, data + size, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return 0;
  try {
    switch (data[0] % 12) {
      case 0: {
        const model::AnalyzeConfig config = model::analyze_config_from_json(doc, {}, "fuzz");
        // Keep each run small: the fuzzer wants many inputs, not one huge analysis.
        if (config.seq_len <= 4096 && config.devices <= 16 && config.layouts.size() <= 4 && config.mask.find('/') == std::string::npos) {
          bool files = false;
          for (const auto& layout : config.layouts) files = files || layout.find('/') != std::string::npos;
          if (!files) (void)output::to_json(model::run_analysis(config, 1)).dump();
        }
        break;
      }
      case 1: (void)model::sweep_spec_from_json(doc, "fuzz"); break;
      case 2: (void)model::balance_spec_from_json(doc, "fuzz"); break;
      case 3: (void)model::transformer_model_from_json(doc, "fuzz"); break;
      case 4: (void)model::hardware_profile_from_json(doc, "fuzz"); break;
      case 5: {
        const sim::Topology topology = sim::Topology::from_json(doc, "fuzz");
        if (topology.gpu_count() >= 2) (void)topology.route(0, topology.gpu_count() - 1);
        break;
      }
      case 6: (void)sim::simulate_config_from_json(doc, "fuzz"); break;
      case 7: {
        if (!doc.is_array() || doc.size() > 8) break;
        std::vector<std::vector<model::Position>> blocks;
        for (const auto& block : doc) {
          if (!block.is_array() || block.size() > 64) return 0;
          auto& out = blocks.emplace_back();
          for (const auto& p : block) {
            if (!p.is_number_integer()) return 0;
            out.push_back(p.get<model::Position>());
          }
        }
        model::Count n = 0;
        for (const auto& b : blocks) n += static_cast<model::Count>(b.size());
        (void)model::Layout::permutation(blocks, n, "fuzz");
        break;
      }
      case 8: {
        // A kernel profile, then a small call priced at each of its tile shapes (the block slots
        // are SMs x its blocks per SM, bounded by the parser).
        const sim::KernelProfile kernel = sim::kernel_profile_from_json(doc, "fuzz");
        std::vector<model::TileShape> tiles{kernel.tile};
        for (const sim::TileVariant& v : kernel.other_tiles) tiles.push_back(v.tile);
        const model::QueryTileProfile rows{{0, 1}, {1, 1}, {3, 1}, {0, 0}};
        for (const model::TileShape tile : tiles) {
          const sim::KernelTimeModel model(kernel, 132, sim::KernelCallShape{2, 128, tile, 1.0});
          (void)model.call_us(rows, sim::KernelPass::forward);
          (void)model.call_us(rows, sim::KernelPass::backward, 255);
        }
        break;
      }
      case 9: {
        // A saved validate.json; small cases only (each is counted again by the work model).
        if (!doc.is_object() || !doc.contains("cases") || !doc["cases"].is_array() || doc["cases"].size() > 8) break;
        for (const auto& c : doc["cases"]) {
          if (!c.is_object() || !c.contains("seq_len") || !c["seq_len"].is_number_integer() || c["seq_len"].get<std::int64_t>() > 4096) {
            return 0;
          }
        }
        (void)validate::read_saved_report(doc, "fuzz");
        break;
      }
      case 10:
      case 11: {
        // A measurements file (10) or block costs (11, flex's columns), then, for small workloads,
        // every call counted under the file's layout, mask and tile and priced, as a fit does.
        const std::vector<validate::MeasuredWorkload> workloads =
            data[0] % 12 == 10 ? validate::measurements_from_json(doc, "fuzz", "fuzz")
                               : validate::block_costs_from_json(doc, "flex", "fuzz", "fuzz");
        for (const auto& w : workloads) {
          if (w.seq_len > 4096 || w.devices > 16 || w.mask.find('/') != std::string::npos ||
              w.layout.find('/') != std::string::npos) {
            return 0;
          }
        }
        model::HardwareProfile hardware;
        hardware.name = "fuzz";
        hardware.peak_tflops = {{"bf16", 989.4}, {"fp16", 989.4}, {"fp32", 67.0}};
        hardware.sms = 8;
        sim::KernelProfile kernel;
        kernel.tile = {128, 128};
        for (const validate::MeasuredCall& call : validate::measured_calls(workloads, hardware, kernel)) {
          (void)validate::predicted_us(call, kernel, hardware.sms);
        }
        break;
      }
    }
  } catch (const model::InputError&) {
  }
  return 0;
}
