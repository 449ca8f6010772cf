#pragma once
// A time-ordered event queue. Events at the same time come out in the order they were pushed
// (a sequence number breaks ties), so a simulation is deterministic whatever the heap does.
#include <bit>
#include <cstdint>
#include <functional>
#include <queue>
#include <stdexcept>
#include <vector>

#include "stripesim/sim/units.hpp"

namespace stripesim::sim {

template <typename Payload>
class EventQueue {
 public:
  struct Event {
    Microseconds time_us;
    Payload payload;
  };

  void push(Microseconds time_us, Payload payload) {
    if (!(time_us >= 0.0)) throw std::logic_error("event queue: an event before time zero");
    heap_.push(Entry{order_key(time_us + 0.0, pushed_++), payload});
  }
  [[nodiscard]] bool empty() const { return heap_.empty(); }
  Event pop() {
    const Entry top = heap_.top();
    heap_.pop();
    return Event{std::bit_cast<Microseconds>(static_cast<std::uint64_t>(top.key >> 64)), top.payload};
  }
  [[nodiscard]] std::uint64_t pushed() const { return pushed_; }

 private:
  // (time, sequence) as one unsigned 128-bit number: the bits of a non-negative double order as
  // the double does (+0.0 stands for -0.0), so one integer comparison, without branches, orders
  // the heap where two floating-point ones did (the engine's main cost is the heap's sifting).
  __extension__ typedef unsigned __int128 Key;  // a GCC and Clang type; __extension__: not ISO C++
  static Key order_key(Microseconds time_us, std::uint64_t sequence) {
    return (static_cast<Key>(std::bit_cast<std::uint64_t>(time_us)) << 64) | sequence;
  }
  struct Entry {
    Key key;
    Payload payload;
    friend bool operator>(const Entry& a, const Entry& b) { return a.key > b.key; }
  };
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> heap_;
  std::uint64_t pushed_ = 0;
};

// A resource that serves one thing at a time, in the order asked (a compute stream, one
// direction of a link): a request ready at `ready_us` starts when the resource frees up.
class FifoServer {
 public:
  [[nodiscard]] Microseconds free_at_us() const { return free_at_us_; }
  [[nodiscard]] Microseconds busy_us() const { return busy_us_; }
  void reserve(Microseconds start_us, Microseconds duration_us) {
    free_at_us_ = start_us + duration_us;
    busy_us_ += duration_us;
  }

 private:
  Microseconds free_at_us_ = 0;
  Microseconds busy_us_ = 0;
};

}  // namespace stripesim::sim
