#pragma once
// A training step around the attention ring (`simulate --scope layer|step`). Every layer is
// alike, so the ring is simulated once per pass and priced per layer; on each device:
//   forward   matmuls (Q, K, V, O projections, MLP), the layer's element-wise work, the ring's
//             forward, two model-parallel all-reduces of the layer's activations (Megatron's
//             tensor parallelism);
//   backward  with recomputation the whole forward again, then the matmuls and the element-wise
//             work twice (input and weight gradients), the ring's backward and two more all-reduces;
// then the LM head forward and backward, and the gradient all-reduce over every copy of the
// weights, overlapped with the backward as DDP and FSDP buckets do: only what outlasts the
// backward is exposed. With the training state sharded over those copies (ZeRO, `--zero`), the
// all-reduce becomes a reduce-scatter of the gradients (hidden under the backward) and an
// all-gather of the weights (under the next forward; at stage 3 once more in the backward). Matmuls run at peak[matmul_precision] x matmul_efficiency, element-wise
// work moves elementwise_bytes_per_dmodel x d_model bytes per token at the memory bandwidth
// (hardware profile); attention is the ring simulation (kernel cost model and links); collectives are
// ring all-reduces on the topology. A layer is a phase: the next one starts when the ring's
// slowest device is done (the breakdown follows that device).
#include <string_view>
#include <vector>

#include "stripesim/model/flops/hardware_profile.hpp"
#include "stripesim/model/flops/transformer_model.hpp"
#include "stripesim/sim/collectives.hpp"
#include "stripesim/sim/ring_order.hpp"
#include "stripesim/sim/ring_simulator.hpp"
#include "stripesim/sim/topology.hpp"

namespace stripesim::sim {

enum class Scope { attention, layer, step };

[[nodiscard]] Scope parse_scope(std::string_view text);
[[nodiscard]] const char* to_string(Scope scope);

// How much of the training state the N x D copies of a model-parallel rank's weights shard among
// them (ZeRO's stages, Rajbhandari et al. 2020): none (DDP); the fp32 master weights and Adam's
// moments (1: Megatron's distributed optimizer); the gradients too (2: FSDP SHARD_GRAD_OP); the
// bf16 weights too (3: FSDP FULL_SHARD), gathered a layer at a time.
enum class ZeroStage { none = 0, optimizer = 1, gradients = 2, weights = 3 };

// "0" to "3"; `what` names the input in the message (a flag, an experiment file's field).
[[nodiscard]] ZeroStage parse_zero_stage(std::string_view text, std::string_view what = "--zero");
[[nodiscard]] int to_int(ZeroStage stage);
// Mixed-precision training with Adam (ZeRO, Rajbhandari et al. 2020), bytes per parameter: bf16
// weights, then bf16 gradients and fp32 master weights and moments.
inline constexpr double kWeightBytesPerParameter = 2;
inline constexpr double kGradientBytesPerParameter = 2;
inline constexpr double kOptimizerBytesPerParameter = 12;
// Activations and their gradients travel and are kept in bf16.
inline constexpr double kActivationBytesPerElement = 2;
// What each stage shards, as the --zero flags of simulate and plan describe it.
inline constexpr std::string_view kZeroStagesHelp =
    "the training state the N x D copies of the weights shard among them: 0 none (DDP), 1 optimizer states "
    "(Megatron's distributed optimizer), 2 and gradients (FSDP SHARD_GRAD_OP), 3 and weights (FSDP FULL_SHARD) "
    "[default: 0]";

// How a hardware profile's sources.elementwise_bytes_per_dmodel begins when calibrate-step fitted
// it: written by the fit, read by the note that such a cost belongs to one code base.
inline constexpr std::string_view kElementwiseFitSource = "fitted by: stripesim calibrate-step";

struct StepBreakdown {
  Microseconds matmul_us = 0;
  Microseconds elementwise_us = 0;
  Microseconds attention_compute_us = 0;  // the ring's last device computing
  Microseconds attention_comm_us = 0;     // its exposed communication
  Microseconds attention_idle_us = 0;     // its waiting for slower neighbours
  Microseconds model_parallel_comm_us = 0;
  Microseconds gradient_comm_us = 0;  // the part of the gradient all-reduce the backward does not hide

  [[nodiscard]] Microseconds total_us() const;
};

// The step's parts by the names its outputs give them ("matmul": matmul_us, ...), in order:
// the step's time is their sum, and every output (simulate's JSON and CSV, the baselines
// `check` reads, plan's rows) lists them from here, so a part added is a part written.
struct StepPart {
  std::string_view name;
  Microseconds StepBreakdown::*us;
};
inline constexpr StepPart kStepParts[] = {{"matmul", &StepBreakdown::matmul_us},
                                          {"elementwise", &StepBreakdown::elementwise_us},
                                          {"attention_compute", &StepBreakdown::attention_compute_us},
                                          {"attention_comm", &StepBreakdown::attention_comm_us},
                                          {"attention_idle", &StepBreakdown::attention_idle_us},
                                          {"model_parallel_comm", &StepBreakdown::model_parallel_comm_us},
                                          {"gradient_comm", &StepBreakdown::gradient_comm_us}};

inline Microseconds StepBreakdown::total_us() const {
  Microseconds total = 0;
  for (const StepPart& part : kStepParts) total += this->*part.us;
  return total;
}

// Bytes per device.
struct StepMemory {
  double weights = 0;                  // bf16
  double gradients_and_optimizer = 0;  // bf16 gradients, fp32 master weights and Adam's two moments (or this device's shards)
  double activations = 0;              // kept for the backward
  double logits = 0;                   // fp32, for the loss (step scope)
  double kv_buffers = 0;               // K/V and their buffers under the context parallelism (and dK/dV in the backward)

  [[nodiscard]] double total() const { return weights + gradients_and_optimizer + activations + logits + kv_buffers; }
};

struct StepEstimate {
  StepBreakdown breakdown;
  Microseconds time_us = 0;
  double tokens_per_second = 0;
  double model_flops = 0;  // per replica: the model's FLOPs (3x forward for a step), attention on unmasked pairs
  // The time the model FLOPs take at peak over the step's on a replica's devices: matmuls at
  // peak[matmul_precision], attention at its own precision's (fp8 attention beside bf16 matmuls
  // passed 100 % against the bf16 peak alone); model_flops / (devices x time x
  // peak[matmul_precision]) where the two precisions are one.
  double mfu = 0;
  StepMemory memory;
  bool exceeds_memory = false;
};

struct StepShape {
  Scope scope = Scope::step;
  bool forward = true;
  bool backward = true;
  bool recompute = false;
  ZeroStage zero = ZeroStage::none;
  model::TransformerModel model;
  model::HardwareProfile hardware;  // with matmul_efficiency
  // An attention FLOP in FLOPs at the matmul precision's peak: peak[matmul_precision] over the
  // peak of the attention's precision (--dtype; 0.5 for fp8 beside bf16 on an H100), as MFU counts it.
  double attention_flop_weight = 1.0;
  model::Mesh mesh;
  Count seq_len = 0;         // as computed, --pad-documents' padding included
  Count padding_tokens = 0;  // of seq_len: computed, but no useful work (not in throughput or MFU)
  Count batch = 1;
  double unmasked_pairs = 0;  // of one sequence without its padding, under the mask: the useful pairs
  double kv_memory_bytes = 0;           // K/V and their buffers for the forward (CpShape)
  double kv_backward_memory_bytes = 0;  // ... and with the backward's gradients beside them
  Microseconds activation_allreduce_us = 0;  // one all-reduce of a layer's activations in the model-parallel group
  Bytes activation_allreduce_bytes = 0;          // ... of this many bytes
  Microseconds gradient_allreduce_us = 0;    // the weights' gradients over their copies
  // Sharded state (zero > none): an all-gather of the bf16 weights' shards over their copies; the
  // gradients' reduce-scatter moves the same bytes the other way and takes as long.
  Microseconds weight_allgather_us = 0;
};

// Parameters held by one device of a model-parallel group of `model_parallel` (embedding included).
[[nodiscard]] double parameters_per_device(const model::TransformerModel& model, Count model_parallel);

// `passes`: the ring's forward and/or backward timelines of one layer, as simulated.
[[nodiscard]] StepEstimate estimate_step(const StepShape& shape, const std::vector<RingTimeline>& passes);

}  // namespace stripesim::sim
