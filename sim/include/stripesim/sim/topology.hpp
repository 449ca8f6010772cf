#pragma once
// The machine as a graph (Boost.Graph): GPUs, switches, NICs and host bridges joined by links
// with a bandwidth per direction and a latency. Ring hops are routed along the widest paths
// (then the lowest latency), as NCCL routes; each direction of each link is a separate
// resource, so hops that share one contend.
#include <boost/graph/adjacency_list.hpp>
#include <algorithm>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "stripesim/model/work/types.hpp"
#include "stripesim/sim/node_placement.hpp"
#include "stripesim/sim/units.hpp"

namespace stripesim::sim {

using model::Count;

// The network of generated clusters: one 400 Gb/s InfiniBand NDR NIC per GPU (per direction),
// and the latency of each of a cross-node hop's four links (GPU to NIC, NIC to fabric switch).
inline constexpr GigabytesPerSecond kDefaultNicBandwidth = 50.0;
inline constexpr Microseconds kDefaultNvlinkLatencyUs = 1.0;  // per link: GPU to NVSwitch
inline constexpr Microseconds kDefaultNicLatencyUs = 1.5;
// Links a hop crosses: GPU -> NVSwitch -> GPU inside a node; GPU -> NIC -> fabric -> NIC -> GPU between.
inline constexpr int kLinksPerNodeHop = 2;
inline constexpr int kLinksPerNetworkHop = 4;

struct TopologyNode {
  std::string id;
  std::string kind;  // gpu, switch, nic, bridge, cpu
};

struct TopologyLink {
  std::size_t a = 0;  // node indices
  std::size_t b = 0;
  GigabytesPerSecond bandwidth = 0;  // per direction
  Microseconds latency_us = 0;
};

// A route between two GPUs: the directed links it crosses (2 * link + 0 for a->b, + 1 for b->a),
// its summed latency and its bottleneck bandwidth.
struct Route {
  std::vector<std::uint32_t> links;
  Microseconds latency_us = 0;
  GigabytesPerSecond bandwidth = 0;
  [[nodiscard]] Microseconds transfer_us(Bytes bytes) const {
    return links.empty() ? 0.0 : latency_us + transfer_time_us(bytes, bandwidth);
  }
};

class Topology {
 public:
  // {"name", "description", "nodes": [{"id", "kind"}], "links": [{"a", "b", "bandwidth_gbps",
  // "latency_us"}], "sources"}; GPUs are numbered in the order they are listed. Read from a file
  // the user named by its path, `file`: named "NAME (FILE)", so that an edited copy of a shipped
  // topology that kept its name does not print as the shipped one.
  [[nodiscard]] static Topology from_json(const nlohmann::json& doc, const std::string& label, const std::string& file = "");
  // One node of `gpus` GPUs, each linked to one NVSwitch.
  [[nodiscard]] static Topology nvswitch(Count gpus, GigabytesPerSecond nvlink, Microseconds nvlink_latency_us);
  // `gpus` GPUs joined by free links: every hop takes no time, so a simulated ring is its
  // compute alone (what one GPU measures when it runs each device's calls in turn).
  [[nodiscard]] static Topology ideal(Count gpus);
  // Free links, and (attention_passes.cpp) the calls alone with no merge between them: the ring
  // as one GPU measures it, timing each device's calls in turn.
  [[nodiscard]] bool is_ideal() const { return net_->ideal; }
  // `nodes` such nodes; every GPU also has its own NIC linked to one network switch.
  [[nodiscard]] static Topology cluster(Count nodes, Count gpus_per_node, GigabytesPerSecond nvlink,
                                        Microseconds nvlink_latency_us, GigabytesPerSecond nic,
                                        Microseconds nic_latency_us);
  // The same build for any placement (nodes of unequal sizes, ranks not consecutive): each node's
  // GPUs on its own NVSwitch ("HOST.gpuK" -> "HOST.nvswitch"), every GPU's NIC on one fabric switch.
  [[nodiscard]] static Topology placed(const NodePlacement& placement, std::string name, GigabytesPerSecond nvlink,
                                       Microseconds nvlink_latency_us, GigabytesPerSecond nic, Microseconds nic_latency_us);

  [[nodiscard]] const std::string& name() const { return net_->name; }
  [[nodiscard]] Count gpu_count() const { return static_cast<Count>(net_->gpus.size()); }
  [[nodiscard]] const std::vector<TopologyNode>& nodes() const { return net_->nodes; }
  [[nodiscard]] const std::vector<TopologyLink>& links() const { return net_->links; }
  // Which node each GPU is on: the placement it was built from, or else the GPUs that reach each
  // other without crossing a NIC share a node (named node0, node1, ... by their first GPU).
  [[nodiscard]] NodePlacement placement() const;
  [[nodiscard]] std::size_t directed_link_count() const { return 2 * net_->links.size(); }
  // "gpu0->nvswitch"
  [[nodiscard]] std::string directed_link_name(std::uint32_t directed) const;
  [[nodiscard]] const TopologyLink& link_of(std::uint32_t directed) const { return net_->links[directed / 2]; }

  // The widest (then lowest-latency) routes from GPU `from` to each GPU in `to` (its tree, computed once).
  [[nodiscard]] std::vector<Route> routes_from(Count from, const std::vector<Count>& to) const;
  [[nodiscard]] Route route(Count from, Count to) const { return routes_from(from, {to}).front(); }

  [[nodiscard]] nlohmann::ordered_json to_json() const;

 private:
  friend struct Routing;  // topology.cpp: the trees and their detours
  Topology() = default;
  void add_node(std::string id, std::string kind);
  void add_link(std::size_t a, std::size_t b, GigabytesPerSecond bandwidth, Microseconds latency_us);
  void build_graph();

  // What a route is chosen by, as NCCL chooses the paths it sends over: the widest bottleneck
  // first (a K/V block is megabytes: its time is bytes over the narrowest link), then the lowest
  // latency among equally wide routes. Latency alone would send a ring hop over a slow direct
  // link (a PCIe bridge) beside a fast switched path of more links. Dijkstra extends a cost link
  // by link (bottleneck min, latency sum); the widest bottleneck it finds is exact, and the latency
  // the lowest among the routes through each vertex's widest prefix. That is not always the
  // lowest among routes as wide end to end: where two paths of different widths meet at a link
  // narrower than both, the narrower, quicker prefix is as good. So the tree is checked against
  // the links as wide as its GPUs' narrowest bottleneck (is any vertex reached sooner over one of
  // them than its tree says?), and where it fails, a search of the routes no other beats on
  // width and latency both gives the GPUs whose tree route is slower a detour.
  struct RouteCost {
    GigabytesPerSecond bottleneck = 0;
    Microseconds latency_us = 0;
    [[nodiscard]] static RouteCost here() { return {std::numeric_limits<double>::infinity(), 0}; }
    [[nodiscard]] static RouteCost unreachable() { return {0, std::numeric_limits<double>::infinity()}; }
    [[nodiscard]] static RouteCost extended(RouteCost path, RouteCost link) {
      return {std::min(path.bottleneck, link.bottleneck), path.latency_us + link.latency_us};
    }
    friend bool operator<(const RouteCost& a, const RouteCost& b) {
      return a.bottleneck > b.bottleneck || (a.bottleneck == b.bottleneck && a.latency_us < b.latency_us);
    }
  };
  using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS, boost::no_property,
                                      boost::property<boost::edge_index_t, std::size_t>>;
  // Everything a topology is, built once and never changed after: copies share it (every mesh
  // `plan` searches holds a copy of one topology).
  struct Network {
    std::string name;
    bool ideal = false;                      // routes cross no link
    std::optional<NodePlacement> placement;  // set by placed()
    std::vector<TopologyNode> nodes;
    std::vector<TopologyLink> links;
    std::vector<std::size_t> gpus;  // node index of every GPU, in GPU order
    Graph graph;
    std::vector<RouteCost> weights;  // by link: its bandwidth and latency, as routes compare them
    // Every GPU's shortest-path tree (predecessor per vertex), computed when first asked: the
    // rings, all-to-alls and all-reduces beside a simulated one route every GPU of a mesh. Trees
    // are computed outside the lock (threads route different GPUs at once) and stored under it.
    std::mutex tree_mutex;
    // 4 bytes a vertex: a mesh of 32768 GPUs routes every GPU, 4.3 GB of trees. Stored in blocks
    // of kTreesPerBlock GPUs, each one allocation left uninitialised (its pages are faulted in as
    // its trees are stored): a tree an allocation of its own (131 KB at 32768 GPUs, past malloc's
    // mmap threshold) made a mapping each, and a 32768-GPU plan took 150 s instead of 62.
    static constexpr std::size_t kTreesPerBlock = 256;
    std::vector<std::unique_ptr<std::uint32_t[]>> tree_blocks;  // by GPU / kTreesPerBlock, null until used
    std::vector<char> tree_stored;                              // by GPU
    // By GPU, stored with its tree: the routes to GPUs (by vertex) that the tree misses. Empty in
    // every shipped and generated topology.
    std::vector<std::map<std::size_t, Route>> detours;
  };
  std::shared_ptr<Network> net_ = std::make_shared<Network>();
};

// The specs load_topology takes, as help texts list them.
inline constexpr const char* kTopologySpecs = "nvswitch:G, cluster:NxG[:nic=RATE][:nics=K], hostfile:FILE, ideal, a name in configs/topologies or a JSON file";

// "nvswitch:G", "cluster:NxG", "hostfile:FILE" (an Open MPI hostfile, node_placement.hpp),
// "ideal" (as many GPUs as `ideal_gpus`, free links), a name in `config_dir`/topologies, or a
// path to a JSON file.
// Generated topologies take NVLink bandwidth from `nvlink` (the hardware profile's link) and
// a 400 Gb/s (50 GB/s) NIC per GPU.
[[nodiscard]] Topology load_topology(const std::string& spec, const std::string& config_dir, GigabytesPerSecond nvlink,
                                     std::optional<Microseconds> nvlink_latency_us = std::nullopt, Count ideal_gpus = 1);

}  // namespace stripesim::sim
