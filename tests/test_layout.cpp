#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <utility>

#include "stripesim/model/io/input_error.hpp"
#include "stripesim/model/io/json_file.hpp"
#include "stripesim/model/work/layout.hpp"
#include "stripesim/model/work/layout_spec.hpp"
#include "temp_path.hpp"

namespace stripesim::model {
namespace {

// Every local slot maps to a distinct position, locate() inverts position(), and the runs
// reproduce the positions in local order.
void expect_bijection(const Layout& layout) {
  const Count n = layout.seq_len();
  const Count c = layout.block_size();
  std::vector<int> seen(static_cast<size_t>(n), 0);
  for (Count d = 0; d < layout.devices(); ++d) {
    const auto runs = layout.runs(d);
    Count expected_local = 0;
    for (const Run& run : runs) {
      ASSERT_EQ(run.local_begin, expected_local) << layout.name();
      ASSERT_GE(run.stride, 1);
      for (Count i = 0; i < run.length; ++i) {
        ASSERT_EQ(run.at(i), layout.position(d, run.local_begin + i)) << layout.name() << " d=" << d;
      }
      expected_local += run.length;
    }
    ASSERT_EQ(expected_local, c) << layout.name();
    for (Count l = 0; l < c; ++l) {
      const Position p = layout.position(d, l);
      ASSERT_GE(p, 0);
      ASSERT_LT(p, n);
      ++seen[static_cast<size_t>(p)];
      ASSERT_EQ(layout.locate(p), (Placement{d, l})) << layout.name() << " p=" << p;
    }
  }
  for (Count p = 0; p < n; ++p) ASSERT_EQ(seen[static_cast<size_t>(p)], 1) << layout.name() << " p=" << p;
}

TEST(Layout, DefinitionsFromTheDesign) {
  const Count n = 32, N = 4, c = 8;
  const auto contiguous = Layout::contiguous(n, N);
  const auto striped = Layout::striped(n, N);
  const auto zigzag = Layout::zigzag(n, N);
  const auto block = Layout::block_striped(n, N, 2);
  for (Position p = 0; p < n; ++p) {
    EXPECT_EQ(contiguous.locate(p), (Placement{p / c, p % c}));
    EXPECT_EQ(striped.locate(p), (Placement{p % N, p / N}));
    // zigzag: chunk g of h = c/2 goes to g if g < N else 2N-1-g; early chunk first.
    const Count h = c / 2, g = p / h;
    const Placement z = g < N ? Placement{g, p % h} : Placement{2 * N - 1 - g, h + p % h};
    EXPECT_EQ(zigzag.locate(p), z);
    // block-striped s = 2: stripe j = p / 2 dealt round-robin.
    const Count j = p / 2;
    EXPECT_EQ(block.locate(p), (Placement{j % N, j / N * 2 + p % 2}));
  }
  // Device 0 of zigzag holds the first and the last chunk (the blog's description).
  EXPECT_EQ(zigzag.position(0, 0), 0);
  EXPECT_EQ(zigzag.position(0, c - 1), n - 1);
}

TEST(Layout, EveryLayoutIsABijection) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    const Count N = std::uniform_int_distribution<Count>(1, 9)(rng);
    const Count h = std::uniform_int_distribution<Count>(1, 12)(rng);
    const Count n = 2 * N * h;
    expect_bijection(Layout::contiguous(n, N));
    expect_bijection(Layout::striped(n, N));
    expect_bijection(Layout::zigzag(n, N));
    for (Count s = 1; s <= n / N; ++s) {
      if ((n / N) % s == 0) expect_bijection(Layout::block_striped(n, N, s));
    }
    std::vector<Position> order(static_cast<size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng);
    std::vector<std::vector<Position>> blocks(static_cast<size_t>(N));
    for (Count i = 0; i < n; ++i) blocks[static_cast<size_t>(i / (n / N))].push_back(order[static_cast<size_t>(i)]);
    expect_bijection(Layout::permutation(blocks, n, "random"));
  }
}

TEST(Layout, BlockStripedExtremesAreStripedAndContiguous) {
  const Count n = 48, N = 4;
  const auto s1 = Layout::block_striped(n, N, 1);
  const auto sc = Layout::block_striped(n, N, n / N);
  for (Position p = 0; p < n; ++p) {
    EXPECT_EQ(s1.locate(p), Layout::striped(n, N).locate(p));
    EXPECT_EQ(sc.locate(p), Layout::contiguous(n, N).locate(p));
  }
  EXPECT_EQ(s1.name(), "block-striped:1");
}

TEST(Layout, StructuredLayoutsHaveFewRuns) {
  EXPECT_EQ(Layout::contiguous(1 << 20, 64).runs(5).size(), 1u);
  EXPECT_EQ(Layout::striped(1 << 20, 64).runs(5).size(), 1u);
  EXPECT_EQ(Layout::zigzag(1 << 20, 64).runs(5).size(), 2u);
  // A permutation that happens to be striped is recognised as one stride-N run per device.
  std::vector<std::vector<Position>> blocks(4);
  for (Position p = 0; p < 64; ++p) blocks[static_cast<size_t>(p % 4)].push_back(p);
  const auto runs = Layout::permutation(blocks, 64, "striped").runs(2);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].first, 2);
  EXPECT_EQ(runs[0].stride, 4);
  EXPECT_EQ(runs[0].length, 16);
}

// A length that does not divide is answered with the multiples on either side and the padding
// that reaches the next one.
TEST(Layout, NamesTheNearestLengthsThatDivide) {
  const auto message = [](auto make) -> std::string {
    try {
      (void)make();
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(message([] { return Layout::contiguous(1000, 3); }),
            "--seq-len 1000: layout contiguous needs it divisible by N = 3; the nearest such lengths are 999 and 1002 "
            "(pad 2 tokens to reach 1002)");
  EXPECT_EQ(message([] { return Layout::zigzag(1001, 8); }),
            "--seq-len 1001: layout zigzag needs it divisible by 2N = 16; the nearest such lengths are 992 and 1008 "
            "(pad 7 tokens to reach 1008)");
  EXPECT_EQ(message([] { return Layout::zigzag(31, 8); }),
            "--seq-len 31: layout zigzag needs it divisible by 2N = 16; the nearest such lengths are 16 and 32 "
            "(pad 1 token to reach 32)");
  // Below the divisor there is no shorter length; above 2^31 no longer one.
  EXPECT_EQ(message([] { return Layout::zigzag(5, 4); }),
            "--seq-len 5: layout zigzag needs it divisible by 2N = 8; the nearest such length is 8 (pad 3 tokens to reach 8)");
  EXPECT_EQ(message([] { return Layout::contiguous(kMaxSeqLen - 1, 3); }),
            "--seq-len 2147483647: layout contiguous needs it divisible by N = 3; the nearest such length is 2147483646");
  EXPECT_EQ(message([] { return Layout::block_striped(96, 4, 5); }),
            "--seq-len 96: layout block-striped:5 needs it divisible by s*N = 20; the nearest such lengths are 80 and "
            "100 (pad 4 tokens to reach 100)");
}

TEST(Layout, RejectsSizesThatDoNotDivide) {
  EXPECT_THROW((void)Layout::contiguous(10, 4), InputError);
  EXPECT_THROW((void)Layout::striped(10, 4), InputError);
  EXPECT_THROW((void)Layout::zigzag(12, 4), InputError);  // divisible by N, not by 2N
  EXPECT_NO_THROW((void)Layout::zigzag(16, 4));
  EXPECT_THROW((void)Layout::block_striped(24, 4, 4), InputError);  // c = 6 not divisible by 4
  EXPECT_THROW((void)Layout::block_striped(32, 4, 0), InputError);
  EXPECT_THROW((void)Layout::block_striped(32, 4, 16), InputError);  // s > c
  EXPECT_THROW((void)Layout::contiguous(16, 0), InputError);
  EXPECT_THROW((void)Layout::contiguous(0, 4), InputError);
  EXPECT_THROW((void)Layout::contiguous(kMaxSeqLen * 2, 4), InputError);
  EXPECT_THROW((void)Layout::contiguous(kMaxDevices * 2, kMaxDevices * 2), InputError);
  EXPECT_NO_THROW((void)Layout::striped(kMaxSeqLen, 8));  // structured layouts never materialise positions
}

TEST(Layout, RejectsPermutationsThatAreNotBijections) {
  EXPECT_THROW((void)Layout::permutation({{0, 1}, {1, 3}}, 4, "dup"), InputError);
  EXPECT_THROW((void)Layout::permutation({{0, 1}, {2, 4}}, 4, "range"), InputError);
  EXPECT_THROW((void)Layout::permutation({{0, 1, 2}, {3}}, 4, "sizes"), InputError);
  EXPECT_THROW((void)Layout::permutation({{0, -1}, {2, 3}}, 4, "negative"), InputError);
  EXPECT_THROW((void)Layout::permutation({}, 4, "empty"), InputError);
}

class LayoutSpecFiles : public ::testing::Test {
 protected:
  std::string write(const std::string& name, const std::string& text) {
    const auto path = temp_path("stripesim_test_" + name);
    std::ofstream(path) << text;
    paths_.push_back(path);
    return path.string();
  }
  void TearDown() override {
    for (const auto& p : paths_) std::filesystem::remove(p);
  }
  std::vector<std::filesystem::path> paths_;
};

TEST_F(LayoutSpecFiles, ParsesEveryKind) {
  EXPECT_EQ(parse_layout("contiguous", 64, 4).kind(), LayoutKind::contiguous);
  EXPECT_EQ(parse_layout("striped", 64, 4).kind(), LayoutKind::striped);
  EXPECT_EQ(parse_layout("zigzag", 64, 4).kind(), LayoutKind::zigzag);
  EXPECT_EQ(parse_layout("block-striped:4", 64, 4).stripe(), 4);
  const std::string file = write("perm.json", R"({"blocks": [[3, 0], [1, 2]]})");
  const Layout perm = parse_layout("permutation:" + file, 4, 2);
  EXPECT_EQ(perm.position(0, 0), 3);
  EXPECT_EQ(perm.locate(2), (Placement{1, 1}));
  EXPECT_EQ(perm.name(), "permutation:" + file);
  const std::string bare = write("bare.json", "[[0, 1], [2, 3]]");
  EXPECT_EQ(parse_layout("permutation:" + bare, 4, 2).locate(3), (Placement{1, 1}));
}

TEST_F(LayoutSpecFiles, RejectsBadSpecsAndFiles) {
  EXPECT_THROW((void)parse_layout("diagonal", 64, 4), InputError);
  EXPECT_THROW((void)parse_layout("block-striped:", 64, 4), InputError);
  EXPECT_THROW((void)parse_layout("block-striped:x", 64, 4), InputError);
  EXPECT_THROW((void)parse_layout("permutation:", 64, 4), InputError);
  EXPECT_THROW((void)parse_layout("permutation:/nonexistent/perm.json", 4, 2), InputError);
  EXPECT_THROW((void)parse_layout("permutation:" + write("bad.json", "{\"blocks\": [[0, 1], "), 4, 2), InputError);
  EXPECT_THROW((void)parse_layout("permutation:" + write("obj.json", "{\"perm\": []}"), 4, 2), InputError);
  EXPECT_THROW((void)parse_layout("permutation:" + write("str.json", "[[0, \"1\"], [2, 3]]"), 4, 2), InputError);
  EXPECT_THROW((void)parse_layout("permutation:" + write("ndev.json", "[[0, 1, 2, 3]]"), 4, 2), InputError);
  EXPECT_THROW((void)parse_layout("permutation:" + write("dup.json", "[[0, 1], [1, 3]]"), 4, 2), InputError);
}

// A spec's kind is read from its name alone, and exactly the specs it refuses are the ones the
// layout parser calls unknown; what is drawn from a small example is the structured kinds only.
TEST(LayoutKinds, KindOfASpecAgreesWithTheParser) {
  const std::pair<const char*, std::optional<LayoutKind>> specs[] = {
      {"contiguous", LayoutKind::contiguous},    {"Striped", LayoutKind::striped},
      {"ZIGZAG", LayoutKind::zigzag},            {"block-striped:4", LayoutKind::block_striped},
      {"block-striped:", LayoutKind::block_striped},  // a bad number, not an unknown layout
      {"permutation:p.json", LayoutKind::permutation}, {"doc-zigzag", LayoutKind::doc_zigzag},
      {"doc-striped", LayoutKind::doc_striped},  {"ptrr", LayoutKind::ptrr},
      {"ptrr:64", LayoutKind::ptrr},             {"balanced", LayoutKind::balanced},
      {"balanced:0", LayoutKind::balanced},      {"striped:3", std::nullopt},
      {"block-striped", std::nullopt},           {"permutation:", std::nullopt},
      {"zigzag:2", std::nullopt},                {"diagonal", std::nullopt},
      {"", std::nullopt},                        {"doc-zigzag:1", std::nullopt},
  };
  for (const auto& [spec, kind] : specs) {
    EXPECT_EQ(layout_kind_of(spec), kind) << spec;
    std::string message = "planned";
    try {
      (void)plan_layout(spec, 64, 4);
    } catch (const InputError& e) {
      message = e.what();
    }
    // No kind: an unknown name, or a known one with an argument it does not take (or without
    // the one it needs), answered with its syntax.
    const bool refused_as_spec = message.find("unknown layout") != std::string::npos ||
                                 message.find("takes no argument)") != std::string::npos ||
                                 message.find("with its argument)") != std::string::npos;
    EXPECT_EQ(refused_as_spec, !kind.has_value()) << spec << ": " << message;
  }
  const auto message_of = [](const char* spec) {
    try {
      (void)plan_layout(spec, 64, 4);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("planned");
  };
  EXPECT_EQ(message_of("block-striped"), "--layouts 'block-striped': expected block-striped:S (with its argument)");
  EXPECT_EQ(message_of("Zigzag:2"), "--layouts 'Zigzag:2': expected zigzag (it takes no argument)");
  std::set<LayoutKind> same_shape;
  for (const auto& [spec, kind] : specs) {
    if (kind && same_shape_at_every_size(*kind)) same_shape.insert(*kind);
  }
  EXPECT_EQ(same_shape, (std::set<LayoutKind>{LayoutKind::contiguous, LayoutKind::striped, LayoutKind::zigzag,
                                              LayoutKind::block_striped}));
}

TEST_F(LayoutSpecFiles, PermutationFileFieldsAreCheckedUnknownOnesRejected) {
  auto message = [&](const std::string& name, const std::string& text, Count n, Count N) {
    try {
      (void)load_permutation_file(write(name, text), n, N);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  const std::string blocks = R"("blocks": [[0, 3], [1, 2]])";
  EXPECT_EQ(message("plain.json", "{" + blocks + "}", 4, 2), "accepted");
  EXPECT_EQ(message("described.json",
                    R"({"description": "x", "schema": "stripesim.layout/1", "layout": "striped", "seq_len": 4, "devices": 2,
                        "block_size": 2, "tile": {"query": 2, "key": 2}, "tiling": "fixed",
                        "mask": {"spec": "causal", "kind": "causal"}, )" + blocks + "}",
                    4, 2),
            "accepted");
  EXPECT_NE(message("typo.json", R"({"seqlen": 4, )" + blocks + "}", 4, 2).find("unknown field \"seqlen\""),
            std::string::npos);
  EXPECT_NE(message("schema.json", R"({"schema": "stripesim.analyze/1", )" + blocks + "}", 4, 2)
                .find("field \"schema\": expected \"stripesim.layout/1\", got \"stripesim.analyze/1\""),
            std::string::npos);
  EXPECT_NE(message("seq_len.json", R"({"seq_len": 8, )" + blocks + "}", 4, 2)
                .find("field \"seq_len\": the layout covers 8 tokens but the sequence has 4"),
            std::string::npos);
  EXPECT_NE(message("devices.json", R"({"devices": 4, )" + blocks + "}", 4, 2)
                .find("field \"devices\": the layout is for 4 devices but the ring has N = 2"),
            std::string::npos);
  EXPECT_NE(message("block.json", R"({"block_size": 1, )" + blocks + "}", 4, 2).find("field \"block_size\""),
            std::string::npos);
  // A bare array has no fields to check.
  EXPECT_EQ(message("bare.json", "[[0, 3], [1, 2]]", 4, 2), "accepted");
}

TEST(SplitList, SplitsAndRejectsEmptyItems) {
  EXPECT_EQ(split_list("a,b,c", "x"), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_THROW((void)split_list("a,,b", "x"), InputError);
  EXPECT_THROW((void)split_list("", "x"), InputError);
  EXPECT_THROW((void)split_list("a,", "x"), InputError);
}

// A permutation file is one layout however its path is spelled, and two files are two layouts
// even where neither exists yet (each reported by name when read).
TEST(LayoutIdentity, OneFileHoweverSpelledTwoFilesApart) {
  const std::filesystem::path dir = fresh_temp_dir("layout_identity");
  const std::filesystem::path file = dir / "perm.json";
  std::ofstream(file) << "{}";
  std::filesystem::create_symlink(file, dir / "link.json");
  const std::string plain = "permutation:" + file.string();
  EXPECT_EQ(layout_identity(plain), layout_identity("PERMUTATION:" + (dir / "." / "perm.json").string()));
  EXPECT_EQ(layout_identity(plain), layout_identity("permutation:" + (dir / "link.json").string()));
  EXPECT_EQ(layout_identity(plain), layout_identity("permutation:" + (dir / "sub" / ".." / "perm.json").string()));
  EXPECT_NE(layout_identity("permutation:" + (dir / "a.json").string()),
            layout_identity("permutation:" + (dir / "b.json").string()));
  EXPECT_EQ(file_identity((dir / "missing" / ".." / "a.json").string()), std::filesystem::canonical(dir) / "a.json");
  EXPECT_EQ(layout_identity("Zigzag"), "zigzag");
}

}  // namespace
}  // namespace stripesim::model
