#include "plan_command.hpp"

#include <fmt/format.h>

#include <memory>

#include "config_dir.hpp"
#include "output_file.hpp"
#include "output_format.hpp"
#include "preset_help.hpp"
#include "run_mode.hpp"
#include "stripesim/model/io/input_error.hpp"
#include "stripesim/model/io/size_parse.hpp"
#include "stripesim/model/work/layout_spec.hpp"
#include "stripesim/output/plan_printers.hpp"
#include "stripesim/sim/plan.hpp"
#include "stripesim/sim/step_model.hpp"
#include "stripesim/sim/topology.hpp"

namespace stripesim::cli {
namespace {

struct PlanOptions {
  std::string model, hardware = "h100", topology, seq_len = "1M", gpus, batch, mask, layouts, kernel, merges, algorithms,
              memory_gib, top = "10", zero;
  bool pad_documents = false;
  bool pad_seq = false;
  bool recompute = false;
  std::string format = "table";
  std::string output;
};

constexpr const char* kPlanExamples = R"(Examples:
  stripesim plan --model llama3-8b --hardware h100 --topology cluster:4x8 --gpus 32 --seq-len 1M --recompute --zero 1
      every mesh M x N x D of 32 GPUs, ring / allgather / ulysses / hybrid, every layout: the ten fastest
      (without --recompute and --zero 1, 1M tokens fit no mesh in 80 GiB: the table says what to change)
  stripesim plan --model llama3-70b --topology cluster:16x8 --gpus 128 -n 512k --memory-gib 80 --recompute --zero 1 --format csv
  stripesim plan --model llama3-8b --topology dgx-h100-x2 --gpus 16 -n 256k --algorithms ring,ulysses --recompute \
      --mask documents:lognormal:8192:1.0:seed=1 --layouts contiguous,zigzag,balanced
  stripesim plan --model llama3-70b --hardware b200 --topology nvswitch:72 -n 1M --pad-seq --recompute --zero 1
      a 72-GPU NVLink rack: each mesh pads 1M tokens to a multiple of 2N, so rings of 3, 6 and 9 are searched too)";

}  // namespace

std::function<void()> register_plan_command(CLI::App& app, RunMode mode) {
  auto options = std::make_shared<PlanOptions>();
  PlanOptions& o = *options;
  CLI::App* cmd = app.add_subcommand("plan", "Rank context parallelism x layout x mesh by predicted training throughput");
  cmd->footer(kPlanExamples);
  cmd->add_option("--model", o.model, "Model config (required: the step's matmuls and memory): " + model_choices())->required();
  cmd->add_option("--hardware", o.hardware, "Hardware profile: " + hardware_choices())->capture_default_str();
  cmd->add_option("--topology", o.topology,
                  fmt::format("{} (see simulate --help) [default: nvswitch:GPUS]", sim::kTopologySpecs));
  cmd->add_option("--gpus,-G", o.gpus,
                  "GPUs to use: every M x N x D = GPUS is considered [default: every GPU of --topology; without one, 8]");
  cmd->add_option("--seq-len,-n", o.seq_len, fmt::format("Sequence length n; {}", model::kCountSuffixes))->capture_default_str();
  cmd->add_option("--batch", o.batch, "Sequences per model replica per step [default: 1]");
  cmd->add_option("--mask", o.mask, "Attention mask (see analyze) [default: causal]");
  cmd->add_option("--layouts", o.layouts, "Layouts to consider (see analyze) [default: contiguous,striped,zigzag]");
  cmd->add_option("--kernel", o.kernel, "Kernel profile: a name in configs/kernels/<hardware>/ or a JSON file [default: the hardware's]");
  cmd->add_option("--merges", o.merges, sim::kMergesHelp);
  cmd->add_option("--algorithms", o.algorithms, "Comma-separated among ring, allgather, ulysses, hybrid (every UxR) "
                  "[default: all]");
  cmd->add_option("--memory-gib", o.memory_gib, "Memory per GPU [default: the hardware's]");
  cmd->add_option("--top", o.top, "Choices shown (and ranked exactly) in the table")->capture_default_str();
  cmd->add_flag("--pad-documents", o.pad_documents, "Pad every document to a multiple of 2N (doc-zigzag, doc-striped)");
  cmd->add_flag("--pad-seq", o.pad_seq, "Pad the sequence at its end to a multiple of 2N for each context-parallel degree N "
                "(any mask but documents): degrees the length does not divide are planned too, the padding computed but "
                "not counted as useful work");
  cmd->add_flag("--recompute", o.recompute, "The backward recomputes the forward (activation checkpointing)");
  cmd->add_option("--zero", o.zero, fmt::format("ZeRO stage, {}", sim::kZeroStagesHelp));
  add_format_option(cmd, o.format, output::kPlanFormats, "csv and json list every simulated choice, the rank given for the top (--top) alone: beyond it a "
                    "choice bounded out of the search could fall between");
  cmd->add_option("--output,-o", o.output, "Write to FILE instead of standard output");
  return [cmd, options, mode] {
    if (!cmd->parsed()) return;
    const PlanOptions& opts = *options;
    sim::PlanRequest request;
    sim::SimulateConfig& base = request.base;
    base.model = opts.model;
    base.hardware = opts.hardware;
    base.topology = opts.topology;
    base.seq_len = model::parse_count(opts.seq_len, "--seq-len");
    if (!opts.gpus.empty()) request.gpus = model::parse_count(opts.gpus, "--gpus");
    request.gpus_from_topology = opts.gpus.empty() && !opts.topology.empty();
    request.top = model::parse_count(opts.top, "--top");
    if (!opts.batch.empty()) base.batch = model::parse_count(opts.batch, "--batch");
    if (!opts.mask.empty()) base.mask = opts.mask;
    if (!opts.layouts.empty()) base.layouts = model::split_distinct_list(opts.layouts, "--layouts");
    request.layouts_given = !opts.layouts.empty();
    if (!opts.kernel.empty()) base.kernel = opts.kernel;
    if (!opts.merges.empty()) base.merges = opts.merges;  // checked where each candidate's simulation applies it
    if (!opts.algorithms.empty()) request.algorithms = model::split_distinct_list(opts.algorithms, "--algorithms");
    if (!opts.memory_gib.empty()) request.memory_gib = model::parse_number(opts.memory_gib, "--memory-gib");
    base.pad_documents = opts.pad_documents;
    base.pad_seq = opts.pad_seq;
    base.recompute = opts.recompute;
    if (!opts.zero.empty()) base.zero = sim::parse_zero_stage(opts.zero);
    const model::ConfigCatalog catalog(config_dir());
    const sim::PlanSearch search = sim::plan_search(request, catalog);
    if (mode == RunMode::parse_only) return;
    write_output(output::render(sim::run_plan(search), output_format(opts.format)), opts.output);
  };
}

}  // namespace stripesim::cli
