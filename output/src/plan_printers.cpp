#include "stripesim/output/plan_printers.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "stripesim/model/io/schemas.hpp"
#include "stripesim/output/rows.hpp"

namespace stripesim::output {

namespace {

// `rank` none for a choice simulated while searching but outside the top: a choice bounded out
// of the search could rank between it and the top, so its place is not known.
nlohmann::ordered_json plan_row(std::optional<size_t> rank, const sim::PlanCandidate& c) {
  const sim::StepEstimate& e = *c.step;
  nlohmann::ordered_json row{{"rank", optional_json(rank)},
                             {"tokens_per_second", e.tokens_per_second},
                             {"step_us", e.time_us},
                             {"model_parallel", c.mesh.model_parallel},
                             {"context_parallel", c.mesh.devices},
                             {"data_parallel", c.mesh.data_parallel},
                             {"cp", c.cp},
                             {"layout", c.layout},
                             {"seq_len", c.seq_len},
                             {"mfu", e.mfu},
                             {"memory_bytes", e.memory.total()}};
  for (const sim::StepPart& part : sim::kStepParts) row[std::string(part.name) + "_us"] = e.breakdown.*part.us;
  row["bound_us"] = c.bound_us;
  row["reason"] = c.reason;
  return row;
}

}  // namespace

std::vector<nlohmann::ordered_json> plan_rows(const sim::Plan& plan) {
  std::vector<nlohmann::ordered_json> rows;
  const auto top = static_cast<size_t>(plan.request.top);
  for (size_t i = 0; i < plan.ranked.size(); ++i) {
    rows.push_back(plan_row(i < top ? std::optional<size_t>(i + 1) : std::nullopt, plan.ranked[i]));
  }
  return rows;
}

namespace {

// The CSV of a plan where nothing fits is its header alone: a reader gets the columns, no rows.
std::string plan_csv(const sim::Plan& plan) {
  if (!plan.ranked.empty()) return rows_to_csv(plan_rows(plan));
  sim::PlanCandidate none;
  none.step.emplace();
  const std::string one_row = rows_to_csv({plan_row(1, none)});
  return one_row.substr(0, one_row.find('\n') + 1);
}

}  // namespace

nlohmann::ordered_json to_json(const sim::Plan& plan) {
  const sim::PlanRequest& r = plan.request;
  nlohmann::ordered_json doc;
  doc["schema"] = model::kPlanSchema;
  doc["request"] = {{"model", r.base.model},
                    {"hardware", r.base.hardware_profile ? r.base.hardware_profile->name : r.base.hardware},
                    {"topology", r.base.topology},
                    {"gpus", r.gpus},
                    {"seq_len", r.base.seq_len},
                    {"batch", r.base.batch},
                    {"mask", r.base.mask},
                    {"layouts", r.base.layouts},
                    {"kernel", r.base.kernel},
                    {"merges", r.base.merges.empty() ? "profile" : r.base.merges},
                    {"pad_documents", r.base.pad_documents},
                    {"pad_seq", r.base.pad_seq},
                    {"algorithms", r.algorithms},
                    {"memory_gib", plan.memory_gib},
                    {"recompute", r.base.recompute},
                    {"zero", sim::to_int(r.base.zero)},
                    {"top", r.top}};
  doc["considered"] = plan.considered;
  doc["refused"] = plan.refused;
  doc["over_memory"] = plan.over_memory;
  doc["bounded_out"] = plan.bounded_out;
  // Every kind of refusal, most choices first: its first message and the choices it refused
  // (`refusal_examples`, the messages alone, as before there were counts).
  nlohmann::ordered_json examples = nlohmann::ordered_json::array();
  nlohmann::ordered_json refusals = nlohmann::ordered_json::array();
  for (const sim::RefusalKind& k : plan.refusals) {
    examples.push_back(k.example);
    nlohmann::ordered_json refusal{{"example", k.example}, {"choices", k.choices}};
    if (!k.mended_by.empty()) {
      refusal["mended_by"] = k.mended_by;
      refusal["mended_choices"] = k.mended_choices;
    }
    refusals.push_back(std::move(refusal));
  }
  doc["refusal_examples"] = std::move(examples);
  doc["refusals"] = std::move(refusals);
  doc["ranked"] = plan_rows(plan);
  if (!plan.notes.empty()) doc["notes"] = plan.notes;
  return doc;
}

std::string plan_table(const sim::Plan& plan) {
  const sim::PlanRequest& r = plan.request;
  std::string out = fmt::format(
      "plan: {} on {} GPUs ({}), n = {}{}, batch {} per replica, mask {}, a training step (forward, backward, gradients){}{}\n"
      "{} choices: {} refused by the simulation, {} over {:g} GiB of memory, {} could not beat the top {} "
      "(bounded), {} simulated\n\n",
      r.base.model, r.gpus, r.base.topology.empty() ? fmt::format("nvswitch:{}", r.gpus) : r.base.topology, r.base.seq_len,
      r.base.pad_seq ? " (--pad-seq: padded to a multiple of 2N where a degree N does not divide it)" : "", r.base.batch, r.base.mask, r.base.recompute ? ", recomputing the forward" : "",
      r.base.zero == sim::ZeroStage::none ? "" : fmt::format(", ZeRO stage {}", sim::to_int(r.base.zero)), plan.considered, plan.refused, plan.over_memory, plan.memory_gib, plan.bounded_out, r.top,
      plan.ranked.size());
  if (plan.ranked.empty()) {
    std::vector<std::string> remedies{"more GPUs", "more memory (--memory-gib)"};
    if (!r.base.recompute) remedies.emplace_back("--recompute");
    if (r.base.zero != sim::ZeroStage::weights) remedies.emplace_back("a higher --zero (shard the training state)");
    remedies.emplace_back("a shorter sequence");
    // GPU counts with odd factors (72 of an NVL72 rack) leave degrees a power-of-two length does not divide.
    if (std::ranges::any_of(plan.refusals, [](const sim::RefusalKind& k) { return k.input == model::Input::seq_len; })) {
      // Padding is named where the search found it lets a refused choice run (RefusalKind::mended_by).
      const auto mended = std::ranges::find_if(plan.refusals, [](const sim::RefusalKind& k) { return !k.mended_by.empty(); });
      remedies.emplace_back(fmt::format("{}a --seq-len that more context-parallel degrees divide, or fewer --gpus (refused below)",
                                        mended == plan.refusals.end() ? "" : mended->mended_by + ", "));
    }
    out += fmt::format("nothing fits: give {}\n", fmt::join(remedies, ", "));
  } else {
    const size_t shown = std::min(plan.ranked.size(), static_cast<size_t>(r.top));
    // The text columns as wide as their longest entry shown (1x32768x1, block-striped:4096), so
    // that the columns after them stay aligned.
    size_t mesh_width = 9, cp_width = 14, layout_width = 12;
    for (size_t i = 0; i < shown; ++i) {
      mesh_width = std::max(mesh_width, sim::plan_mesh_name(plan.ranked[i].mesh).size());
      cp_width = std::max(cp_width, plan.ranked[i].cp.size());
      layout_width = std::max(layout_width, plan.ranked[i].layout.size());
    }
    out += fmt::format("{:>4} {:>12} {:>10} {:>{}} {:<{}} {:<{}} {:>6} {:>8} {:>9} {:>9}  {}\n", "rank", "tokens/s", "step ms",
                       "MxNxD", mesh_width, "cp", cp_width, "layout", layout_width, "MFU", "mem GiB", "attn comm", "attn idle", "why");
    for (size_t i = 0; i < shown; ++i) {
      const sim::PlanCandidate& c = plan.ranked[i];
      const sim::StepEstimate& e = *c.step;
      out += fmt::format("{:>4} {:>12.0f} {:>10.1f} {:>{}} {:<{}} {:<{}} {:>5.1f}% {:>8.1f} {:>9.1f} {:>9.1f}  {}\n", i + 1,
                         e.tokens_per_second, e.time_us / 1e3, sim::plan_mesh_name(c.mesh), mesh_width, c.cp, cp_width,
                         c.layout, layout_width, 100 * e.mfu, e.memory.total() / sim::kBytesPerGib,
                         e.breakdown.attention_comm_us / 1e3, e.breakdown.attention_idle_us / 1e3, c.reason);
    }
  }
  for (const std::string& note : plan.notes) out += "note: " + note + "\n";
  if (!plan.refusals.empty()) {
    // A kind per line, most choices first, the rest counted: the reason most choices fail first.
    constexpr size_t kKindsShown = 8;
    const size_t shown = std::min(plan.refusals.size(), kKindsShown);
    out += fmt::format("\nrefused, by reason (choices, then the first of each kind{}):\n",
                       shown < plan.refusals.size() ? fmt::format("; {} more kinds in --format json", plan.refusals.size() - shown) : "");
    for (size_t i = 0; i < shown; ++i) {
      const sim::RefusalKind& k = plan.refusals[i];
      const std::string mended = k.mended_choices == k.choices ? "these run"
                                 : fmt::format("{} of these run{}", k.mended_choices, k.mended_choices == 1 ? "s" : "");
      out += fmt::format("{:>8}  {}{}\n", k.choices, k.example, k.mended_by.empty() ? "" : fmt::format(" ({} with {})", mended, k.mended_by));
    }
  }
  out += "\nM x N x D = model-, context- and data-parallel degrees; tokens/s over every GPU; attn comm and idle in ms\n"
         "per step on the slowest device; why: against the best choice of another algorithm.\n";
  return out;
}

std::string render(const sim::Plan& plan, OutputFormat format) {
  switch (format) {
    case OutputFormat::table: return plan_table(plan);
    case OutputFormat::json: return to_json(plan).dump(2) + "\n";
    case OutputFormat::csv: return plan_csv(plan);
    case OutputFormat::markdown: break;
  }
  throw not_offered(format);
}

}  // namespace stripesim::output
