// cluster:NxG with a chosen NIC rate and NICs per node (load_topology), against the routes a
// hand-written topology of the same wiring would give.
#include <gtest/gtest.h>

#include <string>

#include "stripesim/model/io/input_error.hpp"
#include "stripesim/sim/topology.hpp"

namespace stripesim::sim {
namespace {

// The message load_topology throws for `spec`, or "" when it accepts it.
std::string rejection(const std::string& spec) {
  try {
    (void)load_topology(spec, ".", 450);
  } catch (const model::InputError& e) {
    return e.what();
  }
  return "";
}

TEST(ClusterSpec, NicRateInGigabitsPerSecond) {
  // 200 Gb/s HDR = 25 GB/s per direction; every GPU keeps its own NIC.
  const Topology t = load_topology("cluster:2x4:nic=200gbps", ".", 450);
  EXPECT_EQ(t.name(), "cluster:2x4:nic=200gbps");
  EXPECT_EQ(t.gpu_count(), 8);
  const Route cross = t.route(3, 4);  // GPU, NIC, fabric, NIC, GPU
  EXPECT_EQ(cross.links.size(), 4u);
  EXPECT_DOUBLE_EQ(cross.bandwidth, 25.0);
  EXPECT_DOUBLE_EQ(cross.latency_us, 6.0);
  const Route local = t.route(0, 3);  // through the node's NVSwitch at the hardware's NVLink rate
  EXPECT_EQ(local.links.size(), 2u);
  EXPECT_DOUBLE_EQ(local.bandwidth, 450.0);
  EXPECT_DOUBLE_EQ(local.latency_us, 2.0);
  // gbit is the same unit, and case does not matter: not in the unit, the 'x', the keywords
  // nor the options (before 2026-12-04 "cluster:2X4" and ":NICS=2" were refused where
  // "CLUSTER:2x4" and "nic=400GBPS" were read).
  EXPECT_DOUBLE_EQ(load_topology("cluster:2x4:nic=800Gbit", ".", 450).route(3, 4).bandwidth, 100.0);
  EXPECT_EQ(load_topology("cluster:2X4", ".", 450).gpu_count(), 8);
  const Topology shouted = load_topology("CLUSTER:2X4:NIC=200GBPS:NICS=2", ".", 450);
  EXPECT_DOUBLE_EQ(shouted.route(3, 4).bandwidth, 25.0);
  EXPECT_EQ(shouted.route(0, 4).links, load_topology("cluster:2x4:nic=200gbps:nics=2", ".", 450).route(0, 4).links);
}

// With one NIC per GPU the generated cluster routes exactly as the plain cluster:NxG does.
TEST(ClusterSpec, OneNicPerGpuMatchesThePlainCluster) {
  const Topology plain = load_topology("cluster:2x4", ".", 450);
  const Topology explicit_nics = load_topology("cluster:2x4:nics=4:nic=400gbps", ".", 450);
  EXPECT_EQ(explicit_nics.links().size(), plain.links().size());
  for (Count a = 0; a < 8; ++a) {
    for (Count b = 0; b < 8; ++b) {
      const Route p = plain.route(a, b);
      const Route e = explicit_nics.route(a, b);
      EXPECT_EQ(e.links.size(), p.links.size()) << a << "->" << b;
      EXPECT_DOUBLE_EQ(e.latency_us, p.latency_us) << a << "->" << b;
      EXPECT_DOUBLE_EQ(e.bandwidth, p.bandwidth) << a << "->" << b;
    }
  }
}

// Two NICs for eight GPUs: GPUs 0-3 share the first, 4-7 the second (rail order), so two GPUs
// of one half sending off the node use one NIC-to-fabric link.
TEST(ClusterSpec, GpusShareTheNodesNics) {
  const Topology t = load_topology("cluster:2x8:nics=2", ".", 450);
  EXPECT_EQ(t.gpu_count(), 16);
  // 16 GPU-NVSwitch links, 16 GPU-NIC links, 4 NIC-fabric links.
  EXPECT_EQ(t.links().size(), 36u);
  const Route first = t.route(0, 8);
  const Route second = t.route(3, 8);
  const Route other_half = t.route(4, 8);
  ASSERT_EQ(first.links.size(), 4u);
  EXPECT_EQ(t.directed_link_name(first.links[1]), "node0.nic0->fabric");
  EXPECT_EQ(first.links[1], second.links[1]);
  EXPECT_EQ(t.directed_link_name(other_half.links[1]), "node0.nic1->fabric");
  EXPECT_DOUBLE_EQ(first.bandwidth, 50.0);  // the default 400 Gb/s
}

TEST(ClusterSpec, BadOptionsAreNamed) {
  EXPECT_EQ(rejection("cluster:2x8:nics=16"), "--topology 'cluster:2x8:nics=16': nics=16 must be between 1 and the node's 8 GPUs");
  EXPECT_EQ(rejection("cluster:2x8:nics=0"), "--topology 'cluster:2x8:nics=0': nics=0 must be between 1 and the node's 8 GPUs");
  EXPECT_EQ(rejection("cluster:2x8:nic=fast"),
            "--topology 'cluster:2x8:nic=fast': nic=fast is not a NIC rate, expected gigabits per second such as "
            "nic=400gbps (NDR InfiniBand, 50 GB/s per direction)");
  EXPECT_EQ(rejection("cluster:2x8:nic=0gbps"),
            "--topology 'cluster:2x8:nic=0gbps': nic=0gbps is not a NIC rate, expected gigabits per second such as "
            "nic=400gbps (NDR InfiniBand, 50 GB/s per direction)");
  // A rate past a physical link's is said of the option given, not of the link it builds.
  EXPECT_EQ(rejection("cluster:2x8:nic=1e30gbps"),
            "--topology 'cluster:2x8:nic=1e30gbps': nic=1e30gbps is 1.25e+29 GB/s, outside [1e-09, 1e+12], the range a link's "
            "bandwidth can take");
  EXPECT_EQ(rejection("cluster:2x8:nic=1e-20gbps"),
            "--topology 'cluster:2x8:nic=1e-20gbps': nic=1e-20gbps is 1.25e-21 GB/s, outside [1e-09, 1e+12], the range a link's "
            "bandwidth can take");
  EXPECT_EQ(rejection("cluster:2x8:nic=400"),
            "--topology 'cluster:2x8:nic=400': nic=400 is not a NIC rate, expected gigabits per second such as "
            "nic=400gbps (NDR InfiniBand, 50 GB/s per direction)");
  const std::string unknown =
      "is unknown or repeated, expected cluster:NxG followed by :nic=RATE (e.g. 400gbps) and :nics=K (NICs per node), "
      "each at most once";
  EXPECT_EQ(rejection("cluster:2x8:speed=3"), "--topology 'cluster:2x8:speed=3': option 'speed=3' " + unknown);
  EXPECT_EQ(rejection("cluster:2x8:nics=2:nics=4"), "--topology 'cluster:2x8:nics=2:nics=4': option 'nics=4' " + unknown);
  EXPECT_EQ(rejection("cluster:2x8:"), "--topology 'cluster:2x8:': option '' " + unknown);
  EXPECT_EQ(rejection("cluster:2:nics=2"),
            "--topology 'cluster:2:nics=2': expected cluster:NxG, optionally :nic=RATE (e.g. 400gbps) and :nics=K");
  EXPECT_NE(rejection("cluster:2x8:nics=abc").find("--topology 'cluster:2x8:nics=abc' nics"), std::string::npos);
}

}  // namespace
}  // namespace stripesim::sim
