#pragma once
// The `simulate` workflow: a workload (model shape, batch, sequence, layouts, tile, mask), a
// hardware profile and a topology; for every layout the work model's tiles become kernel
// durations and the ring is simulated pass by pass.
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "stripesim/model/io/config_catalog.hpp"
#include "stripesim/model/io/schemas.hpp"
#include "stripesim/model/work/layout.hpp"
#include "stripesim/model/work/mask.hpp"
#include "stripesim/model/work/tile_shape.hpp"
#include "stripesim/sim/context_parallel.hpp"
#include "stripesim/sim/kernel_time.hpp"
#include "stripesim/sim/layout_cache.hpp"
#include "stripesim/sim/ring_simulator.hpp"
#include "stripesim/sim/step_model.hpp"

namespace stripesim::sim {

using model::kSimulateSchema;
// Rings up to this many devices write their per-(round, device) records unless asked not to;
// larger ones only when asked (simulate --rounds).
inline constexpr Count kRoundsByDefaultUpTo = 64;

// The most GPUs a mesh (M x N x D) may hold, and `plan --gpus`: a mesh routes every one of its
// GPUs over the topology, one shortest-path tree per GPU (topology.hpp), 4.3 GB at this size.
inline constexpr Count kMaxMeshGpus = 32768;

enum class PassSelection { forward, backward, forward_backward };

struct SimulateConfig {
  std::string model;  // a model config; empty: the heads, kv_heads and head_dim below
  Count heads = 16;
  Count kv_heads = 16;
  Count head_dim = 128;
  Count batch = 1;
  Count model_parallel = 1;  // heads are split over M devices of a model-parallel group
  Count data_parallel = 1;   // D replicas of the M x N mesh (the gradient all-reduce, the GPUs needed)
  Scope scope = Scope::attention;  // what the time covers: one layer's attention ring, a layer, a training step
  bool recompute = false;          // layer, step: the backward recomputes the forward first
  ZeroStage zero = ZeroStage::none;  // layer, step: the training state sharded over the weights' copies
  Count seq_len = 262144;
  Count devices = 8;
  std::vector<std::string> layouts{"contiguous", "striped", "zigzag"};
  std::optional<model::TileShape> tile;  // default: the kernel's
  // Default: the kernel's (fixed or varlen, tile_shape.hpp); given, it must be the kernel's.
  std::optional<model::Tiling> tiling;
  std::string kernel;                    // kernel profile name or JSON file; default: the hardware's
  std::optional<KernelProfile> kernel_profile;  // a profile in memory (a fit): overrides `kernel`
  // How the ring implementation merges each call's result (merge_style: eager, fused, none);
  // empty: the kernel profile's own `merge`.
  std::string merges;
  std::string mask = "causal";
  bool pad_documents = false;  // pad every document to a multiple of 2N (doc-zigzag, doc-striped)
  // Pad the sequence at its end to a multiple of 2N (what a zigzag ring of N devices needs), the
  // mask extended over the padding: any mask but documents, which pad_documents pads one by one.
  bool pad_seq = false;
  PassSelection pass = PassSelection::forward;
  std::string dtype;       // default: the hardware's attention precision
  std::string hardware = "a100";
  std::optional<model::HardwareProfile> hardware_profile;  // a profile in memory (a fit): overrides `hardware`
  std::string topology;    // default: nvswitch:N with the hardware's link bandwidth; "ideal": free links
  std::optional<Topology> topology_graph;  // a topology in memory (a fitted network): overrides `topology`
  SyncMode sync = SyncMode::async;
  Count kv_buffers = 2;
  bool auto_ring_order = false;
  std::string cp = "ring";  // context parallelism (context_parallel.hpp)
  // Whether each pass keeps its per-(round, device) records (RingTimeline::rounds), for what prints
  // or traces them; without, only the per-device summaries (a hybrid's ring keeps them anyway:
  // its all-to-alls are summarised over them).
  bool keep_rounds = true;
  bool skip_unread_hops = false;  // ring, hybrid: a K/V block no later device reads is not sent on
  // Bytes each hop carries; default: K and V of one block. The validator's ring also hands on
  // the block's token positions.
  std::optional<Bytes> hop_bytes;
  // Backward: bytes each dK/dV hop carries; default: the same as a K/V hop. The validator's rings
  // hand on accumulators in their own precision (fp32 on a GPU, twice a bf16 block).
  std::optional<Bytes> grad_hop_bytes;
};

// The length a simulation of `config` runs: its --seq-len, or with pad_seq the next multiple of
// 2N. Refuses pad_seq beside pad_documents or with a documents mask (`mask`, config's parsed).
[[nodiscard]] Count padded_seq_len(const SimulateConfig& config, const model::Mask& mask);

// An experiment file: the same fields as the flags ("seq_len", "devices", "layouts", "pass":
// "fwd"|"bwd"|"fwdbwd", "sync", "kv_buffers", "ring_order": "rank"|"auto", ...).
[[nodiscard]] SimulateConfig simulate_config_from_json(const nlohmann::json& doc, const std::string& label,
                                                       SimulateConfig base = {});
[[nodiscard]] PassSelection parse_pass_selection(std::string_view text);
[[nodiscard]] SyncMode parse_sync_mode(std::string_view text);
// --ring-order: "auto" (true) or "rank" (false); anything else an InputError.
[[nodiscard]] bool parse_auto_ring_order(std::string_view text);
// A step runs forward and backward; an attention ring or a layer, the forward unless asked.
[[nodiscard]] PassSelection default_pass(Scope scope);
[[nodiscard]] const char* to_string(SyncMode mode);
[[nodiscard]] std::string to_string(PassSelection pass);  // "fwd", "bwd", "fwdbwd"
[[nodiscard]] std::string to_string(RingPass pass);        // "forward", "backward"
// Bytes of one element: fp32/tf32 4, bf16/fp16 2, fp8/int8 1; anything else an InputError.
[[nodiscard]] Bytes dtype_bytes(const std::string& dtype);

struct LayoutSimulation {
  std::string layout;
  std::vector<RingTimeline> passes;  // one layer's ring: forward, backward or both, in that order
  std::optional<StepEstimate> step;  // scope layer or step
  Microseconds time_us = 0;          // of the scope
  double speedup_vs_contiguous = 0;
  double kv_memory_bytes = 0;  // K/V and their buffers on one device (the passes run)
  Count most_partial_tiles = 0;  // in one query tile of one call (attention_passes.hpp)
};

struct Simulation {
  SimulateConfig config;
  model::HardwareProfile hardware;
  KernelProfile kernel;
  std::optional<std::string> kernel_note;  // kernel_hardware_note: measured on another device
  // The SMs the kernel's thread blocks are placed on: the hardware's, or those of the device a
  // profile of another one was measured on (its calls cost what they cost there, waves included).
  Count kernel_sms = 0;
  // The device whose rates convert the kernel's precision to the call's: the one it was measured
  // on, as for its SMs (the hardware itself when that one is not known).
  model::HardwareProfile kernel_hardware;
  std::string merges;  // the merge style given (--merges), empty when the kernel's own
  Topology topology = Topology::nvswitch(1, 1, 0);  // replaced by the plan's
  std::vector<Count> ring_order;  // GPU at each ring position
  std::vector<Route> hops;
  // hops_shared_by[p]: the most hops, of this ring and the rings beside it (other model-parallel
  // ranks, replicas, a hybrid's other Ulysses ranks), on any link of hop p (ring_order.hpp).
  std::vector<Count> hops_shared_by;
  // The rings that run beside this one, each as its GPUs at this ring's positions (a dK/dV hop
  // home from position d to s runs beside theirs from their d to their s).
  std::vector<std::vector<Count>> rings_beside;
  model::TileShape tile;
  model::Tiling tiling = model::Tiling::fixed;  // the kernel's
  model::MaskKind mask_kind = model::MaskKind::causal;
  std::string dtype;
  Count heads_per_device = 0;
  Count kv_heads_per_device = 0;
  Count head_dim = 0;
  Bytes kv_bytes = 0;
  Bytes grad_bytes = 0;  // a dK/dV hop (ring, backward); 0: kv_bytes
  Count padding_tokens = 0;  // added by pad_documents or pad_seq; config.seq_len includes them
  // Unmasked pairs of one sequence as given, before any padding: a layer's or step's useful
  // attention work (counted for those scopes only).
  Count useful_pairs = 0;
  ContextParallel cp;
  CpShape cp_shape;
  // The group's GPUs (ring order; hybrid: each all-to-all group is U consecutive ones) and the
  // all-to-all group of the first ring position. ring_order above is the ring's (hybrid: R GPUs).
  std::vector<Count> cp_group;
  std::vector<Count> alltoall_group;
  // The groups of each kind that run beside those at once, on GPUs of their own (other
  // model-parallel ranks and replicas; a hybrid's other all-to-all groups): collectives.hpp.
  std::vector<std::vector<Count>> cp_groups_beside;
  std::vector<std::vector<Count>> alltoall_groups_beside;
  bool placed = false;  // place_on_topology has run
  KernelCallShape call_shape;
  model::Mesh mesh;
  std::optional<model::TransformerModel> transformer;  // the --model's shape
  std::optional<StepShape> step_shape;                 // scope layer or step: all but the ring
  std::vector<LayoutSimulation> results;
  std::uint64_t events = 0;
};

// A simulation once every input is checked: hardware, model shape, dtype, mask, layouts and
// topology resolved (in `simulation`, whose results are still empty); nothing simulated yet.
struct SimulationPlan {
  Simulation simulation;
  model::Mask mask;
  std::vector<std::shared_ptr<const LazyLayout>> layouts;  // checked; built when run (shared through a LayoutCache)
};

// The topology a simulation of a mesh of `gpus` GPUs runs on: the config's own in memory, else its
// --topology (default nvswitch:GPUS, links from `hardware`) loaded. Copies share their routes.
[[nodiscard]] Topology simulation_topology(const SimulateConfig& config, const model::ConfigCatalog& catalog,
                                           const model::HardwareProfile& hardware, Count gpus);
// Throws model::InputError (by kind: --heads, --kv-heads, --head-dim, --batch) for an attention
// shape outside what the kernel time model counts in seconds: beyond any trained model by far.
void check_attention_shape(Count heads, Count kv_heads, Count head_dim, Count batch);
// How much slower the kernel runs a call in `dtype` than in its profile's own precision: the
// hardware's peak rate for the profile's dtype over its rate for `dtype` (KernelCallShape's
// precision_slowdown). Throws model::InputError by kind (--dtype) when the hardware lists no rate
// for `dtype`, and naming the kernel when it lists none for the kernel's own.
[[nodiscard]] double precision_slowdown(const model::HardwareProfile& hardware, const KernelProfile& kernel,
                                        const std::string& dtype);
// Throws model::InputError for invalid configurations. Cheap: nothing is routed or counted, so
// a parse-only run (cli/run_mode.hpp) checks any input quickly; the layouts are checked, and built
// when first simulated. Plans given one `layouts` cache share each layout that is alike (the same
// spec, padded mask, devices, tile and tiling).
[[nodiscard]] SimulationPlan plan_simulation(const SimulateConfig& config, const model::ConfigCatalog& catalog,
                                             LayoutCache* layouts = nullptr);
// model::require_layouts_apart_at at the plan's point: its tile, its (padded) length and the
// devices its layouts deal to (a hybrid's ring).
void require_layouts_apart(const SimulationPlan& plan);
// The plan's layout specs less each that names the layout an earlier one names there (ptrr
// beside ptrr:B at its default block): what a search (`plan`) prices once.
[[nodiscard]] std::vector<std::string> layouts_apart(const SimulationPlan& plan);
// The groups, the ring order (searched with --ring-order auto), every route and, for a layer or a
// step, the step's shape (its all-reduces routed over the model-parallel and gradient groups):
// what running needs, done once (run_simulation does it when not done).
void place_on_topology(SimulationPlan& plan);
// run_simulation(config, catalog) is run_simulation(plan_simulation(config, catalog)).
[[nodiscard]] Simulation run_simulation(SimulationPlan plan);
[[nodiscard]] Simulation run_simulation(const SimulateConfig& config, const model::ConfigCatalog& catalog);

// A layout's ring as the table's columns sum it up. A device's idle and exposed time add up over
// the passes (forward, then backward), as its busy time does, so idle stays time - busy: the max
// columns are the worst device's totals, and mean busy is the devices' mean of their summed busy
// time. The table, the JSON's results and the report's table all read these.
struct RingTotals {
  Microseconds mean_busy_us = 0;
  Microseconds max_idle_us = 0;
  Microseconds max_exposed_comm_us = 0;
  std::uint64_t events = 0;
};
[[nodiscard]] RingTotals ring_totals(const LayoutSimulation& layout);
// Appends the totals a row or a JSON result shows (mean_busy_us, max_idle_us,
// max_exposed_comm_us), under the same keys in both.
void append_ring_totals(nlohmann::ordered_json& row, const RingTotals& totals);

// One flat row per layout (the same keys in each): the configuration (mask and topology included,
// so that rows of several runs can be stacked), the scope's time, speedup, K/V memory and ring
// totals (ring_totals, as the JSON's results give them) and, for a layer or a step, its
// breakdown, throughput, MFU and memory. The CSV's rows and the simulate baseline's
// metrics. The printers (table, JSON, CSV, Chrome trace): output/simulation_printers.hpp.
[[nodiscard]] std::vector<nlohmann::ordered_json> simulation_rows(const Simulation& simulation);

// What a reader of the result should know that its numbers do not show, a sentence each: that
// the kernel profile was measured on another device (kernel_hardware_note); that some call holds query tiles of several partial tiles (a window's two edges, documents cut by
// fixed tiles) while the kernel's fit never timed one (partial_tile_cost_identified), so their
// time rests on how the fit split a masked block's cost; at scope layer or step, that the
// hardware's element-wise cost was fitted to one code base (elementwise_cost_note). Empty when
// there is nothing to say.
[[nodiscard]] std::vector<std::string> simulation_notes(const Simulation& simulation);
// A step priced with an element-wise cost that calibrate-step fitted to one code base's measured
// speedups (its source says "fitted by: stripesim calibrate-step ..."; the shipped A100's is the
// Striped Attention paper's JAX code's) prices any other code as that one: said, or none.
[[nodiscard]] std::optional<std::string> elementwise_cost_note(const model::HardwareProfile& hardware);
// A kernel profile measured on another device than `hardware` (its "hardware" is neither the
// hardware's name, an alias, nor that of the hardware it takes its kernels from) prices every
// call at that device's speed: said, or none.
[[nodiscard]] std::optional<std::string> kernel_hardware_note(const KernelProfile& kernel, const model::HardwareProfile& hardware,
                                                              const model::ConfigCatalog& catalog);
// The same with the hardware's kernel_homes already taken.
[[nodiscard]] std::optional<std::string> kernel_hardware_note(const KernelProfile& kernel, const model::HardwareProfile& hardware,
                                                              const std::vector<std::string>& homes);
// A head size above the largest the kernel is built for (its max_head_dim) is priced by FLOPs
// as if such a call ran: said (simulate and plan alike), or none.
[[nodiscard]] std::optional<std::string> head_size_note(const KernelProfile& kernel, Count head_dim);
// The note above for calls of `kernel` whose query tiles hold up to `most_partial_tiles` partial
// tiles (simulate and plan alike), or none when the fit timed such tiles or no call holds two.
[[nodiscard]] std::optional<std::string> partial_tiles_note(const KernelProfile& kernel, Count most_partial_tiles);

}  // namespace stripesim::sim
