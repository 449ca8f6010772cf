#pragma once
// The ring as real implementations run it (ring-flash-attention, TransformerEngine), as a
// discrete-event simulation. At round r device d computes on the K/V block it holds while it
// sends that block on to d + 1 and receives the next from d - 1:
//  - compute(r, d) starts when block r is on d, d's compute stream is free and, with lockstep
//    sync, every device has finished round r - 1 (barrier);
//  - the send of block r from d starts once block r is on d, d's previous send is done, and
//    d + 1 has a free buffer: with B K/V buffers, block r + 1 - B on d + 1 must be finished
//    (computed and forwarded). The last round sends nothing;
//  - a send occupies every link direction on its route for bytes / bottleneck bandwidth (FIFO,
//    in the order asked) and arrives after the route's latency on top;
//  - backward: K/V travel as forward; the dK/dV accumulators follow, each sent once the device
//    has computed its round and received the accumulator for that block, N hops (the last one
//    brings them home). A K/V hop carries kv_bytes, a dK/dV hop grad_bytes (kv_bytes unless the
//    accumulators travel in another precision). With hops skipped (grad_hops), the owner's share
//    stays home and an accumulator starts at the block's next reader, follows the K/V to its
//    last, and goes home from there.
// Serial sync: one processor plays every device in turn, as the CPU validator does (and one GPU
// timing a ring call by call): round by round every device's compute, then every hand-off of
// the round (and, backward, every dK/dV hop), nothing overlapping anything.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "stripesim/model/work/work_matrix.hpp"
#include "stripesim/sim/event_queue.hpp"
#include "stripesim/sim/topology.hpp"

namespace stripesim::sim {

enum class SyncMode { async, lockstep, serial };
enum class RingPass { forward, backward };
// Where a dK/dV accumulator goes after a round: to the next ring position, straight to the
// block's owner (the route in RingSetup::grad_home), or nowhere.
enum class GradHop : std::uint8_t { ring, home, none };

struct RingSetup {
  Count devices = 0;
  std::vector<Microseconds> compute_us;  // [round * devices + device]
  std::vector<Route> hops;               // hops[d]: ring position d to d + 1
  Bytes kv_bytes = 0;                    // K and V of one block, per hop
  Bytes grad_bytes = 0;                  // backward: a dK/dV accumulator per hop; 0: kv_bytes
  RingPass pass = RingPass::forward;
  SyncMode sync = SyncMode::async;
  Count kv_buffers = 2;
  Microseconds start_us = 0;
  // [round * devices + device]: whether the K/V block device sends on at that round is read
  // further down the ring; a block nobody downstream reads stays where it is (no transfer). Empty:
  // every block travels the whole ring, as ring implementations that ignore the mask do.
  std::vector<bool> send_needed;
  // Backward, [round * devices + device]: where the dK/dV accumulator of the block device holds at
  // that round goes next. Empty: to d + 1 every round, as implementations that ignore the mask do.
  std::vector<GradHop> grad_hops;
  // grad_home[s]: the route from the last reader of ring position s's block home to s (for its
  // GradHop::home; empty for a block without one).
  std::vector<Route> grad_home;
  // Whether the timeline keeps its N x N per-(round, device) records: the per-device summaries
  // never need them (they are added up as the ring runs), only what prints or traces each round
  // does. At 1024 devices they are 72 MB a pass, whose first touch dominated the run.
  bool keep_rounds = true;
};

// Which K/V hops of a ring carry a block some later device reads: [round * devices + device],
// from the active tiles of every (round, device).
[[nodiscard]] std::vector<bool> hops_read_downstream(const model::WorkMatrix& active_tiles);

// Where each dK/dV accumulator goes when unread hops are skipped: the owner's share of a block
// stays home (round 0: none), the accumulator holds nothing before the block's next reader
// (none), follows the K/V from there to its last reader (ring), then goes straight home (home;
// ring when the last reader is the owner's predecessor anyway), and is home afterwards (none).
[[nodiscard]] std::vector<GradHop> grad_hops_needed(const model::WorkMatrix& active_tiles);

inline constexpr Microseconds kNever = -1.0;

struct RoundRecord {
  Microseconds arrival_us = kNever;  // K/V block of this round present on the device
  Microseconds compute_start_us = kNever;
  Microseconds compute_end_us = kNever;
  Microseconds send_start_us = kNever;  // K/V sent on to d + 1 (never in the last round)
  Microseconds send_end_us = kNever;
  Microseconds grad_send_start_us = kNever;  // backward: dK/dV sent on
  Microseconds grad_send_end_us = kNever;
  // When each send was issued: the block (and a free buffer downstream) was there, and for a
  // relayed accumulator when the upstream device issued it. Until the wire start it queues on
  // a link: communication, not imbalance. Internal: the summaries and tests read them.
  Microseconds send_issued_us = kNever;
  Microseconds grad_send_issued_us = kNever;
};

struct DeviceSummary {
  Microseconds busy_us = 0;           // computing
  Microseconds idle_us = 0;           // the rest of the pass
  Microseconds exposed_comm_us = 0;   // waiting for a block while it is on the wire or queued for one, or for transfers after the last compute
  Microseconds finish_us = 0;
  // Backward: when the last dK/dV accumulator of the device's own block reached it (its gradients
  // complete there); the pass's start when none travelled.
  Microseconds gradients_home_us = 0;
};

// A collective every member of the context-parallel group takes part in (all-gather,
// reduce-scatter, all-to-all): what context parallelism other than the ring adds to a pass.
struct CollectiveInterval {
  std::string name;  // "all-gather K/V 0"
  Microseconds start_us = 0;
  Microseconds end_us = 0;
  Count device = -1;  // -1: the whole group at once; else the one device (group of) it delays
};

// One attention pass. A ring has a round per device; an all-gather pass a round per head group
// (one call on the gathered K/V), an all-to-all pass one round.
struct RingTimeline {
  Count devices = 0;
  RingPass pass = RingPass::forward;
  Microseconds start_us = 0;
  Microseconds end_us = 0;
  std::vector<RoundRecord> rounds;  // [round * devices + device]; empty unless RingSetup::keep_rounds
  std::vector<DeviceSummary> device_summary;
  std::vector<CollectiveInterval> collectives;
  std::uint64_t events = 0;

  [[nodiscard]] Count round_count() const { return devices == 0 ? 0 : static_cast<Count>(rounds.size()) / devices; }

  [[nodiscard]] const RoundRecord& at(Count round, Count device) const {
    return rounds[static_cast<size_t>(round * devices + device)];
  }
  [[nodiscard]] Microseconds makespan_us() const { return end_us - start_us; }
  // Each device's idle time, once its busy time and the pass's end are known: the pass's span
  // minus what it computed (every kind of pass reports idle so). A device that computed all the
  // pass long has busy times that add up to its span give or take the last bit of rounding
  // (on --topology ideal, -2e-13 us of idle): held to the span, never past it.
  void settle_idle() {
    for (DeviceSummary& sum : device_summary) {
      sum.busy_us = std::min(sum.busy_us, makespan_us());
      sum.idle_us = makespan_us() - sum.busy_us;
    }
  }
};

// `links` holds one FIFO server per directed link of the topology; it carries over between
// calls so that a backward pass finds the wires as the forward pass left them.
[[nodiscard]] RingTimeline simulate_ring(const RingSetup& setup, std::vector<FifoServer>& links);

}  // namespace stripesim::sim
