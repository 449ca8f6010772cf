#include "stripesim/sim/plan.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <exception>
#include <functional>
#include <iterator>
#include <map>
#include <mutex>
#include <numeric>
#include <set>
#include <string_view>

#include "stripesim/model/io/input_error.hpp"
#include "stripesim/model/io/json_fields.hpp"
#include "stripesim/model/work/document_layouts.hpp"
#include "stripesim/model/work/layout_spec.hpp"
#include "stripesim/model/work/mask.hpp"
#include "stripesim/model/work/parallel_for.hpp"
#include "stripesim/sim/attention_passes.hpp"

namespace stripesim::sim {
namespace {

unsigned threads_of(const PlanRequest& request) { return model::threads_or_cores(request.threads); }

// Choices simulated at once, best bound first, before the bound is checked again. A number of its
// own, not the thread count: which choices get simulated is printed (the rows past the top, the
// count bounded out), and the same plan must print the same on a laptop and a 64-core node.
constexpr size_t kSimulatedAtOnce = 8;

std::vector<Count> divisors(Count n) {
  std::vector<Count> out;
  for (Count d = 1; d <= n; ++d) {
    if (n % d == 0) out.push_back(d);
  }
  return out;
}

// The --cp specs an algorithm family gives at context-parallel degree n.
std::vector<std::string> cp_specs(const std::string& algorithm, Count n) {
  if (n == 1) return algorithm == "ring" ? std::vector<std::string>{"ring"} : std::vector<std::string>{};
  if (algorithm == "hybrid") {
    std::vector<std::string> out;
    for (const Count u : divisors(n)) {
      if (u > 1 && u < n) out.push_back(fmt::format("hybrid:{}x{}", u, n / u));
    }
    return out;
  }
  return {algorithm};
}

struct Entry {
  size_t mesh = 0;    // into the planned meshes
  size_t layout = 0;  // into its layouts
  PlanCandidate candidate;
  double bound_tokens_per_second = 0;
  // Its calls as priced for its bound, kept (within PlanRequest::kept_prices_bytes) for its simulation.
  std::optional<PricedPasses> priced;
};

// The parts of a step one choice can save against another, and what each says about it.
struct Part {
  const char* what;
  Microseconds StepBreakdown::*field;
};
constexpr Part kParts[] = {
    {"attention compute on the slowest device (balance, kernel efficiency)", &StepBreakdown::attention_compute_us},
    {"exposed attention communication", &StepBreakdown::attention_comm_us},
    {"attention idle time (waiting for slower devices)", &StepBreakdown::attention_idle_us},
    {"model-parallel all-reduces", &StepBreakdown::model_parallel_comm_us},
    {"exposed gradient all-reduce", &StepBreakdown::gradient_comm_us},
    {"matmuls", &StepBreakdown::matmul_us},
    {"element-wise work", &StepBreakdown::elementwise_us},
};

std::string family(const std::string& cp) { return cp.substr(0, cp.find(':')); }

std::string label(const PlanCandidate& c) { return fmt::format("{} {} on {}", c.cp, c.layout, plan_mesh_name(c.mesh)); }

// Against the best choice of another algorithm (or, for the best of its algorithm, the next best
// of any): the part of the step where the difference is largest, per sequence (a step trains
// D x batch of them).
std::string explain(const PlanCandidate& c, const std::vector<PlanCandidate>& ranked, double memory_gib, bool one_searched,
                    Count batch) {
  const PlanCandidate* other = nullptr;
  for (const PlanCandidate& r : ranked) {
    if (&r != &c && family(r.cp) != family(c.cp)) {
      other = &r;
      break;
    }
  }
  const std::string memory = fmt::format("memory {:.1f} of {:g} GiB", c.step->memory.total() / kBytesPerGib, memory_gib);
  if (other == nullptr) {
    // The others searched had no choice that runs (refused) or fits (over memory): none was ranked.
    return fmt::format("{}; {}", one_searched ? "the only algorithm searched (--algorithms)"
                                              : "the only algorithm with a choice that runs and fits in memory",
                       memory);
  }
  // Equal throughput (meshes whose steps cost the same): neither beats the other.
  if (c.step->tokens_per_second == other->step->tokens_per_second) {
    return fmt::format("ties with {} (the same tokens/s); {}", label(*other), memory);
  }
  const bool ahead = c.step->tokens_per_second > other->step->tokens_per_second;
  // Compare the time each spends on the same tokens: a step of D x batch sequences.
  const double scale_c = 1.0 / static_cast<double>(c.mesh.data_parallel * batch);
  const double scale_o = 1.0 / static_cast<double>(other->mesh.data_parallel * batch);
  const Part* biggest = nullptr;
  double biggest_gap = 0;
  for (const Part& part : kParts) {
    const double gap = (other->step->breakdown.*part.field) * scale_o - (c.step->breakdown.*part.field) * scale_c;
    if (biggest == nullptr || (ahead ? gap > biggest_gap : gap < biggest_gap)) {
      biggest = &part;
      biggest_gap = gap;
    }
  }
  const double ratio = c.step->tokens_per_second / other->step->tokens_per_second;
  return fmt::format("{} {} by {:.1f}%: {:.2f} ms {} {} per sequence; {}", ahead ? "beats" : "trails", label(*other),
                     100 * std::abs(ratio - 1), std::abs(biggest_gap) / 1e3, ahead ? "less" : "more", biggest->what,
                     memory);
}

// Throws model::InputError for a request no mesh could mend. Returns the device count of every
// permutation:FILE layout, each file read once (plan_search lays each out at that degree alone).
std::map<std::string, Count> check_plan_request(const PlanRequest& request, const model::ConfigCatalog& catalog) {
  if (request.gpus < 1 || request.gpus > kMaxMeshGpus) {
    throw model::InputError(fmt::format("--gpus {}: must be between 1 and {}", request.gpus, kMaxMeshGpus));
  }
  if (request.top < 1) throw model::InputError(fmt::format("--top {}: must be at least 1", request.top));
  if (request.base.model.empty()) throw model::InputError("--model: plan needs a model (the step's matmuls and memory)");
  for (const std::string& algorithm : request.algorithms) {
    if (algorithm != "ring" && algorithm != "allgather" && algorithm != "ulysses" && algorithm != "hybrid") {
      throw model::InputError(fmt::format("--algorithms '{}': expected ring, allgather, ulysses or hybrid", algorithm));
    }
  }
  if (request.algorithms.empty()) throw model::InputError("--algorithms: needs at least one");
  // What only some algorithms use must be used by one of those searched, or it does nothing.
  const auto searched = [&](std::string_view algorithm) { return std::ranges::find(request.algorithms, algorithm) != request.algorithms.end(); };
  if (!request.base.merges.empty()) (void)merge_style(request.base.merges, "--merges");
  if (!request.base.merges.empty() && !searched("ring") && !searched("hybrid")) {
    throw model::InputError(fmt::format("--merges {}: prices folding a ring's calls into one output; --algorithms {} run no ring",
                                        request.base.merges, fmt::join(request.algorithms, ",")));
  }
  if (request.layouts_given && request.algorithms == std::vector<std::string>{"ulysses"}) {
    throw model::InputError("--layouts: Ulysses gives every GPU the whole sequence of its heads, whatever the layout; "
                            "search another algorithm beside it, or leave --layouts out");
  }
  (void)catalog.model(request.base.model);
  if (!request.base.hardware_profile) (void)catalog.hardware(request.base.hardware);
  if (request.memory_gib && !(*request.memory_gib > 0)) {
    throw model::InputError(fmt::format("--memory-gib {}: must be positive", *request.memory_gib));
  }
  if (request.memory_gib) model::require_physical_range(*request.memory_gib, "--memory-gib");
  // The mask is the same whatever the mesh: a bad one is the request's error, not every mesh's.
  const model::Mask request_mask = model::parse_mask(request.base.mask, request.base.seq_len);
  // The sequence as a mesh whose layout cuts it into `blocks` runs it, padded as that mesh pads:
  // --pad-documents refuses any mask but documents; --pad-seq refuses documents, and
  // --pad-documents beside it, and pads to 2 x blocks (an odd length is no layout's error then).
  const auto mask_at = [&](Count blocks, bool pad_seq) {
    model::Mask mask = request.base.pad_documents ? model::pad_documents(request_mask, blocks).mask : request_mask;
    SimulateConfig c = request.base;
    c.devices = blocks;
    c.pad_seq = pad_seq;
    const Count padded = padded_seq_len(c, mask);
    return pad_seq && padded != mask.seq_len() ? model::parse_mask(request.base.mask, padded) : mask;
  };
  (void)mask_at(1, request.base.pad_seq);
  // So are the layouts' names: each built on one device (what fails there fails on every N), a
  // permutation file at the one degree it holds, or a misspelt one would only be missing from the
  // meshes whose Ulysses ignores the layout.
  std::map<std::string, Count> file_blocks;
  // A length one layout refuses on every degree leaves it out of every mesh (each mesh lists the
  // refusal); one every layout refuses is the request's error.
  std::optional<model::InputError> refused_length;
  size_t refuse_length = 0;
  for (const std::string& layout : request.base.layouts) {
    const std::string file = model::layout_file(layout);
    const Count blocks = file.empty() ? 1 : file_blocks[layout] = model::permutation_file_devices(file);
    if (blocks < 2 && !file.empty()) {
      throw model::InputError(model::Input::layouts, layout,
                              fmt::format("holds {} device block{}: a plan lays a sequence out over a context-parallel degree of 2 "
                                          "or more (on one device the layout plays no part)",
                                          blocks, blocks == 1 ? "" : "s"));
    }
    const model::Mask mask = mask_at(blocks, request.base.pad_seq);
    try {
      (void)model::parse_layout(layout, mask.seq_len(), blocks, model::LayoutContext{&mask});
    } catch (const model::InputError& e) {
      // A length no degree divides (an odd one for zigzag) is what --pad-seq mends, mesh by mesh;
      // not under a documents mask, which --pad-seq refuses (--pad-documents pads its documents).
      if (e.input() != model::Input::seq_len) throw;
      // Only where padding mends it: not a block-striped:S length that S x N must divide.
      bool mended = false;
      if (!request.base.pad_seq && mask.kind() != model::MaskKind::documents) {
        try {
          const model::Mask padded_mask = mask_at(blocks, true);
          (void)model::parse_layout(layout, padded_mask.seq_len(), blocks, model::LayoutContext{&padded_mask});
          mended = true;
        } catch (const model::InputError&) {
        }
      }
      ++refuse_length;
      if (!refused_length) {
        refused_length = mended ? model::InputError(fmt::format("{}; or give --pad-seq (each mesh pads to its own 2N)", e.what())) : e;
      }
    }
  }
  if (refused_length && refuse_length == request.base.layouts.size()) throw *refused_length;
  return file_blocks;
}

// The layouts a mesh whose layout cuts the sequence into `blocks` rings: all but the permutation
// files made for another number of devices (`file_blocks`: each file's).
std::vector<std::string> layouts_at(const std::vector<std::string>& layouts, const std::map<std::string, Count>& file_blocks,
                                    Count blocks) {
  std::vector<std::string> out;
  for (const std::string& layout : layouts) {
    const auto file = file_blocks.find(layout);
    if (file == file_blocks.end() || file->second == blocks) out.push_back(layout);
  }
  return out;
}

// The padding flag that lets a mesh refused for its length run: --pad-seq pads the sequence
// (under a documents mask --pad-documents each document) to a length its degree divides, and how
// many of its layouts run with it (block-striped:S wants S x N, not 2N, beside a contiguous that
// padding mends). No flag where it is given already or mends none.
struct Mending {
  std::string flag;
  Count layouts = 0;
};
Mending padding_that_mends(const SimulateConfig& config, const model::ConfigCatalog& catalog, LayoutCache& layouts) {
  const bool documents = model::is_documents_mask(config.mask);
  SimulateConfig padded = config;
  bool& flag = documents ? padded.pad_documents : padded.pad_seq;
  if (flag) return {};
  flag = true;
  const std::string name = documents ? "--pad-documents" : "--pad-seq";
  const auto runs = [&](const SimulateConfig& c) {
    try {
      (void)plan_simulation(c, catalog, &layouts);
      return true;
    } catch (const model::InputError&) {
      return false;
    }
  };
  if (runs(padded)) return {name, static_cast<Count>(padded.layouts.size())};
  Count mended = 0;
  if (padded.layouts.size() > 1) {
    for (const std::string& layout : config.layouts) {
      SimulateConfig one = padded;
      one.layouts = {layout};
      mended += runs(one) ? 1 : 0;
    }
  }
  return mended > 0 ? Mending{name, mended} : Mending{};
}

// A refusal's kind: its message up to the hint after a ';' (the nearest lengths that divide, ...),
// every number left out, so that meshes refused for one reason at different degrees (M = 3, 6, 12
// for heads that do not divide) count as one.
std::string refusal_kind(const std::string& message) {
  const std::string_view reason = std::string_view(message).substr(0, message.find(';'));
  std::string kind;
  for (size_t i = 0; i < reason.size(); ++i) {
    const bool digit = std::isdigit(static_cast<unsigned char>(reason[i])) != 0;
    if (!digit) {
      kind += reason[i];
    } else if (i == 0 || std::isdigit(static_cast<unsigned char>(reason[i - 1])) == 0) {
      kind += '#';
    }
  }
  return kind;
}

// Plans one (mesh, algorithm) as `simulate --scope step` would, or records why it refuses.
void plan_mesh(PlannedMesh& mesh, const model::ConfigCatalog& catalog, LayoutCache& layouts) {
  try {
    mesh.plan = plan_simulation(mesh.config, catalog, &layouts);
    // ptrr beside ptrr:B at its default block is one choice, priced once.
    if (std::vector<std::string> apart = layouts_apart(*mesh.plan); apart.size() < mesh.config.layouts.size()) {
      mesh.config.layouts = std::move(apart);
      mesh.plan = plan_simulation(mesh.config, catalog, &layouts);
    }
    place_on_topology(*mesh.plan);
  } catch (const model::InputError& e) {
    mesh.plan.reset();
    mesh.refusal = e.what();
    mesh.refused_input = e.input();
    if (e.input() == model::Input::seq_len) {
      const Mending mending = padding_that_mends(mesh.config, catalog, layouts);
      mesh.mended_by = mending.flag;
      mesh.mended_layouts = mending.layouts;
    }
  }
}

// A mesh refused for a layout's reason (a length or a shape that one of its layouts does not
// take), split into the layouts that run, planned together, and each other layout refused on its
// own. Empty where it is not refused so, has one layout, or no layout runs alone (its refusal,
// with the length every layout takes, stands).
std::vector<PlannedMesh> split_by_layout(const PlannedMesh& mesh, const model::ConfigCatalog& catalog, LayoutCache& layouts) {
  const bool a_layouts_reason = mesh.refused_input == model::Input::seq_len || mesh.refused_input == model::Input::layouts;
  if (mesh.plan || !a_layouts_reason || mesh.config.layouts.size() < 2) return {};
  PlannedMesh running{mesh.config};
  running.config.layouts.clear();
  std::vector<PlannedMesh> runs_alone;  // planned already: one of them alone needs no second plan
  std::vector<PlannedMesh> refused;
  for (const std::string& layout : mesh.config.layouts) {
    PlannedMesh alone{mesh.config};
    alone.config.layouts = {layout};
    plan_mesh(alone, catalog, layouts);
    if (alone.plan) {
      running.config.layouts.push_back(layout);
      runs_alone.push_back(std::move(alone));
    } else {
      refused.push_back(std::move(alone));
    }
  }
  if (running.config.layouts.empty()) return {};
  if (runs_alone.size() == 1) {
    running = std::move(runs_alone.front());
  } else {
    plan_mesh(running, catalog, layouts);
    if (!running.plan) return {};  // apart they run, together not: the joint refusal stands
  }
  refused.insert(refused.begin(), std::move(running));
  return refused;
}

}  // namespace

PlanSearch plan_search(const PlanRequest& request, const model::ConfigCatalog& catalog) {
  const std::map<std::string, Count> file_blocks = check_plan_request(request, catalog);
  PlanSearch search;
  search.request = request;
  SimulateConfig base = request.base;
  base.keep_rounds = false;  // a plan ranks by the summaries
  base.scope = Scope::step;
  base.pass = PassSelection::forward_backward;
  model::HardwareProfile hardware = base.hardware_profile ? *base.hardware_profile : catalog.hardware(base.hardware);
  if (request.memory_gib) hardware.memory_gib = *request.memory_gib;
  search.memory_gib = hardware.memory_gib;
  base.hardware_profile = hardware;
  // Every mesh spreads over all the GPUs of the same topology: loaded once, the meshes share its
  // shortest-path trees (each mesh routes every GPU; per mesh, 4096 GPUs' trees held 134 MB).
  base.topology_graph = simulation_topology(base, catalog, hardware, request.gpus);
  const Count gpus = request.gpus_from_topology ? base.topology_graph->gpu_count() : request.gpus;
  search.request.gpus = gpus;
  if (gpus > kMaxMeshGpus) {
    throw model::InputError(model::Input::topology, base.topology_graph->name(),
                            fmt::format("has {} GPUs, more than a plan searches ({}); give --gpus", gpus, kMaxMeshGpus));
  }
  // Said here in the plan's own terms: every mesh would refuse it naming -M x -N x -D, flags a
  // plan does not take.
  if (base.topology_graph->gpu_count() < gpus) {
    throw model::InputError(model::Input::topology, base.topology.empty() ? base.topology_graph->name() : base.topology,
                            fmt::format("has {} GPUs, fewer than --gpus {}", base.topology_graph->gpu_count(), gpus));
  }

  // A permutation file holds one number of devices: searched where the layout cuts the sequence
  // into that many blocks, so that number must divide the GPUs.
  for (const std::string& layout : base.layouts) {
    const auto file = file_blocks.find(layout);
    if (file == file_blocks.end()) continue;
    if (const Count blocks = file->second; gpus % blocks != 0) {
      throw model::InputError(model::Input::layouts, layout,
                              fmt::format("holds {} device blocks: no context-parallel degree of {} GPUs cuts the sequence into "
                                          "{} (it must divide the GPUs)",
                                          blocks, gpus, blocks));
    }
  }

  // Every (mesh, algorithm); the simulation's own checks decide what is possible.
  for (const Count n : divisors(gpus)) {
    for (const Count m : divisors(gpus / n)) {
      for (const std::string& algorithm : request.algorithms) {
        for (const std::string& spec : cp_specs(algorithm, n)) {
          SimulateConfig c = base;
          c.model_parallel = m;
          c.devices = n;
          c.data_parallel = gpus / n / m;
          c.cp = spec;
          c.layouts = layouts_at(base.layouts, file_blocks, layout_degree(parse_context_parallel(spec, n), n));
          // One device, or Ulysses (the kernel sees the sequence in order): the layout plays no part.
          if (n == 1 || spec == "ulysses") c.layouts = {"contiguous"};
          // Permutation files made for other degrees only: nothing to search here.
          if (c.layouts.empty()) continue;
          // Merges fold a ring's calls together: the collectives make one call a head group.
          if (spec == "ulysses" || spec == "allgather") c.merges.clear();
          search.meshes.push_back(PlannedMesh{std::move(c)});
        }
      }
    }
  }
  // The collectives need a degree of 2 or more, a hybrid one of two factors of 2 or more: on too
  // few GPUs (or a prime count, for a hybrid) there is nothing to search, the request's error,
  // not a plan where nothing fits.
  if (search.meshes.empty()) {
    throw model::InputError(fmt::format("--algorithms {}: no mesh of {} GPU{} runs {} (allgather and ulysses need a context-parallel "
                                        "degree of 2 or more, hybrid:UxR one of U x R with U and R of 2 or more); give more --gpus "
                                        "or add ring",
                                        fmt::join(request.algorithms, ","), gpus, gpus == 1 ? "" : "s",
                                        request.algorithms.size() == 1 ? "it" : "any of them"));
  }
  // Meshes that differ in -M and -D alone ring the same layouts: each is built once.
  LayoutCache layouts;
  const unsigned threads = threads_of(request);
  model::parallel_for(search.meshes.size(), threads, [&](size_t i) { plan_mesh(search.meshes[i], catalog, layouts); });
  // A mesh plans its layouts together, so one layout's refusal refused them all: such a mesh is
  // split into the layouts that run and each one that does not (zigzag refusing 99998 tokens on
  // 2 devices leaves contiguous and striped to run there).
  std::vector<std::vector<PlannedMesh>> parts(search.meshes.size());
  model::parallel_for(search.meshes.size(), threads, [&](size_t i) { parts[i] = split_by_layout(search.meshes[i], catalog, layouts); });
  std::vector<PlannedMesh> meshes;
  for (size_t i = 0; i < search.meshes.size(); ++i) {
    if (parts[i].empty()) {
      meshes.push_back(std::move(search.meshes[i]));
    } else {
      std::ranges::move(parts[i], std::back_inserter(meshes));
    }
  }
  search.meshes = std::move(meshes);
  // Refused on every mesh: an input no mesh can run (a misspelt layout or kernel, a length no
  // layout divides) is the request's error, not a plan that fits nothing.
  if (!search.meshes.empty() && std::none_of(search.meshes.begin(), search.meshes.end(),
                                             [](const PlannedMesh& m) { return m.plan.has_value(); })) {
    throw model::InputError(search.meshes.front().refusal);
  }
  return search;
}

Plan run_plan(const PlanSearch& search) {
  const PlanRequest& request = search.request;
  const unsigned threads = threads_of(request);
  Plan out;
  out.request = request;
  out.memory_gib = search.memory_gib;
  std::vector<Entry> entries;
  std::vector<std::string> refusal_kinds;  // beside out.refusals
  for (size_t i = 0; i < search.meshes.size(); ++i) {
    const PlannedMesh& mesh = search.meshes[i];
    const Count layouts = static_cast<Count>(mesh.config.layouts.size());
    out.considered += layouts;
    if (!mesh.plan) {
      out.refused += layouts;
      const std::string kind = refusal_kind(mesh.refusal);
      const auto known = std::ranges::find(refusal_kinds, kind);
      if (known == refusal_kinds.end()) {
        refusal_kinds.push_back(kind);
        out.refusals.push_back({mesh.refusal, layouts, mesh.refused_input, mesh.mended_by, mesh.mended_layouts});
      } else {
        RefusalKind& k = out.refusals[static_cast<size_t>(known - refusal_kinds.begin())];
        k.choices += layouts;
        if (k.mended_by.empty()) k.mended_by = mesh.mended_by;
        k.mended_choices += mesh.mended_layouts;
      }
      continue;
    }
    const Simulation& sim = mesh.plan->simulation;
    if (estimate_step(*sim.step_shape, {}).exceeds_memory) {  // memory does not depend on the passes
      out.over_memory += layouts;
      continue;
    }
    for (size_t l = 0; l < mesh.plan->layouts.size(); ++l) {
      Entry e;
      e.mesh = i;
      e.layout = l;
      e.candidate.mesh = sim.mesh;
      e.candidate.cp = mesh.config.cp;
      e.candidate.seq_len = sim.config.seq_len;
      entries.push_back(std::move(e));
    }
  }
  std::ranges::stable_sort(out.refusals, std::greater<>{}, &RefusalKind::choices);

  // Entries that ring one layout (the same mask with it) and slice their calls alike price the
  // same work, whatever their -M, -D and heads: counted once for the group and held while the
  // group's entries run, a group a thread (so no more counts are held than threads). An entry's
  // calls, priced for its bound, are kept for its simulation within request.kept_prices_bytes (a
  // 512-device ring's two passes take about 4.5 MB): under packed documents counting and pricing
  // are most of what a choice costs.
  std::atomic<double> kept_bytes{0};
  const auto for_each_by_work = [&](size_t first, size_t count, PassDetail detail) {
    std::map<std::pair<const LazyLayout*, int>, std::vector<size_t>> groups;
    for (size_t i = first; i < first + count; ++i) {
      const SimulationPlan& p = *search.meshes[entries[i].mesh].plan;
      groups[{p.layouts[entries[i].layout].get(), work_key(p.simulation)}].push_back(i);
    }
    std::vector<const std::vector<size_t>*> members;
    for (const auto& [key, group] : groups) members.push_back(&group);
    model::parallel_for(members.size(), threads, [&](size_t g) {
      const Entry& first_entry = entries[members[g]->front()];
      const SimulationPlan& p = *search.meshes[first_entry.mesh].plan;
      // Builds the layout (planned, not built, until a mesh within memory asks for it).
      const model::Layout& layout = p.layouts[first_entry.layout]->get();
      std::optional<model::Work> work;  // counted when an entry has no prices kept
      for (const size_t i : *members[g]) {
        Entry& e = entries[i];
        const Simulation& sim = search.meshes[e.mesh].plan->simulation;
        if (!e.priced) {
          if (!work) work = count_call_work(sim, layout, p.mask);
          e.priced = price_attention_passes(sim, layout, *work, KernelTimeModel(sim.kernel, sim.kernel_sms, sim.call_shape));
        }
        std::uint64_t events = 0;
        const StepEstimate step = estimate_step(*sim.step_shape, run_attention_passes(sim, *e.priced, events, detail));
        if (detail == PassDetail::simulated) {
          // The partial-tile note is about the choices shown, which are simulated.
          e.candidate.most_partial_tiles = e.priced->most_partial_tiles;
          e.candidate.step = step;
          e.priced.reset();
          continue;
        }
        e.candidate.layout = layout.name();
        e.candidate.bound_us = step.time_us;
        e.bound_tokens_per_second = step.tokens_per_second;
        const double bytes = e.priced->bytes();
        if (kept_bytes.fetch_add(bytes) + bytes > request.kept_prices_bytes) {
          kept_bytes.fetch_sub(bytes);
          e.priced.reset();
        }
      }
    });
  };
  for_each_by_work(0, entries.size(), PassDetail::bound);
  // Best bound first (ties in enumeration order), simulated a batch at a time until no bound left
  // can beat the top choices found.
  std::stable_sort(entries.begin(), entries.end(),
                   [](const Entry& a, const Entry& b) { return a.bound_tokens_per_second > b.bound_tokens_per_second; });
  std::vector<double> best;  // simulated throughputs, best first
  size_t next = 0;
  while (next < entries.size()) {
    if (best.size() >= static_cast<size_t>(request.top) &&
        entries[next].bound_tokens_per_second < best[static_cast<size_t>(request.top) - 1]) {
      break;
    }
    const size_t batch = std::min(entries.size() - next, kSimulatedAtOnce);
    for_each_by_work(next, batch, PassDetail::simulated);
    for (size_t i = 0; i < batch; ++i) best.push_back(entries[next + i].candidate.step->tokens_per_second);
    std::sort(best.begin(), best.end(), std::greater<>());
    next += batch;
  }
  // Each choice shown is explained against the best of another algorithm (explain): simulate, for
  // every algorithm among the top, the other algorithms' candidates best bound first until none
  // left can beat the best of them simulated, so that the comparison is the true one, whatever
  // --top is (with --top 1 the runner-up algorithm was often bounded out, and "the only
  // algorithm that fits" said of a search where others fit).
  std::vector<size_t> order(next);  // the simulated, best first: the top's families
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return entries[a].candidate.step->tokens_per_second > entries[b].candidate.step->tokens_per_second;
  });
  std::set<std::string> top_families;
  for (size_t i = 0; i < std::min(order.size(), static_cast<size_t>(request.top)); ++i) {
    top_families.insert(family(entries[order[i]].candidate.cp));
  }
  for (const std::string& top_family : top_families) {
    double best_other = -1;  // the best simulated of the other algorithms, kept as more are
    for (size_t i = 0; i < next; ++i) {
      if (family(entries[i].candidate.cp) != top_family) best_other = std::max(best_other, entries[i].candidate.step->tokens_per_second);
    }
    while (true) {
      const auto candidate = std::find_if(entries.begin() + static_cast<std::ptrdiff_t>(next), entries.end(),
                                          [&](const Entry& e) { return family(e.candidate.cp) != top_family; });
      if (candidate == entries.end() || candidate->bound_tokens_per_second < best_other) break;
      std::rotate(entries.begin() + static_cast<std::ptrdiff_t>(next), candidate, std::next(candidate));
      for_each_by_work(next, 1, PassDetail::simulated);
      best_other = std::max(best_other, entries[next].candidate.step->tokens_per_second);
      ++next;
    }
  }
  out.bounded_out = static_cast<Count>(entries.size() - next);
  entries.resize(next);
  std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.candidate.step->tokens_per_second > b.candidate.step->tokens_per_second;
  });
  for (Entry& e : entries) out.ranked.push_back(std::move(e.candidate));
  const size_t explained = std::min(out.ranked.size(), static_cast<size_t>(request.top));
  const bool one_searched = request.algorithms.size() == 1;
  for (size_t i = 0; i < explained; ++i) out.ranked[i].reason = explain(out.ranked[i], out.ranked, out.memory_gib, one_searched, request.base.batch);
  // One kernel profile prices every mesh: simulate's note of the choices shown, naming their ranks.
  Count most = 0;
  std::vector<std::string> ranks;
  for (size_t i = 0; i < explained; ++i) {
    if (out.ranked[i].most_partial_tiles < 2) continue;
    most = std::max(most, out.ranked[i].most_partial_tiles);
    ranks.push_back(std::to_string(i + 1));
  }
  const auto planned = std::find_if(search.meshes.begin(), search.meshes.end(), [](const PlannedMesh& m) { return m.plan.has_value(); });
  if (planned != search.meshes.end()) {
    const Simulation& simulation = planned->plan->simulation;
    if (simulation.kernel_note) out.notes.push_back(*simulation.kernel_note);
    if (std::optional<std::string> note = head_size_note(simulation.kernel, simulation.head_dim)) out.notes.push_back(std::move(*note));
    if (std::optional<std::string> note = partial_tiles_note(simulation.kernel, most)) {
      out.notes.push_back(fmt::format("{}: the {} {}", *note, ranks.size() == 1 ? "choice ranked" : "choices ranked", fmt::join(ranks, ", ")));
    }
    if (std::optional<std::string> note = elementwise_cost_note(simulation.hardware)) out.notes.push_back(std::move(*note));
  }
  // --merges prices a ring's merges; the collectives' choices ran without it, and simulate refuses
  // it beside them: say which of those shown to simulate without it.
  if (!request.base.merges.empty()) {
    std::vector<std::string> collective_ranks;
    for (size_t i = 0; i < explained; ++i) {
      const std::string f = family(out.ranked[i].cp);
      if (f == "allgather" || f == "ulysses") collective_ranks.push_back(std::to_string(i + 1));
    }
    if (!collective_ranks.empty()) {
      out.notes.push_back(fmt::format("--merges {} prices a ring's merges: the {} {} (all-gather or Ulysses, one call a head "
                                      "group) ran without it, as simulate runs them (give it --cp ring or hybrid only)",
                                      request.base.merges, collective_ranks.size() == 1 ? "choice ranked" : "choices ranked",
                                      fmt::join(collective_ranks, ", ")));
    }
  }
  return out;
}

std::string plan_mesh_name(const model::Mesh& mesh) {
  return fmt::format("{}x{}x{}", mesh.model_parallel, mesh.devices, mesh.data_parallel);
}

}  // namespace stripesim::sim
