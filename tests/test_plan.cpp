// stripesim plan: the search's counts by hand, its bounded ranking against the exhaustive one,
// every choice re-simulated through `simulate`'s own path, and the memory filter.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>

#include "stripesim/model/io/input_error.hpp"
#include "stripesim/sim/plan.hpp"

namespace stripesim::sim {
namespace {

const model::ConfigCatalog& catalog() {
  static const model::ConfigCatalog shipped(std::string(STRIPESIM_SOURCE_DIR) + "/configs");
  return shipped;
}

PlanRequest small_request() {
  PlanRequest r;
  r.base.model = "1b";  // 16 heads
  r.base.hardware = "h100";
  r.base.seq_len = 64 * 1024;
  r.gpus = 4;
  r.threads = 2;
  return r;
}

TEST(Plan, CountsEveryMeshAlgorithmAndLayout) {
  PlanRequest r = small_request();
  r.top = 1000;  // nothing bounded out
  const Plan plan = run_plan(plan_search(r, catalog()));
  // N = 1: M in {1, 2, 4}, the ring alone, one layout: 3. N = 2: M in {1, 2}, ring and allgather
  // with 3 layouts, Ulysses with one: 14. N = 4, M = 1: ring, allgather, hybrid:2x2 with 3
  // layouts, Ulysses with one: 10.
  EXPECT_EQ(plan.considered, 27);
  EXPECT_EQ(plan.refused, 0);
  EXPECT_EQ(plan.bounded_out, 0);
  EXPECT_EQ(static_cast<Count>(plan.ranked.size()), plan.considered - plan.over_memory);
  for (size_t i = 1; i < plan.ranked.size(); ++i) {
    EXPECT_GE(plan.ranked[i - 1].step->tokens_per_second, plan.ranked[i].step->tokens_per_second);
  }
  // Idle where the ring's last device waits, else none: not the 1e-11 us rounding left where its
  // compute and exposed communication fill the pass (printed in JSON and CSV as 5.25e-11).
  Count without_idle = 0;
  for (const PlanCandidate& c : plan.ranked) {
    const double idle = c.step->breakdown.attention_idle_us;
    EXPECT_TRUE(idle == 0 || idle > 1e-9 * c.step->time_us) << c.cp << " " << c.layout << " " << idle;
    without_idle += idle == 0 ? 1 : 0;
  }
  EXPECT_GT(without_idle, 0);
}

// ptrr's default block is the query tile held to a device's share: at 256 tokens it is ptrr:128
// on a ring of 2 and ptrr:64 on a ring of 4, where ptrr:64 is the same choice, priced once. N = 1
// (M in {1, 2, 4}): contiguous alone, 3; N = 2 (M in {1, 2}): both, 4; N = 4: one, 1.
TEST(Plan, PtrrBesideItsOwnDefaultBlockIsOneChoice) {
  PlanRequest r = small_request();
  r.base.seq_len = 256;
  r.algorithms = {"ring"};
  r.base.layouts = {"ptrr", "ptrr:64"};
  r.layouts_given = true;
  r.top = 1000;
  const Plan plan = run_plan(plan_search(r, catalog()));
  EXPECT_EQ(plan.considered, 8);
  std::vector<std::string> at_four;
  for (const PlanCandidate& c : plan.ranked) {
    if (c.mesh.devices == 4) at_four.push_back(c.layout);
  }
  EXPECT_EQ(at_four, std::vector<std::string>{"ptrr:64"});
}

// A mesh plans its layouts together: where one of them refuses the length, the others still run
// there. 65538 tokens on rings of 2 (M in {1, 2}; ring and all-gather): contiguous and striped
// divide them, zigzag (2N = 4) does not, so 4 zigzag choices are refused apart and 8 run; on 4
// devices every layout refuses (N = 4 divides no layout's share), 10 choices refused together.
TEST(Plan, OneLayoutRefusingALengthLeavesTheOthersOfItsMesh) {
  PlanRequest r = small_request();
  r.base.seq_len = 65538;
  r.top = 1000;
  const Plan plan = run_plan(plan_search(r, catalog()));
  EXPECT_EQ(plan.considered, 27);
  Count at_two = 0;
  for (const PlanCandidate& c : plan.ranked) {
    EXPECT_NE(c.layout, "zigzag");
    if (c.mesh.devices == 2 && c.cp != "ulysses") ++at_two;
  }
  EXPECT_EQ(at_two, 8);
  const auto zigzag = std::ranges::find_if(plan.refusals, [](const RefusalKind& k) {
    return k.example.find("layout zigzag needs it divisible by 2N = 4") != std::string::npos;
  });
  ASSERT_NE(zigzag, plan.refusals.end());
  EXPECT_EQ(zigzag->choices, 4);
  EXPECT_EQ(zigzag->mended_by, "--pad-seq");
  Count refused = 0;
  for (const RefusalKind& k : plan.refusals) refused += k.choices;
  EXPECT_EQ(refused, plan.refused);
  EXPECT_EQ(plan.refused, 4 + 10);
  EXPECT_EQ(plan.considered, plan.refused + plan.over_memory + static_cast<Count>(plan.ranked.size()));
}

TEST(Plan, BoundedSearchRanksTheTopExactlyAsTheExhaustiveOne) {
  PlanRequest r = small_request();
  r.gpus = 8;
  r.top = 1000;
  const Plan all = run_plan(plan_search(r, catalog()));
  r.top = 4;
  const Plan bounded = run_plan(plan_search(r, catalog()));
  EXPECT_GT(bounded.bounded_out, 0);
  ASSERT_GE(bounded.ranked.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(bounded.ranked[i].cp, all.ranked[i].cp) << i;
    EXPECT_EQ(bounded.ranked[i].layout, all.ranked[i].layout) << i;
    EXPECT_EQ(bounded.ranked[i].mesh.to_string(), all.ranked[i].mesh.to_string()) << i;
    EXPECT_DOUBLE_EQ(bounded.ranked[i].step->tokens_per_second, all.ranked[i].step->tokens_per_second) << i;
    EXPECT_FALSE(bounded.ranked[i].reason.empty());
  }
  // Every bound is below what was simulated, also where the traffic between the weights' copies
  // outlasts the compute that hides it (a 1 Gb/s NIC), whole or sharded.
  for (const PlanCandidate& c : all.ranked) EXPECT_LE(c.bound_us, c.step->time_us * (1 + 1e-12)) << c.cp << " " << c.layout;
  r.top = 1000;
  r.base.topology = "cluster:2x4:nic=1gbps";
  for (const ZeroStage zero : {ZeroStage::none, ZeroStage::optimizer, ZeroStage::weights}) {
    r.base.zero = zero;
    const Plan slow = run_plan(plan_search(r, catalog()));
    ASSERT_FALSE(slow.ranked.empty());
    EXPECT_TRUE(std::any_of(slow.ranked.begin(), slow.ranked.end(),
                            [](const PlanCandidate& c) { return c.step->breakdown.gradient_comm_us > 0; }))
        << to_int(zero);
    for (const PlanCandidate& c : slow.ranked) EXPECT_LE(c.bound_us, c.step->time_us * (1 + 1e-12)) << to_int(zero);
  }
}

// Every choice re-simulated alone through simulate's path. With --pad-seq on 6 GPUs each mesh pads
// to its own 2N: Ulysses 2 x ring 3 (N = 6) and a ring of 3 both lay out 3 ring blocks, of
// 64k + 8 and 64k + 2 tokens, which the layouts shared between meshes must keep apart.
// What is simulated (and so printed: the rows past the top, the count bounded out) does not
// depend on how many threads simulate it: the same plan prints the same on every machine.
TEST(Plan, TheThreadCountChangesNothingPrinted) {
  PlanRequest r = small_request();
  r.gpus = 16;
  r.top = 3;
  r.threads = 1;
  const Plan one = run_plan(plan_search(r, catalog()));
  EXPECT_GT(one.bounded_out, 0) << "a search the bound cuts short, where a batch's size shows";
  for (const unsigned threads : {2u, 5u, 16u}) {
    r.threads = threads;
    const Plan many = run_plan(plan_search(r, catalog()));
    EXPECT_EQ(many.bounded_out, one.bounded_out) << threads;
    ASSERT_EQ(many.ranked.size(), one.ranked.size()) << threads;
    for (size_t i = 0; i < one.ranked.size(); ++i) {
      EXPECT_EQ(many.ranked[i].cp, one.ranked[i].cp) << threads << " " << i;
      EXPECT_EQ(many.ranked[i].layout, one.ranked[i].layout) << threads << " " << i;
      EXPECT_EQ(many.ranked[i].mesh.to_string(), one.ranked[i].mesh.to_string()) << threads << " " << i;
      EXPECT_EQ(many.ranked[i].step->tokens_per_second, one.ranked[i].step->tokens_per_second) << threads << " " << i;
      EXPECT_EQ(many.ranked[i].reason, one.ranked[i].reason) << threads << " " << i;
    }
  }
}

// A reason's milliseconds are per sequence: a step trains D x batch of them, so with batch 2 the
// gap it names is the breakdown's difference over 2D (it was over D, twice the time).
TEST(Plan, AReasonsMillisecondsArePerSequence) {
  PlanRequest r = small_request();
  r.gpus = 8;
  r.top = 3;
  r.base.batch = 2;
  const Plan plan = run_plan(plan_search(r, catalog()));
  const PlanCandidate& top = plan.ranked.front();
  const auto other = std::find_if(plan.ranked.begin(), plan.ranked.end(), [&](const PlanCandidate& c) {
    return c.cp.substr(0, c.cp.find(':')) != top.cp.substr(0, top.cp.find(':'));
  });
  ASSERT_NE(other, plan.ranked.end());
  const std::vector<std::pair<std::string, Microseconds StepBreakdown::*>> parts = {
      {"less attention compute", &StepBreakdown::attention_compute_us}, {"less exposed attention", &StepBreakdown::attention_comm_us},
      {"less attention idle", &StepBreakdown::attention_idle_us}, {"less model-parallel", &StepBreakdown::model_parallel_comm_us},
      {"less exposed gradient", &StepBreakdown::gradient_comm_us}, {"less matmuls", &StepBreakdown::matmul_us},
      {"less element-wise", &StepBreakdown::elementwise_us}};
  const auto part = std::find_if(parts.begin(), parts.end(), [&](const auto& p) { return top.reason.find(p.first) != std::string::npos; });
  ASSERT_NE(part, parts.end()) << top.reason;
  const double gap_ms = ((other->step->breakdown.*part->second) / static_cast<double>(other->mesh.data_parallel * 2) -
                         (top.step->breakdown.*part->second) / static_cast<double>(top.mesh.data_parallel * 2)) / 1e3;
  EXPECT_NE(top.reason.find(fmt::format(": {:.2f} ms {}", gap_ms, part->first)), std::string::npos) << top.reason << " " << gap_ms;
}

TEST(Plan, EveryChoiceIsWhatSimulateSaysOfIt) {
  for (const bool pad_seq : {false, true}) {
    PlanRequest r = small_request();
    r.top = pad_seq ? 100 : 5;
    r.gpus = pad_seq ? 6 : 4;
    r.base.pad_seq = pad_seq;
    const Plan plan = run_plan(plan_search(r, catalog()));
    ASSERT_FALSE(plan.ranked.empty());
    bool hybrid = false, ring_of_3 = false;
    for (size_t i = 0; i < static_cast<size_t>(r.top) && i < plan.ranked.size(); ++i) {
      const PlanCandidate& c = plan.ranked[i];
      SimulateConfig config = r.base;
      config.scope = Scope::step;
      config.pass = PassSelection::forward_backward;
      config.model_parallel = c.mesh.model_parallel;
      config.devices = c.mesh.devices;
      config.data_parallel = c.mesh.data_parallel;
      config.cp = c.cp;
      config.layouts = {c.layout};
      const Simulation s = run_simulation(config, catalog());
      EXPECT_DOUBLE_EQ(s.results[0].step->time_us, c.step->time_us) << c.cp << " " << c.layout << " N = " << c.mesh.devices;
      EXPECT_FALSE(s.results[0].step->exceeds_memory);
      EXPECT_EQ(s.results[0].most_partial_tiles, c.most_partial_tiles) << c.cp << " " << c.layout;
      EXPECT_EQ(s.config.seq_len, c.seq_len);
      if (pad_seq) {
        // The next multiple of 2N: at least the length asked for, less than 2N past it.
        EXPECT_EQ(c.seq_len % (2 * c.mesh.devices), 0);
        EXPECT_GE(c.seq_len, r.base.seq_len);
        EXPECT_LT(c.seq_len, r.base.seq_len + 2 * c.mesh.devices);
      } else {
        EXPECT_EQ(c.seq_len, r.base.seq_len);
      }
      hybrid = hybrid || c.cp == "hybrid:2x3";
      ring_of_3 = ring_of_3 || (c.cp == "ring" && c.mesh.devices == 3);
    }
    if (pad_seq) {
      EXPECT_TRUE(hybrid && ring_of_3) << "both kinds of 3-block ring among the choices";
    }
  }
}

// A choice's calls are priced for its bound and, within the budget, kept for its simulation:
// whether they are kept (all, none, some: a budget of one 8-GPU ring's prices) changes nothing
// in the plan, under packed documents with every algorithm and `balanced` among the layouts.
TEST(Plan, KeepingTheBoundsPricesForTheSimulationsChangesNothing) {
  PlanRequest r = small_request();
  r.gpus = 8;
  r.base.seq_len = 32 * 1024;
  r.base.mask = "documents:lognormal:2048:1.2:seed=4";
  r.base.pad_documents = true;
  r.base.layouts = {"contiguous", "zigzag", "balanced"};
  r.layouts_given = true;
  r.top = 6;
  const auto plan_with = [&](double budget) {
    PlanRequest each = r;
    each.kept_prices_bytes = budget;
    return run_plan(plan_search(each, catalog()));
  };
  const Plan priced_again = plan_with(0);
  ASSERT_GT(priced_again.ranked.size(), 6u);  // simulated past the top: the bound prunes after it
  for (const double budget : {2.0 * 8 * 8 * sizeof(double), 1e12}) {
    const Plan kept = plan_with(budget);
    EXPECT_EQ(kept.bounded_out, priced_again.bounded_out) << budget;
    ASSERT_EQ(kept.ranked.size(), priced_again.ranked.size()) << budget;
    for (size_t i = 0; i < kept.ranked.size(); ++i) {
      const PlanCandidate& a = kept.ranked[i];
      const PlanCandidate& b = priced_again.ranked[i];
      EXPECT_EQ(a.cp + " " + a.layout + " " + a.mesh.to_string(), b.cp + " " + b.layout + " " + b.mesh.to_string()) << i;
      EXPECT_EQ(a.step->time_us, b.step->time_us) << i;
      EXPECT_EQ(a.step->breakdown.attention_comm_us, b.step->breakdown.attention_comm_us) << i;
      EXPECT_EQ(a.step->breakdown.attention_idle_us, b.step->breakdown.attention_idle_us) << i;
      EXPECT_EQ(a.bound_us, b.bound_us) << i;
      EXPECT_EQ(a.most_partial_tiles, b.most_partial_tiles) << i;
      EXPECT_EQ(a.reason, b.reason) << i;
    }
  }
}

// simulate's note on calls of several partial tiles per query tile under a fit that never timed
// one (h100 sdpa: causal files only) reaches the plan, naming the choices shown that hold them:
// an all-gather of striped queries (a 128-query tile spans 128 N positions, so N key tiles of the
// gathered sequence on the diagonal); the ring's choices alone hold one each.
TEST(Plan, NotesTheChoicesWhoseCallsTheKernelFitNeverTimed) {
  PlanRequest r = small_request();
  r.top = 1000;
  const Plan plan = run_plan(plan_search(r, catalog()));
  std::vector<std::string> ranks;
  for (size_t i = 0; i < plan.ranked.size(); ++i) {
    const PlanCandidate& c = plan.ranked[i];
    if (c.cp == "allgather" && c.layout == "striped") {
      EXPECT_EQ(c.most_partial_tiles, c.mesh.devices) << c.mesh.to_string();
    }
    if (c.cp == "ring") {
      EXPECT_LE(c.most_partial_tiles, 1) << c.layout;
    }
    if (c.most_partial_tiles >= 2) ranks.push_back(std::to_string(i + 1));
  }
  ASSERT_FALSE(ranks.empty());
  ASSERT_EQ(plan.notes.size(), 1u);
  EXPECT_EQ(plan.notes[0].rfind("kernel sdpa: its fit timed no query tile with more than one partial tile", 0), 0u);
  EXPECT_NE(plan.notes[0].find(fmt::format(": the {} {}", ranks.size() == 1 ? "choice ranked" : "choices ranked", fmt::join(ranks, ", "))),
            std::string::npos)
      << plan.notes[0];
  r.algorithms = {"ring"};
  EXPECT_TRUE(run_plan(plan_search(r, catalog())).notes.empty());
}

TEST(Plan, DropsWhatDoesNotFitAndRefusesBadRequests) {
  PlanRequest r = small_request();
  r.memory_gib = 1;
  const Plan none = run_plan(plan_search(r, catalog()));
  EXPECT_TRUE(none.ranked.empty());
  EXPECT_EQ(none.over_memory, none.considered - none.refused);
  PlanRequest bad = small_request();
  bad.algorithms = {"rings"};
  EXPECT_THROW((void)plan_search(bad, catalog()), model::InputError);
  bad = small_request();
  bad.gpus = 0;
  EXPECT_THROW((void)plan_search(bad, catalog()), model::InputError);
  bad = small_request();
  bad.base.model.clear();
  EXPECT_THROW((void)plan_search(bad, catalog()), model::InputError);
  // 12 GPUs for 16 heads: model-parallel 3 and 6 and 12 cannot split them; Ulysses over 3, 6, 12 neither.
  PlanRequest odd = small_request();
  odd.gpus = 12;
  odd.top = 2;
  const Plan plan = run_plan(plan_search(odd, catalog()));
  EXPECT_GT(plan.refused, 0);
  for (const PlanCandidate& c : plan.ranked) EXPECT_EQ(16 % c.mesh.model_parallel, 0);
  // The refusals come by kind: model-parallel 3, 6 and 12 are one kind, Ulysses over 3, 6 and 12
  // another; the kinds add up to every refused choice, most choices first.
  Count refused = 0;
  for (size_t i = 0; i < plan.refusals.size(); ++i) {
    refused += plan.refusals[i].choices;
    if (i > 0) {
      EXPECT_GE(plan.refusals[i - 1].choices, plan.refusals[i].choices);
    }
  }
  EXPECT_EQ(refused, plan.refused);
  const auto kinds_of = [&](const std::string& text) {
    return std::ranges::count_if(plan.refusals, [&](const RefusalKind& k) { return k.example.find(text) != std::string::npos; });
  };
  EXPECT_EQ(kinds_of("--model-parallel"), 1) << "M = 3, 6 and 12 refused for one reason";
  EXPECT_GE(plan.refusals.size(), 2u);
}

TEST(Plan, ShardingTheTrainingStateFitsWhatDdpCannot) {
  PlanRequest r = small_request();
  r.top = 1000;  // every choice simulated
  const Plan plain = run_plan(plan_search(r, catalog()));
  r.base.zero = ZeroStage::weights;
  const Plan sharded = run_plan(plan_search(r, catalog()));
  ASSERT_EQ(sharded.ranked.size(), plain.ranked.size());
  const auto copies = [](const PlanCandidate& c) { return c.mesh.devices * c.mesh.data_parallel; };
  double least_with_copies = std::numeric_limits<double>::infinity();  // unsharded, of a mesh with copies
  for (const PlanCandidate& p : plain.ranked) {
    const auto same = std::find_if(sharded.ranked.begin(), sharded.ranked.end(), [&](const PlanCandidate& s) {
      return s.mesh.to_string() == p.mesh.to_string() && s.cp == p.cp && s.layout == p.layout;
    });
    ASSERT_NE(same, sharded.ranked.end());
    // One copy of the weights (all 4 GPUs model-parallel) has nothing to shard it with.
    if (copies(p) == 1) {
      EXPECT_DOUBLE_EQ(same->step->memory.total(), p.step->memory.total());
    } else {
      EXPECT_LT(same->step->memory.total(), p.step->memory.total());
      least_with_copies = std::min(least_with_copies, p.step->memory.total());
    }
  }
  // Below what any unsharded mesh with copies needs, DDP fits only meshes without copies and ZeRO
  // stage 3 fits some with copies.
  r.memory_gib = least_with_copies / kBytesPerGib * 0.99;
  const Plan fits_sharded = run_plan(plan_search(r, catalog()));
  EXPECT_TRUE(std::any_of(fits_sharded.ranked.begin(), fits_sharded.ranked.end(), [&](const auto& c) { return copies(c) > 1; }));
  r.base.zero = ZeroStage::none;
  const Plan fits_plain = run_plan(plan_search(r, catalog()));
  EXPECT_TRUE(std::none_of(fits_plain.ranked.begin(), fits_plain.ranked.end(), [&](const auto& c) { return copies(c) > 1; }));
}

}  // namespace
}  // namespace stripesim::sim
