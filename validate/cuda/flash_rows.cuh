#pragma once
// What the flash kernel (flash_attention.cuh, mma.sync) and the wgmma kernel (wgmma_attention.cuh,
// Hopper's warpgroup instructions) do alike to the rows a thread holds: both keep scores and the
// output accumulator in the m16n8 accumulator layout, so the state's load and store, the mask, the
// online softmax and the conversion of probabilities into A operands are one piece of code.
//
// A thread holds kM m16 row tiles; in tile m it holds rows warp_row0 + 16 m + group + 8 r (r = 0, 1),
// and of every n8 column tile the columns 2 quad and 2 quad + 1. Scores are s[m][j][4] for key
// columns 8 j + ..., the output out[m][j][4] for dimensions 8 j + ....
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "kernel_common.cuh"
#include "stripesim/validate/block_attention.hpp"

namespace stripesim::validate::gpu {

// Two floats as one register of two 16-bit values, the first in the low half (lower column).
template <typename T>
__device__ inline std::uint32_t pack2(float lo, float hi) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<const std::uint32_t*>(&v);
  } else {
    const __half2 v = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<const std::uint32_t*>(&v);
  }
}

// 2^x with the hardware's approximation (2 ulp; 2^-inf = 0), as FlashAttention computes it.
__device__ inline float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

// x[0] op x[1] op ... op x[N - 1] as a balanced tree (log2 N dependent steps, not N - 1): x[i] op
// x[N - 1 - i], the middle one (odd N) carried, and again. Halved at compile time, so that every
// index is a constant and the values stay in registers.
template <int N, typename Op>
__device__ __forceinline__ float tree_reduce(const float (&x)[N], Op op) {
  if constexpr (N == 1) {
    return x[0];
  } else {
    float halved[(N + 1) / 2];
#pragma unroll
    for (int i = 0; i < N / 2; ++i) halved[i] = op(x[i], x[N - 1 - i]);
    if constexpr (N % 2 == 1) halved[N / 2] = x[N / 2];
    return tree_reduce<(N + 1) / 2>(halved, op);
  }
}

__device__ inline float quad_max(float x) {
  x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));
  return fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
}
__device__ inline float quad_sum(float x) {
  x += __shfl_xor_sync(0xffffffffu, x, 1);
  return x + __shfl_xor_sync(0xffffffffu, x, 2);
}

// This thread's rows of a query tile: the online-softmax state of the ring (block_attention.hpp)
// in registers while the tile's key tiles run.
template <int kM, int kDimTiles8>
struct FlashRows {
  // How far (log2 units) a row's maximum may pass its reference before the accumulators are
  // rescaled: probabilities stay below 2^8 = 256, far inside bf16/fp16 and fp32 range.
  static constexpr float kRescaleSlack = 8.f;
  static constexpr int kHeadDim = 8 * kDimTiles8;

  int warp_row0, group, quad;
  float row_max[kM][2], sum_share[kM][2], out[kM][kDimTiles8][4];

  __device__ __forceinline__ int row(int m, int r) const { return warp_row0 + 16 * m + group + 8 * r; }

  // The state from global memory (rows past q_count: empty, never stored).
  __device__ __forceinline__ void load(const BlockAttentionArgs& args, std::int64_t q0, int head, int q_count) {
    const float inf = __int_as_float(0x7f800000);
    const float* const max_in = args.row_max;
    const float* const sum_in = args.row_sum;
    const float* const acc_in = args.out_acc;
#pragma unroll
    for (int m = 0; m < kM; ++m) {
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const int this_row = row(m, r);
        const bool real = this_row < q_count;
        const std::int64_t state_row = (q0 + this_row) * args.heads + head;
        row_max[m][r] = real ? max_in[state_row] : -inf;
        sum_share[m][r] = real && quad == 0 ? sum_in[state_row] : 0.f;  // summed over the quad at the end
#pragma unroll
        for (int j = 0; j < kDimTiles8; ++j) {
          float2 acc = make_float2(0.f, 0.f);
          if (real) acc = *reinterpret_cast<const float2*>(acc_in + state_row * kHeadDim + 8 * j + 2 * quad);
          out[m][j][2 * r] = acc.x;
          out[m][j][2 * r + 1] = acc.y;
        }
      }
    }
  }

  // The state back to global memory, real rows only.
  __device__ __forceinline__ void store(const BlockAttentionArgs& args, std::int64_t q0, int head, int q_count) const {
#pragma unroll
    for (int m = 0; m < kM; ++m) {
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const float total = quad_sum(sum_share[m][r]);
        if (row(m, r) >= q_count) continue;
        const std::int64_t state_row = (q0 + row(m, r)) * args.heads + head;
#pragma unroll
        for (int j = 0; j < kDimTiles8; ++j) {
          *reinterpret_cast<float2*>(args.out_acc + state_row * kHeadDim + 8 * j + 2 * quad) =
              make_float2(out[m][j][2 * r], out[m][j][2 * r + 1]);
        }
        if (quad == 0) {
          args.row_max[state_row] = row_max[m][r];
          args.row_sum[state_row] = total;
        }
      }
    }
  }

  // Scores of keys [key0, key0 + 8 kKeyTiles8) of the tile at k0 (k_count keys in it) set to
  // -inf where the query may not see the key: its position outside the row's interval
  // [low_s[row], high_s[row]], or the key past the end of the block.
  template <int kKeyTiles8>
  __device__ __forceinline__ void mask(float (&s)[kM][kKeyTiles8][4], const BlockAttentionArgs& args, std::int64_t k0, int k_count,
                       int key0, const std::int64_t* low_s, const std::int64_t* high_s) const {
    const float inf = __int_as_float(0x7f800000);
#pragma unroll
    for (int j = 0; j < kKeyTiles8; ++j) {
#pragma unroll
      for (int c = 0; c < 2; ++c) {
        const int column = key0 + 8 * j + 2 * quad + c;
        const bool real = column < k_count;
        const std::int64_t p = real ? args.key_positions[k0 + column] : 0;
#pragma unroll
        for (int m = 0; m < kM; ++m) {
#pragma unroll
          for (int r = 0; r < 2; ++r) {
            if (!(real && low_s[row(m, r)] <= p && p <= high_s[row(m, r)])) s[m][j][2 * r + c] = -inf;
          }
        }
      }
    }
  }

  // Online softmax on registers, in log2 units: the scores become probabilities relative to the
  // rows' reference maximum, the sums and (when the reference moves) the accumulators follow.
  // The reference moves only when a row's maximum passes it by more than kRescaleSlack (then for
  // the whole warp, which rescales its accumulators together): until then probabilities are up
  // to 2^slack, exact all the same, since the sum and the output share the reference and
  // row_max + log2(row_sum) is the same log-sum-exp. Most tiles after a row's first few skip the
  // 2 x HeadDim multiplications of the rescale. Maxima and sums as pairwise trees: a chain of 16
  // dependent instructions per row stalls a warp that has few to switch to.
  template <int kKeyTiles8>
  __device__ __forceinline__ void softmax(float (&s)[kM][kKeyTiles8][4], float scale_log2) {
    const float inf = __int_as_float(0x7f800000);
    float tile_max[kM][2];
    bool move = false;
#pragma unroll
    for (int m = 0; m < kM; ++m) {
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        float partial[kKeyTiles8];
#pragma unroll
        for (int j = 0; j < kKeyTiles8; ++j) partial[j] = fmaxf(s[m][j][2 * r], s[m][j][2 * r + 1]);
        tile_max[m][r] = quad_max(tree_reduce<kKeyTiles8>(partial, [](float a, float b) { return fmaxf(a, b); })) * scale_log2;
        // A row that has seen no allowed key has -inf: any finite maximum moves it.
        move = move || tile_max[m][r] > row_max[m][r] + kRescaleSlack;
      }
    }
    move = __any_sync(0xffffffffu, move);
#pragma unroll
    for (int m = 0; m < kM; ++m) {
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        float alpha = 1.f;
        if (move) {
          const float new_max = fmaxf(row_max[m][r], tile_max[m][r]);
          // Still -inf (nothing allowed yet): 2^(-inf - 0) = 0 scales the empty state, not NaN.
          alpha = fast_exp2(row_max[m][r] - (new_max == -inf ? 0.f : new_max));
          row_max[m][r] = new_max;
        }
        // A row still at -inf sees only masked scores: subtracting 0 gives 2^-inf = 0, not NaN.
        const float base = row_max[m][r] == -inf ? 0.f : row_max[m][r];
        float partial[kKeyTiles8];
#pragma unroll
        for (int j = 0; j < kKeyTiles8; ++j) {
#pragma unroll
          for (int c = 0; c < 2; ++c) s[m][j][2 * r + c] = fast_exp2(fmaf(s[m][j][2 * r + c], scale_log2, -base));
          partial[j] = s[m][j][2 * r] + s[m][j][2 * r + 1];
        }
        sum_share[m][r] = alpha * sum_share[m][r] + tree_reduce<kKeyTiles8>(partial, [](float a, float b) { return a + b; });
        if (move) {
#pragma unroll
          for (int j = 0; j < kDimTiles8; ++j) {
            out[m][j][2 * r] *= alpha;
            out[m][j][2 * r + 1] *= alpha;
          }
        }
      }
    }
  }
};

// The probabilities of keys [16 kk, 16 kk + 16) of row tile m as the A operand of an m16k16 product:
// the accumulators of two m16n8 tiles are, converted in place, the A layout of one m16k16 tile.
template <typename T, int kM, int kKeyTiles8>
__device__ inline void probabilities_as_a(std::uint32_t (&a)[4], const float (&s)[kM][kKeyTiles8][4], int m, int kk) {
  a[0] = pack2<T>(s[m][2 * kk][0], s[m][2 * kk][1]);
  a[1] = pack2<T>(s[m][2 * kk][2], s[m][2 * kk][3]);
  a[2] = pack2<T>(s[m][2 * kk + 1][0], s[m][2 * kk + 1][1]);
  a[3] = pack2<T>(s[m][2 * kk + 1][2], s[m][2 * kk + 1][3]);
}

}  // namespace stripesim::validate::gpu
