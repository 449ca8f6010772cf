#pragma once
// Basic quantities of the work model. Every count that can exceed 2^31 is 64-bit:
// a 1M-token causal sequence alone has 5.5e11 unmasked pairs.
#include <cstdint>

namespace stripesim::model {

using Position = std::int64_t;  // a token's index in the ORIGINAL sequence, [0, n)
using Count = std::int64_t;     // tokens, pairs, tiles
using DeviceId = std::int64_t;  // a device's rank in the ring, [0, N)

// n^2 must fit in a signed 64-bit count (bidirectional masks count every pair), so the
// longest sequence the model accepts is 2^31 tokens: 2^62 pairs.
inline constexpr Count kMaxSeqLen = Count{1} << 31;

// Above this the per-device bookkeeping (tile summaries) alone would need gigabytes.
inline constexpr Count kMaxDevices = Count{1} << 16;

}  // namespace stripesim::model
