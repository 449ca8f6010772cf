#pragma once
// Collectives on the topology, as NCCL runs them, in closed form:
//  - ring algorithms (all-reduce, all-gather, reduce-scatter) move the data in steps around the
//    group in its order; each step every member sends one chunk to the next at once, so a step
//    lasts as long as the group's slowest hop (its latency plus chunk / bottleneck bandwidth,
//    a link crossed by k of the step's hops giving each 1/k of it);
//  - all-to-all posts every pairwise send at once: each directed link carries the chunks of
//    every route that crosses it, so the call lasts the longest route latency plus the busiest
//    link's bytes over its bandwidth (over an NVSwitch a GPU's own link; across nodes, its NIC).
// Groups of one move nothing and take no time. `beside`: groups of the same collective running at
// the same time on GPUs of their own (other model-parallel ranks, replicas): a link they share
// with `group` carries their bytes too, and the time is the slowest group's, `group` or one
// beside it (a step's phase ends when every group's collective has: on a placement whose groups
// differ, a group that crosses nodes where the first does not sets it).
#include <vector>

#include "stripesim/sim/topology.hpp"

namespace stripesim::sim {

using Groups = std::vector<std::vector<Count>>;

// `steps` ring steps of `chunk` bytes over `group` (GPUs in ring order).
[[nodiscard]] Microseconds ring_steps_us(const Topology& topology, const std::vector<Count>& group, Bytes chunk,
                                         Count steps, const Groups& beside = {});

// Every member ends with the sum of `bytes`: 2 (K - 1) steps of bytes / K.
[[nodiscard]] Microseconds allreduce_us(const Topology& topology, const std::vector<Count>& group, Bytes bytes,
                                        const Groups& beside = {});
// Which of `groups` (each a ring taking steps of `chunk` bytes at once with the others, hops
// that cross one link sharing it) has the slowest hop: an index into `groups`, the first of the
// slowest. The group a ring collective's time is, and the ring a simulation follows.
[[nodiscard]] size_t slowest_ring_group(const Topology& topology, const Groups& groups, Bytes chunk);
// The same for groups each all-reducing `bytes`: what a report names as the group it priced.
[[nodiscard]] size_t slowest_allreduce_group(const Topology& topology, const Groups& groups, Bytes bytes);
// Every member contributes `bytes_per_member` and ends with all K contributions: K - 1 steps.
// A reduce-scatter (each member ends with the sum of its own share) is the same ring run the
// other way and takes the same time.
[[nodiscard]] Microseconds allgather_us(const Topology& topology, const std::vector<Count>& group,
                                        Bytes bytes_per_member, const Groups& beside = {});
// Every member sends `bytes_per_pair` to each other member (and keeps its own share).
[[nodiscard]] Microseconds alltoall_us(const Topology& topology, const std::vector<Count>& group, Bytes bytes_per_pair,
                                       const Groups& beside = {});

// The same collectives run by one processor that plays `devices` devices in turn, each in a group
// like `group` (--sync serial: the validator's cpu and cuda backends): it builds every device's
// result itself, one copy after another, and a device's own part is a copy too (a gathered K/V
// or a head-major Q, K, V holds every part of the group, the device's own among them). So
// devices x |group| copies of `bytes_per_part`, each priced as a hand-off over the group's
// slowest hop: an all-gather (part: a member's contribution) and an all-to-all (part: a pair's
// share) alike.
[[nodiscard]] Microseconds one_processor_collective_us(const Topology& topology, const std::vector<Count>& group,
                                                       Count devices, Bytes bytes_per_part);

}  // namespace stripesim::sim
