#include "stripesim/output/simulation_printers.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "stripesim/model/work/work_model.hpp"
#include "stripesim/output/rows.hpp"
#include "stripesim/sim/collectives.hpp"
#include "stripesim/sim/kernel_time.hpp"

namespace stripesim::output {

using model::Count;
using sim::CollectiveInterval;
using sim::CpAlgorithm;
using sim::kSimulateSchema;
using sim::model_parallel_groups;
using sim::Route;
using sim::StepShape;

namespace {

nlohmann::ordered_json time_or_null(sim::Microseconds t) { return t < 0 ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(t); }

nlohmann::ordered_json step_json(const sim::StepEstimate& e) {
  const sim::StepMemory& m = e.memory;
  nlohmann::ordered_json breakdown;
  for (const sim::StepPart& part : sim::kStepParts) breakdown[std::string(part.name)] = e.breakdown.*part.us;
  return {{"time_us", e.time_us},
          {"tokens_per_second", e.tokens_per_second},
          {"model_flops", e.model_flops},
          {"mfu", e.mfu},
          {"breakdown_us", std::move(breakdown)},
          {"memory_bytes", {{"weights", m.weights},
                            {"gradients_and_optimizer", m.gradients_and_optimizer},
                            {"activations", m.activations},
                            {"logits", m.logits},
                            {"kv_buffers", m.kv_buffers},
                            {"total", m.total()}}},
          {"exceeds_memory", e.exceeds_memory}};
}

}  // namespace

nlohmann::ordered_json to_json(const sim::Simulation& sim, bool rounds) {
  const sim::SimulateConfig& c = sim.config;
  nlohmann::ordered_json doc;
  doc["schema"] = kSimulateSchema;
  doc["config"] = {{"model", c.model},
                   {"heads_per_device", sim.heads_per_device},
                   {"kv_heads_per_device", sim.kv_heads_per_device},
                   {"head_dim", sim.head_dim},
                   {"batch", c.batch},
                   {"model_parallel", c.model_parallel},
                   {"data_parallel", c.data_parallel},
                   {"scope", to_string(c.scope)},
                   {"recompute", c.recompute},
                   {"zero", sim::to_int(c.zero)},
                   {"seq_len", c.seq_len},
                   {"devices", c.devices},
                   {"block_size", c.seq_len / c.devices},
                   {"tile", {{"query", sim.tile.query}, {"key", sim.tile.key}}},
                   {"tiling", model::tiling_name(sim.tiling)},
                   {"mask", c.mask},
                   {"padding_tokens", sim.padding_tokens},
                   {"pass", to_string(c.pass)},
                   {"dtype", sim.dtype},
                   {"hardware", sim.hardware.name},
                   {"topology", sim.topology.name()},
                   {"sync", to_string(c.sync)},
                   {"kv_buffers", c.kv_buffers},
                   {"ring_order", c.auto_ring_order ? "auto" : "rank"},
                   {"cp", to_string(sim.cp, c.devices)},
                   {"skip_unread_hops", c.skip_unread_hops},
                   {"merges", sim.merges.empty() ? "profile" : sim.merges}};
  doc["rounds_included"] = rounds;
  doc["kernel"] = to_json(sim.kernel);
  // Hops where a ring moves K/V: a ring's, a hybrid's ring of R > 1, an all-gather's steps. Ulysses
  // and a ring of one device send none, so they list none (a hybrid:Nx1 reads as --cp ulysses).
  const Count ring = sim.cp.algorithm == CpAlgorithm::allgather ? c.devices : sim::ring_degree(sim.cp, c.devices);
  const bool ring_moves = ring > 1;
  doc["kv_bytes_per_hop"] = ring_moves ? sim.kv_bytes : 0;
  // What the collectives move, as the table's header says it (traffic_text).
  const Count ulysses = sim::ulysses_degree(sim.cp, c.devices);
  if (sim.cp.algorithm == CpAlgorithm::allgather) {
    doc["collective_bytes"] = {{"allgather_bytes_per_device", sim.cp_shape.gather_bytes}, {"head_groups", sim.cp.head_groups}};
  } else if (ulysses > 1) {
    doc["collective_bytes"] = {{"alltoall_group", ulysses},
                               {"alltoall_qkv_bytes_per_pair", sim.cp_shape.qkv_pair_bytes},
                               {"alltoall_output_bytes_per_pair", sim.cp_shape.out_pair_bytes}};
  }
  nlohmann::ordered_json hops = nlohmann::ordered_json::array();
  for (size_t p = 0; ring_moves && p < sim.hops.size(); ++p) {
    const Route& route = sim.hops[p];
    nlohmann::ordered_json links = nlohmann::ordered_json::array();
    for (const auto link : route.links) links.push_back(sim.topology.directed_link_name(link));
    hops.push_back({{"from_gpu", sim.ring_order[p]},
                    {"to_gpu", sim.ring_order[(p + 1) % sim.ring_order.size()]},
                    {"latency_us", route.latency_us},
                    {"bandwidth_gbps", route.links.empty() ? 0.0 : route.bandwidth},
                    {"transfer_us", route.transfer_us(sim.kv_bytes)},
                    {"shared_by", sim.hops_shared_by[p]},
                    {"links", std::move(links)}});
  }
  doc["hops"] = std::move(hops);
  if (sim.step_shape) {
    const StepShape& step = *sim.step_shape;
    // The group the activation all-reduce is priced on: the slowest of those at once.
    const sim::Groups model_parallel = model_parallel_groups(sim.mesh);
    doc["step_inputs"] = {{"layers", step.model.layers},
                          {"matmul_efficiency", *sim.hardware.matmul_efficiency},
                          {"matmul_precision", sim.hardware.matmul_precision},
                          {"elementwise_bytes_per_dmodel", sim.hardware.elementwise_bytes_per_dmodel},
                          {"memory_bandwidth_gbps", sim.hardware.memory_bandwidth},
                          {"unmasked_pairs", step.unmasked_pairs},
                          {"model_parallel_gpus", model_parallel[sim::slowest_allreduce_group(sim.topology, model_parallel,
                                                                                  step.activation_allreduce_bytes)]},
                          {"activation_allreduce_us", step.activation_allreduce_us},
                          {"gradient_allreduce_us", step.gradient_allreduce_us},
                          {"weight_allgather_us", step.weight_allgather_us},
                          {"memory_gib", sim.hardware.memory_gib}};
  }
  nlohmann::ordered_json results = nlohmann::ordered_json::array();
  for (const sim::LayoutSimulation& r : sim.results) {
    nlohmann::ordered_json passes = nlohmann::ordered_json::array();
    for (const sim::RingTimeline& t : r.passes) {
      nlohmann::ordered_json devices = nlohmann::ordered_json::array();
      for (Count d = 0; d < t.devices; ++d) {
        const sim::DeviceSummary& s = t.device_summary[static_cast<size_t>(d)];
        devices.push_back({{"device", d},
                           {"gpu", sim.ring_order[static_cast<size_t>(d)]},
                           {"busy_us", s.busy_us},
                           {"idle_us", s.idle_us},
                           {"exposed_comm_us", s.exposed_comm_us},
                           {"finish_us", s.finish_us}});
      }
      nlohmann::ordered_json pass{{"pass", to_string(t.pass)},
                                  {"start_us", t.start_us},
                                  {"end_us", t.end_us},
                                  {"time_us", t.makespan_us()},
                                  {"events", t.events},
                                  {"devices", std::move(devices)}};
      if (rounds) {
        nlohmann::ordered_json matrix = nlohmann::ordered_json::array();
        for (Count round = 0; round < t.round_count(); ++round) {
          nlohmann::ordered_json row = nlohmann::ordered_json::array();
          for (Count d = 0; d < t.devices; ++d) {
            const sim::RoundRecord& rec = t.at(round, d);
            nlohmann::ordered_json cell{{"arrival_us", rec.arrival_us},
                                        {"compute_start_us", rec.compute_start_us},
                                        {"compute_end_us", rec.compute_end_us},
                                        {"send_start_us", time_or_null(rec.send_start_us)},
                                        {"send_end_us", time_or_null(rec.send_end_us)}};
            if (t.pass == sim::RingPass::backward) {
              cell["grad_send_start_us"] = time_or_null(rec.grad_send_start_us);
              cell["grad_send_end_us"] = time_or_null(rec.grad_send_end_us);
            }
            row.push_back(std::move(cell));
          }
          matrix.push_back(std::move(row));
        }
        pass["rounds"] = std::move(matrix);
      }
      if (!t.collectives.empty()) {
        nlohmann::ordered_json collectives = nlohmann::ordered_json::array();
        for (const CollectiveInterval& x : t.collectives) {
          collectives.push_back({{"name", x.name},
                                 {"start_us", x.start_us},
                                 {"end_us", x.end_us},
                                 {"device", x.device < 0 ? nlohmann::ordered_json("all") : nlohmann::ordered_json(x.device)}});
        }
        pass["collectives"] = std::move(collectives);
      }
      passes.push_back(std::move(pass));
    }
    nlohmann::ordered_json result{{"layout", r.layout},
                                  {"time_us", r.time_us},
                                  {"speedup_vs_contiguous", r.speedup_vs_contiguous},
                                  {"kv_memory_bytes", r.kv_memory_bytes}};
    sim::append_ring_totals(result, sim::ring_totals(r));
    if (r.step) result["step"] = step_json(*r.step);
    result["passes"] = std::move(passes);
    results.push_back(std::move(result));
  }
  doc["results"] = std::move(results);
  if (const std::vector<std::string> notes = sim::simulation_notes(sim); !notes.empty()) doc["notes"] = notes;
  return doc;
}

nlohmann::ordered_json chrome_trace(const sim::Simulation& sim) {
  nlohmann::ordered_json events = nlohmann::ordered_json::array();
  // One process per layout; in it a thread per device compute stream, then one per link direction used.
  std::map<std::uint32_t, Count> link_thread;
  for (const Route& hop : sim.hops) {
    for (const auto link : hop.links) link_thread.emplace(link, 0);
  }
  Count next_thread = sim.config.devices;
  for (auto& [link, thread] : link_thread) thread = next_thread++;
  // Collectives a track per device (each device's run one after another; side by side on one
  // track they overlapped, which the trace format does not allow), then one for those of all.
  const Count collectives_thread = next_thread;
  const auto collective_track = [&](Count device) { return device < 0 ? collectives_thread + sim.config.devices : collectives_thread + device; };
  for (size_t l = 0; l < sim.results.size(); ++l) {
    const sim::LayoutSimulation& r = sim.results[l];
    const auto pid = static_cast<Count>(l);
    events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", pid}, {"args", {{"name", r.layout}}}});
    for (Count d = 0; d < static_cast<Count>(sim.ring_order.size()); ++d) {
      events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", pid}, {"tid", d},
                        {"args", {{"name", fmt::format("device {} (gpu {}) compute", d, sim.ring_order[static_cast<size_t>(d)])}}}});
    }
    for (const auto& [link, thread] : link_thread) {
      events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", pid}, {"tid", thread},
                        {"args", {{"name", "link " + sim.topology.directed_link_name(link)}}}});
    }
    std::set<Count> collective_devices;
    for (const sim::RingTimeline& t : r.passes) {
      for (const CollectiveInterval& x : t.collectives) collective_devices.insert(x.device);
    }
    for (const Count device : collective_devices) {
      events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", pid}, {"tid", collective_track(device)},
                        {"args", {{"name", device < 0 ? std::string("collectives") : fmt::format("device {} collectives", device)}}}});
    }
    for (const sim::RingTimeline& t : r.passes) {
      const std::string pass = to_string(t.pass);
      for (const CollectiveInterval& x : t.collectives) {
        events.push_back({{"name", x.device < 0 ? x.name : fmt::format("{} d{}", x.name, x.device)}, {"cat", "collective"},
                          {"ph", "X"}, {"pid", pid}, {"tid", collective_track(x.device)}, {"ts", x.start_us},
                          {"dur", x.end_us - x.start_us}});
      }
      for (Count round = 0; round < t.round_count(); ++round) {
        for (Count d = 0; d < t.devices; ++d) {
          const sim::RoundRecord& rec = t.at(round, d);
          if (rec.compute_end_us > rec.compute_start_us) {
            events.push_back({{"name", fmt::format("{} r{}", pass, round)}, {"cat", "compute"}, {"ph", "X"},
                              {"pid", pid}, {"tid", d}, {"ts", rec.compute_start_us},
                              {"dur", rec.compute_end_us - rec.compute_start_us}});
          }
          // A link is busy while the message is put on it (its serialisation); the hop's latency
          // is flight, during which the link takes the next message (the simulator's queue). So
          // a link's events end at start + serialisation and never overlap on its track.
          const Route& hop = sim.hops[static_cast<size_t>(d)];
          auto transfer = [&](sim::Microseconds start, sim::Microseconds end, const char* what) {
            if (start < 0 || end <= start) return;  // not sent (the last round, a skipped hop)
            for (const auto link : hop.links) {
              events.push_back({{"name", fmt::format("{} {} r{} d{}", pass, what, round, d)}, {"cat", "transfer"},
                                {"ph", "X"}, {"pid", pid}, {"tid", link_thread.at(link)}, {"ts", start},
                                {"dur", std::max(0.0, end - start - hop.latency_us)}});
            }
          };
          transfer(rec.send_start_us, rec.send_end_us, "kv");
          transfer(rec.grad_send_start_us, rec.grad_send_end_us, "dkv");
        }
      }
    }
  }
  return {{"displayTimeUnit", "ms"}, {"traceEvents", std::move(events)}};
}

namespace {

// What moves between the copies of the weights once per step, and what hides it: a step's time
// holds what the passes do not hide; a layer's leaves it out (it runs once a step, not a layer).
std::string weight_copies_traffic(const sim::StepShape& shape, sim::Scope scope) {
  const bool step = scope == sim::Scope::step;
  switch (shape.zero) {
    case sim::ZeroStage::none:
      return fmt::format("gradient all-reduce {:.3f} ms per step ({})", shape.gradient_allreduce_us / 1e3,
                         step ? "under the backward where it fits; the rest is grad comm" : "not in a layer's time: --scope step prices it");
    case sim::ZeroStage::optimizer:
    case sim::ZeroStage::gradients:
      return fmt::format("ZeRO stage {}: gradient reduce-scatter and weight all-gather {:.3f} ms each per step ({})",
                         sim::to_int(shape.zero), shape.weight_allgather_us / 1e3,
                         step ? "under the backward and the next forward where they fit; the rest is grad comm"
                              : "not in a layer's time: --scope step prices them");
    case sim::ZeroStage::weights:
      return fmt::format("ZeRO stage 3: weight all-gather {:.3f} ms in the forward, and again with the gradient reduce-scatter "
                         "in the backward ({})",
                         shape.weight_allgather_us / 1e3,
                         step ? "under them where it fits; the rest is grad comm" : "not in a layer's time: --scope step prices them");
  }
  return {};
}

// Scope layer or step: the breakdown of the time on the ring's last device, throughput, memory.
std::string step_table(const sim::Simulation& s) {
  const sim::StepShape& shape = *s.step_shape;
  const auto& c = s.config;
  std::string out = fmt::format(
      "scope: {} of {} ({} layers), {}{}; mesh -M {} x -N {} x -D {} on {} GPUs; matmuls at {:.3f} of the {} peak, "
      "element-wise work {:.0f} B per token per d_model\n"
      "per layer: model-parallel all-reduce {:.3f} ms; {}\n\n",
      c.scope == sim::Scope::step ? "a training step" : "one transformer layer", shape.model.name, shape.model.layers,
      sim::to_string(c.pass), c.recompute ? ", recomputing the forward in the backward" : "", c.model_parallel,
      c.devices, c.data_parallel, s.mesh.gpus(), *s.hardware.matmul_efficiency, s.hardware.matmul_precision,
      s.hardware.elementwise_bytes_per_dmodel, shape.activation_allreduce_us / 1e3, weight_copies_traffic(shape, c.scope));
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
  const double state_bytes = sim::kWeightBytesPerParameter + sim::kGradientBytesPerParameter + sim::kOptimizerBytesPerParameter;
  out += fmt::format(
      "\nbreakdown columns in ms, on the ring's last device to finish each layer; they add up to the time.\n"
         "MFU = model FLOPs (forward 1x, backward 2x, attention on unmasked pairs) / (M x N devices x time x peak){}.\n"
         "memory per device: bf16 weights, gradients and Adam state ({:g} B per parameter{}), activations kept for\n"
         "the backward, fp32 logits, the ring's K/V buffers.\n",
      shape.attention_flop_weight == 1.0
          ? ""
          : fmt::format(";\neach at its precision's peak: an attention FLOP ({}) takes {:.3g}x a matmul one's ({}) time",
                        s.dtype, shape.attention_flop_weight, shape.hardware.matmul_precision),
      state_bytes,
      shape.zero == sim::ZeroStage::none
          ? ""
          : fmt::format(", ZeRO stage {}: a 1/{} share of {}", sim::to_int(shape.zero), c.devices * c.data_parallel,
                        shape.zero == sim::ZeroStage::optimizer
                            ? fmt::format("the {:g} B of Adam state", sim::kOptimizerBytesPerParameter)
                        : shape.zero == sim::ZeroStage::gradients
                            ? fmt::format("the {:g} B of gradients and Adam state",
                                          sim::kGradientBytesPerParameter + sim::kOptimizerBytesPerParameter)
                            : fmt::format("all {:g}, plus two units of weights gathered whole (a layer's, or the LM head's where larger)", state_bytes)));
  if (over) {
    out += fmt::format("warning: '!' marks layouts whose memory per device exceeds the {} GiB of {}\n", s.hardware.memory_gib,
                       s.hardware.name);
  }
  return out;
}

// What the context parallelism sends: a ring's (or a hybrid's ring's) hops, an all-gather's
// steps, an all-to-all's pairwise messages. Ulysses has no ring: its "hops" carry nothing.
std::string traffic_text(const sim::Simulation& s) {
  sim::Microseconds slowest_hop = 0;
  for (const auto& hop : s.hops) slowest_hop = std::max(slowest_hop, hop.transfer_us(s.kv_bytes));
  const auto mb = [](sim::Bytes b) { return static_cast<double>(b) / 1e6; };
  const auto alltoall = [&] {
    return fmt::format("all-to-all {:.1f} MB of Q, K, V and {:.1f} MB of output to each other device of a group",
                       mb(s.cp_shape.qkv_pair_bytes), mb(s.cp_shape.out_pair_bytes));
  };
  if (s.config.devices == 1) return "one device: nothing sent";  // no hop, gather or all-to-all to price
  switch (s.cp.algorithm) {
    case CpAlgorithm::ring: break;
    case CpAlgorithm::allgather:
      return fmt::format("all-gather {:.1f} MB of K/V from each device{}, slowest step {:.1f} us", mb(s.kv_bytes),
                         s.cp.head_groups > 1 ? fmt::format(" per head group ({} groups)", s.cp.head_groups) : "", slowest_hop);
    case CpAlgorithm::ulysses: return alltoall();
    case CpAlgorithm::hybrid:
      if (sim::ulysses_degree(s.cp, s.config.devices) == 1) break;  // a ring alone
      if (sim::ring_degree(s.cp, s.config.devices) == 1) return alltoall();
      return fmt::format("K/V per ring hop {:.1f} MB, slowest hop {:.1f} us; {}", mb(s.kv_bytes), slowest_hop, alltoall());
  }
  return fmt::format("K/V per hop {:.1f} MB, slowest hop {:.1f} us", mb(s.kv_bytes), slowest_hop);
}

// One "note: ..." line per simulation note, after the table.
std::string notes_text(const sim::Simulation& s) {
  std::string out;
  for (const std::string& note : sim::simulation_notes(s)) out += "note: " + note + "\n";
  return out;
}

}  // namespace

std::string simulation_table(const sim::Simulation& s) {
  const auto& c = s.config;
  const auto heads = [](Count n) { return fmt::format("{} head{}", n, n == 1 ? "" : "s"); };
  // Ulysses re-shards heads: the heads a device attends are not the ones it holds.
  const std::string attended =
      sim::ulysses_degree(s.cp, c.devices) > 1
          ? fmt::format(" ({}, K/V heads {}, after the all-to-all)", heads(s.cp_shape.streams / c.batch), s.cp_shape.kv_heads)
          : "";
  std::string out = fmt::format(
      "context parallelism {}: n = {} tokens, N = {} devices on {}, {} x {} (K/V heads {}) per device{}, batch {}, "
      "tiles {}{}, {}, pass {}, sync {}, {} K/V buffers{}\n",
      sim::to_string(s.cp, c.devices), c.seq_len, c.devices, s.topology.name(), heads(s.heads_per_device), s.head_dim,
      s.kv_heads_per_device, attended, c.batch, s.tile.to_string(), model::tiling_matters(s.tiling, s.mask_kind) ? " (varlen)" : "",
      s.dtype, sim::to_string(c.pass), sim::to_string(c.sync), c.kv_buffers,
      c.skip_unread_hops ? ", unread K/V blocks not sent on" : "");
  if (s.padding_tokens > 0) {
    out += fmt::format("{} padded to {} of 2N: {} padding tokens included in n\n", c.pad_seq ? "sequence" : "documents",
                       c.pad_seq ? "a multiple" : "multiples", s.padding_tokens);
  }
  // At the simulated tile: that shape's own costs when the profile lists it, else the main ones scaled.
  const sim::KernelTimeModel kernel(s.kernel, s.kernel_sms, s.call_shape);
  const sim::PassCosts& forward = kernel.costs(sim::KernelPass::forward);
  out += fmt::format("hardware {}, kernel {} ({}): full tile {:.2f} us, partial {:.2f} us per slot; {}\n", s.hardware.name,
                     s.kernel.name, s.kernel.calibrated ? "calibrated" : "uncalibrated",
                     forward.full_tile_us * kernel.tile_scale(forward), forward.partial_tile_us * kernel.tile_scale(forward),
                     traffic_text(s));
  if (s.step_shape) return out + step_table(s) + notes_text(s);
  out += fmt::format("scope: the attention ring of one layer{}{}\n\n",
                     s.topology.is_ideal() ? ", the calls alone (ideal topology: hops take no time, no merge between calls)" : "",
                     s.merges.empty() || s.topology.is_ideal() ? "" : fmt::format(", merges between calls {}", s.merges));
  out += fmt::format("{:<22} {:>12} {:>10} {:>12} {:>12} {:>16} {:>10} {:>10}\n", "layout", "time (ms)", "vs contig",
                     "mean busy", "max idle", "max exposed comm", "K/V MiB", "events");
  for (const auto& r : s.results) {
    const sim::RingTotals totals = sim::ring_totals(r);
    out += fmt::format("{:<22} {:>12.3f} {:>9.2f}x {:>9.3f} ms {:>9.3f} ms {:>13.3f} ms {:>10.1f} {:>10}\n", r.layout,
                       r.time_us / 1e3, r.speedup_vs_contiguous, totals.mean_busy_us / 1e3, totals.max_idle_us / 1e3,
                       totals.max_exposed_comm_us / 1e3,
                       r.kv_memory_bytes / (1024.0 * 1024.0), totals.events);
  }
  out += "\nvs contig = contiguous time / this time; busy = computing; idle = time - busy;\n"
         "exposed comm = waiting for a K/V block once the upstream device sent it (queued on a link or on the wire),\n"
         "plus transfers still running after the last compute (waiting for a block the upstream device has not sent\n"
         "yet is idle, not communication), plus\n"
         "collectives (all-gather, reduce-scatter, all-to-all) the device is not computing under;\n"
         "K/V MiB = K/V and their buffers on one device (gathered K/V, a Ulysses group's K/V, dK/dV in a backward).\n";
  return out + notes_text(s);
}

std::string render(const sim::Simulation& simulation, OutputFormat format, bool rounds) {
  switch (format) {
    case OutputFormat::table: return simulation_table(simulation);
    case OutputFormat::json: return to_json(simulation, rounds).dump(2) + "\n";
    case OutputFormat::csv: return rows_to_csv(sim::simulation_rows(simulation));
    case OutputFormat::markdown: break;
  }
  throw not_offered(format);
}

}  // namespace stripesim::output
