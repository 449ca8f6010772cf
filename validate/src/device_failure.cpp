#include <fmt/format.h>

#include "stripesim/validate/ring_backend.hpp"

namespace stripesim::validate {

DeviceFailure::DeviceFailure(Count rank, std::string operation, const std::string& detail)
    : std::runtime_error(rank >= 0 ? fmt::format("rank {}: {} failed: {}", rank, operation, detail)
                                   : fmt::format("{} failed: {}", operation, detail)),
      rank_(rank),
      operation_(std::move(operation)) {}

}  // namespace stripesim::validate
