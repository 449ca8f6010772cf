#include "stripesim/sim/node_placement.hpp"

#include <fmt/format.h>

#include <map>
#include <optional>
#include <sstream>

#include "stripesim/model/io/input_error.hpp"
#include "stripesim/model/io/json_file.hpp"
#include "stripesim/model/io/size_parse.hpp"

namespace stripesim::sim {

using model::InputError;

namespace {

// Nodes renumbered by first appearance: equal for two placements that group GPUs alike.
std::vector<Count> canonical_nodes(const NodePlacement& p) {
  std::map<Count, Count> renumber;
  std::vector<Count> out;
  out.reserve(p.node_of_gpu.size());
  for (const Count node : p.node_of_gpu) out.push_back(renumber.try_emplace(node, static_cast<Count>(renumber.size())).first->second);
  return out;
}

}  // namespace

NodePlacement NodePlacement::first(Count gpus) const {
  std::vector<std::string> host_of_gpu;
  for (Count g = 0; g < gpus && g < this->gpus(); ++g) host_of_gpu.push_back(hosts[static_cast<size_t>(node_of_gpu[static_cast<size_t>(g)])]);
  return placement_from_hosts(host_of_gpu);
}

std::string NodePlacement::describe() const {
  std::vector<std::string> runs(hosts.size());
  for (Count g = 0; g < gpus(); ++g) {
    const auto node = static_cast<size_t>(node_of_gpu[static_cast<size_t>(g)]);
    const bool continues = g > 0 && node_of_gpu[static_cast<size_t>(g - 1)] == node_of_gpu[static_cast<size_t>(g)];
    const bool ends_run = g + 1 == gpus() || node_of_gpu[static_cast<size_t>(g + 1)] != node_of_gpu[static_cast<size_t>(g)];
    if (!continues) {
      runs[node] += fmt::format("{}{}", runs[node].empty() ? "" : ",", g);
    } else if (ends_run) {
      runs[node] += fmt::format("-{}", g);
    }
  }
  std::string out;
  for (size_t n = 0; n < hosts.size(); ++n) out += fmt::format("{}{}: {}", n == 0 ? "" : ", ", hosts[n], runs[n]);
  return out;
}

NodePlacement placement_from_hosts(const std::vector<std::string>& host_of_gpu) {
  NodePlacement p;
  std::map<std::string, Count> index;
  for (const std::string& host : host_of_gpu) {
    const auto [it, added] = index.try_emplace(host, static_cast<Count>(p.hosts.size()));
    if (added) p.hosts.push_back(host);
    p.node_of_gpu.push_back(it->second);
  }
  return p;
}

NodePlacement uniform_placement(Count nodes, Count gpus_per_node) {
  NodePlacement p;
  for (Count n = 0; n < nodes; ++n) {
    p.hosts.push_back(fmt::format("node{}", n));
    for (Count g = 0; g < gpus_per_node; ++g) p.node_of_gpu.push_back(n);
  }
  return p;
}

NodePlacement read_hostfile(const std::string& path, const std::string& label) {
  std::string contents = model::read_text_file(path, label);
  if (contents.starts_with("\xEF\xBB\xBF")) contents.erase(0, 3);  // a byte-order mark is not part of the first host's name
  std::istringstream lines(contents);
  NodePlacement p;
  std::map<std::string, int> line_of_host;
  std::string line;
  for (int number = 1; std::getline(lines, line); ++number) {
    const std::string text = line.substr(0, line.find('#'));  // a comment may say anything
    // Host names and slots=N are printable ASCII: any other byte (a NUL, a name in another
    // encoding) is refused by its value, which is not printed (it would cut or garble the line).
    const auto odd = std::ranges::find_if(text, [](char c) {
      const auto byte = static_cast<unsigned char>(c);
      return byte >= 0x7F || (byte < 0x20 && c != '\t' && c != '\r');
    });
    if (odd != text.end()) {
      throw InputError(fmt::format("{} line {}: byte 0x{:02X} at column {} is not printable ASCII (a hostfile holds host names and "
                                   "slots=N)",
                                   label, number, static_cast<unsigned char>(*odd), odd - text.begin() + 1));
    }
    std::istringstream words(text);
    std::string host, word;
    if (!(words >> host)) continue;  // blank or a comment
    const std::string where = fmt::format("{} line {}", label, number);
    if (host.find('=') != std::string::npos) {
      throw InputError(fmt::format("{}: '{}' is not a host name, expected 'HOST slots=N'", where, host));
    }
    if (const auto [it, added] = line_of_host.try_emplace(host, number); !added) {
      throw InputError(fmt::format("{}: host '{}' is already listed on line {} (give it one line with all its slots)", where,
                                   host, it->second));
    }
    std::optional<Count> slots, max_slots;
    while (words >> word) {
      const auto equals = word.find('=');
      const std::string key = word.substr(0, equals);
      if (equals == std::string::npos || (key != "slots" && key != "max_slots" && key != "max-slots")) {
        throw InputError(fmt::format("{}: '{}' is not understood, expected 'HOST slots=N' (and optionally max_slots=M)",
                                     where, word));
      }
      // Open MPI reads a plain count: "2k" there is no 2048 (parse_count alone would take it).
      const std::string number = word.substr(equals + 1);
      if (number.empty() || number.find_first_not_of("0123456789") != std::string::npos) {
        throw InputError(fmt::format("{}: {}={} is not a whole number of slots (Open MPI takes digits only)", where, key, number));
      }
      const Count value = model::parse_count(number, fmt::format("{} {}", where, key));
      std::optional<Count>& field = key == "slots" ? slots : max_slots;
      if (field) throw InputError(fmt::format("{}: host '{}' gives {} twice", where, host, key == "slots" ? "slots" : "max_slots"));
      field = value;
    }
    if (!slots || *slots < 1) throw InputError(fmt::format("{}: host '{}' needs slots=N with N >= 1 (its GPUs)", where, host));
    if (max_slots && *max_slots < *slots) {
      throw InputError(fmt::format("{}: host '{}' has max_slots={} below slots={} (more slots than it may hold)", where, host, *max_slots,
                                   *slots));
    }
    if (*slots > kMaxTopologyGpus - p.gpus()) {  // not p.gpus() + slots: a slot count near 2^63 would wrap
      throw InputError(fmt::format("{}: the hostfile holds more than {} slots", where, kMaxTopologyGpus));
    }
    p.hosts.push_back(host);
    for (Count s = 0; s < *slots; ++s) p.node_of_gpu.push_back(p.nodes() - 1);
  }
  if (p.hosts.empty()) throw InputError(fmt::format("{}: lists no host (expected lines 'HOST slots=N')", label));
  return p;
}

bool same_grouping(const NodePlacement& a, const NodePlacement& b) { return canonical_nodes(a) == canonical_nodes(b); }

}  // namespace stripesim::sim
