#include "simulate_command.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <memory>

#include "config_dir.hpp"
#include "file_flags.hpp"
#include "output_file.hpp"
#include "output_format.hpp"
#include "run_mode.hpp"
#include "stripesim/model/io/input_error.hpp"
#include "stripesim/model/io/input_origins.hpp"
#include "stripesim/model/io/json_file.hpp"
#include "stripesim/model/io/size_parse.hpp"
#include "stripesim/model/work/layout_spec.hpp"
#include "stripesim/model/work/work_model.hpp"
#include "stripesim/output/rows.hpp"
#include "stripesim/sim/kernel_time.hpp"
#include "stripesim/sim/simulation.hpp"

namespace stripesim::cli {
namespace {

struct SimulateOptions {
  std::string experiment;
  std::string model;
  std::string heads, kv_heads, head_dim, batch, model_parallel, data_parallel, seq_len, devices, scope;
  std::string layouts, tile, tiling, kernel, mask, pass, dtype, hardware, topology, sync, kv_buffers, ring_order, cp;
  std::string format = "table";
  std::string output;
  std::string trace;
  bool summary_only = false;
  bool rounds = false;
  bool pad_documents = false;
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

// Scope layer or step: the breakdown of the time on the ring's last device, throughput, memory.
std::string format_step_table(const sim::Simulation& s) {
  const sim::StepShape& shape = *s.step_shape;
  const auto& c = s.config;
  std::string out = fmt::format(
      "scope: {} of {} ({} layers), {}{}; mesh -M {} x -N {} x -D {} on {} GPUs; matmuls at {:.3f} of the {} peak, "
      "element-wise work {:.0f} B per token per d_model\n"
      "per layer: model-parallel all-reduce {:.3f} ms; gradient all-reduce {:.3f} ms per step (overlapped with the backward)\n\n",
      c.scope == sim::Scope::step ? "a training step" : "one transformer layer", shape.model.name, shape.model.layers,
      sim::to_string(c.pass), c.recompute ? ", recomputing the forward in the backward" : "", c.model_parallel,
      c.devices, c.data_parallel, s.mesh.gpus(), *s.hardware.matmul_efficiency, s.hardware.matmul_precision,
      s.hardware.elementwise_bytes_per_dmodel, shape.activation_allreduce_us / 1e3, shape.gradient_allreduce_us / 1e3);
  out += fmt::format("{:<16} {:>11} {:>9} {:>11} {:>6} {:>10} {:>10} {:>10} {:>9} {:>9} {:>9} {:>9} {:>10}\n", "layout",
                     "time (ms)", "vs contig", "tokens/s", "MFU", "matmul", "elementwise", "attn comp", "attn comm",
                     "attn idle", "MP comm", "grad comm", "memory GiB");
  bool over = false;
  for (const auto& r : s.results) {
    const sim::StepEstimate& e = *r.step;
    const sim::StepBreakdown& b = e.breakdown;
    over = over || e.exceeds_memory;
    out += fmt::format("{:<16} {:>11.3f} {:>8.2f}x {:>11.0f} {:>5.1f}% {:>10.3f} {:>11.3f} {:>10.3f} {:>9.3f} {:>9.3f} {:>9.3f} {:>9.3f} {:>9}{}\n",
                       r.layout, r.time_us / 1e3, r.speedup_vs_contiguous, e.tokens_per_second, 100 * e.mfu,
                       b.matmul_us / 1e3, b.elementwise_us / 1e3, b.attention_compute_us / 1e3, b.attention_comm_us / 1e3,
                       b.attention_idle_us / 1e3, b.model_parallel_comm_us / 1e3, b.gradient_comm_us / 1e3,
                       fmt::format("{:.1f}", e.memory.total() / sim::kBytesPerGib), e.exceeds_memory ? "!" : "");
  }
  out += "\nbreakdown columns in ms, on the ring's last device to finish each layer; they add up to the time.\n"
         "MFU = model FLOPs (forward 1x, backward 2x, attention on unmasked pairs) / (M x N devices x time x peak).\n"
         "memory per device: bf16 weights, gradients and Adam state (16 B per parameter), activations kept for\n"
         "the backward, fp32 logits, the ring's K/V buffers.\n";
  if (over) {
    out += fmt::format("warning: '!' marks layouts whose memory per device exceeds the {} GiB of {}\n", s.hardware.memory_gib,
                       s.hardware.name);
  }
  return out;
}

std::string format_table(const sim::Simulation& s) {
  const auto& c = s.config;
  std::string out = fmt::format(
      "context parallelism {}: n = {} tokens, N = {} devices on {}, {} heads x {} (K/V heads {}) per device, batch {}, "
      "tiles {}{}, {}, pass {}, sync {}, {} K/V buffers{}\n",
      sim::to_string(s.cp, c.devices), c.seq_len, c.devices, s.topology.name(), s.heads_per_device, s.head_dim,
      s.kv_heads_per_device, c.batch, s.tile.to_string(), model::tiling_matters(s.tiling, s.mask_kind) ? " (varlen)" : "",
      s.dtype, sim::to_string(c.pass), sim::to_string(c.sync), c.kv_buffers,
      c.skip_unread_hops ? ", unread K/V blocks not sent on" : "");
  if (s.padding_tokens > 0) {
    out += fmt::format("documents padded to multiples of 2N: {} padding tokens included in n\n", s.padding_tokens);
  }
  sim::Microseconds slowest_hop = 0;
  for (const auto& hop : s.hops) slowest_hop = std::max(slowest_hop, hop.transfer_us(s.kv_bytes));
  const double tile_scale = sim::KernelTimeModel(s.kernel, s.hardware.sms, s.call_shape).tile_scale();
  out += fmt::format("hardware {}, kernel {} ({}): full tile {:.2f} us, partial {:.2f} us per slot; K/V per hop {:.1f} MB, "
                     "slowest hop {:.1f} us\n",
                     s.hardware.name, s.kernel.name, s.kernel.calibrated ? "calibrated" : "uncalibrated",
                     s.kernel.forward.full_tile_us * tile_scale, s.kernel.forward.partial_tile_us * tile_scale,
                     static_cast<double>(s.kv_bytes) / 1e6, slowest_hop);
  if (s.step_shape) return out + format_step_table(s);
  out += fmt::format("scope: the attention ring of one layer{}\n\n",
                     s.topology.is_ideal() ? ", the calls alone (ideal topology: hops take no time, no merge between calls)" : "");
  out += fmt::format("{:<22} {:>12} {:>10} {:>12} {:>12} {:>16} {:>10} {:>10}\n", "layout", "time (ms)", "vs contig",
                     "mean busy", "max idle", "max exposed comm", "K/V MiB", "events");
  for (const auto& r : s.results) {
    double busy = 0, idle = 0, exposed = 0;
    std::uint64_t events = 0;
    for (const auto& t : r.passes) {
      std::vector<double> device_busy(static_cast<size_t>(t.devices)), device_idle(device_busy), device_exposed(device_busy);
      for (size_t d = 0; d < t.device_summary.size(); ++d) {
        busy += t.device_summary[d].busy_us / static_cast<double>(t.devices);
        idle = std::max(idle, t.device_summary[d].idle_us);
        exposed = std::max(exposed, t.device_summary[d].exposed_comm_us);
      }
      events += t.events;
    }
    out += fmt::format("{:<22} {:>12.3f} {:>9.2f}x {:>9.3f} ms {:>9.3f} ms {:>13.3f} ms {:>10.1f} {:>10}\n", r.layout,
                       r.time_us / 1e3, r.speedup_vs_contiguous, busy / 1e3, idle / 1e3, exposed / 1e3,
                       r.kv_memory_bytes / (1024.0 * 1024.0), events);
  }
  out += "\nvs contig = contiguous time / this time; busy = computing; idle = time - busy;\n"
         "exposed comm = waiting for a K/V block while it is on the wire, plus transfers still running after the\n"
         "last compute (waiting for a block the upstream device has not sent yet is idle, not communication), plus\n"
         "collectives (all-gather, reduce-scatter, all-to-all) the device is not computing under;\n"
         "K/V MiB = K/V and their buffers on one device (gathered K/V, all-to-all buffers, dK/dV in a backward).\n";
  return out;
}

}  // namespace

namespace {

// The simulation in the chosen format (`rounds`: JSON with the per-(round, device) records).
std::string render(const sim::Simulation& result, bool rounds, OutputFormat format) {
  switch (format) {
    case OutputFormat::table: return format_table(result);
    case OutputFormat::json: return sim::to_json(result, rounds).dump(2) + "\n";
    case OutputFormat::csv: return output::rows_to_csv(sim::simulation_rows(result));
    case OutputFormat::markdown: break;
  }
  throw not_offered(format);
}

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
  add("--model", o.model, "Model config (sets heads, K/V heads and head size) [default: --heads etc.]");
  add("--heads", o.heads, "Query heads [default: 16]");
  add("--kv-heads", o.kv_heads, "K/V heads [default: --heads]");
  add("--head-dim", o.head_dim, "Head size [default: 128]");
  add("--batch", o.batch, "Sequences per step [default: 1]");
  add("--model-parallel,-M", o.model_parallel, "Model-parallel degree: heads per device = heads / M [default: 1]");
  add("--data-parallel,-D", o.data_parallel, "Data-parallel replicas of the M x N mesh [default: 1]");
  add("--scope", o.scope, "What the time covers: attention (one layer's ring), layer (projections, MLP, ring, "
      "collectives) or step (every layer and the LM head, forward and backward) [default: attention]");
  add("--seq-len,-n", o.seq_len, "Sequence length; k and M suffixes [default: 256k]");
  add("--devices,-N", o.devices, "Devices in the ring [default: 8]");
  add("--layouts", o.layouts, "Comma-separated layouts (see analyze) [default: contiguous,striped,zigzag]");
  add("--tile", o.tile, "Kernel tile TQxTK [default: the kernel's]");
  const std::string tiling_help = std::string(model::kTilingHelp) +
                                  " Set by the kernel profile (a100 fa2 and h200 fa3: varlen; the others fixed); given, it "
                                  "must be the kernel's [default: the kernel's]";
  add("--tiling", o.tiling, tiling_help.c_str());
  add("--kernel", o.kernel, "Kernel profile: a name in configs/kernels/<hardware>/ or a JSON file [default: the hardware's]");
  add("--mask", o.mask, "Attention mask (see analyze) [default: causal]");
  add("--pass", o.pass, "fwd, bwd or fwdbwd [default: fwd]");
  add("--dtype", o.dtype, "fp32, tf32, bf16, fp16, fp8: transfer size and peak rate [default: the hardware's attention precision]");
  add("--hardware", o.hardware, "Hardware profile name or JSON file [default: a100]");
  add("--topology", o.topology,
      "nvswitch:G, cluster:NxG[:nic=RATE][:nics=K] (N nodes of G GPUs; NIC line rate, e.g. 200gbps, and NICs per "
      "node [default: 400gbps, one per GPU]), ideal (free links and the calls alone, no merge between them: what one GPU measures timing each call), a name in configs/topologies or a JSON "
      "file [default: nvswitch:N]");
  add("--sync", o.sync, "async (no barrier), lockstep (a barrier after every round) or serial (one processor runs every device in "
      "turn, hand-offs included: the CPU validator) [default: async]");
  add("--kv-buffers", o.kv_buffers, "K/V buffers per device, at least 2 [default: 2, double buffering]");
  add("--ring-order", o.ring_order, "rank or auto (minimise the slowest hop) [default: rank]");
  add("--cp", o.cp, "Context parallelism: ring (K/V passed around the ring), allgather[:G] (K/V all-gathered, in G head "
      "groups whose gathers overlap the previous group's attention), ulysses (all-to-all from sequence to heads) or "
      "hybrid:UxR (Ulysses over U GPUs of a node times a ring over R) [default: ring]");
  add_format_option(cmd, o.format, {OutputFormat::table, OutputFormat::json, OutputFormat::csv}, "Output format: csv is a row per layout");
  cmd->add_option("--output,-o", o.output, "Write to FILE instead of standard output");
  cmd->add_option("--trace", o.trace, "Also write a Chrome trace (Perfetto) to FILE");
  cmd->add_flag("--pad-documents", o.pad_documents,
                "Pad every document of a documents mask to a multiple of 2N (doc-zigzag, doc-striped need it)");
  cmd->add_flag("--skip-unread-hops", o.skip_unread_hops,
                "Ring, hybrid: a K/V block no later device reads (windows, documents) is not sent on");
  cmd->add_flag("--recompute", o.recompute, "Scope layer or step: the backward recomputes the forward (activation checkpointing)");
  cmd->add_flag("--summary-only", o.summary_only, "JSON: leave out the per-(round, device) records");
  cmd->add_flag("--rounds", o.rounds, "JSON: include the per-(round, device) records above 64 devices too "
                "[default: only up to 64 devices]");
  return [cmd, options, mode] {
    if (!cmd->parsed()) return;
    const SimulateOptions& opts = *options;
    sim::SimulateConfig config;
    const auto given = [&](std::string_view flag) { return opts.given.given(flag); };
    model::InputOrigins origins;  // the file's inputs no flag overrides, for errors about them
    if (!opts.experiment.empty()) {
      const std::string label = "--experiment " + opts.experiment;
      const nlohmann::json doc = model::read_json_file(opts.experiment, label);
      config = sim::simulate_config_from_json(doc, label, config);
      origins = model::InputOrigins::of_file(doc, label, [&](model::Input input) { return opts.given.overrides(input); });
    }
    auto count = [&](const char* flag, const std::string& text, model::Count& target) {
      if (given(flag)) target = model::parse_count(text, flag);
    };
    if (given("--model")) config.model = opts.model;
    // A model config fixes the attention shape: a flag that would change it contradicts it.
    for (const char* flag : {"--heads", "--kv-heads", "--head-dim"}) {
      if (given(flag) && !config.model.empty()) {
        throw model::InputError(fmt::format("{}: --model {} sets the heads and head size; give one or the other", flag,
                                            config.model));
      }
    }
    count("--heads", opts.heads, config.heads);
    if (given("--heads") && !given("--kv-heads") && config.model.empty()) config.kv_heads = config.heads;
    count("--kv-heads", opts.kv_heads, config.kv_heads);
    count("--head-dim", opts.head_dim, config.head_dim);
    count("--batch", opts.batch, config.batch);
    count("--model-parallel", opts.model_parallel, config.model_parallel);
    count("--data-parallel", opts.data_parallel, config.data_parallel);
    if (given("--scope")) {
      config.scope = sim::parse_scope(opts.scope);
      if (!given("--pass")) config.pass = sim::default_pass(config.scope);
    }
    if (opts.recompute) config.recompute = true;
    count("--seq-len", opts.seq_len, config.seq_len);
    count("--devices", opts.devices, config.devices);
    count("--kv-buffers", opts.kv_buffers, config.kv_buffers);
    if (given("--layouts")) config.layouts = model::split_list(opts.layouts, "--layouts");
    if (given("--tile")) config.tile = model::parse_tile_shape(opts.tile);
    if (given("--tiling")) config.tiling = model::parse_tiling(opts.tiling);
    if (given("--kernel")) config.kernel = opts.kernel;
    if (given("--mask")) config.mask = opts.mask;
    if (opts.pad_documents) config.pad_documents = true;
    if (given("--pass")) config.pass = sim::parse_pass_selection(opts.pass);
    if (given("--dtype")) config.dtype = opts.dtype;
    if (given("--hardware")) config.hardware = opts.hardware;
    if (given("--topology")) config.topology = opts.topology;
    if (given("--sync")) config.sync = sim::parse_sync_mode(opts.sync);
    if (given("--cp")) config.cp = opts.cp;
    if (opts.skip_unread_hops) config.skip_unread_hops = true;
    if (given("--ring-order")) {
      if (opts.ring_order != "rank" && opts.ring_order != "auto") {
        throw model::InputError(fmt::format("--ring-order '{}': expected rank or auto", opts.ring_order));
      }
      config.auto_ring_order = opts.ring_order == "auto";
    }
    if (opts.rounds && opts.summary_only) {
      throw model::InputError("--rounds, --summary-only: one includes the per-(round, device) records, the other leaves them out");
    }
    if ((opts.rounds || opts.summary_only) && output_format(opts.format) != OutputFormat::json) {
      throw model::InputError(fmt::format("{}: only with --format json (the {} output has no per-round records)",
                                          opts.rounds ? "--rounds" : "--summary-only", opts.format));
    }
    sim::SimulationPlan plan = origins.run([&] { return sim::plan_simulation(config, model::ConfigCatalog(config_dir())); });
    if (mode == RunMode::parse_only) return;
    const sim::Simulation result = origins.run([&] { return sim::run_simulation(std::move(plan)); });
    // Write the trace first: if it fails, nothing has been written.
    if (!opts.trace.empty()) write_output(sim::chrome_trace(result).dump() + "\n", opts.trace);
    const bool rounds = opts.rounds || (!opts.summary_only && result.config.devices <= sim::kRoundsByDefaultUpTo);
    write_output(render(result, rounds, output_format(opts.format)), opts.output);
  };
}

}  // namespace stripesim::cli
