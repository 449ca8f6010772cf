#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "brute_force.hpp"
#include "stripesim/model/io/input_error.hpp"
#include "stripesim/model/work/mask.hpp"
#include "stripesim/model/work/mask_identity.hpp"
#include "stripesim/model/workflows/analysis.hpp"
#include "temp_path.hpp"

namespace stripesim::model {
namespace {

TEST(Mask, ParsesEveryKind) {
  EXPECT_EQ(parse_mask("causal", 100).kind(), MaskKind::causal);
  EXPECT_EQ(parse_mask("bidirectional", 100).kind(), MaskKind::bidirectional);
  const Mask w = parse_mask("window:4k", 1 << 20);
  EXPECT_EQ(w.kind(), MaskKind::window);
  EXPECT_EQ(w.window_width(), 4096);
  EXPECT_EQ(w.name(), "window:4096");
  // Prefix-LM: the first P tokens see each other both ways, the rest causally.
  const Mask prefix = parse_mask("prefix:1k", 4096);
  EXPECT_EQ(prefix.kind(), MaskKind::prefix);
  EXPECT_EQ(prefix.prefix_length(), 1024);
  EXPECT_EQ(prefix.name(), "prefix:1024");
  EXPECT_TRUE(prefix.allows(0, 1023));
  EXPECT_FALSE(prefix.allows(0, 1024));
  EXPECT_TRUE(prefix.allows(1024, 1024));
  EXPECT_FALSE(prefix.allows(1024, 1025));
  const Mask docs = parse_mask("documents:30,50,20", 100);
  EXPECT_EQ(docs.document_lengths(), (std::vector<Count>{30, 50, 20}));
  EXPECT_EQ(docs.document_starts(), (std::vector<Position>{0, 30, 80, 100}));
  EXPECT_EQ(parse_mask("documents:1k,3k", 4096).document_lengths(), (std::vector<Count>{1024, 3072}));
  EXPECT_FALSE(docs.windowed());
  // Any documents spec may end in :window=W: a sliding window inside every document.
  const Mask windowed = parse_mask("documents:30,50,20:window=8", 100);
  EXPECT_EQ(windowed.kind(), MaskKind::documents);
  EXPECT_EQ(windowed.document_lengths(), (std::vector<Count>{30, 50, 20}));
  EXPECT_EQ(windowed.window_width(), 8);
  EXPECT_EQ(windowed.lowest_key(29), 22);  // the window binds
  EXPECT_EQ(windowed.lowest_key(33), 30);  // the document's start binds
  EXPECT_EQ(parse_mask("documents:uniform:1k-1k:window=2k", 4096).window_width(), 2048);
  EXPECT_EQ(parse_mask("documents:fixed:1k:window=100", 4096).document_lengths(), (std::vector<Count>(4, 1024)));
  // V+P: V tokens, then P padding tokens that attend to nothing and that nothing attends to.
  const Mask padded = parse_mask("documents:30+2,48,18+2:window=8", 100);
  EXPECT_EQ(padded.document_lengths(), (std::vector<Count>{32, 48, 20}));
  EXPECT_EQ(padded.document_padding(), (std::vector<Count>{2, 0, 2}));
  EXPECT_TRUE(padded.padded());
  EXPECT_FALSE(windowed.padded());
  EXPECT_TRUE(padded.allows(29, 22));
  EXPECT_FALSE(padded.allows(30, 30));  // padding sees nothing
  EXPECT_FALSE(padded.allows(31, 29));
  EXPECT_EQ(padded.lowest_key(31), 32);
  EXPECT_TRUE(padded.allows(32, 32));  // the next document starts after the padding
}

TEST(Mask, JsonNamesTheKindAloneAndItsParametersApart) {
  const nlohmann::ordered_json window = mask_to_json(parse_mask("window:4k", 1 << 20), "window:4k");
  EXPECT_EQ(window.at("spec"), "window:4k");
  EXPECT_EQ(window.at("kind"), "window");
  EXPECT_EQ(window.at("window"), 4096);
  const nlohmann::ordered_json prefix = mask_to_json(parse_mask("prefix:1k", 4096), "prefix:1k");
  EXPECT_EQ(prefix.at("kind"), "prefix");
  EXPECT_EQ(prefix.at("prefix"), 1024);
  const nlohmann::ordered_json docs = mask_to_json(parse_mask("documents:30,50,20:window=8", 100), "d");
  EXPECT_EQ(docs.at("kind"), "documents");
  EXPECT_EQ(docs.at("window"), 8);
  EXPECT_EQ(mask_to_json(parse_mask("causal", 100), "causal").at("kind"), "causal");
}

TEST(Mask, IntervalsMatchTheDefinitions) {
  const Count n = 60;
  for (const Mask& mask : {Mask::causal(n), Mask::bidirectional(n), Mask::window(n, 7), Mask::window(n, 1000),
                           Mask::documents(n, {10, 1, 29, 20}), Mask::documents(n, {10, 1, 29, 20}, 6),
                           Mask::documents(n, {10, 1, 29, 20}, 1), Mask::documents(n, {10, 1, 29, 20}, 0, {3, 0, 28, 1}),
                           Mask::documents(n, {10, 1, 29, 20}, 5, {9, 0, 4, 19}), Mask::prefix(n, 1), Mask::prefix(n, 17),
                           Mask::prefix(n, n)}) {
    Position previous_lo = -1, previous_hi = -1;
    for (Position q = 0; q < n; ++q) {
      for (Position k = 0; k < n; ++k) {
        EXPECT_EQ(mask.allows(q, k), testing::reference_allows(mask, q, k)) << mask.name() << " " << q << "," << k;
      }
      // The interval ends never move left as q grows: the work model's merges depend on it.
      EXPECT_GE(mask.lowest_key(q), previous_lo) << mask.name() << " " << q;
      EXPECT_GE(mask.highest_key(q), previous_hi) << mask.name() << " " << q;
      previous_lo = mask.lowest_key(q);
      previous_hi = mask.highest_key(q);
      const bool padding = mask.kind() == MaskKind::documents && q >= mask.padding_start(mask.document_of(q));
      EXPECT_EQ(mask.allows(q, q), !padding) << "every query but padding sees itself";
    }
  }
}

// is_causal() against the definition: the mask allows exactly the pairs k <= q, checked pair by
// pair (reference_is_causal, on the masks' definitions in brute_force.hpp).
TEST(Mask, IsCausalExactlyWhenItAllowsCausalsPairs) {
  const Count n = 12;
  std::vector<Mask> masks{Mask::causal(n), Mask::bidirectional(n), Mask::bidirectional(1)};
  for (Count w = 1; w <= 2 * n; ++w) masks.push_back(Mask::window(n, w));
  for (Count p = 1; p <= n; ++p) masks.push_back(Mask::prefix(n, p));
  for (Count w : {Count{0}, Count{3}, n - 1, n, 2 * n}) {
    masks.push_back(Mask::documents(n, {n}, w));
    masks.push_back(Mask::documents(n, {4, 8}, w));
  }
  masks.push_back(Mask::documents(n, {n}, 0, {2}));
  masks.push_back(Mask::documents(n, {4, 8}, 0, {0, 3}));
  int causal_count = 0;
  for (const Mask& m : masks) {
    const bool same = testing::reference_is_causal(m);
    EXPECT_EQ(m.is_causal(), same) << m.name() << " window " << m.window_width();
    causal_count += same ? 1 : 0;
  }
  // causal, bidirectional over one token, window 12..24, prefix:1, one document without padding
  // (no window, or one of 12 or 24)
  EXPECT_EQ(causal_count, 1 + 1 + 13 + 1 + 3);
}

TEST(Mask, RejectsBadSpecs) {
  for (const char* bad : {"", "causal2", "window", "window:", "window:0", "window:-3", "window:abc", "documents",
                          "documents:", "documents:50,40", "documents:50,60", "documents:0,100", "documents:50,,50",
                          "sliding:4", "documents:/nonexistent/lengths.txt", "documents:50,50:window=0",
                          "documents:50,50:window=-2", "documents:50,50:window=", "documents:50,50:window=x",
                          "documents:window=4", "documents::window=4", "documents:50,40:window=4", "documents:50+60",
                          "documents:0+50,50", "documents:40+,60", "documents:+10,90", "documents:40+10+10,40",
                          "prefix", "prefix:", "prefix:0", "prefix:-3", "prefix:101", "prefix:x"}) {
    EXPECT_THROW((void)parse_mask(bad, 100), InputError) << bad;
  }
}

TEST(Mask, DocumentsFromFiles) {
  const auto dir = temp_dir();
  const auto lines = dir / "stripesim_test_docs.txt";
  const auto json = dir / "stripesim_test_docs.json";
  const auto bad = dir / "stripesim_test_docs_bad.txt";
  std::ofstream(lines) << "# lengths\n30\n\n50  # the long one\n20\n";
  std::ofstream(json) << "[30, 50, 20]";
  std::ofstream(bad) << "30\nfifty\n20\n";
  EXPECT_EQ(parse_mask("documents:" + lines.string(), 100).document_lengths(), (std::vector<Count>{30, 50, 20}));
  EXPECT_EQ(parse_mask("documents:" + json.string(), 100).document_lengths(), (std::vector<Count>{30, 50, 20}));
  const Mask windowed = parse_mask("documents:" + json.string() + ":window=5", 100);
  EXPECT_EQ(windowed.document_lengths(), (std::vector<Count>{30, 50, 20}));
  EXPECT_EQ(windowed.window_width(), 5);
  EXPECT_EQ(mask_file("documents:" + json.string() + ":window=5"), json.string());
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

// One mask however spelled; two masks that only agree at the lengths a sweep happens to use are two.
TEST(Mask, SameMaskIsTheMaskBuiltNotItsSpelling) {
  EXPECT_TRUE(same_mask("window:4k", "window:4096", {65536}));
  EXPECT_TRUE(same_mask("documents:fixed:4k", "documents:fixed:4096", {65536, 1001}));
  EXPECT_TRUE(same_mask("documents:lognormal:512:1.0", "documents:lognormal:512:1", {65536}));
  // At 1001 tokens both distributions draw one document, but not at a million.
  EXPECT_TRUE(parse_mask("documents:lognormal:4096:1.0", 1001) == parse_mask("documents:lognormal:32768:1.0", 1001));
  EXPECT_FALSE(same_mask("documents:lognormal:4096:1.0", "documents:lognormal:32768:1.0", {1001}));
  // Windows wider than the sequence allow the same pairs there, but are other masks.
  EXPECT_FALSE(same_mask("window:4096", "window:8192", {4096}));
  EXPECT_FALSE(same_mask("window:4k", "causal", {65536}));
  EXPECT_FALSE(same_mask("documents:lognormal:512:1.0", "documents:lognormal:512:1.0:seed=2", {65536}));
  // A list of lengths fits its own length only: judged there (not at the million tokens).
  EXPECT_TRUE(same_mask("documents:512,512", "documents:0512,512", {1024}));
  EXPECT_TRUE(same_mask("documents:512,512", "documents:fixed:512", {1024}));
  EXPECT_FALSE(same_mask("documents:512,512", "documents:256,768", {1024}));
  EXPECT_FALSE(same_mask("documents:512,512", "documents:512,512:window=256", {1024}));
  // A length that refuses either spec makes them none (its error comes where the mask is used).
  EXPECT_FALSE(same_mask("documents:512,512", "documents:fixed:512", {1024, 2048}));
  EXPECT_FALSE(same_mask("window:0", "window:0", {1024}));
}

}  // namespace
}  // namespace stripesim::model