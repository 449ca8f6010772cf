#include "tms_command.hpp"

#include <fmt/format.h>

#include <iterator>
#include <memory>

#include "config_dir.hpp"
#include "output_file.hpp"
#include "output_format.hpp"
#include "preset_help.hpp"
#include "run_mode.hpp"
#include "stripesim/model/flops/tms.hpp"
#include "stripesim/model/io/config_catalog.hpp"
#include "stripesim/model/io/input_error.hpp"
#include "stripesim/model/io/json_fields.hpp"
#include "stripesim/model/io/size_parse.hpp"
#include "stripesim/model/work/layout_spec.hpp"
#include "stripesim/model/work/work_model.hpp"
#include "stripesim/output/tms_printers.hpp"

namespace stripesim::cli {
namespace {

struct TmsOptions {
  std::string model = "1b";
  std::string hardware = "a100";
  std::string devices = "8";
  std::string model_parallel = "1";
  std::string seq_len = "256k";
  std::string tile;
  std::string tiling = "fixed";
  std::string convention = "paper";
  std::string pass = "fwdbwd";
  bool recompute = false;
  std::string attention_weight;
  std::string layouts;
  std::string mask = "causal";
  std::string format = "table";
  std::string output;
};

constexpr const char* kTmsExamples = R"(Examples:
  stripesim tms
      the paper's 1B model on 8 A100s at 256k tokens, 2048x4096 tiles
  stripesim tms --model 1b --hardware a100 --devices 8 --model-parallel 1 --seq-len 262144 --convention paper --format json
  stripesim tms --model llama3-8b --hardware h100 --devices 16 --seq-len 1M --convention exact
  stripesim tms --model 7b --hardware tpu-v4 --devices 8 --model-parallel 2 --seq-len 512k --layouts block-striped:64
  stripesim tms --model llama3-8b --hardware h100 --devices 16 --seq-len 1M --format csv --output tms.csv
      a row per layout (the request's fields, then the layout's TMS and metrics))";

double parse_weight(const std::string& text) {
  const double weight = model::parse_number(text, "--attention-weight");
  if (!(weight > 0)) throw model::InputError(fmt::format("--attention-weight '{}': must be a positive number", text));
  model::require_physical_range(weight, fmt::format("--attention-weight '{}'", text));
  return weight;
}

}  // namespace

std::function<void()> register_tms_command(CLI::App& app, RunMode mode) {
  auto options = std::make_shared<TmsOptions>();
  TmsOptions& o = *options;
  CLI::App* cmd = app.add_subcommand("tms", "Theoretical Maximum Speedup of striped and zigzag over contiguous");
  cmd->footer(kTmsExamples);
  cmd->add_option("--model", o.model, "Model: " + model_choices())
      ->capture_default_str();
  cmd->add_option("--hardware", o.hardware, "Hardware: " + hardware_choices())->capture_default_str();
  cmd->add_option("--devices,-N", o.devices, "Devices in the ring N (the sequence-parallel degree), 1..4096")->capture_default_str();
  cmd->add_option("--model-parallel,-M", o.model_parallel, "Model-parallel degree M (cancels in TMS)")->capture_default_str();
  cmd->add_option("--seq-len,-n", o.seq_len, fmt::format("Sequence length n; {}", model::kCountSuffixes))->capture_default_str();
  cmd->add_option("--tile", o.tile, "Kernel tile TQxTK for the tile-aware TMS [default: the hardware's]");
  cmd->add_option("--tiling", o.tiling, model::kTilingHelp)->capture_default_str();
  cmd->add_option("--convention", o.convention, "FLOP accounting")->check(CLI::IsMember({"paper", "exact"}))->capture_default_str();
  cmd->add_option("--pass", o.pass, "Training pass counted")->check(CLI::IsMember({"fwd", "fwdbwd"}))->capture_default_str();
  cmd->add_flag("--recompute", o.recompute, "Count activation recomputation (one more forward)");
  cmd->add_option("--attention-weight", o.attention_weight, "Override the hardware's attention FLOP weight");
  cmd->add_option("--layouts", o.layouts, "Extra layouts to compare (block-striped:S, permutation:FILE)");
  cmd->add_option("--mask", o.mask, "Attention mask (see analyze --help)")->capture_default_str();
  add_format_option(cmd, o.format, output::kTmsFormats, "Output format: csv is a row per layout");
  cmd->add_option("--output,-o", o.output, "Write to FILE instead of standard output");
  return [cmd, options, mode] {
    if (!cmd->parsed()) return;
    const TmsOptions& opts = *options;
    const model::ConfigCatalog catalog(config_dir());
    model::TmsRequest request;
    request.model = catalog.model(opts.model);
    request.hardware = catalog.hardware(opts.hardware);
    request.devices = model::parse_count(opts.devices, "--devices");
    request.model_parallel = model::parse_count(opts.model_parallel, "--model-parallel");
    request.seq_len = model::parse_count(opts.seq_len, "--seq-len");
    if (!opts.tile.empty()) request.tile = model::parse_tile_shape(opts.tile);
    request.tiling = model::parse_tiling(opts.tiling);
    request.convention = model::parse_flop_convention(opts.convention);
    request.pass = model::parse_training_pass(opts.pass);
    request.recompute = opts.recompute;
    if (!opts.attention_weight.empty()) request.attention_flop_weight = parse_weight(opts.attention_weight);
    if (!opts.layouts.empty()) request.extra_layouts = model::split_distinct_list(opts.layouts, "--layouts");
    request.mask = opts.mask;
    const model::TmsPlan plan = model::plan_tms(request);
    if (mode == RunMode::parse_only) return;
    const model::TmsResult result = model::run_tms(plan);
    write_output(output::render(result, output_format(opts.format)), opts.output);
  };
}

}  // namespace stripesim::cli
