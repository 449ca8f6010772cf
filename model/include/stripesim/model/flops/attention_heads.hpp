#pragma once
// How attention heads share K/V heads and split over a group of devices (tensor parallelism,
// Ulysses' all-to-all): one rule for the model files, the simulator and the validator.
#include <optional>

#include "stripesim/model/work/types.hpp"

namespace stripesim::model {

// Beyond any model trained (128 heads, heads of 256) by far, and bounded so that the kernel time
// model's blocks (batch x heads x query tiles a call) stay countable in seconds: the flags, the
// experiment, model and measurement files alike.
inline constexpr Count kMaxHeads = 1024, kMaxHeadDim = 1024, kMaxBatch = 1024;

// Grouped-query attention shares each K/V head among heads / kv_heads query heads, so kv_heads
// must divide heads; throws InputError by kind (Input::kv_heads), which a caller reading a file
// locates at its field.
void require_kv_heads_divide(Count heads, Count kv_heads);

// The heads each member of a group of `group` devices holds: an equal share; or, with
// `replicate` (K/V heads), one each when the group is a multiple of the heads, each device keeping
// the K/V head its query heads read (Megatron and DeepSpeed-Ulysses replicate them so).
// nullopt: the heads cannot be split over that group.
[[nodiscard]] std::optional<Count> heads_per_member(Count heads, Count group, bool replicate);

// The heads (`what`: "heads", "K/V heads") of one member of a tensor-parallel group of
// `model_parallel` devices, as heads_per_member gives them; InputError by kind
// (Input::model_parallel) when they cannot be split so.
[[nodiscard]] Count model_parallel_heads(Count heads, Count model_parallel, const char* what, bool replicate);

}  // namespace stripesim::model
