// Which node each GPU is on: hostfiles (Open MPI's format), cluster:NxG, host names, and the
// topologies built from them, whose hops inside a node cross NVLink and the others the network.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "stripesim/model/io/input_error.hpp"
#include "stripesim/sim/node_placement.hpp"
#include "stripesim/sim/topology.hpp"
#include "temp_path.hpp"

namespace stripesim::sim {
namespace {

std::string write_hostfile(const std::string& name, const std::string& text) {
  const auto path = temp_path("stripesim-hostfile-" + name);
  std::ofstream(path) << text;
  return path.string();
}

std::string hostfile_rejection(const std::string& text) {
  try {
    (void)read_hostfile(write_hostfile("bad", text), "--topology hostfile:hosts");
  } catch (const model::InputError& e) {
    return e.what();
  }
  return "";
}

TEST(NodePlacement, HostNamesGroupRanks) {
  const NodePlacement p = placement_from_hosts({"a", "a", "b", "b", "a"});
  EXPECT_EQ(p.nodes(), 2);
  EXPECT_EQ(p.gpus(), 5);
  EXPECT_TRUE(p.same_node(0, 4));
  EXPECT_FALSE(p.same_node(1, 2));
  EXPECT_EQ(p.describe(), "a: 0-1,4, b: 2-3");
  EXPECT_EQ(p.first(2).nodes(), 1);
  EXPECT_EQ(uniform_placement(2, 3).describe(), "node0: 0-2, node1: 3-5");
  // Names aside, a cluster:2x2 and two hosts of two consecutive ranks group alike.
  EXPECT_TRUE(same_grouping(uniform_placement(2, 2), placement_from_hosts({"x", "x", "y", "y"})));
  EXPECT_FALSE(same_grouping(uniform_placement(2, 2), placement_from_hosts({"x", "y", "x", "y"})));
  EXPECT_FALSE(same_grouping(uniform_placement(1, 4), uniform_placement(2, 2)));
}

TEST(NodePlacement, HostfileFillsSlotsInOrder) {
  const NodePlacement p = read_hostfile(write_hostfile("ok", "# two nodes\n\nnode-a slots=3 max_slots=4\n"
                                                              "node-b   slots=2  # the smaller one\n"),
                                        "hosts");
  EXPECT_EQ(p.hosts, (std::vector<std::string>{"node-a", "node-b"}));
  EXPECT_EQ(p.node_of_gpu, (std::vector<Count>{0, 0, 0, 1, 1}));
}

TEST(NodePlacement, BadHostfilesAreNamed) {
  EXPECT_EQ(hostfile_rejection("a slots=2\nb\n"), "--topology hostfile:hosts line 2: host 'b' needs slots=N with N >= 1 (its GPUs)");
  EXPECT_EQ(hostfile_rejection("a slots=4 slots=8\n"), "--topology hostfile:hosts line 1: host 'a' gives slots twice");
  EXPECT_EQ(hostfile_rejection("a slots=4 max_slots=8 max-slots=9\n"), "--topology hostfile:hosts line 1: host 'a' gives max_slots twice");
  EXPECT_EQ(hostfile_rejection("a slots=2\na slots=2\n"),
            "--topology hostfile:hosts line 2: host 'a' is already listed on line 1 (give it one line with all its slots)");
  EXPECT_EQ(hostfile_rejection("a cpus=2\n"),
            "--topology hostfile:hosts line 1: 'cpus=2' is not understood, expected 'HOST slots=N' (and optionally max_slots=M)");
  EXPECT_EQ(hostfile_rejection("slots=2\n"), "--topology hostfile:hosts line 1: 'slots=2' is not a host name, expected 'HOST slots=N'");
  EXPECT_EQ(hostfile_rejection("# nothing\n"), "--topology hostfile:hosts: lists no host (expected lines 'HOST slots=N')");
  EXPECT_EQ(hostfile_rejection("a slots=x\n"),
            "--topology hostfile:hosts line 1: slots=x is not a whole number of slots (Open MPI takes digits only)");
  // Open MPI reads digits only: "2k" is not 2048 slots (it was, with the CLI's suffixes).
  EXPECT_EQ(hostfile_rejection("a slots=2k\n"),
            "--topology hostfile:hosts line 1: slots=2k is not a whole number of slots (Open MPI takes digits only)");
  EXPECT_EQ(hostfile_rejection("a slots=2 max_slots=+4\n"),
            "--topology hostfile:hosts line 1: max_slots=+4 is not a whole number of slots (Open MPI takes digits only)");
  EXPECT_EQ(hostfile_rejection("a slots=0\n"), "--topology hostfile:hosts line 1: host 'a' needs slots=N with N >= 1 (its GPUs)");
  // Bytes a host name does not hold, named by value: a Latin-1 name broke the JSON output (an
  // internal error), a NUL cut the message short.
  EXPECT_EQ(hostfile_rejection("a slots=1\nn\xff slots=2\n"),
            "--topology hostfile:hosts line 2: byte 0xFF at column 2 is not printable ASCII (a hostfile holds host names and slots=N)");
  EXPECT_EQ(hostfile_rejection(std::string("a slots=1\0\n", 12)),
            "--topology hostfile:hosts line 1: byte 0x00 at column 10 is not printable ASCII (a hostfile holds host names and slots=N)");
  // A comment may hold any byte.
  EXPECT_EQ(read_hostfile(write_hostfile("comment", "# n\xC5\x93ud\na slots=1 # caf\xC3\xA9\n"), "hosts").hosts, (std::vector<std::string>{"a"}));
  // A byte-order mark is not part of the first name.
  EXPECT_EQ(read_hostfile(write_hostfile("bom", "\xEF\xBB\xBF" "a slots=1\n"), "hosts").hosts, (std::vector<std::string>{"a"}));
  // A slot count that would wrap the running total past 2^63 is refused by the limit, not allocated.
  EXPECT_EQ(hostfile_rejection("a slots=1\nb slots=9223372036854775807\n"),
            "--topology hostfile:hosts line 2: the hostfile holds more than 65536 slots");
}

// The placed topology of cluster:NxG is cluster:NxG itself; a hostfile of unequal nodes routes
// each hop by the node its ends are on.
TEST(NodePlacement, PlacedTopologyRoutesByNode) {
  const Topology cluster = load_topology("cluster:2x4", ".", 450);
  EXPECT_EQ(cluster.nodes().front().id, "node0.gpu0");
  EXPECT_TRUE(same_grouping(cluster.placement(), uniform_placement(2, 4)));

  const std::string path = write_hostfile("uneven", "big slots=3\nsmall slots=1\n");
  const Topology t = load_topology("hostfile:" + path, ".", 450);
  EXPECT_EQ(t.name(), "hostfile:" + path);
  EXPECT_EQ(t.gpu_count(), 4);
  EXPECT_EQ(t.nodes()[3].id, "small.gpu0");
  EXPECT_EQ(t.route(0, 2).links.size(), 2u);     // big.gpu0 -> big.nvswitch -> big.gpu2
  EXPECT_DOUBLE_EQ(t.route(0, 2).bandwidth, 450);
  EXPECT_EQ(t.route(2, 3).links.size(), 4u);     // big.gpu2 -> its NIC -> fabric -> small's NIC -> small.gpu0
  EXPECT_DOUBLE_EQ(t.route(2, 3).bandwidth, 50);  // 400 Gb/s
  EXPECT_EQ(t.placement().describe(), "big: 0-2, small: 3");
}

// A JSON topology's nodes are the GPUs that reach each other without crossing a NIC.
TEST(NodePlacement, JsonTopologyNodesFromItsLinks) {
  const nlohmann::json doc = {
      {"name", "two-boxes"},
      {"nodes",
       {{{"id", "a0"}, {"kind", "gpu"}}, {{"id", "b0"}, {"kind", "gpu"}}, {{"id", "a1"}, {"kind", "gpu"}},
        {{"id", "pcie-a"}, {"kind", "bridge"}}, {{"id", "pcie-b"}, {"kind", "bridge"}}, {{"id", "nic-a"}, {"kind", "nic"}},
        {{"id", "nic-b"}, {"kind", "nic"}}, {{"id", "ib"}, {"kind", "switch"}}}},
      {"links",
       {{{"a", "a0"}, {"b", "pcie-a"}, {"bandwidth_gbps", 32}}, {{"a", "a1"}, {"b", "pcie-a"}, {"bandwidth_gbps", 32}},
        {{"a", "b0"}, {"b", "pcie-b"}, {"bandwidth_gbps", 32}}, {{"a", "pcie-a"}, {"b", "nic-a"}, {"bandwidth_gbps", 25}},
        {{"a", "pcie-b"}, {"b", "nic-b"}, {"bandwidth_gbps", 25}}, {{"a", "nic-a"}, {"b", "ib"}, {"bandwidth_gbps", 25}},
        {{"a", "nic-b"}, {"b", "ib"}, {"bandwidth_gbps", 25}}}}};
  const NodePlacement p = Topology::from_json(doc, "two-boxes").placement();
  EXPECT_EQ(p.describe(), "node0: 0,2, node1: 1");
  EXPECT_TRUE(same_grouping(load_topology("nvswitch:4", ".", 450).placement(), uniform_placement(1, 4)));
}

}  // namespace
}  // namespace stripesim::sim
