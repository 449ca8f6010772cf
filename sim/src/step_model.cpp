#include "stripesim/sim/step_model.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "stripesim/model/flops/flop_model.hpp"
#include "stripesim/model/io/input_error.hpp"

namespace stripesim::sim {

Scope parse_scope(std::string_view text) {
  if (text == "attention") return Scope::attention;
  if (text == "layer") return Scope::layer;
  if (text == "step") return Scope::step;
  throw model::InputError(model::Input::scope, std::string(text), "expected attention, layer or step", model::Shown::quoted);
}

const char* to_string(Scope scope) {
  switch (scope) {
    case Scope::attention: return "attention";
    case Scope::layer: return "layer";
    case Scope::step: return "step";
  }
  return "attention";
}

ZeroStage parse_zero_stage(std::string_view text, std::string_view what) {
  if (text == "0") return ZeroStage::none;
  if (text == "1") return ZeroStage::optimizer;
  if (text == "2") return ZeroStage::gradients;
  if (text == "3") return ZeroStage::weights;
  throw model::InputError(fmt::format("{} '{}': expected 0 (nothing sharded), 1 (optimizer states), 2 (and gradients) or 3 "
                                      "(and weights)",
                                      what, text));
}

int to_int(ZeroStage stage) { return static_cast<int>(stage); }

double parameters_per_device(const model::TransformerModel& model, Count model_parallel) {
  // A matmul does 2 FLOPs per weight per token; the embedding table is as large as the LM head.
  const model::LayerFlops flops = model::count_layer_flops(model);
  const double parameters = static_cast<double>(model.layers) * flops.matmul_per_token / 2.0 + flops.lm_head_per_token;
  return parameters / static_cast<double>(model_parallel);
}

namespace {

// Activations a layer keeps for its backward per token, in units of d_model bytes, with tensor
// parallelism t, sequence parallelism (the element-wise work, and with it the activations it
// touches, is split over the model-parallel group, as the times below assume) and a fused
// attention kernel that stores no scores: 34 / t (Korthikanti et al. 2022, "Reducing activation
// recomputation"; without sequence parallelism 10 of the 34 would stay whole on every device).
// Recomputation keeps only the layer's bf16 input, split likewise (2 / t), and rebuilds one layer
// at a time (its input then among its 34).
constexpr double kLayerActivationBytesPerDmodel = 34;
constexpr double kLayerInputBytesPerDmodel = kActivationBytesPerElement;

double activation_bytes_per_token(const model::TransformerModel& m, Count model_parallel, double bytes_per_dmodel) {
  return static_cast<double>(m.d_model) * bytes_per_dmodel / static_cast<double>(model_parallel);
}

struct RingPhase {
  Microseconds compute = 0, comm = 0, idle = 0;
  [[nodiscard]] Microseconds total() const { return compute + comm + idle; }
};

// The ring's pass seen from its last device to finish: the next layer waits for it.
RingPhase ring_phase(const RingTimeline& t) {
  const auto last = std::max_element(t.device_summary.begin(), t.device_summary.end(),
                                     [](const DeviceSummary& a, const DeviceSummary& b) { return a.finish_us < b.finish_us; });
  RingPhase phase{last->busy_us, last->exposed_comm_us, 0};
  // Where the three add up exactly, rounding leaves a few 1e-11 us either way: none.
  const Microseconds left = t.makespan_us() - phase.compute - phase.comm;
  phase.idle = left > 1e-9 * t.makespan_us() ? left : 0;
  return phase;
}

// What of the traffic between the copies of the weights the compute does not hide: DDP's
// all-reduce runs under the backward; sharded, the gradients' reduce-scatter runs under the
// backward and the updated weights' all-gather under the next step's forward (stage 3 gathers
// them again in the backward, for the gradients it computes).
Microseconds exposed_gradient_comm_us(const StepShape& s, Microseconds forward, Microseconds backward) {
  const auto beyond = [](Microseconds comm, Microseconds window) { return std::max(0.0, comm - window); };
  const Microseconds gather = s.weight_allgather_us;  // a reduce-scatter of the gradients takes as long
  switch (s.zero) {
    case ZeroStage::none: return beyond(s.gradient_allreduce_us, backward);
    case ZeroStage::optimizer:
    case ZeroStage::gradients: return beyond(gather, backward) + beyond(gather, forward);
    case ZeroStage::weights: return beyond(2 * gather, backward) + beyond(gather, forward);
  }
  return 0;
}

}  // namespace

StepEstimate estimate_step(const StepShape& s, const std::vector<RingTimeline>& passes) {
  const model::TransformerModel& m = s.model;
  const model::LayerFlops flops = model::count_layer_flops(m);
  const double rate_flops_per_us =
      s.hardware.peak_tflops.at(s.hardware.matmul_precision) * s.hardware.matmul_efficiency.value_or(1.0) * 1e6;
  const double mp = static_cast<double>(s.mesh.model_parallel);
  const double local_tokens = static_cast<double>(s.seq_len / s.mesh.devices * s.batch);
  const Microseconds layer_matmul_forward = flops.matmul_per_token * local_tokens / mp / rate_flops_per_us;
  // Element-wise work is split over the model-parallel group with the activations it touches
  // (the paper's JAX code shards hidden states over its model axis, Megatron's sequence
  // parallelism does likewise), at the memory bandwidth.
  const Microseconds layer_elementwise_forward = transfer_time_us(
      s.hardware.elementwise_bytes_per_dmodel * static_cast<double>(m.d_model) * local_tokens / mp, s.hardware.memory_bandwidth);
  const Microseconds head_matmul_forward = flops.lm_head_per_token * local_tokens / mp / rate_flops_per_us;
  // The backward's work as a multiple of the forward's: the FLOP model's training multipliers
  // (2: input and weight gradients), used for the matmuls, the element-wise work and model FLOPs.
  const double backward =
      model::training_multipliers(model::FlopConvention::paper, model::TrainingPass::forward_backward, false).matmul -
      model::training_multipliers(model::FlopConvention::paper, model::TrainingPass::forward, false).matmul;

  RingPhase ring_forward, ring_backward;
  for (const RingTimeline& t : passes) (t.pass == RingPass::forward ? ring_forward : ring_backward) = ring_phase(t);

  // One layer: its forward, its backward (recomputing the forward first when asked).
  StepBreakdown layer;
  auto add_forward = [&] {
    layer.matmul_us += layer_matmul_forward;
    layer.elementwise_us += layer_elementwise_forward;
    layer.attention_compute_us += ring_forward.compute;
    layer.attention_comm_us += ring_forward.comm;
    layer.attention_idle_us += ring_forward.idle;
    layer.model_parallel_comm_us += 2 * s.activation_allreduce_us;
  };
  if (s.forward) add_forward();
  const Microseconds layer_forward = layer.total_us();
  Microseconds layer_backward = 0;
  if (s.backward) {
    const Microseconds before = layer.total_us();
    if (s.recompute) add_forward();
    layer.matmul_us += backward * layer_matmul_forward;
    layer.elementwise_us += backward * layer_elementwise_forward;
    layer.attention_compute_us += ring_backward.compute;
    layer.attention_comm_us += ring_backward.comm;
    layer.attention_idle_us += ring_backward.idle;
    layer.model_parallel_comm_us += 2 * s.activation_allreduce_us;
    layer_backward = layer.total_us() - before;
  }

  StepEstimate e;
  const double layers = s.scope == Scope::step ? static_cast<double>(m.layers) : 1.0;
  e.breakdown = layer;
  for (Microseconds* part : {&e.breakdown.matmul_us, &e.breakdown.elementwise_us, &e.breakdown.attention_compute_us, &e.breakdown.attention_comm_us,
                             &e.breakdown.attention_idle_us, &e.breakdown.model_parallel_comm_us}) {
    *part *= layers;
  }
  // Model FLOPs: forward 1, backward 2 (recomputation is not useful work). A step (forward and
  // backward always) counts the whole model, its LM head included; a layer scope its one layer.
  const double pass_multiplier = (s.forward ? 1.0 : 0.0) + (s.backward ? backward : 0.0);
  // Useful work: padding tokens are computed (the passes above price them) but carry none.
  const Count useful_tokens = (s.seq_len - s.padding_tokens) * s.batch;
  const double tokens = static_cast<double>(useful_tokens);
  const double pairs = s.unmasked_pairs * static_cast<double>(s.batch);
  // The FLOPs a token and an unmasked pair carry: the whole model's, or the one layer's.
  double per_token = flops.matmul_per_token;
  double per_pair = flops.attention_per_pair;
  if (s.scope == Scope::step) {
    e.breakdown.matmul_us += (1 + backward) * head_matmul_forward;
    e.breakdown.gradient_comm_us = exposed_gradient_comm_us(s, layers * layer_forward, layers * layer_backward);
    const model::FlopCounts whole = model::count_flops(m, model::FlopConvention::exact);
    per_token = whole.non_attention_per_token;
    per_pair = whole.attention_per_pair;
  }
  const double attention_flops = pass_multiplier * per_pair * pairs;
  e.model_flops = pass_multiplier * per_token * tokens + attention_flops;
  e.time_us = e.breakdown.total_us();
  e.tokens_per_second = static_cast<double>(useful_tokens * s.mesh.data_parallel) / (e.time_us * 1e-6);
  const double replica_devices = static_cast<double>(s.mesh.model_parallel * s.mesh.devices);
  // Attention's FLOPs weighed as matmul-peak FLOPs: nothing added where the precisions are one.
  const double matmul_peak = s.hardware.peak_tflops.at(s.hardware.matmul_precision);
  e.mfu = (e.model_flops + (s.attention_flop_weight - 1.0) * attention_flops) / (replica_devices * e.time_us * matmul_peak * 1e6);

  // Memory of one device.
  const double parameters = parameters_per_device(m, s.mesh.model_parallel);
  const double layer_bytes = activation_bytes_per_token(m, s.mesh.model_parallel, kLayerActivationBytesPerDmodel) * local_tokens;
  // Sharded state: each of the N x D copies keeps 1 / (N x D) of it. At stage 3 a layer's weights
  // (or the LM head's, when larger) are gathered whole while it runs, and the next one's beside
  // them (prefetched), unless there is one copy.
  const double copies = static_cast<double>(s.mesh.devices * s.mesh.data_parallel);
  const auto held = [&](double bytes, ZeroStage sharded_from) { return s.zero >= sharded_from ? bytes / copies : bytes; };
  const double largest_unit = std::max(flops.matmul_per_token, flops.lm_head_per_token) / 2.0 / mp;
  const bool gathers = s.zero == ZeroStage::weights && copies > 1;  // one copy holds its weights whole
  e.memory.weights = held(kWeightBytesPerParameter * parameters, ZeroStage::weights) +
                     (gathers ? 2.0 * kWeightBytesPerParameter * largest_unit : 0.0);
  if (s.backward) {
    e.memory.gradients_and_optimizer =
        held(kGradientBytesPerParameter * parameters, ZeroStage::gradients) +
        held(kOptimizerBytesPerParameter * parameters, ZeroStage::optimizer);
    const double layer_input_bytes =
        activation_bytes_per_token(m, s.mesh.model_parallel, kLayerInputBytesPerDmodel) * local_tokens;
    // Recomputing: the other layers' inputs, and the whole of the layer being rebuilt, whose
    // input is one of its 34 (counting it apart raised a one-layer scope's memory with --recompute).
    const double kept = s.recompute ? layer_input_bytes * (layers - 1) + layer_bytes : layer_bytes * layers;
    e.memory.activations = kept;
  }
  if (s.scope == Scope::step) e.memory.logits = 4.0 * local_tokens * static_cast<double>(m.vocab) / mp;
  e.memory.kv_buffers = s.backward ? s.kv_backward_memory_bytes : s.kv_memory_bytes;
  e.exceeds_memory = e.memory.total() > s.hardware.memory_gib * kBytesPerGib;
  return e;
}

}  // namespace stripesim::sim
