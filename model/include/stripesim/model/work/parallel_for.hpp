#pragma once
// Runs independent jobs on a few threads. Each job writes only its own slot of the caller's
// output, so results never depend on the thread count or timing.
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <thread>
#include <vector>

namespace stripesim::model {

// How many threads a count of `threads` means: 0 is one per core (at least one).
[[nodiscard]] inline unsigned threads_or_cores(unsigned threads) {
  return threads > 0 ? threads : std::max(1u, std::thread::hardware_concurrency());
}

// job(i, state) for every i in [0, count) on up to `threads` threads (0: the machine's hardware
// concurrency), the calling thread among them; indices are handed out in order. Each thread makes
// its own `state` with make_state() (caches and buffers that live across its jobs: what a job
// writes there must not change any job's result). After a job throws, no new index is handed out
// (those taken finish), and the failure of the lowest index is rethrown: every index before it
// ran, so the error is the same whatever the timing.
template <typename MakeState, typename Job>
void parallel_for_each_with(std::size_t count, unsigned threads, const MakeState& make_state, const Job& job) {
  const auto workers = static_cast<unsigned>(std::clamp<std::size_t>(count, 1, threads_or_cores(threads)));
  std::vector<std::exception_ptr> failures(count);
  std::atomic<std::size_t> next{0};
  auto work = [&] {
    auto state = make_state();
    for (std::size_t i = next++; i < count; i = next++) {
      try {
        job(i, state);
      } catch (...) {
        failures[i] = std::current_exception();
        next = count;
      }
    }
  };
  {
    std::vector<std::jthread> pool;
    for (unsigned w = 1; w < workers; ++w) pool.emplace_back(work);
    work();
  }
  for (const auto& failure : failures) {
    if (failure) std::rethrow_exception(failure);
  }
}

// job(i) for every i, as above, with no state of the threads' own.
template <typename Job>
void parallel_for(std::size_t count, unsigned threads, const Job& job) {
  parallel_for_each_with(count, threads, [] { return 0; }, [&](std::size_t i, int) { job(i); });
}

}  // namespace stripesim::model
