// Context parallelism other than the ring (simulate --cp): collectives against their closed
// forms, the shapes each algorithm gives a device, the staged timeline worked by hand, and the
// algorithms against each other where they must agree.
#include <gtest/gtest.h>

#include <algorithm>

#include "stripesim/model/io/input_error.hpp"
#include "stripesim/model/work/layout.hpp"
#include "stripesim/model/work/mask.hpp"
#include "stripesim/model/work/work_model.hpp"
#include "stripesim/sim/collectives.hpp"
#include "stripesim/sim/context_parallel.hpp"
#include "stripesim/sim/simulation.hpp"
#include "two_bridges.hpp"

namespace stripesim::sim {
namespace {

const model::ConfigCatalog& catalog() {
  static const model::ConfigCatalog shipped(std::string(STRIPESIM_SOURCE_DIR) + "/configs");
  return shipped;
}

std::vector<Count> first_gpus(Count k) {
  std::vector<Count> group;
  for (Count g = 0; g < k; ++g) group.push_back(g);
  return group;
}

TEST(Collectives, RingAllGatherOnOneSwitchIsKMinusOneSteps) {
  // Every hop crosses GPU -> switch -> GPU: two links of 1 us at 100 GB/s.
  const Topology t = Topology::nvswitch(8, 100, 1.0);
  const Bytes bytes = 50'000'000;  // 500 us at 100 GB/s
  EXPECT_DOUBLE_EQ(allgather_us(t, first_gpus(8), bytes), 7 * (2.0 + 500.0));
  EXPECT_DOUBLE_EQ(allreduce_us(t, first_gpus(8), 8 * bytes), 14 * (2.0 + 500.0));
  EXPECT_DOUBLE_EQ(allgather_us(t, first_gpus(1), bytes), 0.0);
}

TEST(Collectives, AllToAllOnOneSwitchLoadsEachGpuLinkWithItsPeers) {
  const Topology t = Topology::nvswitch(8, 100, 1.0);
  // Each GPU's uplink carries its 7 chunks, each downlink the 7 it receives; latency once.
  EXPECT_DOUBLE_EQ(alltoall_us(t, first_gpus(8), 10'000'000), 2.0 + 7 * 100.0);
  EXPECT_DOUBLE_EQ(alltoall_us(t, first_gpus(4), 10'000'000), 2.0 + 3 * 100.0);
  EXPECT_DOUBLE_EQ(alltoall_us(t, first_gpus(1), 10'000'000), 0.0);
}

// One processor playing every device (the validator's cpu and cuda backends) copies each part
// into each device's buffer, the device's own part as well: N x N hand-offs of a part, each
// priced on a GPU -> switch -> GPU hop, where devices at once move N - 1 parts each.
TEST(Collectives, OneProcessorCopiesEveryPartOfEveryDeviceItsOwnIncluded) {
  const Topology t = Topology::nvswitch(8, 100, 1.0);
  const Bytes part = 10'000'000;  // 100 us at 100 GB/s, plus 2 us over two links
  EXPECT_DOUBLE_EQ(one_processor_collective_us(t, first_gpus(8), 8, part), 64 * (2.0 + 100.0));
  EXPECT_DOUBLE_EQ(one_processor_collective_us(t, first_gpus(2), 2, part), 4 * (2.0 + 100.0));
  // A hybrid's groups of 4 among 8 devices: every device's buffer takes its group's 4 parts.
  EXPECT_DOUBLE_EQ(one_processor_collective_us(t, first_gpus(4), 8, part), 32 * (2.0 + 100.0));
  EXPECT_DOUBLE_EQ(one_processor_collective_us(t, first_gpus(1), 1, part), 0.0);
  // Against the same collective on devices at once: N^2 hand-offs where the all-gather takes N - 1.
  EXPECT_DOUBLE_EQ(one_processor_collective_us(t, first_gpus(8), 8, part) / allgather_us(t, first_gpus(8), part), 64.0 / 7);
}

TEST(Collectives, AllToAllAcrossNodesIsBoundByTheNic) {
  // Two nodes of four: NVLink 400 GB/s, a NIC of 50 GB/s per GPU (GPU -> NIC -> fabric -> NIC -> GPU).
  const Topology t = Topology::cluster(2, 4, 400, 1.0, 50, 2.0);
  const Bytes chunk = 10'000'000;
  // A GPU sends four chunks off its node through its own NIC (800 us) and three over NVLink (75 us);
  // the longest route crosses four NIC links (8 us).
  EXPECT_DOUBLE_EQ(alltoall_us(t, first_gpus(8), chunk), 8.0 + 4 * 200.0);
  // Inside one node only NVLink is used.
  EXPECT_DOUBLE_EQ(alltoall_us(t, first_gpus(4), chunk), 2.0 + 3 * 25.0);
}

// Groups beside (other model-parallel ranks, replicas) run the same collective at once: where
// they cross the same links, those carry their bytes too. On two bridges the group {0, 2} moves 10 MB each way across A - B in 1 ms alone,
// in 2 ms beside {1, 3}; a group inside one bridge shares nothing with it.
TEST(Collectives, GroupsBesideShareTheLinksTheyCross) {
  const Topology t = two_bridges();
  const Bytes chunk = 10'000'000;
  EXPECT_DOUBLE_EQ(alltoall_us(t, {0, 2}, chunk), 1000.0);
  EXPECT_DOUBLE_EQ(alltoall_us(t, {0, 2}, chunk, {{1, 3}}), 2000.0);
  EXPECT_DOUBLE_EQ(alltoall_us(t, {0, 2}, chunk, {{0, 1}}), 1000.0);
  EXPECT_DOUBLE_EQ(allgather_us(t, {0, 2}, chunk), 1000.0);
  EXPECT_DOUBLE_EQ(allgather_us(t, {0, 2}, chunk, {{1, 3}}), 2000.0);
  EXPECT_DOUBLE_EQ(allreduce_us(t, {0, 2}, 2 * chunk, {{1, 3}}), 2 * 2000.0);
}

// The groups of a kind need not be alike: on two nodes of three GPUs the pairs {0, 1} and {4, 5}
// stay inside a node while {2, 3} crosses, and the collective lasts as long as that slowest pair
// (it was priced on the first group alone: NVLink where the step waits on the NICs).
TEST(Collectives, TheSlowestGroupSetsTheTime) {
  const Topology t = Topology::cluster(2, 3, 400, 1.0, 50, 2.0);
  const Bytes bytes = 10'000'000;
  const Groups beside{{2, 3}, {4, 5}};
  EXPECT_GT(allreduce_us(t, {2, 3}, bytes), 5 * allreduce_us(t, {0, 1}, bytes));
  EXPECT_DOUBLE_EQ(allreduce_us(t, {0, 1}, bytes, beside), allreduce_us(t, {2, 3}, bytes));
  EXPECT_DOUBLE_EQ(allgather_us(t, {0, 1}, bytes, beside), allgather_us(t, {2, 3}, bytes));
  EXPECT_DOUBLE_EQ(alltoall_us(t, {0, 1}, bytes, beside), alltoall_us(t, {2, 3}, bytes));
  // Two NIC links each way (GPU -> NIC -> fabric -> NIC -> GPU), 50 GB/s: 200 us and 8 us of latency.
  EXPECT_DOUBLE_EQ(alltoall_us(t, {2, 3}, bytes), 8.0 + 200.0);
  // The group a report names is the one that straddles the nodes, wherever it stands.
  EXPECT_EQ(slowest_allreduce_group(t, {{0, 1}, {2, 3}, {4, 5}}, bytes), 1U);
  EXPECT_EQ(slowest_allreduce_group(t, {{2, 3}, {0, 1}, {4, 5}}, bytes), 0U);
  EXPECT_EQ(slowest_allreduce_group(t, {{0, 1}, {4, 5}}, bytes), 0U);  // as slow: the first
}

// A group's own hops share a link as one beside it does: in the order 0, 2, 1, 3 the hops 0 -> 2
// and 1 -> 3 cross A -> B in the same step (2 -> 1 and 3 -> 0 cross B -> A), so each moves at
// 5 GB/s: 2 ms a step of 10 MB where the order 0, 1, 2, 3, crossing each way once, takes 1 ms.
// The all-to-all counts every pair's bytes on the link whatever the order: four pairs' 40 MB each
// way, 4 ms.
TEST(Collectives, AGroupsOwnHopsOnOneLinkShareIt) {
  const Topology t = two_bridges();
  const Bytes chunk = 10'000'000;
  EXPECT_DOUBLE_EQ(allgather_us(t, {0, 1, 2, 3}, chunk), 3 * 1000.0);
  EXPECT_DOUBLE_EQ(allgather_us(t, {0, 2, 1, 3}, chunk), 3 * 2000.0);
  EXPECT_DOUBLE_EQ(allreduce_us(t, {0, 2, 1, 3}, 4 * chunk), 6 * 2000.0);
  EXPECT_DOUBLE_EQ(alltoall_us(t, {0, 2, 1, 3}, chunk), alltoall_us(t, {0, 1, 2, 3}, chunk));
  EXPECT_DOUBLE_EQ(alltoall_us(t, {0, 1, 2, 3}, chunk), 4 * 1000.0);
  // One processor copies one part at a time: nothing shares the link, whatever the order.
  EXPECT_DOUBLE_EQ(one_processor_collective_us(t, {0, 2, 1, 3}, 4, chunk), 16 * 1000.0);
  EXPECT_DOUBLE_EQ(one_processor_collective_us(t, {0, 2, 1, 3}, 4, chunk), one_processor_collective_us(t, {0, 1, 2, 3}, 4, chunk));
}

TEST(ContextParallel, ParsesEveryFormAndRefusesTheRest) {
  EXPECT_EQ(parse_context_parallel("ring", 8).algorithm, CpAlgorithm::ring);
  const ContextParallel ag = parse_context_parallel("allgather:4", 8);
  EXPECT_EQ(ag.algorithm, CpAlgorithm::allgather);
  EXPECT_EQ(ag.head_groups, 4);
  const ContextParallel u = parse_context_parallel("ulysses", 8);
  EXPECT_EQ(ulysses_degree(u, 8), 8);
  EXPECT_EQ(ring_degree(u, 8), 1);
  const ContextParallel h = parse_context_parallel("hybrid:4x2", 8);
  EXPECT_EQ(ulysses_degree(h, 8), 4);
  EXPECT_EQ(ring_degree(h, 8), 2);
  EXPECT_EQ(to_string(h, 8), "hybrid:4x2");
  EXPECT_EQ(to_string(parse_context_parallel("hybrid:4X2", 8), 8), "hybrid:4x2");  // x either case, as in tiles
  EXPECT_EQ(to_string(ag, 8), "allgather:4");
  for (const char* bad : {"rings", "allgather:0", "allgather:x", "hybrid:3x3", "hybrid:8", "ulysses:2", "ring:2", ""}) {
    EXPECT_THROW((void)parse_context_parallel(bad, 8), model::InputError) << bad;
  }
}

TEST(ContextParallel, ShapesWorkedByHand) {
  // 64k tokens over 8 devices, 32 heads and 8 K/V heads of 128 in bf16, one sequence.
  const AttentionShape s{65536, 8, 1, 32, 8, 128, 2};
  const Bytes row = 128 * 2;
  const CpShape ring = cp_shape(ContextParallel{}, s, 2);
  EXPECT_EQ(ring.ring_hop_bytes, 2 * 8192 * 8 * row);
  EXPECT_EQ(ring.streams, 32);
  EXPECT_DOUBLE_EQ(ring.memory_bytes, 2.0 * static_cast<double>(ring.ring_hop_bytes));

  const CpShape ag = cp_shape(parse_context_parallel("allgather:4", 8), s, 2);
  EXPECT_EQ(ag.streams, 8);
  EXPECT_EQ(ag.gather_bytes, 2 * 8192 * 2 * row);
  EXPECT_DOUBLE_EQ(ag.memory_bytes, 2.0 * 8 * static_cast<double>(ag.gather_bytes));  // two gathered groups

  // Ulysses over 8: 4 query heads and one K/V head each (8 K/V heads split).
  const CpShape u = cp_shape(parse_context_parallel("ulysses", 8), s, 2);
  EXPECT_EQ(u.streams, 4);
  EXPECT_EQ(u.kv_heads, 1);
  EXPECT_EQ(u.qkv_pair_bytes, 8192 * (4 + 2) * row);
  EXPECT_EQ(u.out_pair_bytes, 8192 * 4 * row);
  // Its memory: K and V of the whole sequence for its one K/V head, 32 MiB (Q and O, the same
  // bytes under every algorithm, are not counted).
  EXPECT_DOUBLE_EQ(u.memory_bytes, static_cast<double>(2 * 65536 * 1 * row));
  EXPECT_DOUBLE_EQ(u.backward_memory_bytes, 2 * u.memory_bytes);

  // Ulysses over 16 with 8 K/V heads: each device gets one replicated K/V head.
  const AttentionShape wide{65536, 16, 1, 32, 8, 128, 2};
  const CpShape replicated = cp_shape(parse_context_parallel("ulysses", 16), wide, 2);
  EXPECT_EQ(replicated.kv_heads, 1);
  EXPECT_EQ(replicated.qkv_pair_bytes, 4096 * (2 + 2) * row);

  // hybrid 2x4: the ring carries the K/V of 2 local blocks with 4 K/V heads.
  const CpShape h = cp_shape(parse_context_parallel("hybrid:2x4", 8), s, 2);
  EXPECT_EQ(h.streams, 16);
  EXPECT_EQ(h.ring_hop_bytes, 2 * 2 * 8192 * 4 * row);
  // Its memory: K and V of 4 K/V heads over 2 blocks (the ring's first block), and one ring
  // buffer beside it: two ring blocks, as a ring's two buffers.
  EXPECT_DOUBLE_EQ(h.memory_bytes, static_cast<double>(2 * 2 * 8192 * 4 * row + h.ring_hop_bytes));
  EXPECT_DOUBLE_EQ(h.memory_bytes, 2.0 * static_cast<double>(h.ring_hop_bytes));
  // The degenerate hybrids hold what the algorithm they are holds.
  EXPECT_DOUBLE_EQ(cp_shape(parse_context_parallel("hybrid:1x8", 8), s, 2).memory_bytes, ring.memory_bytes);
  EXPECT_DOUBLE_EQ(cp_shape(parse_context_parallel("hybrid:8x1", 8), s, 2).memory_bytes, u.memory_bytes);
  EXPECT_DOUBLE_EQ(cp_shape(parse_context_parallel("hybrid:1x8", 8), s, 3).memory_bytes,
                   cp_shape(ContextParallel{}, s, 3).memory_bytes);
  // One device rings nothing: it holds its own K/V, one block whatever the buffers, as an
  // all-gather over one device holds it.
  const AttentionShape alone{65536, 1, 1, 32, 8, 128, 2};
  const CpShape single = cp_shape(ContextParallel{}, alone, 2);
  EXPECT_DOUBLE_EQ(single.memory_bytes, static_cast<double>(2 * 65536 * 8 * row));
  EXPECT_DOUBLE_EQ(single.memory_bytes, cp_shape(parse_context_parallel("allgather", 1), alone, 2).memory_bytes);
  EXPECT_DOUBLE_EQ(single.memory_bytes, cp_shape(parse_context_parallel("hybrid:1x1", 1), alone, 2).memory_bytes);
  EXPECT_DOUBLE_EQ(single.memory_bytes, cp_shape(parse_context_parallel("ulysses", 1), alone, 2).memory_bytes);

  EXPECT_THROW((void)cp_shape(parse_context_parallel("allgather:3", 8), s, 2), model::InputError);
  const AttentionShape odd{65536, 8, 1, 12, 12, 128, 2};
  EXPECT_THROW((void)cp_shape(parse_context_parallel("ulysses", 8), odd, 2), model::InputError);
  const AttentionShape few_kv{65536, 8, 1, 24, 3, 128, 2};
  EXPECT_THROW((void)cp_shape(parse_context_parallel("ulysses", 8), few_kv, 2), model::InputError);
}

TEST(ContextParallel, StagedPassWorkedByHand) {
  // Two devices, three stages: gathers of 10 us, device 1 slower (20 us a stage), backward-style
  // reduce-scatters of 4 us after each stage.
  std::vector<CollectiveStage> stages(3, CollectiveStage{"in", 10, {5, 20}, "out", 4});
  const RingTimeline t = simulate_collective_pass(RingPass::backward, 0, stages);
  ASSERT_EQ(t.round_count(), 3);
  // Gathers: [0,10], [10,20]; stage 2's waits for every device to finish stage 0 (30) and then,
  // on the same links, for stage 0's reduce-scatter [30,34]: [34,44].
  EXPECT_DOUBLE_EQ(t.at(0, 1).compute_start_us, 10);
  EXPECT_DOUBLE_EQ(t.at(0, 1).compute_end_us, 30);
  EXPECT_DOUBLE_EQ(t.at(1, 1).compute_start_us, 30);
  EXPECT_DOUBLE_EQ(t.at(1, 1).compute_end_us, 50);
  EXPECT_DOUBLE_EQ(t.at(2, 1).arrival_us, 44);
  EXPECT_DOUBLE_EQ(t.at(2, 1).compute_start_us, 50);
  EXPECT_DOUBLE_EQ(t.at(2, 0).compute_start_us, 44);
  // Reduce-scatters after each stage: [30,34], [50,54], [70,74].
  EXPECT_DOUBLE_EQ(t.end_us, 74);
  const DeviceSummary& slow = t.device_summary[1];
  EXPECT_DOUBLE_EQ(slow.busy_us, 60);
  // Device 1 waits for the first gather (10) and the last reduce-scatter (4); the others run under its compute.
  EXPECT_DOUBLE_EQ(slow.exposed_comm_us, 14);
  const DeviceSummary& fast = t.device_summary[0];
  EXPECT_DOUBLE_EQ(fast.busy_us, 15);
  // Device 0 computes [10,15], [20,25], [44,49]; collectives cover [0,20], [30,44], [50,54], [70,74]
  // (42 us), of which only [10,15] runs under its compute.
  EXPECT_DOUBLE_EQ(fast.exposed_comm_us, 42 - 5);
  // No two collectives overlap: the links carry one at a time.
  std::vector<CollectiveInterval> events = t.collectives;
  std::sort(events.begin(), events.end(), [](const auto& a, const auto& b) { return a.start_us < b.start_us; });
  for (size_t i = 1; i < events.size(); ++i) EXPECT_GE(events[i].start_us, events[i - 1].end_us) << i;
  EXPECT_DOUBLE_EQ(fast.idle_us, 74 - 15);
}

TEST(ContextParallel, OneProcessorPlaysEveryDeviceInTurn) {
  // The validator's cpu and cuda backends: the gather (10, as one processor copies it), then
  // device 0's call, then device 1's, then the output collective.
  const RingTimeline t = simulate_collective_pass(RingPass::forward, 0, {CollectiveStage{"in", 10, {5, 20}, "out", 4}}, true);
  EXPECT_DOUBLE_EQ(t.at(0, 0).compute_start_us, 10);
  EXPECT_DOUBLE_EQ(t.at(0, 1).compute_start_us, 15);
  EXPECT_DOUBLE_EQ(t.end_us, 35 + 4);
  // Devices at once: both calls start when the gather is in.
  const RingTimeline at_once = simulate_collective_pass(RingPass::forward, 0, {CollectiveStage{"in", 10, {5, 20}, "out", 4}});
  EXPECT_DOUBLE_EQ(at_once.at(0, 1).compute_start_us, 10);
  EXPECT_DOUBLE_EQ(at_once.end_us, 30 + 4);
  // In head groups, one processor still does one thing at a time: stage g + 1's gather waits for
  // stage g's calls and reduce, so the pass is every call and every collective end to end.
  const std::vector<CollectiveStage> groups(3, CollectiveStage{"in", 10, {5, 20}, "out", 4});
  const RingTimeline grouped = simulate_collective_pass(RingPass::backward, 0, groups, true);
  EXPECT_DOUBLE_EQ(grouped.at(1, 0).arrival_us, 39 + 10);
  EXPECT_DOUBLE_EQ(grouped.at(1, 0).compute_start_us, 49);
  EXPECT_DOUBLE_EQ(grouped.end_us, 3 * (10 + 5 + 20 + 4));
  for (size_t i = 1; i < grouped.collectives.size(); ++i) {
    EXPECT_GE(grouped.collectives[i].start_us, grouped.collectives[i - 1].end_us) << i;
  }
}

SimulateConfig gqa_config() {
  SimulateConfig c;
  c.heads = 32;
  c.kv_heads = 8;
  c.head_dim = 128;
  c.seq_len = 64 * 1024;
  c.devices = 8;
  c.hardware = "h100";
  c.layouts = {"contiguous", "zigzag"};
  c.pass = PassSelection::forward_backward;
  return c;
}

// --sync serial prices an all-gather and Ulysses' all-to-alls as one processor copies them.
TEST(ContextParallel, SerialCollectivesAreEveryPartCopiedInTurn) {
  SimulateConfig c = gqa_config();  // 8 devices of 8k tokens, 32 heads, 8 K/V heads of 128
  c.layouts = {"contiguous"};
  c.sync = SyncMode::serial;
  for (const char* cp : {"allgather", "ulysses"}) {
    c.cp = cp;
    const Simulation s = run_simulation(c, catalog());
    const RingTimeline& t = s.results.front().passes.front();
    ASSERT_FALSE(t.collectives.empty()) << cp;
    const Route hop = s.topology.routes_from(0, first_gpus(8))[1];  // a copy: the vector is a temporary
    // A part: a device's K and V (all-gather); a pair's share of Q, K and V (Ulysses: 4 query
    // heads and 1 K/V head per device).
    const Bytes part = std::string(cp) == "allgather" ? 2 * 8192 * 8 * 128 * 2 : 8192 * (4 + 2 * 1) * 128 * 2;
    const auto& first = t.collectives.front();
    EXPECT_NEAR(first.end_us - first.start_us, 64 * hop.transfer_us(part), 1e-9) << cp;
  }
}

// A hybrid's backward hands dQ, dK and dV back to sequence layout once a ring position holds them
// all: its own calls done and its block's dK/dV accumulator home from the ring's last hop (before
// 2026-12-04 the all-to-all left at the position's own last transfer, ring position 0's 2.7 ms
// before its gradients came home).
TEST(ContextParallel, HybridBackwardHandsBackOnceItsGradientsAreHome) {
  SimulateConfig c = gqa_config();
  c.cp = "hybrid:2x4";
  c.layouts = {"contiguous"};
  c.pass = PassSelection::backward;
  c.seq_len = 32 * 1024;
  const Simulation sim = run_simulation(c, catalog());
  const RingTimeline& t = sim.results[0].passes[0];
  const Count n = t.devices;
  ASSERT_EQ(n, 4);
  Count waited = 0;
  for (Count d = 0; d < n; ++d) {
    Microseconds own = t.start_us;
    for (Count r = 0; r < n; ++r) {
      const RoundRecord& rec = t.at(r, d);
      own = std::max({own, rec.compute_end_us, rec.send_end_us, rec.grad_send_end_us});
    }
    const Microseconds home = t.at(n - 1, (d + n - 1) % n).grad_send_end_us;  // the ring's last hop, into d
    const auto back = std::find_if(t.collectives.begin(), t.collectives.end(),
                                   [&](const CollectiveInterval& ci) { return ci.device == d; });
    ASSERT_NE(back, t.collectives.end()) << d;
    EXPECT_EQ(back->name, "all-to-all dQ/dK/dV to sequence");
    EXPECT_DOUBLE_EQ(back->start_us, std::max(own, home)) << d;
    waited += home > own ? 1 : 0;
  }
  EXPECT_GE(waited, 1) << "some position's gradients come home after its own work ends";
}

// A hybrid whose all-to-all groups cross nodes runs, priced over the network, with a note.
TEST(ContextParallel, HybridAcrossNodesSaysSo) {
  SimulateConfig c = gqa_config();
  c.cp = "hybrid:4x2";
  c.layouts = {"contiguous"};
  c.pass = PassSelection::forward;
  c.topology = "cluster:4x2";
  const auto spans = [&] {
    const std::vector<std::string> notes = simulation_notes(run_simulation(c, catalog()));
    return std::count_if(notes.begin(), notes.end(), [](const std::string& note) {
      return note.find("each all-to-all group of 4 GPUs spans 2 nodes of cluster:4x2") != std::string::npos;
    });
  };
  EXPECT_EQ(spans(), 1);
  c.topology = "cluster:2x4";
  EXPECT_EQ(spans(), 0);
}

// Every device of a bidirectional contiguous ring does the same work: no wait of the backward
// over slow NICs is imbalance, all of it is communication. K/V blocks queue on each link behind
// dK/dV hops; before 2026-12-04 that queue counted as idle (31.7 ms idle, 20.1 exposed).
TEST(ContextParallel, ABalancedRingWaitsOnlyOnItsLinks) {
  SimulateConfig c = gqa_config();
  c.mask = "bidirectional";
  c.layouts = {"contiguous"};
  c.devices = 4;
  c.seq_len = 16 * 1024;
  c.topology = "cluster:4x1:nic=25gbps";
  c.pass = PassSelection::backward;
  for (const SyncMode sync : {SyncMode::async, SyncMode::lockstep}) {
    c.sync = sync;
    const Simulation sim = run_simulation(c, catalog());
    for (const DeviceSummary& sum : sim.results[0].passes[0].device_summary) {
      EXPECT_GT(sum.idle_us, 1000.0);
      EXPECT_NEAR(sum.exposed_comm_us, sum.idle_us, 1e-6) << static_cast<int>(sync);
    }
  }
}

TEST(ContextParallel, HybridAtItsEndsIsTheRingOrUlysses) {
  SimulateConfig c = gqa_config();
  const Simulation ring = run_simulation(c, catalog());
  c.cp = "hybrid:1x8";
  const Simulation one_by_ring = run_simulation(c, catalog());
  for (size_t i = 0; i < ring.results.size(); ++i) {
    EXPECT_DOUBLE_EQ(one_by_ring.results[i].time_us, ring.results[i].time_us) << ring.results[i].layout;
  }
  c.layouts = {"contiguous"};
  c.cp = "ulysses";
  const Simulation ulysses = run_simulation(c, catalog());
  c.cp = "hybrid:8x1";
  const Simulation ulysses_by_one = run_simulation(c, catalog());
  EXPECT_DOUBLE_EQ(ulysses_by_one.results[0].time_us, ulysses.results[0].time_us);
}

TEST(ContextParallel, UlyssesOnFreeLinksIsOneDeviceWithItsHeads) {
  SimulateConfig c = gqa_config();
  c.topology = "ideal";
  c.cp = "ulysses";
  const Simulation ulysses = run_simulation(c, catalog());
  // The same attention on one device with 32 / 8 = 4 heads (one K/V head) and no partner.
  SimulateConfig one = gqa_config();
  one.topology = "ideal";
  one.devices = 1;
  one.heads = 4;
  one.kv_heads = 1;
  one.layouts = {"contiguous"};
  const Simulation alone = run_simulation(one, catalog());
  for (const LayoutSimulation& r : ulysses.results) EXPECT_DOUBLE_EQ(r.time_us, alone.results[0].time_us) << r.layout;
  EXPECT_DOUBLE_EQ(ulysses.results[1].speedup_vs_contiguous, 1.0);  // the layout plays no part
}

TEST(ContextParallel, AllGatherCallSumsTheRingsTilesOnASerialKernel) {
  // A kernel that runs one tile after another with no launch or block cost: a call is the sum of
  // its tiles, so the one all-gather call of a device costs what its N ring calls cost together.
  SimulateConfig c = gqa_config();
  c.topology = "ideal";
  c.pass = PassSelection::forward;
  c.layouts = {"contiguous", "zigzag", "striped"};
  KernelProfile serial = load_kernel_profile("", catalog(), catalog().hardware("h100"));
  serial.slots = 1;
  serial.forward.launch_us = 0;
  serial.forward.block_us = 0;
  serial.trims_below_diagonal = false;  // every call as counted: the ring's trimmed ones too
  c.kernel_profile = serial;
  const Simulation ring = run_simulation(c, catalog());
  c.cp = "allgather";
  const Simulation gathered = run_simulation(c, catalog());
  for (size_t i = 0; i < ring.results.size(); ++i) {
    for (Count d = 0; d < c.devices; ++d) {
      EXPECT_NEAR(gathered.results[i].passes[0].device_summary[static_cast<size_t>(d)].busy_us,
                  ring.results[i].passes[0].device_summary[static_cast<size_t>(d)].busy_us, 1e-6)
          << ring.results[i].layout << " device " << d;
    }
  }
}

TEST(ContextParallel, AllGatherPaysTheGatherBeforeComputing) {
  SimulateConfig c = gqa_config();
  c.topology = "nvswitch:8";
  c.pass = PassSelection::forward;
  c.cp = "allgather";
  const Simulation s = run_simulation(c, catalog());
  const Microseconds gather = allgather_us(s.topology, s.cp_group, s.cp_shape.gather_bytes);
  ASSERT_GT(gather, 0);
  for (const LayoutSimulation& r : s.results) {
    const RingTimeline& t = r.passes[0];
    ASSERT_EQ(t.collectives.size(), 1u);
    EXPECT_DOUBLE_EQ(t.collectives[0].end_us, gather);
    for (const DeviceSummary& d : t.device_summary) EXPECT_DOUBLE_EQ(d.finish_us, gather + d.busy_us);
  }
}

TEST(ContextParallel, SkippedHopsAreTheOnesNoLaterDeviceReads) {
  // Causal, contiguous: device s's block is read by devices s..N-1 only, so of its N - 1 hops the
  // first N - 1 - s carry it to a reader.
  const Count n = 8;
  const model::Work w = model::count_work(model::Layout::contiguous(8192, n), model::Mask::causal(8192), {128, 128});
  const std::vector<bool> needed = hops_read_downstream(w.active_tiles);
  Count count = 0;
  for (const bool x : needed) count += x ? 1 : 0;
  EXPECT_EQ(count, n * (n - 1) / 2);
  // Striped reads every block everywhere: every hop but the last round's.
  const model::Work s = model::count_work(model::Layout::striped(8192, n), model::Mask::causal(8192), {128, 128});
  count = 0;
  for (const bool x : hops_read_downstream(s.active_tiles)) count += x ? 1 : 0;
  EXPECT_EQ(count, n * (n - 1));
}

TEST(ContextParallel, SkippingUnreadHopsSavesTransfersUnderAWindow) {
  SimulateConfig c = gqa_config();
  c.mask = "window:4096";
  c.topology = "cluster:8x1";  // every hop crosses a NIC
  c.layouts = {"contiguous"};
  const Simulation all = run_simulation(c, catalog());
  c.skip_unread_hops = true;
  const Simulation skipped = run_simulation(c, catalog());
  EXPECT_LT(skipped.results[0].time_us, all.results[0].time_us);
  Count sent = 0;
  for (Count r = 0; r < c.devices; ++r) {
    for (Count d = 0; d < c.devices; ++d) sent += skipped.results[0].passes[0].at(r, d).send_end_us > skipped.results[0].passes[0].at(r, d).send_start_us ? 1 : 0;
  }
  // A 4k window over 8k blocks reads only the block before: one hop per block, the last wrapping none.
  EXPECT_EQ(sent, c.devices - 1);
}

TEST(ContextParallel, GradientsFollowTheirBlockToItsLastReaderThenGoHome) {
  // Causal, contiguous: block s is read at rounds 0 .. N-1-s. Its owner's share stays home; the
  // accumulator starts at the next reader (round 1), rides the ring to the last reader and goes
  // home from there; block 0's last reader is N-1, whose ring hop is home.
  const Count n = 8;
  const model::Work w = model::count_work(model::Layout::contiguous(8192, n), model::Mask::causal(8192), {128, 128});
  const std::vector<GradHop> hops = grad_hops_needed(w.active_tiles);
  Count ring = 0, home = 0;
  for (const GradHop h : hops) {
    ring += h == GradHop::ring ? 1 : 0;
    home += h == GradHop::home ? 1 : 0;
  }
  EXPECT_EQ(ring, (n - 1) + (n - 3) * (n - 2) / 2);  // block 0: N-1 hops; block s in 1..N-2: N-2-s
  EXPECT_EQ(home, n - 2);                       // blocks 1..N-2; block N-1 never leaves its owner
  EXPECT_EQ(hops[static_cast<size_t>(6 * n + 7)], GradHop::home);  // block 1, last read by device 7 at round 6
  EXPECT_EQ(hops[static_cast<size_t>(7 * n + 7)], GradHop::ring);  // block 0's last reader: its ring hop is home
  EXPECT_EQ(hops[static_cast<size_t>(0 * n + 7)], GradHop::none);  // block 7: read by its owner alone
  EXPECT_EQ(hops[static_cast<size_t>(0 * n + 0)], GradHop::none);  // block 0's owner keeps its share
  EXPECT_EQ(hops[static_cast<size_t>(1 * n + 1)], GradHop::ring);  // and device 1 starts the accumulator
  // Striped: every device reads every block, so every accumulator makes the ring from the
  // owner's next device round, N - 1 hops, the last one home.
  const model::Work st = model::count_work(model::Layout::striped(8192, n), model::Mask::causal(8192), {128, 128});
  const std::vector<GradHop> striped = grad_hops_needed(st.active_tiles);
  for (size_t i = 0; i < striped.size(); ++i) EXPECT_EQ(striped[i], i < static_cast<size_t>(n) ? GradHop::none : GradHop::ring) << i;
}

TEST(ContextParallel, SkippingUnreadHopsSkipsGradientHopsToo) {
  SimulateConfig c = gqa_config();
  c.mask = "window:4096";
  c.topology = "cluster:8x1";
  c.layouts = {"contiguous"};
  const Simulation all = run_simulation(c, catalog());
  c.skip_unread_hops = true;
  const Simulation skipped = run_simulation(c, catalog());
  const RingTimeline& every = all.results[0].passes[1];
  const RingTimeline& fewer = skipped.results[0].passes[1];
  ASSERT_EQ(fewer.pass, RingPass::backward);
  Count sent = 0;
  for (Count r = 0; r < c.devices; ++r) {
    for (Count d = 0; d < c.devices; ++d) sent += fewer.at(r, d).grad_send_end_us > fewer.at(r, d).grad_send_start_us ? 1 : 0;
  }
  // Block s (s < 7) is read by its owner and by s + 1: the owner's share stays home, s + 1's goes
  // straight home, one hop a block.
  EXPECT_EQ(sent, c.devices - 1);
  EXPECT_LT(fewer.makespan_us(), every.makespan_us());
  // The hop home from device s + 1 to s crosses the network as a K/V hop does here: it takes as long.
  const RoundRecord& there = fewer.at(0, 2);
  const RoundRecord& back = fewer.at(1, 3);
  EXPECT_NEAR(back.grad_send_end_us - back.grad_send_start_us, there.send_end_us - there.send_start_us, 1e-9);
}

// The hops home of dK/dV leave beside the same hops of the rings beside this one, and share the
// links they cross as the K/V hops do. On pcie-8gpu with -M 2, ring 0 (GPUs 0, 2, 4, 6) sends
// position 1's accumulator home (GPU 2 -> 0) while ring 1 sends GPU 3's to GPU 1 through the same
// PCIe switches: each gets 12.5 of their 25 GB/s, as ring 0's K/V hop GPU 0 -> 2 does beside
// GPU 1 -> 3; GPU 4 -> 2 shares the 20 GB/s socket link with GPU 5 -> 3, 10 GB/s as GPU 2 -> 4
// gets. Before 2026-12-04 the hops home ran at the whole link (2688 and 3361 us, not 5373 and 6717).
TEST(ContextParallel, HopsHomeShareTheirLinksWithTheRingsBeside) {
  SimulateConfig c = gqa_config();
  c.seq_len = 64 * 1024;
  c.heads = 16;
  c.kv_heads = 16;
  c.devices = 4;
  c.model_parallel = 2;
  c.topology = "pcie-8gpu";
  c.mask = "window:16384";
  c.skip_unread_hops = true;
  c.layouts = {"contiguous"};
  c.pass = PassSelection::backward;
  const Simulation sim = run_simulation(c, catalog());
  const RingTimeline& t = sim.results[0].passes[0];
  const auto wire = [](Microseconds start, Microseconds end) { return end - start; };
  const RoundRecord& kv0 = t.at(0, 0);
  const RoundRecord& kv1 = t.at(0, 1);
  const RoundRecord& home1 = t.at(1, 1);  // position 1's accumulator of block 0, home to position 0
  const RoundRecord& home2 = t.at(1, 2);  // position 2's of block 1, home to position 1
  EXPECT_NEAR(wire(home1.grad_send_start_us, home1.grad_send_end_us), wire(kv0.send_start_us, kv0.send_end_us), 1e-9);
  EXPECT_NEAR(wire(home2.grad_send_start_us, home2.grad_send_end_us), wire(kv1.send_start_us, kv1.send_end_us), 1e-9);
  // 67 MB a hop (16k tokens, 8 K/V heads a device, 128 x 2 bytes, K and V): the socket link's
  // 10 GB/s share takes 1.25x the switches' 12.5.
  EXPECT_GT(wire(home2.grad_send_start_us, home2.grad_send_end_us), 1.2 * wire(home1.grad_send_start_us, home1.grad_send_end_us));
}

// Zigzag under a 4k window at 64k over 8 NICs: only block 0 goes unread (after device 1). Its
// accumulator's hop home, 1 -> 0, lands on device 0's incoming link in the round where the ring
// sends device 7's accumulator there too, which waits one hop's serialisation. The hops the option
// saves (no accumulator leaves its owner at round 0: the owner's share is home) give that back
// but for the route's latency: a comm-bound backward gains nothing here. The saving of the option
// is the contiguous layout's, not this one's; the README says so.
TEST(ContextParallel, AHopHomeSharesItsOwnersIncomingLinkWithTheRing) {
  SimulateConfig c = gqa_config();
  c.mask = "window:4096";
  c.topology = "cluster:8x1:nic=100gbps";
  c.layouts = {"zigzag"};
  c.pass = PassSelection::backward;
  const Simulation all = run_simulation(c, catalog());
  c.skip_unread_hops = true;
  const Simulation skipped = run_simulation(c, catalog());
  const RingTimeline& every = all.results[0].passes[0];
  const RingTimeline& fewer = skipped.results[0].passes[0];
  const RoundRecord& home = fewer.at(1, 1);  // block 0's last reader sends it home
  const RoundRecord& ring = fewer.at(1, 7);  // device 7's accumulator, into device 0 the same round
  const double hop_us = home.grad_send_end_us - home.grad_send_start_us;
  // Device 7's send waits for the home send to leave device 0's link: one hop's serialisation
  // (its latency overlaps).
  const double wait_us = ring.grad_send_start_us - home.grad_send_start_us;
  EXPECT_GT(wait_us, 0.99 * hop_us);
  EXPECT_LT(wait_us, hop_us);
  EXPECT_NEAR(fewer.makespan_us() - every.makespan_us(), kLinksPerNetworkHop * kDefaultNicLatencyUs, 1e-6);
}

TEST(ContextParallel, RingSettingsAreRefusedWithoutARing) {
  SimulateConfig c = gqa_config();
  c.cp = "allgather";
  c.sync = SyncMode::lockstep;
  EXPECT_THROW((void)plan_simulation(c, catalog()), model::InputError);
  c.sync = SyncMode::async;
  c.kv_buffers = 3;
  EXPECT_THROW((void)plan_simulation(c, catalog()), model::InputError);
  c.kv_buffers = 2;
  c.skip_unread_hops = true;
  EXPECT_THROW((void)plan_simulation(c, catalog()), model::InputError);
  c.cp = "hybrid:4x2";
  EXPECT_NO_THROW((void)plan_simulation(c, catalog()));
}

// hybrid:2x4 on 8 GPUs behind PCIe switches: Ulysses pairs share a switch, and the rings 0, 2, 4, 6
// and 1, 3, 5, 7 run side by side through the same switch uplinks and socket link, so each gets
// half of them (25 -> 12.5 GB/s, the 20 GB/s socket link -> 10). -M 2 places two rings the same way.
TEST(ContextParallel, RingsSideBySideHalveTheLinksTheyShare) {
  for (const char* cp : {"hybrid:2x4", "ring"}) {
    SimulateConfig c;
    c.hardware = "h100";
    c.topology = "pcie-8gpu";
    c.seq_len = 1 << 15;
    c.heads = 32;
    c.kv_heads = 32;
    c.cp = cp;
    c.devices = std::string(cp) == "ring" ? 4 : 8;
    c.model_parallel = std::string(cp) == "ring" ? 2 : 1;
    SimulationPlan plan = plan_simulation(c, catalog());
    place_on_topology(plan);
    const Simulation& sim = plan.simulation;
    ASSERT_EQ(sim.ring_order, (std::vector<Count>{0, 2, 4, 6})) << cp;
    std::vector<double> bandwidth;
    for (const Route& hop : sim.hops) bandwidth.push_back(hop.bandwidth);
    EXPECT_EQ(bandwidth, (std::vector<double>{12.5, 10, 12.5, 10})) << cp;
    EXPECT_EQ(sim.hops_shared_by, (std::vector<Count>{2, 2, 2, 2})) << cp;
  }
}

}  // namespace
}  // namespace stripesim::sim
