#pragma once
// The CPU backend: the blockwise ring with online softmax, N virtual devices run one after another
// on one core, in float32 or float64. It runs everywhere (CI included) and is the reference
// implementation of the ring algorithm the GPU backends follow.
#include <memory>

#include "stripesim/validate/ring_backend.hpp"

namespace stripesim::validate {

[[nodiscard]] std::unique_ptr<RingBackend> make_cpu_backend();

}  // namespace stripesim::validate
