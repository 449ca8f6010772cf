#include "stripesim/sim/attention_passes.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "stripesim/model/work/work_model.hpp"
#include "stripesim/sim/collectives.hpp"
#include "stripesim/sim/ring_order.hpp"
#include "stripesim/sim/ring_merge.hpp"

namespace stripesim::sim {
namespace {

KernelPass kernel_pass(RingPass pass) { return pass == RingPass::forward ? KernelPass::forward : KernelPass::backward; }

// What the all-to-alls of a pass carry: forward, Q, K, V to heads and the output back; backward,
// the output's gradient to heads and dQ, dK, dV back.
const char* to_heads_name(RingPass pass) {
  return pass == RingPass::forward ? "all-to-all Q/K/V to heads" : "all-to-all dO to heads";
}
const char* from_heads_name(RingPass pass) {
  return pass == RingPass::forward ? "all-to-all O to sequence" : "all-to-all dQ/dK/dV to sequence";
}

// For every block with a GradHop::home, the route from its last reader's GPU to its owner's. The
// hops home of one round leave together, beside the same hops of the rings beside this one
// (other model-parallel ranks, replicas, a hybrid's other Ulysses ranks): on a link they share,
// each gets its share of the bandwidth, as the ring's own hops do.
std::vector<Route> grad_home_routes(const Simulation& sim, const std::vector<GradHop>& hops) {
  const auto n = static_cast<Count>(sim.ring_order.size());
  std::vector<Route> home(static_cast<size_t>(n));
  for (Count r = 0; r < n; ++r) {
    std::vector<GpuPair> sent;
    std::vector<std::vector<GpuPair>> beside(sim.rings_beside.size());
    std::vector<Count> owners;
    for (Count d = 0; d < n; ++d) {
      if (hops[static_cast<size_t>(r * n + d)] != GradHop::home) continue;
      const auto from = static_cast<size_t>(d);
      const auto to = static_cast<size_t>(model::kv_source(d, r, n));
      sent.emplace_back(sim.ring_order[from], sim.ring_order[to]);
      for (size_t k = 0; k < beside.size(); ++k) beside[k].emplace_back(sim.rings_beside[k][from], sim.rings_beside[k][to]);
      owners.push_back(static_cast<Count>(to));
    }
    if (sent.empty()) continue;
    SharedRoutes routes = shared_routes(sim.topology, sent, beside);
    for (size_t k = 0; k < owners.size(); ++k) home[static_cast<size_t>(owners[k])] = std::move(routes.hops[k]);
  }
  return home;
}

// One call on the whole gathered K/V: each query tile's key tiles over every block, the blocks
// concatenated in rank order as the all-gather leaves them (so each key tile is one of the ring's).
// Written into `sum`, which keeps its capacity from one device to the next.
void gathered_profile(const model::Work& work, Count device, model::QueryTileProfile& sum) {
  sum.clear();
  for (Count r = 0; r < work.query_tile_profile.rounds(); ++r) {
    const auto& rows = work.profiles[static_cast<size_t>(work.query_tile_profile.at(r, device))];
    if (sum.empty()) sum.resize(rows.size());
    if (rows.size() != sum.size()) throw std::logic_error("gathered_profile: query tiles differ between rounds");
    for (size_t q = 0; q < rows.size(); ++q) {
      sum[q].full += rows[q].full;
      sum[q].partial += rows[q].partial;
    }
  }
}

// The same call from the keys' side: every block's key tiles in rank order, each with the query
// tiles of `device` it meets (the round at which the ring brought that block to the device).
void gathered_key_profile(const model::Work& work, Count device, model::KeyTileProfile& all) {
  all.clear();
  const Count devices = work.key_tile_profile.devices();
  for (Count source = 0; source < devices; ++source) {
    const Count round = model::round_of(device, source, devices);
    const auto& columns = work.profiles[static_cast<size_t>(work.key_tile_profile.at(round, device))];
    all.insert(all.end(), columns.begin(), columns.end());
  }
}

// Every device computing its rounds back to back from the start, waiting for nothing: the
// per-device summaries alone (a step estimate reads nothing else; rounds of a 2048-device ring
// would hold 235 MB per pass).
RingTimeline compute_only(const RingSetup& setup) {
  RingTimeline t;
  t.devices = setup.devices;
  t.pass = setup.pass;
  t.start_us = setup.start_us;
  t.end_us = setup.start_us;
  const auto n = static_cast<size_t>(setup.devices);
  t.device_summary.assign(n, DeviceSummary{});
  for (size_t d = 0; d < n; ++d) {
    Microseconds now = setup.start_us;
    for (size_t i = d; i < setup.compute_us.size(); i += n) now += setup.compute_us[i];
    DeviceSummary& sum = t.device_summary[d];
    sum.busy_us = now - setup.start_us;
    sum.finish_us = now;
    t.end_us = std::max(t.end_us, now);
  }
  t.settle_idle();
  return t;
}

// The passes a simulation runs, in order.
std::vector<RingPass> passes_of(const SimulateConfig& config) {
  std::vector<RingPass> passes;
  if (config.pass != PassSelection::backward) passes.push_back(RingPass::forward);
  if (config.pass != PassSelection::forward) passes.push_back(RingPass::backward);
  return passes;
}

// An all-gather's one call holds all of a device's queries against the whole gathered K/V.
model::CallSlicing slicing_of(const Simulation& sim) {
  return sim.cp.algorithm == CpAlgorithm::allgather ? model::CallSlicing::whole : call_slicing(sim.kernel);
}

}  // namespace

model::Work count_call_work(const Simulation& sim, const model::Layout& layout, const model::Mask& mask) {
  // Ulysses attends the whole sequence, in order, on its heads: the layout plays no part.
  if (sim.cp.algorithm == CpAlgorithm::ulysses) {
    return model::count_work(model::Layout::contiguous(sim.config.seq_len, 1), mask, sim.tile, 0,
                             model::WorkDetail::calls, sim.tiling, slicing_of(sim));
  }
  return model::count_work(layout, mask, sim.tile, 0, model::WorkDetail::calls, sim.tiling, slicing_of(sim));
}

int work_key(const Simulation& sim) {
  return 2 * static_cast<int>(slicing_of(sim)) + (sim.cp.algorithm == CpAlgorithm::ulysses ? 1 : 0);
}

std::vector<RingTimeline> simulate_attention_passes(const Simulation& sim, const model::Layout& layout,
                                                    const model::Mask& mask, const KernelTimeModel& kernel,
                                                    std::uint64_t& events, PassDetail detail, Count* most_partial_tiles) {
  return simulate_attention_passes(sim, layout, count_call_work(sim, layout, mask), kernel, events, detail, most_partial_tiles);
}

std::vector<RingTimeline> simulate_attention_passes(const Simulation& sim, const model::Layout& layout,
                                                    const model::Work& work, const KernelTimeModel& kernel,
                                                    std::uint64_t& events, PassDetail detail, Count* most_partial_tiles) {
  const PricedPasses priced = price_attention_passes(sim, layout, work, kernel);
  if (most_partial_tiles != nullptr) *most_partial_tiles = priced.most_partial_tiles;
  return run_attention_passes(sim, priced, events, detail);
}

double PricedPasses::bytes() const {
  double sum = 0;
  for (const PricedPass& p : passes) {
    sum += static_cast<double>(p.call_us.size() * sizeof(Microseconds) + p.send_needed.size() / 8 + p.grad_hops.size() * sizeof(GradHop));
    for (const Route& route : p.grad_home) sum += static_cast<double>(sizeof(Route) + route.links.size() * sizeof(std::uint32_t));
  }
  return sum;
}

PricedPasses price_attention_passes(const Simulation& sim, const model::Layout& layout, const model::Work& work,
                                    const KernelTimeModel& kernel) {
  const SimulateConfig& config = sim.config;
  const Count n = config.devices;
  PricedPasses out;
  for (const RingPass pass : passes_of(config)) out.passes.emplace_back().pass = pass;
  if (sim.cp.algorithm == CpAlgorithm::allgather) {
    // An all-gather's call holds every round's tiles of a query tile at once: each device's whole
    // sequence of tiles, built one device at a time (held for every device at once, 2048 devices
    // at 1M tokens came to half a gigabyte).
    model::QueryTileProfile rows;
    model::KeyTileProfile columns;
    for (Count d = 0; d < n; ++d) {
      gathered_profile(work, d, rows);
      gathered_key_profile(work, d, columns);
      out.most_partial_tiles = std::max(out.most_partial_tiles, model::most_partial_tiles(rows));
      for (PricedPass& priced : out.passes) priced.call_us.push_back(kernel.call_us(rows, columns, kernel_pass(priced.pass)));
    }
    return out;
  }
  for (const model::QueryTileProfile& rows : work.profiles) {
    out.most_partial_tiles = std::max(out.most_partial_tiles, model::most_partial_tiles(rows));
  }
  for (PricedPass& priced : out.passes) {
    const RingPass pass = priced.pass;
    switch (sim.cp.algorithm) {
      case CpAlgorithm::ring:
      case CpAlgorithm::hybrid: {
        priced.call_us = kernel.call_times(work, kernel_pass(pass));
        // Each call's result is folded into the running one before the next call starts; the
        // ideal topology prices the calls alone, as a single GPU timing them one by one sees them.
        if (!sim.topology.is_ideal()) {
          const MergeShape merge_shape{config.seq_len / layout.devices(), sim.call_shape, sim.cp_shape.kv_heads * config.batch};
          const std::vector<Microseconds> merge_us =
              merge_times(work, priced.call_us, sim.kernel, kernel_pass(pass), merge_shape, sim.hardware.memory_bandwidth);
          for (size_t i = 0; i < merge_us.size(); ++i) priced.call_us[i] += merge_us[i];
        }
        if (config.skip_unread_hops) {
          priced.send_needed = hops_read_downstream(work.active_tiles);
          if (pass == RingPass::backward) {
            priced.grad_hops = grad_hops_needed(work.active_tiles);
            priced.grad_home = grad_home_routes(sim, priced.grad_hops);
          }
        }
        break;
      }
      case CpAlgorithm::allgather:  // priced above
        break;
      case CpAlgorithm::ulysses:
        priced.call_us = {kernel.call_times(work, kernel_pass(pass)).front()};
        break;
    }
  }
  return out;
}

std::vector<RingTimeline> run_attention_passes(const Simulation& sim, const PricedPasses& priced, std::uint64_t& events,
                                               PassDetail detail) {
  const bool bound = detail == PassDetail::bound;
  const SimulateConfig& config = sim.config;
  const CpShape& shape = sim.cp_shape;
  const Count n = config.devices;
  // One processor playing every device runs each collective as copies, one after another.
  const bool one_processor = config.sync == SyncMode::serial;
  const auto alltoall_time = [&](Bytes pair_bytes) {
    if (bound) return 0.0;
    return one_processor ? one_processor_collective_us(sim.topology, sim.alltoall_group, n, pair_bytes)
                         : alltoall_us(sim.topology, sim.alltoall_group, pair_bytes, sim.alltoall_groups_beside);
  };
  const Microseconds qkv_us = alltoall_time(shape.qkv_pair_bytes);
  const Microseconds out_us = alltoall_time(shape.out_pair_bytes);
  const auto to_heads = [&](RingPass p) { return p == RingPass::forward ? qkv_us : out_us; };
  const auto from_heads = [&](RingPass p) { return p == RingPass::forward ? out_us : qkv_us; };

  std::vector<RingTimeline> out;
  Microseconds start = 0;
  std::vector<FifoServer> links(sim.cp.algorithm == CpAlgorithm::ring || sim.cp.algorithm == CpAlgorithm::hybrid
                                    ? sim.topology.directed_link_count()
                                    : 0);
  for (const PricedPass& p : priced.passes) {
    const RingPass pass = p.pass;
    RingTimeline t;
    switch (sim.cp.algorithm) {
      case CpAlgorithm::ring:
      case CpAlgorithm::hybrid: {
        RingSetup setup;
        setup.devices = ring_degree(sim.cp, n);
        setup.hops = sim.hops;
        setup.kv_bytes = sim.kv_bytes;
        setup.grad_bytes = sim.grad_bytes;
        setup.pass = pass;
        setup.sync = config.sync;
        setup.kv_buffers = config.kv_buffers;
        setup.keep_rounds = config.keep_rounds || sim.cp.algorithm == CpAlgorithm::hybrid;
        setup.start_us = start + to_heads(pass);
        setup.compute_us = p.call_us;
        setup.send_needed = p.send_needed;
        setup.grad_hops = p.grad_hops;
        setup.grad_home = p.grad_home;
        t = bound ? compute_only(setup) : simulate_ring(setup, links);
        // A bound has no all-to-alls to wrap (they take no time in it) and no rounds to re-summarise.
        if (sim.cp.algorithm == CpAlgorithm::hybrid && !bound) {
          t = wrap_ring_in_alltoalls(std::move(t), start, to_heads(pass), from_heads(pass), to_heads_name(pass),
                                     from_heads_name(pass));
        }
        break;
      }
      case CpAlgorithm::allgather: {
        const Microseconds gather_us = bound           ? 0.0
                                       : one_processor ? one_processor_collective_us(sim.topology, sim.cp_group, n, shape.gather_bytes)
                                                       : allgather_us(sim.topology, sim.cp_group, shape.gather_bytes, sim.cp_groups_beside);
        std::vector<CollectiveStage> stages;
        for (Count g = 0; g < sim.cp.head_groups; ++g) {
          // The backward gathers K/V again and reduce-scatters dK/dV group by group.
          stages.push_back({fmt::format("all-gather K/V {}", g), gather_us, p.call_us,
                            pass == RingPass::backward ? fmt::format("reduce-scatter dK/dV {}", g) : std::string{},
                            pass == RingPass::backward ? gather_us : 0.0});
        }
        t = simulate_collective_pass(pass, start, stages, one_processor);
        break;
      }
      case CpAlgorithm::ulysses:
        t = simulate_collective_pass(pass, start,
                                     {{to_heads_name(pass), to_heads(pass), std::vector<Microseconds>(static_cast<size_t>(n), p.call_us.front()),
                                       from_heads_name(pass), from_heads(pass)}},
                                     one_processor);
        break;
    }
    events += t.events;
    start = t.end_us;
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace stripesim::sim
