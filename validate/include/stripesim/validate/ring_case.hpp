#pragma once
// One validation case: the ring workload the validator runs for real (sequence, devices, layout,
// mask, tile, heads, precision). The same vocabulary as the work model, so every layout and mask
// the model counts can be run unchanged.
#include <cstdint>
#include <string>
#include <string_view>

#include "stripesim/model/work/tile_shape.hpp"
#include "stripesim/model/work/types.hpp"

namespace stripesim::validate {

using model::Count;
using model::Position;

// fp64 and fp32 run on the CPU backend; bf16 and fp16 (fp32 accumulation) on the GPU backends.
enum class Precision { fp64, fp32, bf16, fp16 };

[[nodiscard]] Precision parse_precision(std::string_view text);
[[nodiscard]] std::string_view precision_name(Precision precision);

// The GPU backends' kernel (validate/cuda), two implementations of the same computation:
//   flash - FlashAttention-2's design (mma.sync, everything per row in registers, cp.async
//           K/V pipeline); runs the host's TileSchedule, classifies nothing. The default.
//   wmma  - the first, simple kernel (wmma fragments, scores and output in shared memory,
//           classifies every tile itself); kept as the second implementation tests compare with.
enum class GpuKernel { flash, wmma, wgmma };  // wgmma: Hopper (compute capability 9.0) only
[[nodiscard]] GpuKernel parse_gpu_kernel(std::string_view text);  // InputError naming --gpu-kernel
[[nodiscard]] std::string_view gpu_kernel_name(GpuKernel kernel);

// The GPU backends' backward kernel (--pass fwdbwd), two implementations of the same gradients:
//   scalar - a thread block per 32 keys, fp32 scalar arithmetic in shared memory; written to be
//            right first, about 60x the forward's time. The default until `wmma` has run on a GPU.
//   wmma   - a thread block per 64 keys on the tensor cores (FlashAttention-2's backward loop:
//            dK, dV in registers, dQ by atomics); the tests check it against dense gradients
//            and against `scalar`.
enum class GpuBackwardKernel { scalar, wmma };
[[nodiscard]] GpuBackwardKernel parse_gpu_backward_kernel(std::string_view text);  // InputError naming the flag
[[nodiscard]] std::string_view gpu_backward_kernel_name(GpuBackwardKernel kernel);
// Keys per thread block of each (the scalar one also takes its queries that many at a time);
// divides every compiled tile side. The time model places as many blocks (a kernel profile's
// backward_block_keys).
[[nodiscard]] constexpr int gpu_backward_block_keys(GpuBackwardKernel kernel) {
  return kernel == GpuBackwardKernel::wmma ? 64 : 32;
}

struct RingCase {
  Count seq_len = 4096;
  Count devices = 4;
  std::string layout = "zigzag";  // any layout spec of the work model
  std::string mask = "causal";    // any mask spec of the work model
  model::TileShape tile{64, 64};
  Count heads = 4;
  Count kv_heads = 4;  // grouped K/V heads: heads % kv_heads == 0
  Count head_dim = 64;
  Precision precision = Precision::fp32;
  std::uint64_t seed = 1;  // the random Q, K, V
  // Q's values times this (1: Q, K and V uniform in [-1, 1), scores within a few units). A wide
  // range of scores, as trained models have, makes rows' maxima jump from key tile to key tile:
  // what the kernels' rescaling of their accumulators is for. The tests set it; labels show it.
  double q_scale = 1;
  GpuKernel gpu_kernel = GpuKernel::flash;  // GPU backends only
  // Context parallelism (simulate --cp): ring, allgather (K/V gathered, one call per device) or
  // ulysses (all-to-all to heads, full-sequence attention per device). The cpu and mpi
  // backends run all three; the GPU backends the ring.
  std::string cp = "ring";
  // --pass fwdbwd: after the forward ring, the backward ring (K/V travel again and the dK/dV
  // accumulators follow them home; dQ stays on its device), checked against dense gradients
  // and timed per (round, device). The cpu, mpi and cuda backends run it, on the ring.
  bool backward = false;
  GpuBackwardKernel gpu_backward_kernel = GpuBackwardKernel::scalar;  // GPU backends, backward cases

  // "zigzag n=4096 N=4 causal 64x64"
  [[nodiscard]] std::string label() const;
  friend bool operator==(const RingCase&, const RingCase&) = default;
};

// Throws model::InputError naming the field when the case cannot run (sizes that do not divide,
// heads not a multiple of kv_heads, ...).
void check_ring_case(const RingCase& ring_case);
// The validator holds the whole sequence on one machine (and a dense reference beside it), so it
// accepts sizes a workstation handles; the model and simulator take the large ones.
inline constexpr model::Count kMaxValidateTokens = model::Count{1} << 20;

}  // namespace stripesim::validate
