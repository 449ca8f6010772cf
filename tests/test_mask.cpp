#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "brute_force.hpp"
#include "stripesim/model/io/input_error.hpp"
#include "stripesim/model/work/mask.hpp"

namespace stripesim::model {
namespace {

TEST(Mask, ParsesEveryKind) {
  EXPECT_EQ(parse_mask("causal", 100).kind(), MaskKind::causal);
  EXPECT_EQ(parse_mask("bidirectional", 100).kind(), MaskKind::bidirectional);
  const Mask w = parse_mask("window:4k", 1 << 20);
  EXPECT_EQ(w.kind(), MaskKind::window);
  EXPECT_EQ(w.window_width(), 4096);
  EXPECT_EQ(w.name(), "window:4096");
  const Mask docs = parse_mask("documents:30,50,20", 100);
  EXPECT_EQ(docs.document_lengths(), (std::vector<Count>{30, 50, 20}));
  EXPECT_EQ(docs.document_starts(), (std::vector<Position>{0, 30, 80, 100}));
  EXPECT_EQ(parse_mask("documents:1k,3k", 4096).document_lengths(), (std::vector<Count>{1024, 3072}));
}

TEST(Mask, IntervalsMatchTheDefinitions) {
  const Count n = 60;
  for (const Mask& mask : {Mask::causal(n), Mask::bidirectional(n), Mask::window(n, 7), Mask::window(n, 1000),
                           Mask::documents(n, {10, 1, 29, 20})}) {
    for (Position q = 0; q < n; ++q) {
      Position previous_lo = -1, previous_hi = -1;
      for (Position k = 0; k < n; ++k) {
        EXPECT_EQ(mask.allows(q, k), testing::reference_allows(mask, q, k)) << mask.name() << " " << q << "," << k;
      }
      // The interval ends never move left as q grows: the work model's merges depend on it.
      EXPECT_GE(mask.lowest_key(q), previous_lo);
      EXPECT_GE(mask.highest_key(q), previous_hi);
      previous_lo = mask.lowest_key(q);
      previous_hi = mask.highest_key(q);
      EXPECT_TRUE(mask.allows(q, q)) << "every query sees itself";
    }
  }
}

TEST(Mask, RejectsBadSpecs) {
  for (const char* bad : {"", "causal2", "window", "window:", "window:0", "window:-3", "window:abc", "documents",
                          "documents:", "documents:50,40", "documents:50,60", "documents:0,100", "documents:50,,50",
                          "sliding:4", "documents:/nonexistent/lengths.txt"}) {
    EXPECT_THROW((void)parse_mask(bad, 100), InputError) << bad;
  }
}

TEST(Mask, DocumentsFromFiles) {
  const auto dir = std::filesystem::temp_directory_path();
  const auto lines = dir / "stripesim_test_docs.txt";
  const auto json = dir / "stripesim_test_docs.json";
  const auto bad = dir / "stripesim_test_docs_bad.txt";
  std::ofstream(lines) << "# lengths\n30\n\n50\n20\n";
  std::ofstream(json) << "[30, 50, 20]";
  std::ofstream(bad) << "30\nfifty\n20\n";
  EXPECT_EQ(parse_mask("documents:" + lines.string(), 100).document_lengths(), (std::vector<Count>{30, 50, 20}));
  EXPECT_EQ(parse_mask("documents:" + json.string(), 100).document_lengths(), (std::vector<Count>{30, 50, 20}));
  try {
    (void)parse_mask("documents:" + bad.string(), 100);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("line 2"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)parse_mask("documents:" + json.string(), 99), InputError);
  std::filesystem::remove(lines);
  std::filesystem::remove(json);
  std::filesystem::remove(bad);
}

}  // namespace
}  // namespace stripesim::model
