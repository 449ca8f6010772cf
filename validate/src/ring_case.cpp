#include "stripesim/validate/ring_case.hpp"

#include <fmt/format.h>

#include "stripesim/model/flops/attention_heads.hpp"
#include "stripesim/model/io/input_error.hpp"
#include "stripesim/model/work/layout.hpp"
#include "stripesim/sim/context_parallel.hpp"

namespace stripesim::validate {

using model::InputError;

Precision parse_precision(std::string_view text) {
  if (text == "fp64") return Precision::fp64;
  if (text == "fp32") return Precision::fp32;
  if (text == "bf16") return Precision::bf16;
  if (text == "fp16") return Precision::fp16;
  throw InputError(fmt::format("--dtype '{}': expected fp64, fp32, bf16 or fp16", text));
}

GpuKernel parse_gpu_kernel(std::string_view text) {
  if (text == "flash") return GpuKernel::flash;
  if (text == "wmma") return GpuKernel::wmma;
  if (text == "wgmma") return GpuKernel::wgmma;
  throw InputError(fmt::format("--gpu-kernel '{}': expected flash, wmma or wgmma", text));
}

std::string_view gpu_kernel_name(GpuKernel kernel) {
  switch (kernel) {
    case GpuKernel::flash: return "flash";
    case GpuKernel::wmma: return "wmma";
    case GpuKernel::wgmma: return "wgmma";
  }
  return "?";
}

GpuBackwardKernel parse_gpu_backward_kernel(std::string_view text) {
  if (text == "scalar") return GpuBackwardKernel::scalar;
  if (text == "wmma") return GpuBackwardKernel::wmma;
  throw InputError(fmt::format("--gpu-backward-kernel '{}': expected scalar or wmma", text));
}

std::string_view gpu_backward_kernel_name(GpuBackwardKernel kernel) {
  return kernel == GpuBackwardKernel::scalar ? "scalar" : "wmma";
}

std::string_view precision_name(Precision precision) {
  switch (precision) {
    case Precision::fp64: return "fp64";
    case Precision::fp32: return "fp32";
    case Precision::bf16: return "bf16";
    case Precision::fp16: return "fp16";
  }
  return "fp32";
}

std::string RingCase::label() const {
  return fmt::format("{} n={} N={} {} {}{}{}{}", layout, seq_len, devices, mask, tile.to_string(), cp == "ring" ? "" : " cp=" + cp,
                     backward ? " fwdbwd" : "", q_scale == 1 ? "" : fmt::format(" q x{:g}", q_scale));
}

void check_ring_case(const RingCase& c) {
  if (c.seq_len < 1 || c.seq_len > kMaxValidateTokens) {
    throw InputError(model::Input::seq_len, std::to_string(c.seq_len), fmt::format("the validator runs 1 to {} tokens", kMaxValidateTokens));
  }
  if (c.devices < 1 || c.devices > 64) {
    throw InputError(model::Input::devices, std::to_string(c.devices), "the validator runs 1 to 64 devices");
  }
  if (c.seq_len % c.devices != 0) {
    throw model::IndivisibleLength(c.seq_len, c.devices, fmt::format("each of the N = {} devices holds n/N tokens, so N must divide it", c.devices));
  }
  if (c.heads < 1 || c.heads > 256) throw InputError(fmt::format("--heads {}: expected 1 to 256", c.heads));
  model::require_kv_heads_divide(c.heads, c.kv_heads);
  if (c.head_dim < 1 || c.head_dim > 512) throw InputError(fmt::format("--head-dim {}: expected 1 to 512", c.head_dim));
  // Any other value (a hybrid, head groups, a typo) is refused alike: the simulator's own message
  // would offer the algorithms the validator does not run.
  if (c.cp != "ring" && c.cp != "allgather" && c.cp != "ulysses") {
    throw InputError(fmt::format("--cp {}: the validator runs ring, allgather and ulysses", c.cp));
  }
  const sim::ContextParallel cp = sim::parse_context_parallel(c.cp, c.devices);
  if (c.backward && c.cp != "ring") {
    throw InputError(fmt::format("--pass fwdbwd with --cp {}: the validator's backward runs the ring (--cp ring)", c.cp));
  }
  // Ulysses splits the heads over the devices: the simulator's own check says whether they split.
  (void)sim::cp_shape(cp, sim::AttentionShape{c.seq_len, c.devices, 1, c.heads, c.kv_heads, c.head_dim, 8}, 2);
  const Count elements = c.seq_len * c.heads * c.head_dim;
  constexpr Count kMaxElements = Count{1} << 28;  // 2 GiB of float64 Q per copy
  if (elements > kMaxElements) {
    throw InputError(fmt::format("--seq-len {} x --heads {} x --head-dim {} = {} elements: the validator holds at most {}",
                                 c.seq_len, c.heads, c.head_dim, elements, kMaxElements));
  }
}

}  // namespace stripesim::validate
