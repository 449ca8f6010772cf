#pragma once
// Calibration: the simulator's kernel profile and link parameters fitted to what a backend
// measured. The kernel part is the one fit every measurement goes through (kernel_fit.hpp: the
// kernel time model's own features, so the fit tunes exactly the model the simulator runs); a
// hand-off is latency + bytes / bandwidth, fitted by the same non-negative least squares.
#include <optional>
#include <string>
#include <vector>

#include "stripesim/model/flops/hardware_profile.hpp"
#include "stripesim/sim/kernel_profile.hpp"
#include "stripesim/sim/node_placement.hpp"
#include "stripesim/validate/kernel_measurements.hpp"
#include "stripesim/validate/validation_run.hpp"

namespace stripesim::validate {

// Which way a hand-off goes: between two devices of one node, or over the network between nodes.
enum class HopPath { intra_node, inter_node };
// The path of the hop from device `from` to device `to` under `placement` (none: one node).
[[nodiscard]] HopPath hop_path(const sim::NodePlacement* placement, Count from, Count to);

struct HandoffSample {
  double bytes = 0;
  double measured_us = 0;
  HopPath path = HopPath::intra_node;
};

// A validator case as measured workloads: its forward calls' medians per (round, device), and for
// a backward case its backward calls' (pass backward), from which the fit takes the kernel's
// backward costs.
[[nodiscard]] std::vector<MeasuredWorkload> measured_workloads(const CaseResult& result);
// Every hand-off, as medians; `placement` (a job spanning nodes; null: one node) tells which
// cross the network. The block device d holds goes to d + 1.
// `concurrent_devices` (a backend that runs the ring's devices at once: nccl, mpi): a device's
// hand-off is timed from its own readiness to the end of its send and receive, so it includes
// the wait for a neighbour still computing, which is the layout's imbalance, not the link. Only
// the device that was ready last among those of a round (of one path) waited for no neighbour:
// its time, the round's shortest, is that round's sample; the others are left out.
[[nodiscard]] std::vector<HandoffSample> handoff_samples(const CaseResult& result, const sim::NodePlacement* placement,
                                                         bool concurrent_devices = false);

// A hop's fitted line: latency + bytes / bandwidth.
struct LinkFit {
  double latency_us = 0;
  double bandwidth_gbps = 0;
  Count samples = 0;
};

struct Calibration {
  model::HardwareProfile profile;  // the base profile with the link parameters replaced
  sim::KernelProfile kernel;       // the base kernel with its costs fitted
  double hop_latency_us = 0;       // one hand-off's fixed cost inside a node
  Count kernel_samples = 0;
  Count handoff_samples = 0;       // inside a node
  double fit_median_abs_error = 0;  // of the kernel samples it was fitted on
  std::optional<LinkFit> inter_node;  // the network's hops, for a job spanning nodes
};

// Fits on `cases` (at least one launched kernel); `device` names the measured device in the
// profiles. The hardware's SM count stays as it is (it comes from the hardware, not timings).
// Hops inside a node set the profile's link; with `placement` spanning nodes, the hops between
// them are fitted apart (inter_node).
// `concurrent_devices`: the hand-offs are taken as handoff_samples takes them.
[[nodiscard]] Calibration calibrate(const std::vector<const CaseResult*>& cases, model::HardwareProfile base,
                                    sim::KernelProfile kernel, const std::string& device,
                                    const sim::NodePlacement* placement = nullptr, bool concurrent_devices = false);

// Least squares with non-negative coefficients, rows weighted by `weights`: the small dense solver
// both fits use (exposed for tests).
[[nodiscard]] std::vector<double> fit_non_negative(const std::vector<std::vector<double>>& rows,
                                                   const std::vector<double>& targets, const std::vector<double>& weights);

}  // namespace stripesim::validate
