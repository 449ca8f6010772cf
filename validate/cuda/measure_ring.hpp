#pragma once
// The measurement loop both GPU backends share (the nccl-tests shape: one harness, many
// operations): warm-up iterations untimed, timed iterations recorded, then the last output.
#include <string>
#include <utility>

#include "stripesim/validate/ring_backend.hpp"

namespace stripesim::validate::gpu {

// `iterate(record)` runs one iteration of the whole ring on `ring` and, when `record` is not null,
// appends that iteration's timings to it.
template <typename Ring, typename Iterate>
RingMeasurement measure_ring(std::string backend, Ring& ring, const RunOptions& options, Iterate&& iterate) {
  RingMeasurement m;
  m.backend = std::move(backend);
  m.device_name = ring.device_name();
  m.iterations = options.iterations;
  m.handoff_bytes = ring.handoff_bytes();
  for (Count i = 0; i < options.warmup; ++i) iterate(static_cast<RingMeasurement*>(nullptr));
  for (Count i = 0; i < options.iterations; ++i) iterate(&m);
  m.output = ring.download_output();
  return m;
}

}  // namespace stripesim::validate::gpu
