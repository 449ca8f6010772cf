#pragma once
// How the context-parallel group of N devices shares one attention layer (`simulate --cp`):
//  ring        K/V blocks passed around the ring (p2p: ring-flash-attention, TransformerEngine's
//              p2p, Striped Attention); N rounds per pass, compute beside the hand-off;
//  allgather   K/V all-gathered first (the Llama 3 scheme, TransformerEngine's all_gather,
//              PyTorch's all-gather rotation), then each device attends its local queries to the
//              whole K/V in one call; the backward reduce-scatters dK/dV. With G head groups the
//              gather of group g + 1 runs under the attention of group g (two gathered buffers);
//  ulysses     Q, K, V re-sharded from sequence to heads by an all-to-all (DeepSpeed Ulysses):
//              each device attends the whole sequence on H / N query heads, the output goes back
//              by another all-to-all. K/V heads are replicated when N exceeds them. The layout
//              does not change its compute (the kernel sees the sequence in order);
//  hybrid:UxR  Ulysses over U devices (consecutive GPUs: inside a node) times a ring over R
//              (USP, TransformerEngine's a2a+p2p, Megatron's hierarchical CP): the layout cuts the
//              sequence into R ring blocks of U local blocks each.
// Collectives take their closed-form times on the topology (collectives.hpp); every device of the
// group takes part, so a collective starts when its slowest member is ready.
#include <string>
#include <string_view>
#include <vector>

#include "stripesim/sim/ring_simulator.hpp"

namespace stripesim::sim {

enum class CpAlgorithm { ring, allgather, ulysses, hybrid };

struct ContextParallel {
  CpAlgorithm algorithm = CpAlgorithm::ring;
  Count head_groups = 1;  // allgather: K/V gathered in this many head groups
  Count ulysses = 1;      // hybrid: U, the all-to-all degree (ulysses: N)
};

// "ring", "allgather", "allgather:G", "ulysses", "hybrid:UxR" for a group of `devices`
// (U x R must be `devices`). Throws model::InputError about --cp (by kind: a file names its field).
[[nodiscard]] ContextParallel parse_context_parallel(std::string_view text, Count devices);
[[nodiscard]] std::string to_string(const ContextParallel& cp, Count devices);

// The all-to-all degree (1 for ring and allgather) and the ring's (1 for allgather and ulysses).
[[nodiscard]] Count ulysses_degree(const ContextParallel& cp, Count devices);
[[nodiscard]] Count ring_degree(const ContextParallel& cp, Count devices);
// The blocks a layout cuts the sequence into: a hybrid's ring degree R (its all-to-all splits each
// block over U devices), else the group's N (Ulysses, whose kernel ignores the layout, included).
[[nodiscard]] Count layout_degree(const ContextParallel& cp, Count devices);

// One device's attention before context parallelism splits it: heads and K/V heads of its
// model-parallel rank, `batch` sequences of `seq_len` tokens, over a group of `devices`.
struct AttentionShape {
  Count seq_len = 0;
  Count devices = 1;
  Count batch = 1;
  Count heads = 1;
  Count kv_heads = 1;
  Count head_dim = 128;
  Bytes element = 2;
};

// What context parallelism makes of that shape on each device.
struct CpShape {
  Count streams = 1;           // heads x sequences in each attention call
  Count kv_heads = 1;          // K/V heads each call reads (replicated ones included)
  Bytes ring_hop_bytes = 0;    // ring, hybrid: K and V of one ring block
  Bytes gather_bytes = 0;      // allgather: each member's K/V of one head group
  Bytes qkv_pair_bytes = 0;    // ulysses, hybrid: Q, K, V each device sends each other member
  Bytes out_pair_bytes = 0;    // ... and the output (or its gradient) likewise
  double memory_bytes = 0;     // K/V and their buffers on one device, for the forward
  double backward_memory_bytes = 0;  // the same when the backward runs (gradients beside them)
};

// Throws model::InputError when the heads cannot be split (Ulysses needs H divisible by its
// degree and K/V heads dividing or divided by it; head groups must divide the K/V heads).
[[nodiscard]] CpShape cp_shape(const ContextParallel& cp, const AttentionShape& shape, Count kv_buffers);

// One stage of a collective pass: a collective every device waits for, each device's compute,
// then a collective that starts once every device has computed (either may take no time).
struct CollectiveStage {
  std::string in_name;
  Microseconds in_us = 0;
  std::vector<Microseconds> compute_us;  // per device
  std::string out_name;
  Microseconds out_us = 0;
};

// allgather and ulysses: the stages in order. Stage g's input collective is issued before stage
// g - 1 is computed and starts once every device has finished computing stage g - 2 (two input
// buffers); a device computes stage g once its input is in and it has finished stage g - 1; a
// stage's output collective starts once every device has computed it. Input and output
// collectives share the links: one at a time, in the order issued. Rounds of the timeline are
// the stages.
// `one_processor`: one processor plays every device (the validator's cpu and cuda backends,
// --sync serial): the devices compute one after another (the collectives' times are given as
// that processor runs them: one_processor_collective_us).
[[nodiscard]] RingTimeline simulate_collective_pass(RingPass pass, Microseconds start_us,
                                                    const std::vector<CollectiveStage>& stages, bool one_processor = false);

// hybrid: a ring timeline (simulated to start at start_us + in_us) with an all-to-all of in_us
// before it and one of out_us for each ring position once it is done and holds its results: its
// last transfer ended and, backward, its block's dK/dV came home.
[[nodiscard]] RingTimeline wrap_ring_in_alltoalls(RingTimeline ring, Microseconds start_us, Microseconds in_us,
                                                  Microseconds out_us, const std::string& in_name,
                                                  const std::string& out_name);

}  // namespace stripesim::sim
