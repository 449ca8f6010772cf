#include "stripesim/sim/topology.hpp"

#include <boost/graph/connected_components.hpp>
#include <boost/graph/dijkstra_shortest_paths_no_color_map.hpp>
#include <boost/property_map/property_map.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <queue>
#include <string_view>
#include <tuple>

#include "stripesim/model/io/config_catalog.hpp"
#include "stripesim/model/io/input_error.hpp"
#include "stripesim/model/io/json_fields.hpp"
#include "stripesim/model/io/json_file.hpp"
#include "stripesim/model/io/name_match.hpp"
#include "stripesim/model/io/size_parse.hpp"
#include "stripesim/model/workflows/experiment_files.hpp"

namespace stripesim::sim {

using model::InputError;

void Topology::add_node(std::string id, std::string kind) {
  if (kind == "gpu") net_->gpus.push_back(net_->nodes.size());
  net_->nodes.push_back({std::move(id), std::move(kind)});
}

void Topology::add_link(std::size_t a, std::size_t b, GigabytesPerSecond bandwidth, Microseconds latency_us) {
  net_->links.push_back({a, b, bandwidth, latency_us});
}

void Topology::build_graph() {
  Network& net = *net_;
  net.graph = Graph(net.nodes.size());
  for (std::size_t e = 0; e < net.links.size(); ++e) boost::add_edge(net.links[e].a, net.links[e].b, e, net.graph);
  net.weights.resize(net.links.size());
  for (std::size_t e = 0; e < net.links.size(); ++e) net.weights[e] = {net.links[e].bandwidth, net.links[e].latency_us};
  net.tree_blocks.clear();
  net.tree_blocks.resize((net.gpus.size() + Network::kTreesPerBlock - 1) / Network::kTreesPerBlock);
  net.tree_stored.assign(net.gpus.size(), 0);
  net.detours.assign(net.gpus.size(), {});
}

Topology Topology::from_json(const nlohmann::json& doc, const std::string& label, const std::string& file) {
  const model::JsonFields f(doc, label);
  f.allow_only({"name", "description", "nodes", "links", "sources"});
  Topology t;
  t.net_->name = f.non_empty_string("name");
  if (!file.empty()) t.net_->name = fmt::format("{} ({})", t.net_->name, file);
  const auto& nodes = f.raw("nodes");
  if (!nodes.is_array() || nodes.empty()) throw InputError(fmt::format("{}: expected a non-empty array", f.where("nodes")));
  std::map<std::string, std::size_t> index;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const model::JsonFields n(nodes[i], fmt::format("{} node {}", label, i));
    n.allow_only({"id", "kind"});
    const std::string id = n.non_empty_string("id");  // links and reports name nodes by it
    const std::string kind = n.string("kind");
    if (kind != "gpu" && kind != "switch" && kind != "nic" && kind != "bridge" && kind != "cpu") {
      throw InputError(fmt::format("{}: kind \"{}\" is not one of gpu, switch, nic, bridge, cpu", n.where("kind"), kind));
    }
    if (!index.emplace(id, i).second) throw InputError(fmt::format("{}: node id \"{}\" appears twice", label, id));
    t.add_node(id, kind);
  }
  if (t.net_->gpus.empty()) throw InputError(fmt::format("{}: has no node of kind gpu", label));
  if (static_cast<Count>(t.net_->gpus.size()) > kMaxTopologyGpus) {
    throw InputError(fmt::format("{}: has {} GPUs, more than {}, the most a topology holds", label, t.net_->gpus.size(), kMaxTopologyGpus));
  }
  const auto& links = f.raw("links");
  if (!links.is_array()) throw InputError(fmt::format("{}: expected an array", f.where("links")));
  std::map<std::pair<std::size_t, std::size_t>, size_t> joined;  // (a, b), a < b: the link that joins them
  for (size_t i = 0; i < links.size(); ++i) {
    const model::JsonFields l(links[i], fmt::format("{} link {}", label, i));
    l.allow_only({"a", "b", "bandwidth_gbps", "latency_us"});
    const auto endpoint = [&](const char* key) {
      const std::string id = l.string(key);
      const auto it = index.find(id);
      if (it == index.end()) throw InputError(fmt::format("{}: no node \"{}\"", l.where(key), id));
      return it->second;
    };
    const std::size_t a = endpoint("a");
    const std::size_t b = endpoint("b");
    if (a == b) throw InputError(fmt::format("{}: links a node to itself", l.label()));
    // A route crosses one link between two nodes (the cheapest), so a second one would never
    // carry a byte, nor add its bandwidth to the first's.
    if (const auto [it, first] = joined.emplace(std::minmax(a, b), i); !first) {
      throw InputError(fmt::format("{}: joins \"{}\" and \"{}\" again (as link {}); a route crosses one link between two "
                                   "nodes, so give one link with their bandwidths added",
                                   l.label(), l.string("a"), l.string("b"), it->second));
    }
    t.add_link(a, b, l.positive_number("bandwidth_gbps"), l.non_negative_number_or("latency_us", 0.0));
  }
  t.build_graph();
  // Every GPU must reach every other, or some ring hop has no route; and every other node must be
  // on their network, or the file holds a part that carries nothing.
  const Network& net = *t.net_;
  std::vector<int> component(net.nodes.size());
  (void)boost::connected_components(net.graph, component.data());
  const int network = component[net.gpus[0]];
  for (size_t g = 1; g < net.gpus.size(); ++g) {
    if (component[net.gpus[g]] != network) {
      throw InputError(fmt::format("{}: GPU {} ({}) is not connected to GPU 0", label, g, net.nodes[net.gpus[g]].id));
    }
  }
  for (size_t v = 0; v < net.nodes.size(); ++v) {
    if (component[v] != network) {
      throw InputError(fmt::format("{}: node \"{}\" ({}) is joined to no GPU, so no route crosses it", label, net.nodes[v].id,
                                   net.nodes[v].kind));
    }
  }
  return t;
}

Topology Topology::nvswitch(Count gpus, GigabytesPerSecond nvlink, Microseconds nvlink_latency_us) {
  Topology t;
  t.net_->name = fmt::format("nvswitch:{}", gpus);
  for (Count g = 0; g < gpus; ++g) t.add_node(fmt::format("gpu{}", g), "gpu");
  t.add_node("nvswitch", "switch");
  for (Count g = 0; g < gpus; ++g) t.add_link(static_cast<std::size_t>(g), static_cast<std::size_t>(gpus), nvlink, nvlink_latency_us);
  t.build_graph();
  return t;
}

Topology Topology::ideal(Count gpus) {
  Topology t;
  t.net_->name = "ideal";
  for (Count g = 0; g < gpus; ++g) t.add_node(fmt::format("gpu{}", g), "gpu");
  t.net_->ideal = true;
  t.build_graph();
  return t;
}

Topology Topology::cluster(Count nodes, Count gpus_per_node, GigabytesPerSecond nvlink, Microseconds nvlink_latency_us,
                           GigabytesPerSecond nic, Microseconds nic_latency_us) {
  return placed(uniform_placement(nodes, gpus_per_node), fmt::format("cluster:{}x{}", nodes, gpus_per_node), nvlink,
                nvlink_latency_us, nic, nic_latency_us);
}

Topology Topology::placed(const NodePlacement& placement, std::string name, GigabytesPerSecond nvlink,
                          Microseconds nvlink_latency_us, GigabytesPerSecond nic, Microseconds nic_latency_us) {
  Topology t;
  t.net_->name = std::move(name);
  // GPUs first so that GPU g is node index g; then each node's NVSwitch, the NICs, the fabric switch.
  std::vector<Count> local(placement.hosts.size(), 0);
  for (const Count node : placement.node_of_gpu) {
    t.add_node(fmt::format("{}.gpu{}", placement.hosts[static_cast<size_t>(node)], local[static_cast<size_t>(node)]++), "gpu");
  }
  const auto gpus = static_cast<std::size_t>(placement.gpus());
  for (const std::string& host : placement.hosts) t.add_node(fmt::format("{}.nvswitch", host), "switch");
  for (std::size_t g = 0; g < gpus; ++g) t.add_node(fmt::format("{}.nic", t.net_->nodes[g].id), "nic");
  const std::size_t fabric = t.net_->nodes.size();
  t.add_node("fabric", "switch");
  for (std::size_t g = 0; g < gpus; ++g) {
    t.add_link(g, gpus + static_cast<std::size_t>(placement.node_of_gpu[g]), nvlink, nvlink_latency_us);
    const std::size_t card = gpus + placement.hosts.size() + g;
    t.add_link(g, card, nic, nic_latency_us);
    t.add_link(card, fabric, nic, nic_latency_us);
  }
  t.net_->placement = placement;
  t.build_graph();
  return t;
}

NodePlacement Topology::placement() const {
  if (net_->placement) return *net_->placement;
  // GPUs joined by links that touch no NIC share a node.
  boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS> local(net_->nodes.size());
  for (const TopologyLink& l : net_->links) {
    if (net_->nodes[l.a].kind != "nic" && net_->nodes[l.b].kind != "nic") boost::add_edge(l.a, l.b, local);
  }
  std::vector<int> component(net_->nodes.size());
  (void)boost::connected_components(local, component.data());
  std::vector<std::string> host_of_gpu;
  std::map<int, std::string> names;
  for (const std::size_t v : net_->gpus) {
    host_of_gpu.push_back(names.try_emplace(component[v], fmt::format("node{}", names.size())).first->second);
  }
  return placement_from_hosts(host_of_gpu);
}

std::string Topology::directed_link_name(std::uint32_t directed) const {
  const TopologyLink& link = net_->links[directed / 2];
  const auto& from = net_->nodes[directed % 2 == 0 ? link.a : link.b].id;
  const auto& to = net_->nodes[directed % 2 == 0 ? link.b : link.a].id;
  return fmt::format("{}->{}", from, to);
}

namespace {

// Latencies summed in another order differ in their last bits: a route is only quicker by more.
bool quicker(Microseconds a, Microseconds b) { return a < b - 1e-9 * std::max(1.0, std::abs(b)); }

}  // namespace

// The routes' computations, which read the network a topology keeps to itself.
struct Routing {
  using RouteCost = Topology::RouteCost;
  using Network = Topology::Network;

  static void run_dijkstra(const Network& net, std::size_t source, std::vector<RouteCost>& distance,
                           std::vector<std::uint32_t>& tree) {
    const std::size_t vertices = boost::num_vertices(net.graph);
    if (distance.size() < vertices) distance.resize(vertices);
    if (tree.size() < vertices) tree.resize(vertices);
    const auto index = boost::get(boost::vertex_index, net.graph);
    boost::dijkstra_shortest_paths_no_color_map(
        net.graph, source,
        boost::weight_map(boost::make_iterator_property_map(net.weights.cbegin(), boost::get(boost::edge_index, net.graph)))
            .distance_map(boost::make_iterator_property_map(distance.begin(), index))
            .predecessor_map(boost::make_iterator_property_map(tree.begin(), index))
            .distance_compare(std::less<RouteCost>())
            .distance_combine(&RouteCost::extended)
            .distance_inf(RouteCost::unreachable())
            .distance_zero(RouteCost::here()));
  }

  // Link e crossed leaving vertex `from`, as a Route names it (2 * link + 0 for a->b, + 1 for b->a).
  static std::uint32_t directed_link(const Network& net, std::size_t e, std::size_t from) {
    return static_cast<std::uint32_t>(2 * e + (net.links[e].a == from ? 0 : 1));
  }

  // The route to vertex v along a predecessor tree from `source` (none when v is unreachable).
  static Route route_along(const Network& net, const std::uint32_t* predecessor, std::size_t source, std::size_t v) {
    Route route;
    if (v != source && predecessor[v] == v) return route;  // unreachable: no links
    route.bandwidth = std::numeric_limits<double>::infinity();
    std::vector<std::uint32_t> reversed;
    while (v != source) {
      const std::size_t u = predecessor[v];
      // The link between u and v that Dijkstra used (the cheapest, were there several; a file's
      // second one is refused), looked for from the end with fewer links (a switch has one per
      // GPU it serves).
      std::size_t best = net.links.size();
      const bool from_u = boost::out_degree(u, net.graph) <= boost::out_degree(v, net.graph);
      const std::size_t near = from_u ? u : v, far = from_u ? v : u;
      for (auto [it, end] = boost::out_edges(near, net.graph); it != end; ++it) {
        if (boost::target(*it, net.graph) != far) continue;
        const std::size_t e = boost::get(boost::edge_index, net.graph, *it);
        if (best == net.links.size() || net.weights[e] < net.weights[best]) best = e;
      }
      const TopologyLink& link = net.links[best];
      reversed.push_back(directed_link(net, best, u));
      route.latency_us += link.latency_us;
      route.bandwidth = std::min(route.bandwidth, link.bandwidth);
      v = u;
    }
    route.links.assign(reversed.rbegin(), reversed.rend());
    if (route.links.empty()) route.bandwidth = 0;
    return route;
  }

  // Whether some vertex as wide as `level` is reached sooner, over a link as wide, than the
  // tree's latency to it says. Where none is, the tree's latencies are the lowest over routes of
  // links as wide as `level` (each is the sum along such a route, and no such link shortens
  // one), so every GPU of that level has its best route.
  static bool tree_misses(const Network& net, const std::vector<RouteCost>& distance, GigabytesPerSecond level) {
    for (const TopologyLink& l : net.links) {
      if (l.bandwidth < level || distance[l.a].bottleneck < level) continue;  // then b is narrower too
      if (quicker(distance[l.a].latency_us + l.latency_us, distance[l.b].latency_us) ||
          quicker(distance[l.b].latency_us + l.latency_us, distance[l.a].latency_us)) {
        return true;
      }
    }
    return false;
  }

  // The routes to the GPUs the widest-prefix tree misses (distance: its costs): none where the
  // tree passes the check at the narrowest of its GPUs' bottlenecks (every shipped and generated
  // topology). Else one search of the routes no other beats on both counts: labels (a route's
  // width and latency) taken quickest first, then widest, each kept only where it is wider than
  // every label its vertex kept (those are quicker), so a vertex keeps one label per width that
  // costs it latency, and a GPU's last label is its widest route, the quickest as wide.
  static std::map<std::size_t, Route> detours_from(const Network& net, std::size_t source,
                                                   const std::vector<RouteCost>& distance) {
    std::map<std::size_t, Route> detours;
    constexpr double kInfinity = std::numeric_limits<double>::infinity();
    const std::size_t vertices = boost::num_vertices(net.graph);
    // The GPUs the source reaches, each still without a label as wide as the tree's bottleneck,
    // the widest any route has: the first such label taken is its quickest widest route, and once
    // every GPU has one no label left (none quicker) changes a GPU's.
    std::vector<char> unsettled(vertices, 0);
    std::size_t unsettled_gpus = 0;
    GigabytesPerSecond narrowest = kInfinity;
    for (const std::size_t v : net.gpus) {
      if (v == source || distance[v].bottleneck <= 0) continue;
      narrowest = std::min(narrowest, distance[v].bottleneck);
      unsettled[v] = 1;
      ++unsettled_gpus;
    }
    if (narrowest == kInfinity || !tree_misses(net, distance, narrowest)) return detours;
    struct Label {
      GigabytesPerSecond width;
      Microseconds latency_us;
      std::size_t vertex;
      std::size_t link;  // the link it came over (none at the source)
      std::size_t from;  // the label it extends
    };
    constexpr std::size_t kNone = std::numeric_limits<std::size_t>::max();
    std::vector<Label> labels{{kInfinity, 0, source, kNone, kNone}};
    labels.reserve(4 * vertices);
    std::vector<GigabytesPerSecond> widest(vertices, 0);  // of the labels each vertex kept
    std::vector<std::size_t> kept(vertices, kNone);       // its last kept label
    using Entry = std::tuple<Microseconds, GigabytesPerSecond, std::size_t>;  // latency, -width, label
    std::priority_queue<Entry, std::vector<Entry>, std::greater<>> queue;
    queue.emplace(0, -kInfinity, 0);
    while (!queue.empty()) {
      const std::size_t index = std::get<2>(queue.top());
      queue.pop();
      const Label label = labels[index];
      if (label.width <= widest[label.vertex]) continue;  // a label as wide and as quick was kept
      widest[label.vertex] = label.width;
      kept[label.vertex] = index;
      if (unsettled[label.vertex] != 0 && label.width >= distance[label.vertex].bottleneck) {
        unsettled[label.vertex] = 0;
        if (--unsettled_gpus == 0) break;
      }
      for (auto [it, end] = boost::out_edges(label.vertex, net.graph); it != end; ++it) {
        const std::size_t e = boost::get(boost::edge_index, net.graph, *it);
        const std::size_t next = boost::target(*it, net.graph);
        const GigabytesPerSecond width = std::min(label.width, net.links[e].bandwidth);
        if (width <= widest[next] || width < narrowest) continue;  // narrower than any GPU's widest: no GPU's
        labels.push_back({width, label.latency_us + net.links[e].latency_us, next, e, index});
        queue.emplace(labels.back().latency_us, -width, labels.size() - 1);
      }
    }
    for (const std::size_t v : net.gpus) {
      if (v == source || kept[v] == kNone || !quicker(labels[kept[v]].latency_us, distance[v].latency_us)) continue;
      Route route;
      route.bandwidth = labels[kept[v]].width;
      route.latency_us = labels[kept[v]].latency_us;
      std::vector<std::uint32_t> reversed;
      for (std::size_t i = kept[v]; labels[i].link != kNone; i = labels[i].from) {
        reversed.push_back(directed_link(net, labels[i].link, labels[labels[i].from].vertex));
      }
      route.links.assign(reversed.rbegin(), reversed.rend());
      detours[v] = std::move(route);
    }
    return detours;
  }
};

std::vector<Route> Topology::routes_from(Count from, const std::vector<Count>& to) const {
  if (net_->ideal) return std::vector<Route>(to.size());
  Network& net = *net_;
  const std::size_t vertices = boost::num_vertices(net.graph);
  const std::size_t source = net.gpus[static_cast<std::size_t>(from)];
  // A tree, once stored, never changes: it is read without the lock, and computed without it, so
  // that threads routing different GPUs do not wait on each other (two computing the same one
  // get the same tree; the first stored is kept). Its detours are stored with it.
  const auto gpu = static_cast<std::size_t>(from);
  const auto stored_tree = [&] {
    return net.tree_blocks[gpu / Network::kTreesPerBlock].get() + (gpu % Network::kTreesPerBlock) * vertices;
  };
  const std::uint32_t* predecessor = nullptr;
  {
    const std::lock_guard lock(net.tree_mutex);
    if (net.tree_stored[gpu] != 0) predecessor = stored_tree();
  }
  if (predecessor == nullptr) {
    // The thread's buffers, reused tree after tree (Dijkstra sets every vertex of both).
    thread_local std::vector<RouteCost> distance;
    thread_local std::vector<std::uint32_t> tree;
    Routing::run_dijkstra(net, source, distance, tree);
    std::map<std::size_t, Route> detours = Routing::detours_from(net, source, distance);
    const std::lock_guard lock(net.tree_mutex);
    std::unique_ptr<std::uint32_t[]>& block = net.tree_blocks[gpu / Network::kTreesPerBlock];
    if (!block) block.reset(new std::uint32_t[std::min(Network::kTreesPerBlock, net.gpus.size()) * vertices]);  // NOLINT: uninitialised
    if (net.tree_stored[gpu] == 0) {
      std::copy_n(tree.begin(), vertices, stored_tree());
      net.detours[gpu] = std::move(detours);
    }
    net.tree_stored[gpu] = 1;
    predecessor = stored_tree();
  }
  const std::map<std::size_t, Route>& detours = net.detours[gpu];
  std::vector<Route> routes;
  routes.reserve(to.size());
  for (const Count target_gpu : to) {
    const std::size_t v = net.gpus[static_cast<std::size_t>(target_gpu)];
    const auto detour = detours.find(v);
    routes.push_back(detour != detours.end() ? detour->second : Routing::route_along(net, predecessor, source, v));
  }
  return routes;
}

nlohmann::ordered_json Topology::to_json() const {
  nlohmann::ordered_json nodes = nlohmann::ordered_json::array();
  for (const auto& n : net_->nodes) nodes.push_back({{"id", n.id}, {"kind", n.kind}});
  nlohmann::ordered_json links = nlohmann::ordered_json::array();
  for (const auto& l : net_->links) {
    links.push_back({{"a", net_->nodes[l.a].id}, {"b", net_->nodes[l.b].id}, {"bandwidth_gbps", l.bandwidth}, {"latency_us", l.latency_us}});
  }
  return {{"name", net_->name}, {"nodes", std::move(nodes)}, {"links", std::move(links)}};
}

namespace {

constexpr Microseconds kNvlinkLatencyUs = kDefaultNvlinkLatencyUs;
constexpr GigabytesPerSecond kNicBandwidth = kDefaultNicBandwidth;
constexpr Microseconds kNicLatencyUs = kDefaultNicLatencyUs;

// The options after cluster:NxG, each ":key=value": the NIC line rate and how many NICs a node has.
struct ClusterOptions {
  GigabytesPerSecond nic = kNicBandwidth;
  std::optional<Count> nics_per_node;  // none: one per GPU
};

// What is wrong with the --topology (or a file's "topology") spec, shown quoted as it was given.
InputError topology_error(const std::string& spec, const std::string& detail) {
  return InputError(model::Input::topology, spec, detail, model::Shown::quoted);
}

// "400gbps" or "400gbit": NICs are sold by line rate in gigabits per second; links here are GB/s.
GigabytesPerSecond parse_nic_rate(std::string_view text, const std::string& spec) {
  const std::string lower = model::lowercase(text);
  const size_t digits = lower.ends_with("gbps") || lower.ends_with("gbit") ? lower.size() - 4 : std::string::npos;
  double gigabits = 0;
  const char* first = lower.data();
  const char* last = first + (digits == std::string::npos ? 0 : digits);
  const auto [end, ec] = std::from_chars(first, last, gigabits);
  if (digits == std::string::npos || digits == 0 || ec != std::errc() || end != last || !(gigabits > 0) ||
      !std::isfinite(gigabits)) {
    throw topology_error(spec, fmt::format("nic={} is not a NIC rate, expected gigabits per second such as nic=400gbps "
                                           "(NDR InfiniBand, 50 GB/s per direction)",
                                           text));
  }
  // A link's bandwidth must be physical: said here of the rate given, not of the link it builds.
  const double bytes = gigabits / 8.0;
  if (!(bytes >= model::kSmallestPositiveValue && bytes <= model::kLargestValue)) {
    throw topology_error(spec, fmt::format("nic={} is {:g} GB/s, outside [{:g}, {:g}], the range a link's bandwidth can take", text,
                                           bytes, model::kSmallestPositiveValue, model::kLargestValue));
  }
  return bytes;
}

ClusterOptions parse_cluster_options(std::string_view options, Count gpus_per_node, const std::string& spec) {
  ClusterOptions out;
  bool nic_given = false;
  // `options` is what follows NxG: empty, or ":key=value" repeated.
  while (!options.empty()) {
    options.remove_prefix(1);
    const auto colon = options.find(':');
    const std::string_view option = options.substr(0, colon);
    options = colon == std::string_view::npos ? std::string_view{} : options.substr(colon);
    const auto equals = option.find('=');
    const std::string_view key = option.substr(0, equals);
    const std::string_view value = equals == std::string_view::npos ? std::string_view{} : option.substr(equals + 1);
    if (key == "nic" && !nic_given && equals != std::string_view::npos) {
      out.nic = parse_nic_rate(value, spec);
      nic_given = true;
    } else if (key == "nics" && !out.nics_per_node && equals != std::string_view::npos) {
      const Count nics = model::parse_count(value, fmt::format("--topology '{}' nics", spec));
      if (nics < 1 || nics > gpus_per_node) {
        throw topology_error(spec, fmt::format("nics={} must be between 1 and the node's {} GPUs", nics, gpus_per_node));
      }
      out.nics_per_node = nics;
    } else {
      throw topology_error(spec, fmt::format("option '{}' is unknown or repeated, expected cluster:NxG followed by "
                                             ":nic=RATE (e.g. 400gbps) and :nics=K (NICs per node), each at most once",
                                             option));
    }
  }
  return out;
}

// A cluster whose nodes share `nics` NICs among their GPUs (GPU g of a node uses NIC g * nics / G,
// as rails are wired), described as a topology file would be. Topology::cluster (one NIC per GPU,
// 400 Gb/s, named cluster:NxG) is kept for the plain spec; with nics = G the two route alike.
nlohmann::json shared_nic_cluster(const std::string& name, Count nodes, Count gpus_per_node, Count nics,
                                  GigabytesPerSecond nvlink, Microseconds nvlink_latency, GigabytesPerSecond nic) {
  nlohmann::json doc{{"name", name}, {"nodes", nlohmann::json::array()}, {"links", nlohmann::json::array()}};
  auto& list = doc["nodes"];
  auto& links = doc["links"];
  const auto gpu = [](Count n, Count g) { return fmt::format("node{}.gpu{}", n, g); };
  const auto card = [](Count n, Count k) { return fmt::format("node{}.nic{}", n, k); };
  for (Count n = 0; n < nodes; ++n) {
    for (Count g = 0; g < gpus_per_node; ++g) list.push_back({{"id", gpu(n, g)}, {"kind", "gpu"}});
  }
  list.push_back({{"id", "fabric"}, {"kind", "switch"}});
  for (Count n = 0; n < nodes; ++n) {
    const std::string nvswitch = fmt::format("node{}.nvswitch", n);
    list.push_back({{"id", nvswitch}, {"kind", "switch"}});
    for (Count k = 0; k < nics; ++k) {
      list.push_back({{"id", card(n, k)}, {"kind", "nic"}});
      links.push_back({{"a", card(n, k)}, {"b", "fabric"}, {"bandwidth_gbps", nic}, {"latency_us", kNicLatencyUs}});
    }
    for (Count g = 0; g < gpus_per_node; ++g) {
      links.push_back({{"a", gpu(n, g)}, {"b", nvswitch}, {"bandwidth_gbps", nvlink}, {"latency_us", nvlink_latency}});
      links.push_back({{"a", gpu(n, g)}, {"b", card(n, g * nics / gpus_per_node)}, {"bandwidth_gbps", nic},
                       {"latency_us", kNicLatencyUs}});
    }
  }
  return doc;
}

}  // namespace

namespace {

// Generated clusters are built once per process: a sweep, a fit or a baseline makes many
// simulations on the same cluster, and copies of one Topology share its shortest-path trees, so
// each GPU is routed once, not once per simulation. (`plan` loads its topology once itself.)
Topology memoised(const std::string& key, const std::function<Topology()>& build) {
  static std::mutex mutex;
  static std::map<std::string, Topology> built;
  const std::lock_guard lock(mutex);
  if (const auto it = built.find(key); it != built.end()) return it->second;
  return built.emplace(key, build()).first->second;
}

}  // namespace

namespace {

Topology load_topology_spec(const std::string& spec, const std::string& config_dir, GigabytesPerSecond nvlink,
                            std::optional<Microseconds> nvlink_latency_us, Count ideal_gpus) {
  const Microseconds nvlink_latency = nvlink_latency_us.value_or(kNvlinkLatencyUs);
  const std::string flag = "--topology";
  constexpr std::string_view kNvswitch = "nvswitch:";
  constexpr std::string_view kCluster = "cluster:";
  const std::string_view text = spec;
  // Keywords and names case aside, as models, hardware and kernels are found ("NVSwitch:8",
  // "DGX-H100"); a hostfile's path and a JSON file's as given.
  const std::string lower = model::lowercase(spec);
  if (lower == "ideal") return Topology::ideal(ideal_gpus);
  if (lower.starts_with(kNvswitch)) {
    const Count gpus = model::parse_count(text.substr(kNvswitch.size()), flag + " nvswitch:G GPU count");
    if (gpus < 1 || gpus > kMaxTopologyGpus) {
      throw topology_error(spec, fmt::format("the GPU count must be between 1 and {}", kMaxTopologyGpus));
    }
    return Topology::nvswitch(gpus, nvlink, nvlink_latency);
  }
  if (lower.starts_with(kCluster)) {
    // Keywords and the 'x' case aside, as the prefix is ("cluster:2X4:NICS=2"); numbers are digits.
    const std::string_view rest = std::string_view(lower).substr(kCluster.size());
    const std::string_view shape = rest.substr(0, rest.find(':'));
    const auto sides = model::split_product(shape);
    if (!sides) throw topology_error(spec, "expected cluster:NxG, optionally :nic=RATE (e.g. 400gbps) and :nics=K");
    const Count nodes = model::parse_count(sides->first, flag + " cluster node count");
    const Count gpus = model::parse_count(sides->second, flag + " cluster GPUs per node");
    // Each factor is bounded first: their product could overflow 64 bits (and wrap to a small number).
    if (nodes < 1 || gpus < 1 || nodes > kMaxTopologyGpus || gpus > kMaxTopologyGpus || nodes * gpus > kMaxTopologyGpus) {
      throw topology_error(spec, fmt::format("needs at least one node of one GPU and at most {} GPUs", kMaxTopologyGpus));
    }
    const ClusterOptions options = parse_cluster_options(rest.substr(shape.size()), gpus, spec);
    return memoised(fmt::format("{}|{}|{}", spec, nvlink, nvlink_latency), [&] {
      if (shape.size() == rest.size()) return Topology::cluster(nodes, gpus, nvlink, nvlink_latency, kNicBandwidth, kNicLatencyUs);
      // Named after the spec, options included, so that outputs say which NICs they assumed.
      return Topology::from_json(shared_nic_cluster(spec, nodes, gpus, options.nics_per_node.value_or(gpus), nvlink,
                                                    nvlink_latency, options.nic),
                                 flag + " " + spec);
    });
  }
  if (lower.starts_with("hostfile:")) {
    const std::string path = model::hostfile_of(text);
    if (path.empty()) throw topology_error(spec, "expected hostfile:FILE (lines 'HOST slots=N')");
    return Topology::placed(read_hostfile(path, flag + " " + spec), spec, nvlink, nvlink_latency, kNicBandwidth, kNicLatencyUs);
  }
  std::string path = spec;
  const bool given_as_file = model::is_config_path(spec);
  if (!given_as_file) {
    std::vector<std::string> names;
    const auto file = model::find_json_by_stem(std::filesystem::path(config_dir) / "topologies", spec, names);
    if (!file) {
      std::vector<std::string> every_name = names;
      every_name.insert(every_name.end(), {"ideal", "nvswitch:", "cluster:", "hostfile:"});
      throw topology_error(spec, fmt::format("unknown{}, expected nvswitch:G, cluster:NxG, hostfile:FILE, ideal, a JSON file or "
                                             "one of {}/topologies: {}",
                                             model::did_you_mean(spec, every_name), config_dir, fmt::join(names, ", ")));
    }
    path = file->string();
  }
  return Topology::from_json(model::read_json_file(path, flag + " " + spec), flag + " " + spec, given_as_file ? spec : "");
}

}  // namespace

Topology load_topology(const std::string& spec, const std::string& config_dir, GigabytesPerSecond nvlink,
                       std::optional<Microseconds> nvlink_latency_us, Count ideal_gpus) {
  try {
    return load_topology_spec(spec, config_dir, nvlink, nvlink_latency_us, ideal_gpus);
  } catch (const InputError& e) {
    // The files a spec names (hostfiles, topology JSON) word their errors "--topology <spec> ...:
    // <detail>"; raised again by kind, word for word, so that a spec from an --experiment file is
    // named at its field.
    const std::string message = e.what();
    constexpr std::string_view kFlag = "--topology ";
    const size_t colon = message.find(": ");
    if (e.input() || !message.starts_with(kFlag) || colon == std::string::npos) throw;
    throw InputError(model::Input::topology, message.substr(kFlag.size(), colon - kFlag.size()), message.substr(colon + 2));
  }
}

}  // namespace stripesim::sim
