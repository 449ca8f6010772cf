#include <gtest/gtest.h>

#include "stripesim/model/io/name_match.hpp"

#include <filesystem>
#include <limits>

#include "stripesim/model/io/executable_path.hpp"
#include "stripesim/model/io/input_error.hpp"
#include "stripesim/model/io/size_parse.hpp"
#include "stripesim/model/work/tile_shape.hpp"
#include "stripesim/model/workflows/mesh.hpp"

namespace stripesim::model {
namespace {

TEST(ParseCount, PlainAndSuffixed) {
  EXPECT_EQ(parse_count("262144", "n"), 262144);
  EXPECT_EQ(parse_count("256k", "n"), 262144);
  EXPECT_EQ(parse_count("256K", "n"), 262144);
  EXPECT_EQ(parse_count("1M", "n"), 1048576);
  EXPECT_EQ(parse_count("8M", "n"), 8388608);
  EXPECT_EQ(parse_count("2G", "n"), Count{1} << 31);
  EXPECT_EQ(parse_count("0", "n"), 0);
}

// The way back: the largest suffix that divides, which parse_count reads as the same count.
TEST(CountWithSuffix, LargestExactSuffixAndBackAgain) {
  EXPECT_EQ(count_with_suffix(262144), "256k");
  EXPECT_EQ(count_with_suffix(32768), "32k");
  EXPECT_EQ(count_with_suffix(1048576), "1M");
  EXPECT_EQ(count_with_suffix(Count{3} << 30), "3G");
  EXPECT_EQ(count_with_suffix(1536), "1536");  // 1.5k: no suffix divides it
  EXPECT_EQ(count_with_suffix(3000), "3000");
  EXPECT_EQ(count_with_suffix(0), "0");
  for (const Count n : {Count{0}, Count{1}, Count{1023}, Count{1024}, Count{1025}, Count{3} << 20, (Count{1} << 62) + 1024,
                        std::numeric_limits<Count>::max()}) {
    EXPECT_EQ(parse_count(count_with_suffix(n), "n"), n) << n;
  }
}

TEST(ParseCount, RejectsWhatIsNotACount) {
  for (const char* bad : {"", "k", "-1", "+5", "12x", "1.5k", " 12", "12 ", "0x10", "1kk", "M1"}) {
    EXPECT_THROW((void)parse_count(bad, "--seq-len"), InputError) << bad;
  }
}

TEST(ParseCount, RejectsOverflow) {
  EXPECT_THROW((void)parse_count("99999999999999999999", "n"), InputError);
  EXPECT_THROW((void)parse_count("9007199254740992k", "n"), InputError);  // 2^53 * 2^10 > 2^63
  EXPECT_EQ(parse_count("9223372036854775807", "n"), INT64_MAX);
}

TEST(ParseCount, MessageNamesTheInput) {
  try {
    (void)parse_count("12x", "--seq-len");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--seq-len '12x'"), std::string::npos) << e.what();
  }
}

TEST(TileShape, Parses) {
  EXPECT_EQ(parse_tile_shape("2048x4096"), (TileShape{2048, 4096}));
  EXPECT_EQ(parse_tile_shape("2kx4k"), (TileShape{2048, 4096}));
  EXPECT_EQ(parse_tile_shape("1X1"), (TileShape{1, 1}));
  EXPECT_EQ(parse_tile_shape("128x128").to_string(), "128x128");
}

TEST(TileShape, RejectsMalformedAndZero) {
  for (const char* bad : {"", "12x", "x12", "12", "0x4", "4x0", "axb", "12x-4", "2x3x4"}) {
    EXPECT_THROW((void)parse_tile_shape(bad), InputError) << bad;
  }
}

// Every "AxB" spec is cut by one rule, so a capital X means the same in a tile, a mesh and a
// cluster (2X4 as a mesh was refused while 128X128 as a tile and cluster:2X4 were taken).
TEST(SplitProduct, CutsAtTheFirstXEitherCase) {
  using Sides = std::pair<std::string_view, std::string_view>;
  EXPECT_EQ(split_product("128x64"), (Sides{"128", "64"}));
  EXPECT_EQ(split_product("2X4"), (Sides{"2", "4"}));
  EXPECT_EQ(split_product("2x4x8"), (Sides{"2", "4x8"}));  // the second side is its caller's number to refuse
  for (const char* bad : {"", "x", "2x", "x4", "24", "2-4"}) EXPECT_FALSE(split_product(bad).has_value()) << bad;
  EXPECT_EQ(parse_mesh("2X4", "--meshes").to_string(), parse_mesh("2x4", "--meshes").to_string());
  EXPECT_EQ(parse_tile_shape("128X64").to_string(), "128x64");
  EXPECT_THROW((void)parse_mesh("2x4x8", "--meshes"), InputError);
}

TEST(TileShape, TilesCovering) {
  EXPECT_EQ(tiles_covering(4096, 2048), 2);
  EXPECT_EQ(tiles_covering(4097, 2048), 3);
  EXPECT_EQ(tiles_covering(5, 128), 1);
}

TEST(NameMatch, CaseAsideAndTheNearestNameWithinAQuarter) {
  EXPECT_TRUE(same_name("H100", "h100"));
  EXPECT_FALSE(same_name("h100", "h200x"));
  EXPECT_EQ(did_you_mean("zigzg", {"contiguous", "striped", "zigzag"}), " (did you mean 'zigzag'?)");
  EXPECT_EQ(did_you_mean("ANALYSE", {"analyze", "tms"}), " (did you mean 'analyze'?)");
  EXPECT_EQ(did_you_mean("--device", {"--devices", "--tile"}), " (did you mean '--devices'?)");
  EXPECT_EQ(did_you_mean("frobnicate", {"analyze", "tms"}), "");
  EXPECT_EQ(did_you_mean("-q", {"-h", "-n"}), "");  // one letter off a two-letter name is no evidence
  EXPECT_EQ(did_you_mean("13b", {"1b", "3b", "7b"}), "");
  EXPECT_EQ(did_you_mean("h10", {"a100", "h100", "h200"}), " (did you mean 'h100'?)");
  EXPECT_EQ(did_you_mean("x", {}), "");
  // A name cut short is offered its one completion, never a guess among several or from two letters.
  EXPECT_EQ(did_you_mean("--memory", {"--memory-gib", "--model", "--mask"}), " (did you mean '--memory-gib'?)");
  EXPECT_EQ(did_you_mean("doc", {"doc-zigzag", "doc-striped", "zigzag"}), "");
  EXPECT_EQ(did_you_mean("--me", {"--memory-gib", "--model"}), "");
  EXPECT_EQ(did_you_mean("ZIG", {"striped", "zigzag"}), " (did you mean 'zigzag'?)");
}

TEST(BesideExecutable, ResolvesAgainstTheRunningBinarysFolder) {
  // This test binary is built as build/tests/stripesim_model_tests.
  const auto self = beside_executable("stripesim_model_tests");
  ASSERT_TRUE(self.has_value());
  EXPECT_TRUE(std::filesystem::is_regular_file(*self)) << self->string();
  const auto up = beside_executable("../lib/./stripesim/x.so");
  ASSERT_TRUE(up.has_value());
  EXPECT_EQ(*up, self->parent_path().parent_path() / "lib" / "stripesim" / "x.so");  // normalised
}

}  // namespace
}  // namespace stripesim::model
