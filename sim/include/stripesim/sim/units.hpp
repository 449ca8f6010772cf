#pragma once
// Units of the simulator. Times are microseconds everywhere (names end in _us), sizes bytes,
// bandwidths GB/s (10^9 bytes per second, per direction).
#include <cstdint>

#include "stripesim/model/flops/hardware_profile.hpp"

namespace stripesim::sim {

using Microseconds = double;
using Bytes = std::int64_t;
using GigabytesPerSecond = double;

using model::kBytesPerGib;  // memory sizes are quoted in GiB

// 1 GB/s moves 10^3 bytes per microsecond (bytes as a count, or as an estimate in double).
[[nodiscard]] constexpr Microseconds transfer_time_us(double bytes, GigabytesPerSecond bandwidth) {
  return bytes / (bandwidth * 1e3);
}
// Its inverse: the bandwidth at which each byte takes `us_per_byte` (a fitted slope).
[[nodiscard]] constexpr GigabytesPerSecond bandwidth_of(double us_per_byte) { return 1.0 / (us_per_byte * 1e3); }

}  // namespace stripesim::sim
