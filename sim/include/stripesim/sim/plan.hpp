#pragma once
// `stripesim plan`: which context parallelism, with which layout, at which degree. For a model,
// a topology, a sequence length and G GPUs it enumerates every mesh M x N x D = G (model-,
// context- and data-parallel degrees), every algorithm of `simulate --cp` that applies at that
// N (ring, allgather, ulysses, hybrid:UxR for each U dividing N) and every layout, plans each as
// `simulate --scope step` would, drops what the simulation refuses or what does not fit in
// memory, simulates the rest and ranks them by training throughput (tokens per second over all
// G GPUs, so that more data parallelism with less context parallelism competes fairly).
//
// Simulating a 1024-device ring takes about a second, so candidates are simulated best bound
// first: a candidate's step time is at least its step with the attention of its busiest device
// alone (no communication, no waiting; the step time grows with every part of the attention), and
// once the top choices are simulated no unsimulated candidate whose bound is slower can enter
// them. The ranking of the top choices is exact; what was left out is counted.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "stripesim/model/io/config_catalog.hpp"
#include "stripesim/model/io/input_error.hpp"
#include "stripesim/sim/simulation.hpp"
#include "stripesim/sim/units.hpp"

namespace stripesim::sim {

struct PlanRequest {
  SimulateConfig base;  // model, hardware, topology, kernel, seq_len, batch, mask, layouts
  Count gpus = 8;
  // --gpus not given beside a --topology: every GPU of the topology (plan_search sets gpus to its
  // count); a plan on part of a cluster is asked for with --gpus.
  bool gpus_from_topology = false;
  std::vector<std::string> algorithms{"ring", "allgather", "ulysses", "hybrid"};
  bool layouts_given = false;  // base.layouts named by the user, not the default
  std::optional<double> memory_gib;  // default: the hardware's
  Count top = 10;
  unsigned threads = 0;  // 0: every hardware thread
  // A choice's calls are priced for its bound and kept for its simulation while all that is kept
  // stays within this many bytes; past it a choice is priced again when simulated. Speed and
  // memory only: the plan is the same whatever it is.
  double kept_prices_bytes = kBytesPerGib;
};

struct PlanCandidate {
  model::Mesh mesh;
  std::string cp;
  std::string layout;
  Count seq_len = 0;  // the length simulated: --seq-len, padded with --pad-seq
  std::optional<StepEstimate> step;  // unset: not simulated (bounded out)
  Microseconds bound_us = 0;         // the lower bound the search ordered candidates by
  std::string reason;                // the top choices: why it wins or loses
  Count most_partial_tiles = 0;      // simulated: the most partial tiles one query tile of a call holds
};

// The choices one kind of refusal turned away: a kind is a message with its numbers left out
// ("--model-parallel 3: must divide the 64 heads" and "... 6: ..." are one kind).
struct RefusalKind {
  std::string example;  // the first such message
  Count choices = 0;
  std::optional<model::Input> input;  // the input it is about (--seq-len for a length N does not divide), if named
  // The padding flag that lets its choices run (--pad-seq, or --pad-documents under a documents
  // mask), where one of them runs with it; empty otherwise (block-striped:S wants S x N, not 2N).
  std::string mended_by;
  Count mended_choices = 0;  // of its choices, those that run with mended_by (a kind spans meshes)
};

struct Plan {
  PlanRequest request;
  double memory_gib = 0;
  std::vector<PlanCandidate> ranked;  // simulated, fitting in memory, fastest first
  Count considered = 0;               // (mesh, algorithm, layout) combinations
  Count refused = 0;                  // the simulation refuses them (heads that do not divide, ...)
  Count over_memory = 0;
  Count bounded_out = 0;              // fit, but could not beat the top choices
  std::vector<RefusalKind> refusals;  // every kind of refusal, most choices first (ties: first met first)
  std::vector<std::string> notes;             // what simulate would note of the ranked choices (simulation_notes)
};

// One (mesh, algorithm) planned as `simulate --scope step` plans it, or why the simulation refuses it.
struct PlannedMesh {
  SimulateConfig config;
  std::optional<SimulationPlan> plan = std::nullopt;  // unset: refused
  std::string refusal = {};
  std::optional<model::Input> refused_input = std::nullopt;  // the input the refusal is about, where it names one
  std::string mended_by = {};  // refused for its length: the padding flag it runs with, if any (RefusalKind)
  Count mended_layouts = 0;  // with mended_by: how many of its layouts run with it
};

// The request checked, the model and hardware read (memory per device from --memory-gib or the
// hardware) and every (mesh, algorithm) planned: everything run_plan searches, nothing simulated.
struct PlanSearch {
  PlanRequest request;
  double memory_gib = 0;
  std::vector<PlannedMesh> meshes;
};

// A plan's name for a mesh, every degree shown: "2x4x1" (Mesh::to_string drops a D of 1).
[[nodiscard]] std::string plan_mesh_name(const model::Mesh& mesh);

// Throws model::InputError for a request that cannot be planned at all: no model, bad sizes, or an
// input every mesh refuses (a misspelt layout or kernel, a length no layout divides).
[[nodiscard]] PlanSearch plan_search(const PlanRequest& request, const model::ConfigCatalog& catalog);
// Bounds every candidate, simulates them best bound first and ranks them.
[[nodiscard]] Plan run_plan(const PlanSearch& search);

// Its printers (table, JSON, CSV): output/plan_printers.hpp.

}  // namespace stripesim::sim
