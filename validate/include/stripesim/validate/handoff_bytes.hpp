#pragma once
// What one hand-off between ring neighbours carries, in bytes, for every backend (the CPU and MPI
// rings, the GPU slots and accumulators): the measured hand-off sizes the link calibration fits
// on, and the buffers the GPU allocates, come from these two.
#include <cstdint>

#include "stripesim/model/work/types.hpp"

namespace stripesim::validate {

// One K/V block as it travels: K and V of every K/V head (kv_row = kv_heads x head_dim elements
// of T per token) and each token's original position.
template <typename T>
[[nodiscard]] constexpr std::int64_t block_bytes(model::Count block_len, model::Count kv_row) {
  return block_len * (2 * kv_row * static_cast<model::Count>(sizeof(T)) + static_cast<model::Count>(sizeof(model::Position)));
}

// One dK/dV accumulator as it travels: dK and dV of every K/V head, in T.
template <typename T>
[[nodiscard]] constexpr std::int64_t accumulator_bytes(model::Count block_len, model::Count kv_row) {
  return 2 * block_len * kv_row * static_cast<model::Count>(sizeof(T));
}

}  // namespace stripesim::validate
