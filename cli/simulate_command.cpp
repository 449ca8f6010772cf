#include "simulate_command.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <memory>

#include "config_dir.hpp"
#include "file_flags.hpp"
#include "output_file.hpp"
#include "output_format.hpp"
#include "preset_help.hpp"
#include "run_mode.hpp"
#include "stripesim/model/flops/precision.hpp"
#include "stripesim/model/io/input_error.hpp"
#include "stripesim/model/io/input_origins.hpp"
#include "stripesim/model/io/json_file.hpp"
#include "stripesim/model/io/size_parse.hpp"
#include "stripesim/model/work/layout_spec.hpp"
#include "stripesim/model/work/work_model.hpp"
#include "stripesim/model/workflows/experiment_files.hpp"
#include "stripesim/output/simulation_printers.hpp"
#include "stripesim/sim/kernel_time.hpp"
#include "stripesim/sim/simulation.hpp"
#include "stripesim/sim/step_model.hpp"

namespace stripesim::cli {
namespace {

struct SimulateOptions {
  std::string experiment;
  std::string model;
  std::string heads, kv_heads, head_dim, batch, model_parallel, data_parallel, seq_len, devices, scope, zero;
  std::string layouts, tile, tiling, kernel, mask, pass, dtype, hardware, topology, sync, kv_buffers, ring_order, cp, merges;
  std::string format = "table";
  std::string output;
  std::string trace;
  bool summary_only = false;
  bool rounds = false;
  bool pad_documents = false;
  bool pad_seq = false;
  bool recompute = false;
  bool skip_unread_hops = false;
  FileFlags given;  // the options the experiment file gives too: given here, they override it
};

constexpr const char* kSimulateExamples = R"(Examples:
  stripesim simulate
      the paper's 1B-like workload (16 heads of 128) on 8 A100s on NVSwitch, n = 256k, forward
  stripesim simulate --model llama3-8b --hardware h100 --topology dgx-h100-x2 --devices 16 --seq-len 1M --pass fwdbwd
  stripesim simulate --topology cluster:128x8 --devices 1024 --seq-len 8M --hardware h100 --format json -o ring-1024.json
      a ring of 1024 GPUs; its per-(round, device) records only with --rounds (above 64 devices)
  stripesim simulate --topology pcie-8gpu --ring-order auto --sync lockstep --trace ring.json
  stripesim simulate --hardware h100 --kernel flex -n 32k -N 4 --heads 16 --sync lockstep --topology ideal
      the compute-only ring time sum_r max_d t[r][d] of flex_attention, to set beside one GPU's measurement
  stripesim simulate --model llama3-8b --hardware h100 --topology dgx-h100-x2 -M 2 -N 8 -n 512k --scope step
      a whole training step (every layer, the LM head, forward and backward) on a 2 x 8 mesh of two nodes
  stripesim simulate --model llama3-8b --hardware h100 --topology cluster:4x8 -N 32 -n 1M --pass fwdbwd --cp hybrid:8x4
      Ulysses inside each node, a ring across the four nodes (set beside --cp ring, allgather, ulysses)
  stripesim simulate --experiment configs/experiments/simulate-dgx-h100-x2.json)";

}  // namespace

std::function<void()> register_simulate_command(CLI::App& app, RunMode mode) {
  auto options = std::make_shared<SimulateOptions>();
  SimulateOptions& o = *options;
  CLI::App* cmd = app.add_subcommand("simulate", "Discrete-event simulation of the ring on a topology");
  cmd->footer(kSimulateExamples);
  auto add = [&](const char* name, std::string& target, const char* help) {
    o.given.track(cmd->add_option(name, target, help));
  };
  cmd->add_option("--experiment", o.experiment, "JSON file with the same fields (flags given here override it)");
  add("--model", o.model,
      ("Model config (sets heads, K/V heads and head size): " + model_choices() + " [default: --heads etc.]").c_str());
  add("--heads", o.heads, "Query heads [default: 16]");
  add("--kv-heads", o.kv_heads, "K/V heads [default: --heads]");
  add("--head-dim", o.head_dim, "Head size [default: 128]");
  add("--batch", o.batch, "Sequences per model replica per step [default: 1]");
  add("--model-parallel,-M", o.model_parallel, "Model-parallel degree: heads per device = heads / M [default: 1]");
  add("--data-parallel,-D", o.data_parallel, "Data-parallel replicas of the M x N mesh [default: 1]");
  add("--scope", o.scope, "What the time covers: attention (one layer's ring), layer (projections, MLP, ring, "
      "collectives) or step (every layer and the LM head, forward and backward) [default: attention]");
  add("--zero", o.zero, fmt::format("Scope layer or step, ZeRO stage: {}", sim::kZeroStagesHelp).c_str());
  add("--seq-len,-n", o.seq_len, fmt::format("Sequence length n; {} [default: 256k]", model::kCountSuffixes).c_str());
  add("--devices,-N", o.devices, "Devices in the ring N, 1..4096 [default: 8]");
  add("--layouts", o.layouts, "Comma-separated layouts (see analyze) [default: contiguous,striped,zigzag]");
  add("--tile", o.tile, "Kernel tile TQxTK [default: the kernel's]");
  const std::string tiling_help = std::string(model::kTilingHelp) +
                                  " Set by the kernel profile (fa2 and fa3: varlen, as on a100, a800 and h200 by default; the others fixed); given, it "
                                  "must be the kernel's [default: the kernel's]";
  add("--tiling", o.tiling, tiling_help.c_str());
  add("--kernel", o.kernel, "Kernel profile: a name in configs/kernels/<hardware>/ or a JSON file [default: the hardware's]");
  add("--mask", o.mask, "Attention mask (see analyze) [default: causal]");
  add("--merges", o.merges, sim::kMergesHelp);
  add("--pass", o.pass, "fwd, bwd or fwdbwd [default: fwd; --scope step: fwdbwd]");
  add("--dtype", o.dtype, (model::whole_byte_precisions_text() + ": transfer size and peak rate [default: the kernel profile's precision]").c_str());
  add("--hardware", o.hardware, ("Hardware profile: " + hardware_choices() + " [default: a100]").c_str());
  add("--topology", o.topology,
      "nvswitch:G, cluster:NxG[:nic=RATE][:nics=K] (N nodes of G GPUs; NIC line rate, e.g. 200gbps, and NICs per "
      "node [default: 400gbps, one per GPU]), hostfile:FILE (an Open MPI hostfile: its nodes and slots), ideal (free links and "
      "the calls alone, no merge between them: what one GPU measures timing each call), a name in configs/topologies or a "
      "JSON file [default: nvswitch:N, or nvswitch:M*N*D for a mesh of -M or -D above 1]");
  add("--sync", o.sync, "async (no barrier), lockstep (a barrier after every round) or serial (one processor runs every device in "
      "turn, hand-offs included: the CPU validator) [default: async]");
  add("--kv-buffers", o.kv_buffers, "K/V buffers per device, 2 up to the ring's devices (one a block) [default: 2, double buffering]");
  add("--ring-order", o.ring_order, "rank or auto (minimise the slowest hop, shared links queued) [default: rank]");
  add("--cp", o.cp, "Context parallelism: ring (K/V passed around the ring), allgather[:G] (K/V all-gathered, in G head "
      "groups whose gathers overlap the previous group's attention), ulysses (all-to-all from sequence to heads) or "
      "hybrid:UxR (Ulysses over U consecutive GPUs, a node's as USP places them, times a ring over R) [default: ring]");
  add_format_option(cmd, o.format, output::kSimulationFormats, "Output format: csv is a row per layout");
  cmd->add_option("--output,-o", o.output, "Write to FILE instead of standard output");
  cmd->add_option("--trace", o.trace, "Also write a Chrome trace (Perfetto) to FILE");
  cmd->add_flag("--pad-documents", o.pad_documents,
                "Pad every document of a documents mask to a multiple of 2N (doc-zigzag, doc-striped need it)");
  cmd->add_flag("--pad-seq", o.pad_seq,
                "Pad the sequence at its end to a multiple of 2N, as a zigzag ring needs (any mask but documents): "
                "the padding is computed, not counted as useful work");
  cmd->add_flag("--skip-unread-hops", o.skip_unread_hops,
                "Ring, hybrid: a K/V block no later device reads (windows, documents) is not sent on, and its "
                "dK/dV goes home from its last reader (a hop that can make a link-bound backward slower: "
                "simulate both)");
  o.given.track(cmd->add_flag("--recompute", o.recompute,
                              "Scope layer or step: the backward recomputes the forward (activation checkpointing)"));
  cmd->add_flag("--summary-only", o.summary_only, "JSON: leave out the per-(round, device) records");
  cmd->add_flag("--rounds", o.rounds, "JSON: include the per-(round, device) records above 64 devices too "
                "[default: only up to 64 devices]");
  return [cmd, options, mode] {
    if (!cmd->parsed()) return;
    const SimulateOptions& opts = *options;
    sim::SimulateConfig config;
    const auto given = [&](std::string_view flag) { return opts.given.given(flag); };
    model::InputOrigins origins;  // the file's inputs no flag overrides, for errors about them
    bool gives_kv_heads = false, gives_pass = false;
    std::string file_shape_field;  // the experiment file's "heads", "kv_heads" or "head_dim", if any
    const std::string label = "--experiment " + opts.experiment;  // when given
    if (!opts.experiment.empty()) {
      const nlohmann::json doc = model::with_files_beside(model::read_json_file(opts.experiment, label), opts.experiment);
      gives_kv_heads = doc.is_object() && doc.contains("kv_heads");
      gives_pass = doc.is_object() && doc.contains("pass");
      for (const char* field : {"heads", "kv_heads", "head_dim"}) {
        if (file_shape_field.empty() && doc.is_object() && doc.contains(field)) file_shape_field = fmt::format("{} field \"{}\"", label, field);
      }
      config = sim::simulate_config_from_json(doc, label, config);
      origins = model::InputOrigins::of_file(doc, label, [&](model::Input input) { return opts.given.overrides(input); });
    }
    auto count = [&](const char* flag, const std::string& text, model::Count& target) {
      if (given(flag)) target = model::parse_count(text, flag);
    };
    if (given("--model")) config.model = opts.model;
    // As the file alone refuses "model" beside "heads": the flag would drop the file's shape.
    if (given("--model") && !file_shape_field.empty()) {
      throw model::InputError(fmt::format("--model {}: sets the heads and head size, and {} sets them too; give one or the other",
                                          opts.model, file_shape_field));
    }
    // A model config fixes the attention shape: a flag that would change it contradicts it.
    for (const char* flag : {"--heads", "--kv-heads", "--head-dim"}) {
      if (given(flag) && !config.model.empty()) {
        // The model named where it came from: the flag, or the experiment file's field.
        const std::string model_from =
            given("--model") || opts.experiment.empty() ? fmt::format("--model {}", config.model) : fmt::format("{} field \"model\" = {}", label, config.model);
        throw model::InputError(fmt::format("{}: {} sets the heads and head size; give one or the other", flag, model_from));
      }
    }
    count("--heads", opts.heads, config.heads);
    // --kv-heads defaults to --heads, unless the experiment file gives its K/V heads.
    if (given("--heads") && !given("--kv-heads") && config.model.empty() && !gives_kv_heads) config.kv_heads = config.heads;
    count("--kv-heads", opts.kv_heads, config.kv_heads);
    count("--head-dim", opts.head_dim, config.head_dim);
    count("--batch", opts.batch, config.batch);
    count("--model-parallel", opts.model_parallel, config.model_parallel);
    count("--data-parallel", opts.data_parallel, config.data_parallel);
    if (given("--scope")) {
      config.scope = sim::parse_scope(opts.scope);
      // The scope's default pass, unless a flag or the file gives one (then checked against the scope).
      if (!given("--pass") && !gives_pass) config.pass = sim::default_pass(config.scope);
    }
    if (opts.recompute) config.recompute = true;
    if (given("--zero")) config.zero = sim::parse_zero_stage(opts.zero);
    count("--seq-len", opts.seq_len, config.seq_len);
    count("--devices", opts.devices, config.devices);
    count("--kv-buffers", opts.kv_buffers, config.kv_buffers);
    if (given("--layouts")) config.layouts = model::split_distinct_list(opts.layouts, "--layouts");
    if (given("--tile")) config.tile = model::parse_tile_shape(opts.tile);
    if (given("--tiling")) config.tiling = model::parse_tiling(opts.tiling);
    if (given("--kernel")) config.kernel = opts.kernel;
    if (given("--merges")) config.merges = opts.merges;  // checked where the simulation applies it
    if (given("--mask")) config.mask = opts.mask;
    if (opts.pad_documents) config.pad_documents = true;
    if (opts.pad_seq) config.pad_seq = true;
    if (given("--pass")) config.pass = sim::parse_pass_selection(opts.pass);
    if (given("--dtype")) config.dtype = opts.dtype;
    if (given("--hardware")) config.hardware = opts.hardware;
    if (given("--topology")) config.topology = opts.topology;
    if (given("--sync")) config.sync = sim::parse_sync_mode(opts.sync);
    if (given("--cp")) config.cp = opts.cp;
    if (opts.skip_unread_hops) config.skip_unread_hops = true;
    if (given("--ring-order")) config.auto_ring_order = sim::parse_auto_ring_order(opts.ring_order);
    if (opts.rounds && opts.summary_only) {
      throw model::InputError("--rounds, --summary-only: one includes the per-(round, device) records, the other leaves them out");
    }
    if ((opts.rounds || opts.summary_only) && output_format(opts.format) != OutputFormat::json) {
      throw model::InputError(fmt::format("{}: only with --format json (the {} output has no per-round records)",
                                          opts.rounds ? "--rounds" : "--summary-only", opts.format));
    }
    // The per-(round, device) records only for what prints them: a trace, or JSON with rounds.
    const bool rounds = opts.rounds || (!opts.summary_only && config.devices <= sim::kRoundsByDefaultUpTo);
    config.keep_rounds = !opts.trace.empty() || (rounds && output_format(opts.format) == OutputFormat::json);
    sim::SimulationPlan plan = origins.run([&] {
      sim::SimulationPlan planned = sim::plan_simulation(config, model::ConfigCatalog(config_dir()));
      sim::require_layouts_apart(planned);
      return planned;
    });
    // N^2 records a layout and pass, a few hundred bytes of JSON each: at 2048 devices that is
    // gigabytes held in memory at once, more than a reader can use.
    constexpr model::Count kMostRecordedDevices = 1024;
    if (opts.rounds && plan.simulation.config.devices > kMostRecordedDevices) {
      throw model::InputError(fmt::format("--rounds: at most {} devices (N x N per-(round, device) records; --devices {})",
                                          kMostRecordedDevices, plan.simulation.config.devices));
    }
    if (mode == RunMode::parse_only) return;
    const sim::Simulation result = origins.run([&] { return sim::run_simulation(std::move(plan)); });
    OutputFiles outputs;  // the trace and the result, both or neither
    if (!opts.trace.empty()) outputs.add(output::chrome_trace(result).dump() + "\n", opts.trace, "--trace");
    outputs.add(output::render(result, output_format(opts.format), rounds), opts.output);
    outputs.commit();
  };
}

}  // namespace stripesim::cli
