#pragma once
// A time and a tie-break packed in one unsigned 128-bit integer that orders as the pair (time,
// tie-break): the bits of a non-negative double order as the double does (+0.0 stands for -0.0),
// so a heap of them is ordered by one integer comparison, without a branch on floating point.
// The simulator's heaps (the event queue, the block scheduler's slots) sift these.
#include <bit>
#include <cstdint>

#include "stripesim/sim/units.hpp"

namespace stripesim::sim {

__extension__ typedef unsigned __int128 TimeKey;  // a GCC and Clang type; __extension__: not ISO C++

// `time_us` must not be negative (nor NaN).
[[nodiscard]] inline TimeKey time_key(Microseconds time_us, std::uint64_t tie_break) {
  return (static_cast<TimeKey>(std::bit_cast<std::uint64_t>(time_us + 0.0)) << 64) | tie_break;
}
[[nodiscard]] inline Microseconds key_time(TimeKey key) { return std::bit_cast<Microseconds>(static_cast<std::uint64_t>(key >> 64)); }
[[nodiscard]] inline std::uint64_t key_tie_break(TimeKey key) { return static_cast<std::uint64_t>(key); }

}  // namespace stripesim::sim
