#pragma once
// Predicted against measured: each case of a validation matrix predicted with the simulator's
// kernel cost and ring model from a (calibrated) hardware profile, and set beside what the
// backend measured, per (round, device), per round and in total.
#include <nlohmann/json.hpp>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "stripesim/model/flops/hardware_profile.hpp"
#include "stripesim/model/io/schemas.hpp"
#include "stripesim/sim/topology.hpp"
#include "stripesim/validate/calibration.hpp"
#include "stripesim/validate/validation_run.hpp"

namespace stripesim::validate {

using model::kValidateSchema;

struct CasePrediction {
  std::vector<double> kernel_us;  // [round * devices + device]
  double handoff_us = 0;          // one hop inside a node (0 when every hop crosses nodes)
  double inter_node_handoff_us = 0;  // one hop between nodes (0 on one node)
  double total_us = 0;
};

// The topology a job whose ranks span nodes is predicted on: its placement, each node's link
// from `profile` (fitted on the hops inside nodes), the network from `inter_node` (fitted on the
// hops between them; without it a 400 Gb/s NIC per GPU). None on one node: the ring's own
// generated nvswitch:N with the profile's link.
[[nodiscard]] std::optional<sim::Topology> placed_topology(const sim::NodePlacement& placement,
                                                           const model::HardwareProfile& profile,
                                                           const std::optional<LinkFit>& inter_node);

// `parallel_devices`: every device is a real GPU working at once (nccl), so the total is the
// simulated ring's makespan. Otherwise one processor runs the N virtual devices one after
// another (cpu, cuda) and the total is the sum of every kernel and hand-off. `topology`: where
// the devices are (placed_topology); none, one node.
[[nodiscard]] CasePrediction predict_case(const CaseResult& result, const model::HardwareProfile& profile,
                                          const sim::KernelProfile& kernel, bool parallel_devices,
                                          const std::optional<sim::Topology>& topology = std::nullopt);

enum class CaseRole { checked, calibration, held_out };
// "checked", "calibration", "held-out": the one spelling every printer uses.
[[nodiscard]] const char* role_name(CaseRole role);

struct CaseComparison {
  CaseRole role = CaseRole::checked;
  CasePrediction prediction;
  double measured_total_us = 0;
  double total_error = 0;  // (predicted - measured) / measured
  // One hop, set beside prediction.handoff_us: the median of the case's timed hand-offs, taken as
  // handoff_samples takes them (0 when none was timed). The hand-off fit (Calibration's latency
  // and bandwidth) is judged on it.
  double handoff_measured_us = 0;
  double inter_node_handoff_measured_us = 0;  // the same for hops between nodes
  std::vector<double> round_predicted_us;  // max over devices, per round
  std::vector<double> round_measured_us;
};

[[nodiscard]] CaseComparison compare_case(const CaseResult& result, const CasePrediction& prediction, CaseRole role,
                                          const sim::NodePlacement* placement = nullptr, bool concurrent_devices = false);

struct ErrorSummary {
  Count cases = 0;
  double median_abs_total_error = 0;
  double max_abs_total_error = 0;
  Count kernels = 0;  // (round, device) kernels compared
  double median_abs_kernel_error = 0;
  double max_abs_kernel_error = 0;
};

// Over the cases of `role`; of one context parallelism only where `cp` names one (empty: every case).
[[nodiscard]] ErrorSummary summarize_errors(const std::vector<CaseResult>& results,
                                            const std::vector<CaseComparison>& comparisons, CaseRole role,
                                            std::string_view cp = {});

// The context parallelisms the cases ran (ring, allgather, ulysses), in the order they first appear.
[[nodiscard]] std::vector<std::string> context_parallelisms(const std::vector<CaseResult>& results);

// The whole validator run, as written to JSON and Markdown.
struct ValidationReport {
  std::string command;  // the exact command line
  std::string backend;
  std::string device;
  RunOptions options;
  bool concurrent_devices = false;  // the backend ran the ring's devices at once (nccl, mpi), not in turn
  std::vector<CaseResult> results;
  std::optional<Calibration> calibration;          // --calibrate, --compare without --profile
  std::optional<model::HardwareProfile> profile;   // the profile predictions used
  std::optional<sim::KernelProfile> kernel;        // the kernel profile predictions used
  std::vector<CaseComparison> comparisons;         // empty without predictions
  std::optional<sim::NodePlacement> placement;     // the host of every device (mpi)
  std::optional<sim::Topology> topology;           // the topology predictions used, when the job spans nodes
};

// One line of a run's error table: the cases of one role, of one context parallelism ("" for all).
struct ErrorRow {
  CaseRole role = CaseRole::checked;
  std::string cp;
  ErrorSummary summary;
};

// The error table every printer writes: for each of `roles` in turn, its cases together, then,
// where several context parallelisms ran, each one's apart, in the order they ran; a line with no
// case is left out.
[[nodiscard]] std::vector<ErrorRow> error_rows(const ValidationReport& report, std::initializer_list<CaseRole> roles);

// What a reader of the comparison must know to read it right, one sentence each (empty when
// nothing applies): collectives timed by a backend that plays the devices in turn.
[[nodiscard]] std::vector<std::string> comparison_notes(const ValidationReport& report);

// Its printers (table, JSON, Markdown): output/validation_printers.hpp.

}  // namespace stripesim::validate
