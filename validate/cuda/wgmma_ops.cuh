#pragma once
// Hopper's warpgroup matrix instructions (wgmma, sm_90a) as the wgmma kernel uses them: one
// warpgroup (4 warps, 128 threads) computes a 64 x N fp32 product, 16 deep per instruction,
// asynchronously; its operands come from shared memory through 64-bit matrix descriptors (B
// always, A here for Q K^T) or from registers (A, here the probabilities of P V).
//
// Shared-memory operands are described by (PTX ISA, "Shared Memory Matrix Layout") a start
// address, a swizzle mode and two strides. The wgmma kernel stores its tiles 128-byte swizzled
// (wgmma_swizzled_descriptor): without swizzling (8 x 16-byte "core matrices" packed) the same
// kernel ran at 155-248 TFLOP/s on an H200 against 251-308 swizzled, the hardware's reads of a
// swizzled atom spread over all banks (reports/validation/h200-2026-11-27-wgmma).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

namespace stripesim::validate::gpu {

// The matrix descriptor of an operand at shared address `address` without swizzling, its two
// strides in bytes (all multiples of 16; fields of 14 bits after dropping the low 4). Adding
// n to it moves the start address n x 16 bytes on (shared addresses stay below 2^18: no carry).
__device__ inline std::uint64_t wgmma_descriptor(std::uint32_t address, std::uint32_t leading_bytes,
                                                 std::uint32_t stride_bytes) {
  return static_cast<std::uint64_t>((address & 0x3FFFFu) >> 4) |
         static_cast<std::uint64_t>((leading_bytes & 0x3FFFFu) >> 4) << 16 |
         static_cast<std::uint64_t>((stride_bytes & 0x3FFFFu) >> 4) << 32;  // base offset 0, swizzle 0: none
}

// The same for a 128-byte-swizzled operand (swizzle mode 1). Its atoms are 8 rows of 128 bytes
// (64 16-bit elements) whose 16-byte chunk c of row r sits at chunk c ^ (r % 8); they start on
// 1024-byte boundaries (base offset 0), and a start address inside an atom (the next 16 columns
// of K) is swizzled by the hardware as the data was. K-major: the stride byte offset is the next
// 8 rows (1024 B in a tile of atoms stacked by row), the leading one unused (16). MN-major: the
// stride byte offset is the next 8 rows along K, the leading one the next atom along N.
__device__ inline std::uint64_t wgmma_swizzled_descriptor(std::uint32_t address, std::uint32_t leading_bytes,
                                                          std::uint32_t stride_bytes) {
  return wgmma_descriptor(address, leading_bytes, stride_bytes) | std::uint64_t{1} << 62;
}

// Orders this thread's register writes before the warpgroup's next wgmma reads them (accumulators
// rescaled, probabilities packed).
__device__ inline void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
// Closes the group of wgmma issued since the last commit.
__device__ inline void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
// Waits until at most Pending committed groups are still running.
template <int Pending>
__device__ inline void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(Pending) : "memory");
}
// The compiler sees a wgmma write its accumulators when it is issued, not when it completes:
// touching every register after the wait (and before the issue) keeps reads and writes of them on
// the right side of it.
template <int Tiles>
__device__ inline void wgmma_hold(float (&d)[Tiles][4]) {
#pragma unroll
  for (int j = 0; j < Tiles; ++j) {
    asm volatile("" : "+f"(d[j][0]), "+f"(d[j][1]), "+f"(d[j][2]), "+f"(d[j][3])::"memory");
  }
}
// Shared-memory writes of the generic proxy (cp.async, st.shared) made visible to wgmma, which
// reads through the async proxy; each writing thread fences before the barrier that publishes them.
__device__ inline void fence_shared_for_wgmma() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

// The accumulator operands of an m64nN instruction: %0 ... %(N/2 - 1) in the instruction text, this
// thread's N / 2 fp32 values of d[N / 8][4] as in-out operands.
#define STRIPESIM_WGMMA_D64_LIST                                                       \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "            \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
#define STRIPESIM_WGMMA_D64_OUTPUTS                            \
  "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]),  \
  "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3]),  \
  "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]),  \
  "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]),  \
  "+f"(d[4][0]), "+f"(d[4][1]), "+f"(d[4][2]), "+f"(d[4][3]),  \
  "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]),  \
  "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]),  \
  "+f"(d[7][0]), "+f"(d[7][1]), "+f"(d[7][2]), "+f"(d[7][3])

#define STRIPESIM_WGMMA_D128_LIST                                                      \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "            \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "   \
  "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "   \
  "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
#define STRIPESIM_WGMMA_D128_OUTPUTS                               \
  "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]),      \
  "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3]),      \
  "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]),      \
  "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]),      \
  "+f"(d[4][0]), "+f"(d[4][1]), "+f"(d[4][2]), "+f"(d[4][3]),      \
  "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]),      \
  "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]),      \
  "+f"(d[7][0]), "+f"(d[7][1]), "+f"(d[7][2]), "+f"(d[7][3]),      \
  "+f"(d[8][0]), "+f"(d[8][1]), "+f"(d[8][2]), "+f"(d[8][3]),      \
  "+f"(d[9][0]), "+f"(d[9][1]), "+f"(d[9][2]), "+f"(d[9][3]),      \
  "+f"(d[10][0]), "+f"(d[10][1]), "+f"(d[10][2]), "+f"(d[10][3]),  \
  "+f"(d[11][0]), "+f"(d[11][1]), "+f"(d[11][2]), "+f"(d[11][3]),  \
  "+f"(d[12][0]), "+f"(d[12][1]), "+f"(d[12][2]), "+f"(d[12][3]),  \
  "+f"(d[13][0]), "+f"(d[13][1]), "+f"(d[13][2]), "+f"(d[13][3]),  \
  "+f"(d[14][0]), "+f"(d[14][1]), "+f"(d[14][2]), "+f"(d[14][3]),  \
  "+f"(d[15][0]), "+f"(d[15][1]), "+f"(d[15][2]), "+f"(d[15][3])

// One instruction: SHAPE 64 or 128, TYPE "bf16" or "f16", A the A operand's text (a
// descriptor's operand number, or four registers'), B the B descriptor's, P the predicate's
// (accumulate != 0: add to d), TRANSPOSE_OPERANDS the immediates after the scales.
#define STRIPESIM_WGMMA(SHAPE, TYPE, A, B, P, TRANSPOSE_OPERANDS)                                             \
  "{\n.reg .pred p;\nsetp.ne.b32 p, " P ", 0;\nwgmma.mma_async.sync.aligned.m64n" #SHAPE "k16.f32." TYPE "." TYPE \
  " " STRIPESIM_WGMMA_D##SHAPE##_LIST A ", " B ", p, 1, 1" TRANSPOSE_OPERANDS ";\n}\n"

// d (64 x N, this thread's m16n8 accumulator fragments: rows 16 w + group + 8 r of warp w of the
// warpgroup) = A B, plus d when accumulate != 0. A (64 x 16) and B (16 x N) both K-major in
// shared memory, by descriptor.
template <typename T, int N>
__device__ inline void wgmma_ss(float (&d)[N / 8][4], std::uint64_t a, std::uint64_t b, std::uint32_t accumulate) {
  static_assert(N == 64 || N == 128, "compiled for N = 64 and 128");
  constexpr bool kBf16 = std::is_same_v<T, __nv_bfloat16>;
  if constexpr (N == 64 && kBf16) {
    asm volatile(STRIPESIM_WGMMA(64, "bf16", "%32", "%33", "%34", ", 0, 0") : STRIPESIM_WGMMA_D64_OUTPUTS : "l"(a), "l"(b), "r"(accumulate));
  } else if constexpr (N == 64) {
    asm volatile(STRIPESIM_WGMMA(64, "f16", "%32", "%33", "%34", ", 0, 0") : STRIPESIM_WGMMA_D64_OUTPUTS : "l"(a), "l"(b), "r"(accumulate));
  } else if constexpr (kBf16) {
    asm volatile(STRIPESIM_WGMMA(128, "bf16", "%64", "%65", "%66", ", 0, 0") : STRIPESIM_WGMMA_D128_OUTPUTS : "l"(a), "l"(b), "r"(accumulate));
  } else {
    asm volatile(STRIPESIM_WGMMA(128, "f16", "%64", "%65", "%66", ", 0, 0") : STRIPESIM_WGMMA_D128_OUTPUTS : "l"(a), "l"(b), "r"(accumulate));
  }
}

// d += A B with A (64 x 16) from registers, this warp's 16 rows as the m16k16 A fragment of
// mma.sync, and B (16 x N) MN-major in shared memory (read transposed), by descriptor.
template <typename T, int N>
__device__ inline void wgmma_rs_transposed_b(float (&d)[N / 8][4], const std::uint32_t (&a)[4], std::uint64_t b) {
  static_assert(N == 64 || N == 128, "compiled for N = 64 and 128");
  constexpr bool kBf16 = std::is_same_v<T, __nv_bfloat16>;
  const std::uint32_t accumulate = 1;
  if constexpr (N == 64 && kBf16) {
    asm volatile(STRIPESIM_WGMMA(64, "bf16", "{%32, %33, %34, %35}", "%36", "%37", ", 1")
                 : STRIPESIM_WGMMA_D64_OUTPUTS : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(accumulate));
  } else if constexpr (N == 64) {
    asm volatile(STRIPESIM_WGMMA(64, "f16", "{%32, %33, %34, %35}", "%36", "%37", ", 1")
                 : STRIPESIM_WGMMA_D64_OUTPUTS : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(accumulate));
  } else if constexpr (kBf16) {
    asm volatile(STRIPESIM_WGMMA(128, "bf16", "{%64, %65, %66, %67}", "%68", "%69", ", 1")
                 : STRIPESIM_WGMMA_D128_OUTPUTS : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(accumulate));
  } else {
    asm volatile(STRIPESIM_WGMMA(128, "f16", "{%64, %65, %66, %67}", "%68", "%69", ", 1")
                 : STRIPESIM_WGMMA_D128_OUTPUTS : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(accumulate));
  }
}

#undef STRIPESIM_WGMMA
#undef STRIPESIM_WGMMA_D64_LIST
#undef STRIPESIM_WGMMA_D64_OUTPUTS
#undef STRIPESIM_WGMMA_D128_LIST
#undef STRIPESIM_WGMMA_D128_OUTPUTS

}  // namespace stripesim::validate::gpu
