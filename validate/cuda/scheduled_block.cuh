#pragma once
// What the flash kernel (flash_attention.cuh) and the wgmma kernel (wgmma_attention.cuh) do alike
// around their products: where a thread block of the host's TileSchedule sits (its head, query
// tile, schedule entries, rows and K/V head), each entry's keys, and the tile counts the validator
// checks against stripesim's. flash_rows.cuh holds what they do alike to the rows a thread holds.
//
// A refactor that moves code between a kernel and this header is checked by compiling both
// kernels to cubins before and after (nvcc -cubin -Xptxas -v, every architecture they are built
// for): the flash kernel's came out byte for byte the same when this header was made, the wgmma
// kernel's with the same registers (one variant 2 more, within the same allocation) and no spills.
#include <cstdint>

#include "kernel_common.cuh"
#include "stripesim/validate/block_attention.hpp"
#include "stripesim/validate/tile_schedule.hpp"

namespace stripesim::validate::gpu {

// The grid runs the query tiles in args.tile_order (heaviest first), every head of a tile before
// the next tile: block x attends head x % heads of query tile tile_order[x / heads], over the
// schedule entries tile_entries[first, last) (full key tiles before partial ones).
template <typename T, int HeadDim, int TileQ, int TileK>
struct ScheduledBlock {
  int head = 0;
  int first = 0, last = 0;
  std::int64_t q0 = 0;  // its first local query
  int q_count = 0;      // its queries: fewer than TileQ in a short last tile
  // Elements between consecutive tokens of Q (and O), and of K and V.
  std::int64_t q_stride = 0, kv_stride = 0;
  const T* k_head = nullptr;  // K and V of the K/V head its query head reads
  const T* v_head = nullptr;

  __device__ explicit ScheduledBlock(const BlockAttentionArgs& args)
      : head(static_cast<int>(blockIdx.x % static_cast<unsigned>(args.heads))) {
    const int query_tile = args.tile_order[blockIdx.x / static_cast<unsigned>(args.heads)];
    first = args.tile_offsets[query_tile];
    last = args.tile_offsets[query_tile + 1];
    if (idle()) return;  // an idle block reads nothing more (computed after this, as it was inline)
    const int kv_head = head / (args.heads / args.kv_heads);
    q0 = static_cast<std::int64_t>(query_tile) * TileQ;
    q_count = static_cast<int>(min64(TileQ, args.queries - q0));
    q_stride = static_cast<std::int64_t>(args.heads) * HeadDim;
    kv_stride = static_cast<std::int64_t>(args.kv_heads) * HeadDim;
    k_head = static_cast<const T*>(args.k) + kv_head * HeadDim;
    v_head = static_cast<const T*>(args.v) + kv_head * HeadDim;
  }

  // No key tile: the block leaves its rows' state as it is.
  [[nodiscard]] __device__ bool idle() const { return first == last; }

  // Schedule entry `entry`'s first key, and its keys (fewer than TileK in a short last tile).
  [[nodiscard]] __device__ static std::int64_t key_start(int entry) {
    return static_cast<std::int64_t>(entry_tile(entry)) * TileK;
  }
  // Whether schedule entry `entry` is a partial tile (the mask evaluated per element).
  [[nodiscard]] __device__ static bool partial(int entry) { return entry_is_partial(entry); }
  [[nodiscard]] __device__ static int key_count(const BlockAttentionArgs& args, std::int64_t k0) {
    return static_cast<int>(min64(TileK, args.keys - k0));
  }

  // The key tiles computed and how many of them were partial, once per query tile (head 0,
  // thread 0), when the validator asks for the counts.
  __device__ void count_tiles(const BlockAttentionArgs& args, unsigned partial_seen) const {
    if (args.tile_counts != nullptr && head == 0 && threadIdx.x == 0) {
      atomicAdd(&args.tile_counts[0], static_cast<unsigned long long>(last - first));
      atomicAdd(&args.tile_counts[1], static_cast<unsigned long long>(partial_seen));
    }
  }
};

}  // namespace stripesim::validate::gpu
