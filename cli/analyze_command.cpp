#include "analyze_command.hpp"

#include <fmt/format.h>

#include <memory>

#include "file_flags.hpp"
#include "output_file.hpp"
#include "output_format.hpp"
#include "run_mode.hpp"
#include "threads_option.hpp"
#include "stripesim/model/io/input_error.hpp"
#include "stripesim/model/io/input_origins.hpp"
#include "stripesim/model/io/json_file.hpp"
#include "stripesim/model/io/size_parse.hpp"
#include "stripesim/model/io/spec_syntax.hpp"
#include "stripesim/model/work/layout_spec.hpp"
#include "stripesim/model/workflows/analysis.hpp"
#include "stripesim/model/workflows/experiment_files.hpp"
#include "stripesim/output/analysis_printers.hpp"

namespace stripesim::cli {
namespace {

struct AnalyzeOptions {
  std::string config_file;
  std::string experiment_file;
  std::string layouts;
  std::string devices;
  std::string seq_len;
  std::string tile;
  std::string tiling;
  std::string mask;
  std::string format = "table";
  std::string output;
  bool matrices = false;
  bool pad_documents = false;
  std::string threads = "0";  // parse_threads reads it
  FileFlags given;  // the options the file gives too: given here, they override it
};

constexpr const char* kAnalyzeExamples = R"(Examples:
  stripesim analyze
      the paper's setting: n = 256k, N = 8, tiles 2048x4096, contiguous vs striped vs zigzag
  stripesim analyze --seq-len 2048 --devices 8 --layouts contiguous,zigzag --tile 64x64
      the blog's table: contiguous 4.27x speedup (imbalance 1.87x), zigzag 8.00x (1.00x)
  stripesim analyze --seq-len 1M --devices 64 --tile 128x128 --format json --output work.json
  stripesim analyze --layouts striped,block-striped:16 --mask window:4k --matrices
  stripesim analyze --mask documents:64k,64k,128k --layouts contiguous,striped,zigzag,block-striped:1k
  stripesim analyze --seq-len 1M --devices 32 --tile 128x128 --mask documents:lognormal:4096:1.0:seed=7 \
                    --layouts contiguous,striped,zigzag,doc-zigzag,doc-striped,balanced --pad-documents
  stripesim analyze -n 16k -N 4 --tile 128x128 --mask documents:lognormal:1024:1.2:seed=17 --layouts contiguous,doc-zigzag \
                    --pad-documents --tiling varlen
      the tiles FlashAttention's varlen kernels compute (every document tiled on its own)
  stripesim analyze --seq-len 16 --devices 2 --tile 2x2 --layouts contiguous,permutation:configs/layouts/example-n16-N2.json
  stripesim analyze --experiment configs/analyze/default.json --format csv)";

// The configuration, and where the file's inputs came from (for errors about them).
std::pair<model::AnalyzeConfig, model::InputOrigins> resolve_config(const AnalyzeOptions& o) {
  model::AnalyzeConfig config;
  model::InputOrigins origins;
  // --experiment, as every other command calls its file of flags; --config is its older name.
  if (!o.config_file.empty() && !o.experiment_file.empty()) {
    throw model::InputError(fmt::format("--experiment {}, --config {}: the same file by two names; give one",
                                        o.experiment_file, o.config_file));
  }
  const bool experiment = !o.experiment_file.empty();
  const std::string& file = experiment ? o.experiment_file : o.config_file;
  if (!file.empty()) {
    const std::string label = (experiment ? "--experiment " : "--config ") + file;
    const nlohmann::json doc = model::with_files_beside(model::read_json_file(file, label), file);
    config = model::analyze_config_from_json(doc, config, label);
    origins = model::InputOrigins::of_file(doc, label, [&](model::Input input) { return o.given.overrides(input); });
  }
  if (o.given.given("--seq-len")) config.seq_len = model::parse_count(o.seq_len, "--seq-len");
  if (o.given.given("--devices")) config.devices = model::parse_count(o.devices, "--devices");
  if (o.given.given("--tile")) config.tile = model::parse_tile_shape(o.tile);
  if (o.given.given("--tiling")) config.tiling = model::parse_tiling(o.tiling);
  if (o.given.given("--mask")) config.mask = o.mask;
  if (o.given.given("--layouts")) config.layouts = model::split_distinct_list(o.layouts, "--layouts");
  if (o.pad_documents) config.pad_documents = true;
  return {config, origins};
}

// Every mask, documents:DISTRIBUTION spelt out distribution by distribution.
std::string mask_help() {
  std::string help;
  for (const model::SpecSyntax& each : model::kMaskSyntaxes) {
    if (each.syntax == "documents:DISTRIBUTION") {
      for (const model::SpecSyntax& distribution : model::kDistributionSyntaxes) {
        help += fmt::format(" | documents:{}", distribution.syntax);
      }
    } else {
      help += (help.empty() ? "" : " | ") + std::string(each.syntax);
    }
  }
  return help + " (a distribution may end in :seed=S; any documents spec in :window=W, a sliding window inside every "
                "document; a listed length may be V+P, V tokens then P padding tokens that attend to nothing) "
                "[default: causal]";
}

}  // namespace

std::function<void()> register_analyze_command(CLI::App& app, RunMode mode) {
  auto options = std::make_shared<AnalyzeOptions>();
  AnalyzeOptions& o = *options;
  CLI::App* cmd = app.add_subcommand("analyze", "Count the exact work per round and device for each layout");
  cmd->footer(kAnalyzeExamples);
  cmd->add_option("--experiment", o.experiment_file,
                  "JSON file with seq_len, devices, tile, tiling, layouts, mask, pad_documents (flags given here "
                  "override it), as simulate takes its");
  cmd->add_option("--config", o.config_file, "The same as --experiment (its older name)");
  o.given.track(cmd->add_option("--layouts", o.layouts,
                                "Comma-separated: " + model::joined_syntaxes(model::kLayoutSyntaxes, ", ") +
                                    " [default: contiguous,striped,zigzag]"));
  o.given.track(cmd->add_option("--devices,-N", o.devices, "Devices in the ring N, 1..2048 [default: 8]"));
  o.given.track(cmd->add_option("--seq-len,-n", o.seq_len, fmt::format("Sequence length n; {} [default: 256k]", model::kCountSuffixes)));
  o.given.track(cmd->add_option("--tile", o.tile, "Kernel tile TQxTK [default: 2048x4096, the paper's A100 tile]"));
  o.given.track(cmd->add_option("--tiling", o.tiling, std::string(model::kTilingHelp) + " [default: fixed]"));
  o.given.track(cmd->add_option("--mask", o.mask, mask_help()));
  add_format_option(cmd, o.format, output::kAnalysisFormats, "Output format");
  cmd->add_option("--output,-o", o.output, "Write to FILE instead of standard output");
  cmd->add_flag("--matrices", o.matrices,
                "Table: also print the per-round matrices; csv: one row per (layout, round, device) instead of one "
                "per layout");
  cmd->add_flag("--pad-documents", o.pad_documents,
                "Pad every document to a multiple of 2N (doc-zigzag, doc-striped need it); padding is waste");
  add_threads_option(cmd, o.threads, "Worker threads, 0 = one per core (results never depend on it)");
  return [cmd, options, mode] {
    if (!cmd->parsed()) return;
    const AnalyzeOptions& opts = *options;
    const unsigned threads = parse_threads(opts.threads);
    if (opts.matrices && output_format(opts.format) == OutputFormat::json) {
      throw model::InputError("--matrices: only with --format table or csv (the JSON always holds the matrices)");
    }
    const auto resolved = resolve_config(opts);  // {config, origins}
    const model::AnalysisPlan plan = resolved.second.run([&] {
      model::AnalysisPlan planned = model::plan_analysis(resolved.first);
      model::require_layouts_apart_at(planned.config.layouts, {planned.config.tile, planned.seq_len, planned.config.devices});
      return planned;
    });
    if (mode == RunMode::parse_only) return;
    const model::Analysis analysis = model::run_analysis(plan, threads);
    write_output(output::render(analysis, output_format(opts.format), opts.matrices), opts.output);
  };
}

}  // namespace stripesim::cli
