#include "layout_command.hpp"

#include <fmt/format.h>

#include <memory>
#include <optional>
#include <string>

#include "file_flags.hpp"
#include "output_file.hpp"
#include "run_mode.hpp"
#include "stripesim/model/io/input_error.hpp"
#include "stripesim/model/io/size_parse.hpp"
#include "stripesim/model/work/layout_spec.hpp"
#include "stripesim/model/workflows/analysis.hpp"
#include "stripesim/model/workflows/layout_export.hpp"

namespace stripesim::cli {
namespace {

struct LayoutOptions {
  std::string layout;
  std::string devices;
  std::string seq_len;
  std::string tile;
  std::string tiling;
  std::string mask;
  std::string format = "json";
  std::string output;
  bool pad_documents = false;
  FileFlags given;  // the options given; analyze's defaults for the others
};

constexpr const char* kLayoutExamples = R"(Examples:
  stripesim layout --layout zigzag -n 32k -N 8 -o zigzag.json
      device d's original positions, blocks[d], for a data loader; the JSON is a permutation file
  stripesim analyze -n 32k -N 8 --tile 128x128 --layouts permutation:zigzag.json
      counts exactly what --layouts zigzag counts
  stripesim layout --layout balanced -n 128k -N 16 --tile 128x128 --mask documents:lognormal:1024:1.2:seed=17 \
                   --pad-documents --format npy -o balanced.npy
      np.load("balanced.npy")[d] is rank d's positions (shape N x n/N, int64)
  stripesim layout --layout doc-zigzag -n 1000 -N 4 --mask documents:300,700 --pad-documents --format csv
      one row per token: device,local_index,position

Give the flags the layout was analysed with: balanced and ptrr depend on --tile, balanced on --tiling,
and doc-zigzag, doc-striped, balanced and ptrr on --mask and --pad-documents.)";

std::string format_help() {
  std::string help = "Output format:";
  for (const model::LayoutFormatInfo& info : model::kLayoutFormats) {
    help += fmt::format(" {}: {}{};", info.name, info.help, info.binary ? " (needs --output)" : "");
  }
  help.back() = ' ';
  return help + "[default: json]";
}

model::AnalyzeConfig resolve_config(const LayoutOptions& o) {
  // analyze's defaults for what is not given, so the same flags build the same layout.
  model::AnalyzeConfig config;
  config.seq_len = model::parse_count(o.seq_len, "--seq-len");
  config.devices = model::parse_count(o.devices, "--devices");
  if (o.given.given("--tile")) config.tile = model::parse_tile_shape(o.tile);
  if (o.given.given("--tiling")) config.tiling = model::parse_tiling(o.tiling);
  if (o.given.given("--mask")) config.mask = o.mask;
  config.layouts = model::split_distinct_list(o.layout, "--layout");
  config.pad_documents = o.pad_documents;
  // balanced and ptrr are cut for a kernel tile. analyze's default (2048x4096, the paper's) is not
  // the tile of the flash kernels simulate and plan price (128x128): a layout exported at one and
  // trained at the other can come out contiguous. The file is for a training run: say which.
  for (const std::string& spec : config.layouts) {
    const std::optional<model::LayoutKind> kind = model::layout_kind_of(spec);
    const bool sized = spec.find(':') != std::string::npos;
    if (!o.given.given("--tile") && (kind == model::LayoutKind::balanced || (kind == model::LayoutKind::ptrr && !sized))) {
      throw model::InputError(fmt::format("--layout '{}': it is cut for a kernel tile, give --tile (the tile of the kernel "
                                          "you train with, as simulate prints it: 128x128 for the shipped H100 profiles)",
                                          spec));
    }
  }
  return config;
}

}  // namespace

std::function<void()> register_layout_command(CLI::App& app, RunMode mode) {
  auto options = std::make_shared<LayoutOptions>();
  LayoutOptions& o = *options;
  CLI::App* cmd = app.add_subcommand(
      "layout", "Write one layout for training code: each device's original positions (its permutation and position ids)");
  cmd->footer(kLayoutExamples);
  cmd->add_option("--layout", o.layout,
                  "One layout, as analyze --layouts takes them: contiguous, striped, zigzag, block-striped:S, "
                  "permutation:FILE, doc-zigzag, doc-striped, ptrr[:BLOCK], balanced[:CHUNK]")
      ->required();
  cmd->add_option("--seq-len,-n", o.seq_len, fmt::format("Sequence length n; {}", model::kCountSuffixes))->required();
  cmd->add_option("--devices,-N", o.devices, fmt::format("Devices in the ring N, 1..{}", model::kMaxDevices))->required();
  o.given.track(cmd->add_option("--tile", o.tile,
                                "Kernel tile TQxTK balanced and ptrr price work in: required for balanced and ptrr without :BLOCK (ptrr:BLOCK "
                                "takes analyze's 2048x4096 without it; the other layouts do not depend on the tile)"));
  o.given.track(cmd->add_option("--tiling", o.tiling, std::string(model::kTilingHelp) + " [default: fixed]"));
  o.given.track(cmd->add_option("--mask", o.mask, "Attention mask (see analyze --help) [default: causal]"));
  cmd->add_flag("--pad-documents", o.pad_documents,
                "Pad every document to a multiple of 2N (doc-zigzag, doc-striped need it); the file covers the padded "
                "sequence, each document's padding after its own tokens");
  cmd->add_option("--format", o.format, format_help());
  cmd->add_option("--output,-o", o.output, "Write to FILE (whole or not at all) instead of standard output");
  return [cmd, options, mode] {
    if (!cmd->parsed()) return;
    const LayoutOptions& opts = *options;
    const model::LayoutFormat format = model::parse_layout_format(opts.format);
    const model::LayoutFormatInfo& info = model::layout_format_info(format);
    if (info.binary && reaches_a_reader(opts.output)) {
      throw model::InputError(fmt::format("--format {}: binary output, give --output FILE (it is not written to standard output "
                                          "or error, nor to a terminal)",
                                          info.name));
    }
    const model::LayoutExport exported = model::plan_layout_export(resolve_config(opts));
    if (mode == RunMode::parse_only) return;
    write_output(model::write_layout(exported, format), opts.output);
  };
}

}  // namespace stripesim::cli
