// How `check` judges a number: patterns, directions, limits and per-pattern tolerances.
#include <gtest/gtest.h>

#include "stripesim/model/io/input_error.hpp"
#include "stripesim/model/workflows/baseline_rules.hpp"

namespace stripesim::model {
namespace {

TEST(BaselineRules, PatternsMatchTheWholeNameOrItsTrailingParts) {
  EXPECT_TRUE(metric_matches("imbalance", "zigzag.tiles.imbalance"));
  EXPECT_TRUE(metric_matches("tiles.imbalance", "zigzag.tiles.imbalance"));
  EXPECT_TRUE(metric_matches("zigzag.tiles.imbalance", "zigzag.tiles.imbalance"));
  EXPECT_TRUE(metric_matches("zigzag.*", "zigzag.tiles.imbalance"));
  EXPECT_TRUE(metric_matches("*.imbalance", "zigzag.tiles.imbalance"));
  EXPECT_TRUE(metric_matches("tms", "tms"));
  EXPECT_FALSE(metric_matches("tms", "tms_tiles"));
  EXPECT_FALSE(metric_matches("balance", "zigzag.tiles.imbalance"));  // parts, not substrings
  EXPECT_FALSE(metric_matches("elements.imbalance", "zigzag.tiles.imbalance"));
  EXPECT_FALSE(metric_matches("zigzag", "zigzag.tiles.imbalance"));
}

TEST(BaselineRules, DirectionsComeFromTheLastPart) {
  for (const char* lower : {"a.tiles.imbalance", "a.elements.spread", "a.tiles.idle_fraction", "zigzag.time_us",
                            "zigzag.attention_comm_us", "zigzag.kv_memory_bytes", "x.cv"}) {
    EXPECT_EQ(better_direction(lower), Better::lower) << lower;
  }
  for (const char* higher : {"a.tiles.speedup", "a.tiles.lockstep_speedup_vs_contiguous", "tms", "tms_tiles_zigzag",
                             "zigzag.speedup_vs_contiguous", "zigzag.mfu", "zigzag.tokens_per_second"}) {
    EXPECT_EQ(better_direction(higher), Better::higher) << higher;
  }
  EXPECT_EQ(better_direction("zigzag.rounds"), Better::neither);
}

TEST(BaselineRules, LimitsParseAndRefuseWhatIsNotOne) {
  const MetricLimit at_most = parse_metric_limit("zigzag.*.imbalance<=1.10", "--limit");
  EXPECT_EQ(at_most.pattern, "zigzag.*.imbalance");
  EXPECT_TRUE(at_most.at_most);
  EXPECT_DOUBLE_EQ(at_most.value, 1.10);
  EXPECT_EQ(at_most.to_string(), "zigzag.*.imbalance<=1.1");
  const MetricLimit at_least = parse_metric_limit("speedup>=7.5", "--limit");
  EXPECT_FALSE(at_least.at_most);
  EXPECT_DOUBLE_EQ(at_least.value, 7.5);
  for (const char* bad : {"imbalance=1.1", "imbalance<1.1", "<=1.1", "imbalance<=", "imbalance<=x"}) {
    EXPECT_THROW((void)parse_metric_limit(bad, "--limit"), InputError) << bad;
  }
}

TEST(BaselineRules, TolerancesParseDefaultAndPerPattern) {
  CheckRules rules;
  parse_tolerances({"0.05", "spread=0.5", "tiles.*=0"}, rules, "--tolerance");
  EXPECT_DOUBLE_EQ(rules.tolerance, 0.05);
  ASSERT_EQ(rules.tolerances.size(), 2u);
  EXPECT_EQ(rules.tolerances[0].first, "spread");
  EXPECT_DOUBLE_EQ(rules.tolerances[1].second, 0.0);
  for (const char* bad : {"-1", "spread=-0.1", "=0.5", "spread=", "x"}) {
    CheckRules r;
    EXPECT_THROW(parse_tolerances({bad}, r, "--tolerance"), InputError) << bad;
  }
  CheckRules twice;
  EXPECT_THROW(parse_tolerances({"0.01", "0.02"}, twice, "--tolerance"), InputError);
}

TEST(BaselineRules, JudgeByLimitThenToleranceThenDirection) {
  CheckRules rules;
  rules.tolerance = 0.01;
  rules.tolerances = {{"spread", 0.5}};
  rules.limits = {parse_metric_limit("zigzag.tiles.imbalance<=1.10", "--limit")};
  std::string rule;
  // Within 1 %, either way.
  EXPECT_EQ(judge(rules, "a.tiles.imbalance", 2.0, 2.015, rule), Outcome::within);
  EXPECT_EQ(rule, "tolerance 0.01");
  // Beyond it: the good way is an improvement, the bad way a move; no direction: a move.
  EXPECT_EQ(judge(rules, "a.tiles.imbalance", 2.0, 1.5, rule), Outcome::improved);
  EXPECT_EQ(judge(rules, "a.tiles.imbalance", 2.0, 2.5, rule), Outcome::moved);
  EXPECT_EQ(judge(rules, "a.tiles.speedup", 2.0, 2.5, rule), Outcome::improved);
  EXPECT_EQ(judge(rules, "a.tiles.speedup", 2.0, 1.5, rule), Outcome::moved);
  EXPECT_EQ(judge(rules, "a.rounds", 2.0, 1.5, rule), Outcome::moved);
  // A per-pattern tolerance: a spread 40 % worse passes at 0.5.
  EXPECT_EQ(judge(rules, "a.elements.spread", 0.021, 0.0294, rule), Outcome::within);
  EXPECT_EQ(rule, "tolerance 0.5");
  // A limit replaces the tolerance: far from the recorded value yet within the limit passes.
  EXPECT_EQ(judge(rules, "zigzag.tiles.imbalance", 1.0, 1.09, rule), Outcome::within_limit);
  EXPECT_EQ(rule, "zigzag.tiles.imbalance<=1.1");
  EXPECT_EQ(judge(rules, "zigzag.tiles.imbalance", 1.0, 1.11, rule), Outcome::over_limit);
  // A metric gone is a failure under either rule.
  EXPECT_EQ(judge(rules, "a.tiles.imbalance", 2.0, std::nullopt, rule), Outcome::missing);
  EXPECT_EQ(judge(rules, "zigzag.tiles.imbalance", 1.0, std::nullopt, rule), Outcome::missing);
  for (Outcome o : {Outcome::moved, Outcome::missing, Outcome::over_limit}) EXPECT_TRUE(failed(o));
  for (Outcome o : {Outcome::within, Outcome::improved, Outcome::within_limit}) EXPECT_FALSE(failed(o));
}

// Every matching limit applies: two make a band, and a value outside either side fails with the
// side it broke; inside, the rule names both.
TEST(BaselineRules, EveryMatchingLimitApplies) {
  CheckRules rules;
  rules.limits = {parse_metric_limit("imbalance>=1", "--limit"), parse_metric_limit("imbalance<=1.2", "--limit")};
  std::string rule;
  EXPECT_EQ(judge(rules, "zigzag.tiles.imbalance", 1.0, 1.1, rule), Outcome::within_limit);
  EXPECT_EQ(rule, "imbalance>=1,imbalance<=1.2");
  EXPECT_EQ(judge(rules, "zigzag.tiles.imbalance", 1.0, 1.3, rule), Outcome::over_limit);
  EXPECT_EQ(rule, "imbalance<=1.2");
  EXPECT_EQ(judge(rules, "zigzag.tiles.imbalance", 1.0, 0.9, rule), Outcome::over_limit);
  EXPECT_EQ(rule, "imbalance>=1");
  // Contradictory limits cannot both hold: every value fails one.
  rules.limits = {parse_metric_limit("imbalance<=1", "--limit"), parse_metric_limit("imbalance>=2", "--limit")};
  for (double now : {0.5, 1.0, 1.5, 2.0, 3.0}) EXPECT_EQ(judge(rules, "a.imbalance", 1.0, now, rule), Outcome::over_limit) << now;
}

TEST(BaselineRules, MetricsSelection) {
  CheckRules rules;
  EXPECT_TRUE(selected(rules, "anything"));
  rules.metrics = {"tiles.imbalance", "tms*"};
  EXPECT_TRUE(selected(rules, "zigzag.tiles.imbalance"));
  EXPECT_TRUE(selected(rules, "tms_tiles"));
  EXPECT_FALSE(selected(rules, "zigzag.elements.imbalance"));
}

}  // namespace
}  // namespace stripesim::model
