#pragma once
// A time-ordered event queue. Events at the same time come out in the order they were pushed
// (a sequence number breaks ties), so a simulation is deterministic whatever the heap does.
#include <cstdint>
#include <functional>
#include <queue>
#include <vector>

#include "stripesim/sim/units.hpp"

namespace stripesim::sim {

template <typename Payload>
class EventQueue {
 public:
  struct Event {
    Microseconds time_us;
    std::uint64_t sequence;
    Payload payload;
    friend bool operator>(const Event& a, const Event& b) {
      return a.time_us != b.time_us ? a.time_us > b.time_us : a.sequence > b.sequence;
    }
  };

  void push(Microseconds time_us, Payload payload) { heap_.push(Event{time_us, pushed_++, payload}); }
  [[nodiscard]] bool empty() const { return heap_.empty(); }
  Event pop() {
    Event event = heap_.top();
    heap_.pop();
    return event;
  }
  [[nodiscard]] std::uint64_t pushed() const { return pushed_; }

 private:
  std::priority_queue<Event, std::vector<Event>, std::greater<>> heap_;
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
