#include "json_read.hpp"

#include <optional>

namespace stripesim::report {
namespace {

// Depth first, comparing addresses: the documents a report reads are a few MB at most.
std::optional<nlohmann::json::json_pointer> find(const nlohmann::json& node, const nlohmann::json* target,
                                                 const nlohmann::json::json_pointer& here) {
  if (&node == target) return here;
  if (node.is_object()) {
    for (const auto& [key, child] : node.items()) {
      if (auto found = find(child, target, here / key)) return found;
    }
  } else if (node.is_array()) {
    for (size_t i = 0; i < node.size(); ++i) {
      if (auto found = find(node[i], target, here / i)) return found;
    }
  }
  return std::nullopt;
}

}  // namespace

std::string json_path(const nlohmann::json& root, const nlohmann::json* target) {
  const auto found = find(root, target, nlohmann::json::json_pointer());
  return found ? found->to_string() : "(unknown)";
}

}  // namespace stripesim::report
