#pragma once
// One attention kernel as measured on one accelerator (configs/kernels/<hardware>/<kernel>.json):
// the tile it cuts the work into and how (fixed or varlen tiling), how many of its thread blocks
// an SM holds, in which order the blocks are handed to the SMs, whether a call or a block with
// nothing to compute still runs, and the cost of each piece for the forward and the backward
// call, each with its source.
// The hardware profile keeps the device (peaks, memory, SMs) and names its default kernel.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "stripesim/model/io/config_catalog.hpp"
#include "stripesim/model/flops/hardware_profile.hpp"
#include "stripesim/model/work/tile_shape.hpp"
#include "stripesim/sim/units.hpp"

namespace stripesim::sim {

using model::Count;

// The order in which a call's thread blocks reach the SMs: the grid's own order (query tile
// fastest, then head: what a plain CUDA launch gives), or the longest block first (persistent
// kernels with a scheduler that sorts causal work, as FlashAttention-3 does).
enum class BlockOrder { launch, longest_first };

// How an SM's blocks speed up as it empties (BlockPlacement::lone_block_speedup s, B blocks per
// SM), written "sm_sharing":
//   throughput: the SM's throughput is shared: k blocks each run at min(s, B / k);
//   lone_block: blocks run at a full SM's rate until one is left alone, which runs at s.
// This project's 64x64 kernel (2 warps a block, 4 per SM) on an H200 at 2048 tokens: 256 blocks
// at 2 per SM took 0.95x the time of 512 at 4 per SM (throughput sharing says 0.5x to 0.67x),
// while a causal call, each block with a dearer partial tile, took 0.92x a full one: its longest
// blocks sped up once alone. The two rules are one at B = 2; the fit tries both where B > 2 and
// keeps the one that fits.
enum class SmSharing { throughput, lone_block };

// Which thread blocks a backward call runs, written "backward_blocks":
//   query_tiles: one per query tile, priced with the query tiles' loads (stripesim's model until
//     key tiles were counted; kept as the default so that profiles fitted with it read the same);
//   key_tiles: one per key tile (dK and dV), each over the query tiles that key tile meets
//     (model::KeyTileProfile), dQ added up across blocks (FlashAttention-2's and cuDNN's backward);
//   key_tiles_then_query_tiles: a block per key tile for dK and dV, then a block per query tile for
//     dQ, in one grid (PyTorch flex_attention's backward). Each tile's work is split between the
//     two: backward_dq_share of it in the dQ blocks.
enum class BackwardBlocks { query_tiles, key_tiles, key_tiles_then_query_tiles };

// How a pass's thread blocks run on the SMs (written as the profile's fields of the same names,
// "block_order" for `order`, "sm_sharing" for `sharing`): a backward kernel is a kernel of its
// own, with its own occupancy and order.
struct BlockPlacement {
  Count blocks_per_sm = 1;
  BlockOrder order = BlockOrder::launch;
  // A block alone on its SM runs this many times faster than one of blocks_per_sm blocks on a
  // full SM; how blocks between one and blocks_per_sm run is `sharing` (with throughput sharing,
  // k blocks each at min(lone_block_speedup, blocks_per_sm / k) of a full SM's block rate).
  // 1: fixed slots, a block takes the same time whatever shares its SM; blocks_per_sm: the SM's
  // whole throughput goes to whatever blocks it holds. Between them: a lone block cannot use the
  // whole SM (too few warps to hide latency), but one left at the end of a call runs faster.
  double lone_block_speedup = 1;
  SmSharing sharing = SmSharing::throughput;
  // The rate of each block on an SM holding k (1 <= k <= blocks_per_sm) of them, relative to a
  // block on a full SM.
  double block_rate(Count k) const;
  friend bool operator==(const BlockPlacement&, const BlockPlacement&) = default;
};

// The cost of one call's pieces on one block slot (an SM holding blocks_per_sm blocks has that
// many slots, each running at its share of the SM).
struct PassCosts {
  Microseconds launch_us = 0;        // per call: the host's launch path and fixed device work
  Microseconds block_us = 0;         // per thread block: loading its queries, writing output and statistics
  Microseconds full_tile_us = 0;     // per key tile with every pair allowed
  Microseconds partial_tile_us = 0;  // per key tile that applies the mask element by element
  // A call run trimmed (KernelProfile::trims_below_diagonal) to a length that is not a multiple
  // of the tile takes this many times what its tiles cost: kernels take a slower path with
  // bounds checks on every load when a sequence ends inside a tile.
  double trimmed_factor = 1;
  // How a tile's cost follows the head size d: as (score_head_dims + d) against the profile's
  // (score_head_dims + head_dim). A score's element-wise work (exponential, running max and sum,
  // rescaling; the backward's recomputed P and dS) does not grow with d, and costs as much as this
  // many head dims of the tile's matmuls. 0: all matmul, a tile scales by its FLOPs. From a
  // kernel's speed published at two head sizes, or fitted on calls measured at several.
  double score_head_dims = 0;
  // The largest head size that share was measured at (unset: the profile's head_dim). Above it a
  // tile scales by FLOPs from there: kernels run smaller tiles at larger heads (FlashAttention-2
  // and cuDNN on an H100 run at 256 no faster per FLOP than at 128), which costs what the smaller
  // share saves.
  std::optional<Count> score_head_dims_up_to{};  // {}: brace-initialised PassCosts leave it unset without a warning
  friend bool operator==(const PassCosts&, const PassCosts&) = default;
};

// What a ring implementation moves in memory, outside the kernel, to fold one call's result into
// the device's running result: the forward rescales and adds each call's partial output into an
// fp32 accumulator by its log-sum-exp (the online softmax across rounds), the backward adds each
// call's dQ, dK and dV into fp32 gradients. Bytes read and written per element, at the device's
// memory bandwidth. The device's first call of a pass only initialises the running result and
// pays nothing here. 0: the kernel accumulates in place (this project's kernels, XLA's fused loop).
struct OutputMerge {
  double forward_bytes_per_element = 0;   // per output element: query rows x heads x head size
  double backward_bytes_per_element = 0;  // per gradient element: dQ, and dK and dV over the K/V heads
  // Forward, on top: a call that wrote only some of the device's rows (zigzag's late half, a
  // trimmed call's q[1:]) is merged on that slice, which is then copied back into the output.
  double forward_slice_bytes_per_element = 0;
  friend bool operator==(const OutputMerge&, const OutputMerge&) = default;
};

// The merges of the ring implementations users run, counted from the element-wise work each does
// per element (README, "Merging the rounds"), for `--merges`:
//   eager: ring-flash-attention's update_out_and_lse and PyTorch context parallelism's merger,
//          unfused in eager PyTorch: 38 bytes an output element forward (the call's bf16 output to
//          fp32, out - block_out, scaled by a per-row sigmoid, subtracted from out), 8 more where
//          the call wrote a slice of the rows (merged apart, copied back), 10 a gradient element
//          backward (bf16 added into fp32); the shipped sdpa, fa2, fa3 and flex profiles' own;
//   fused: one fused pass a call (TransformerEngine's correction kernels, XLA's fusion of the
//          same formula): the fp32 running output read and written and the call's bf16 output
//          read, 10 bytes forward, slices written in place; bf16 gradients summed, 6 backward;
//   none:  the kernel accumulates in place (this project's kernels, XLA's blockwise loop).
// Anything else: an InputError naming `what`.
[[nodiscard]] OutputMerge merge_style(std::string_view name, std::string_view what);
inline constexpr std::string_view kMergeStyles = "eager, fused or none";
inline constexpr const char* kMergesHelp =
    "How the ring implementation folds each call's result into the running one between calls: eager "
    "(ring-flash-attention, PyTorch context parallelism: 38 bytes an output element), fused "
    "(TransformerEngine, XLA: 10) or none (the kernel accumulates in place) [default: the kernel profile's]";

// The kernel at one more tile shape than its main one (a kernel built for several, as this
// project's validator kernels are): that shape's own blocks per SM, block order and costs.
struct TileVariant {
  model::TileShape tile;
  BlockPlacement placement;
  PassCosts forward;
  PassCosts backward;
  std::optional<BlockPlacement> backward_placement;
  friend bool operator==(const TileVariant&, const TileVariant&) = default;
};

struct KernelProfile {
  std::string name;
  std::string hardware;  // the hardware profile it was measured on
  std::string description;
  model::TileShape tile{128, 128};
  // How it cuts a device's work into tiles (tile_shape.hpp): varlen for FlashAttention's and
  // cuDNN's varlen entry points, which ring-flash-attention and TransformerEngine call on packed
  // documents; fixed for one mask over the whole block (flex_attention, this project's kernels).
  model::Tiling tiling = model::Tiling::fixed;
  // The forward's placement, and the backward's unless backward_placement says otherwise.
  BlockPlacement placement;
  // Blocks the device runs at once; unset: sms * blocks_per_sm. 1 for an implementation that
  // runs one tile after another, each over the whole device (XLA's blockwise attention in JAX,
  // the Striped Attention paper's): a call then lasts the sum of its tiles, and a tile's cost
  // is the whole device's time for it.
  std::optional<Count> slots;
  // The backward's placement when it is not the forward's; unset: the same.
  std::optional<BlockPlacement> backward_placement;
  // Keys one backward thread block handles. Unset: a whole key tile per block and head
  // (FlashAttention's and cuDNN's backward). This project's backward splits a key tile into
  // blocks of 32 keys, so a call has tile.key / 32 times the blocks, each a share of the work:
  // that decides how the blocks fill the SMs.
  std::optional<Count> backward_block_keys;
  BackwardBlocks backward_blocks = BackwardBlocks::query_tiles;
  // With key_tiles_then_query_tiles: the share of a tile's backward work the dQ blocks do. A
  // backward tile is seven matmuls' worth (recomputing Q K^T and dO V^T, then dV, dK and dQ);
  // flex_attention's dQ blocks recompute both products and add dS K: three of the seven.
  double backward_dq_share = 3.0 / 7.0;
  bool empty_calls_launch = false;        // a (round, device) with no active tile still makes the call
  bool empty_query_tiles_launch = false;  // a query tile with no active key tile still gets a block (writes output)
  // The kernel's causal mask always keeps the diagonal (FlashAttention's and cuDNN's): a block
  // whose causal mask starts below it (striped, K/V from a later device) runs on q[t:] x k[:-t]
  // (model::Work::trimmed_length), priced with the pass's trimmed_factor when that length ends
  // inside a tile. False: the kernel applies any mask as it is (flex_attention, this project's).
  bool trims_below_diagonal = false;
  std::string dtype = "bf16";             // costs are for this precision and head size; others scale
  Count head_dim = 128;                   // by FLOPs (tiles: see score_head_dims) and by bytes (blocks)
  // The largest head size the kernel is built for (FlashAttention-2 and -3: 256); unset: no
  // bound known. A larger one is priced all the same, by FLOPs, with a note that no such call runs.
  std::optional<Count> max_head_dim;
  PassCosts forward;
  PassCosts backward;  // the backward call alone: a forward+backward step costs forward + backward
  // Other tile shapes measured apart (each unlike `tile` and the others): a call cut into one of
  // them is priced with its own costs; into a shape not listed, with the main costs scaled by FLOPs.
  std::vector<TileVariant> other_tiles;
  OutputMerge merge;   // between the calls of a ring, not part of any call's time
  bool calibrated = false;  // fitted on measurements (`fit` says how well), or set from public figures
  nlohmann::json sources;   // where each figure comes from
  nlohmann::json fit;       // the fit's record: samples, files, errors
};

// The profile as it runs calls cut into `tile`: the variant's structure and costs in place of
// the main ones when `other_tiles` lists that shape, else the profile unchanged.
[[nodiscard]] KernelProfile at_tile(KernelProfile kernel, model::TileShape tile);
// The variant of `kernel`'s main tile shape (its main structure and costs).
[[nodiscard]] TileVariant main_variant(const KernelProfile& kernel);
// A fit records in fit["partial_tiles"] whether some timed block held two partial tiles or more
// (validate/kernel_fit.cpp): only then is a partial tile's cost told apart from a cost every
// masked block pays. The record of a fit where none did starts with these words.
inline constexpr const char* kPartialTilesNotIdentified = "not identified";
// False when the profile's fit says its partial-tile cost was not identified; true otherwise
// (identified, or no fit record: an uncalibrated profile says so of all its costs).
[[nodiscard]] bool partial_tile_cost_identified(const KernelProfile& kernel);
// What each of the kernel's calls holds: a kernel driven as ring-flash-attention drives it (its
// causal mask keeps the diagonal, trims_below_diagonal) is also called on the slices with work
// (zigzag's halves), tiled from their own start; any other kernel on whole blocks.
[[nodiscard]] inline model::CallSlicing call_slicing(const KernelProfile& kernel) {
  return kernel.trims_below_diagonal ? model::CallSlicing::runs : model::CallSlicing::whole;
}
// The backward's placement: its own when the profile gives one, else the forward's.
[[nodiscard]] BlockPlacement backward_placement(const KernelProfile& kernel);

[[nodiscard]] KernelProfile kernel_profile_from_json(const nlohmann::json& doc, const std::string& label);
[[nodiscard]] nlohmann::ordered_json to_json(const KernelProfile& kernel);
[[nodiscard]] const char* block_order_name(BlockOrder order);
// "launch" or "longest_first"; `what` names the input (a profile's field, a flag) in the message.
[[nodiscard]] BlockOrder parse_block_order(std::string_view text, std::string_view what);
[[nodiscard]] const char* sm_sharing_name(SmSharing sharing);
[[nodiscard]] const char* backward_blocks_name(BackwardBlocks blocks);

// The hardware preset a profile's `field` names (a kernels_from, a kernel's "hardware"): none when
// no preset answers to it; two that do, or a preset that does not read, refused at that field.
[[nodiscard]] std::optional<model::HardwareProfile> hardware_named_by(const model::ConfigCatalog& catalog, const std::string& name,
                                                                    const std::string& field);

// The names of the hardware whose kernels `hardware` runs as they are: its own name and aliases,
// then those of the profile its kernels_from names, followed as far as it leads (a profile
// calibrated on an H800 runs the H800's, which runs the H100's). A kernel profile whose field
// "hardware" is one of them was measured where it runs; its folder of configs/kernels is one of them.
[[nodiscard]] std::vector<std::string> kernel_homes(const model::HardwareProfile& hardware, const model::ConfigCatalog& catalog);

// `spec`: a JSON file (a path, or a name ending in .json), or a kernel name looked up in
// <the catalog's root>/kernels/<one of kernel_homes>/<spec>.json. Empty: the hardware's default kernel.
[[nodiscard]] KernelProfile load_kernel_profile(const std::string& spec, const model::ConfigCatalog& catalog,
                                                const model::HardwareProfile& hardware);
// The same with the hardware's kernel_homes already taken (a simulation takes them once for the
// lookup and for kernel_hardware_note).
[[nodiscard]] KernelProfile load_kernel_profile(const std::string& spec, const model::ConfigCatalog& catalog,
                                                const model::HardwareProfile& hardware, const std::vector<std::string>& homes);

}  // namespace stripesim::sim
