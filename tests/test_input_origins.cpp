// Errors about an input say where the user gave it: the flag by default, the field of the
// experiment file a sweep point or a file of flags took it from, or the flag a command calls it.
#include <gtest/gtest.h>

#include <set>
#include <string_view>

#include "stripesim/model/io/input_origins.hpp"
#include "stripesim/model/io/json_fields.hpp"
#include "stripesim/model/io/size_parse.hpp"
#include "stripesim/model/work/layout.hpp"
#include "stripesim/model/work/layout_spec.hpp"
#include "stripesim/model/work/mask.hpp"
#include "stripesim/model/work/tile_shape.hpp"

namespace stripesim::model {
namespace {

// The message of the InputError `work` throws.
template <typename Work>
std::string message_of(Work work) {
  try {
    work();
  } catch (const InputError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no InputError";
  return "";
}

TEST(InputOrigins, ErrorsByKindNameTheFlagThenWhereTheCallerSays) {
  const InputError seq_len(Input::seq_len, "1001", "layout zigzag needs it divisible by 2N = 8");
  EXPECT_STREQ(seq_len.what(), "--seq-len 1001: layout zigzag needs it divisible by 2N = 8");
  EXPECT_EQ(seq_len.input(), Input::seq_len);
  EXPECT_STREQ(seq_len.renamed("--seq-lens").what(), "--seq-lens 1001: layout zigzag needs it divisible by 2N = 8");
  EXPECT_STREQ(seq_len.at("e.json field \"seq_len\"").what(),
               "e.json field \"seq_len\" = 1001: layout zigzag needs it divisible by 2N = 8");

  const InputError layout(Input::layouts, "zigzg", "unknown layout", Shown::quoted);
  EXPECT_STREQ(layout.what(), "--layouts 'zigzg': unknown layout");
  EXPECT_STREQ(layout.at("e.json field \"layouts[1]\"").what(), "e.json field \"layouts[1]\" = 'zigzg': unknown layout");
  EXPECT_STREQ(InputError(Input::layouts, "", "needs at least one layout").at("e.json field \"layouts\"").what(),
               "e.json field \"layouts\": needs at least one layout");

  // A part of an input, as the parsers of specs raise it.
  const InputError part = InputName(Input::mask, "window:W width").error("abc", "expected a number", Shown::quoted);
  EXPECT_STREQ(part.what(), "--mask window:W width 'abc': expected a number");
  EXPECT_STREQ(part.at("e.json field \"mask\"").what(), "e.json field \"mask\" window:W width = 'abc': expected a number");

  // Free text is a message as it is: nothing to rename.
  const InputError free("config.json: not valid JSON");
  EXPECT_FALSE(free.input().has_value());
  EXPECT_STREQ(free.at("elsewhere").what(), "config.json: not valid JSON");
  EXPECT_STREQ(InputName("--threads").error("x", "expected a number", Shown::quoted).what(), "--threads 'x': expected a number");
}

TEST(InputOrigins, LocateNamesTheFieldAndTheListItem) {
  InputOrigins origins("--experiment sweep.json");
  origins.add(Input::seq_len, "groups[1].seq_lens[2]");
  origins.add_list(Input::layouts, "groups[1].layouts", {"contiguous", "Block-Striped:16", "zigzag"});
  EXPECT_EQ(message_of([&] { origins.run([] { (void)Layout::zigzag(1001, 4); }); }),
            "--experiment sweep.json field \"groups[1].seq_lens[2]\" = 1001: layout zigzag needs it divisible by 2N = 8; "
            "the nearest such lengths are 1000 and 1008 (pad 7 tokens to reach 1008)");
  // The item is found as the parsers find layouts, case aside.
  EXPECT_EQ(message_of([&] { origins.run([] { (void)parse_layout("block-striped:16", 64, 8, {}); }); }),
            "--experiment sweep.json field \"groups[1].layouts[1]\" = block-striped:16: the stripe width must be at most "
            "n/N = 8");
  // An input the point did not take from the file keeps its flag.
  EXPECT_EQ(message_of([&] { origins.run([] { (void)parse_mask("window:0", 64); }); }),
            "--mask window:0: the window must be at least 1 token");
  // A value's result comes back through run.
  EXPECT_EQ(origins.run([] { return parse_tile_shape("64x32"); }).key, 32);
}

TEST(InputOrigins, FlagsOfOtherNamesAndFilesOfFlags) {
  InputOrigins flags;
  flags.add_flag(Input::tile, "--tiles");
  EXPECT_EQ(message_of([&] { flags.run([] { (void)parse_tile_shape("12x"); }); }), "--tiles '12x': expected TQxTK, e.g. 2048x4096");
  EXPECT_EQ(message_of([&] { flags.run([] { (void)parse_tile_shape("ax4"); }); }),
            "--tiles query size 'a': expected a non-negative integer, optionally with a k, M or G suffix");

  // A file of flags: what a flag overrides keeps the flag's name.
  const nlohmann::json doc = {{"seq_len", "1001"}, {"devices", 4}, {"mask", "window:0"}, {"layouts", {"striped", "Zigzg"}}};
  const InputOrigins file = InputOrigins::of_file(doc, "--experiment a.json", [](Input input) { return input == Input::mask; });
  EXPECT_EQ(message_of([&] { file.run([] { (void)Layout::striped(1001, 4); }); }),
            "--experiment a.json field \"seq_len\" = 1001: layout striped needs it divisible by N = 4; the nearest such "
            "lengths are 1000 and 1004 (pad 3 tokens to reach 1004)");
  EXPECT_EQ(message_of([&] { file.run([] { (void)parse_mask("window:0", 64); }); }),
            "--mask window:0: the window must be at least 1 token");
  EXPECT_TRUE(message_of([&] { file.run([] { (void)parse_layout("zigzg", 64, 4, {}); }); })
                  .starts_with("--experiment a.json field \"layouts[1]\" = 'zigzg': unknown layout (did you mean 'zigzag'?)"));
}

TEST(InputOrigins, EveryInputHasItsOwnFlag) {
  const std::vector<Input> inputs = every_input();
  ASSERT_EQ(inputs.size(), 29u);
  EXPECT_EQ(inputs.front(), Input::seq_len);
  EXPECT_EQ(inputs.back(), Input::ring_order);
  std::set<std::string_view> flags;
  for (const Input input : inputs) {
    EXPECT_TRUE(flag_of(input).starts_with("--")) << flag_of(input);
    flags.insert(flag_of(input));
  }
  EXPECT_EQ(flags.size(), inputs.size());
}

TEST(JsonFields, ListItemsAreNamedByTheirIndex) {
  const nlohmann::json doc = {{"tiles", {"64x64", "12x"}}, {"seq_lens", {128, "1k", true}}, {"masks", nlohmann::json::array()},
                              {"layouts", {"striped", 3}}};
  const JsonFields f(doc, "e.json");
  EXPECT_EQ(message_of([&] { (void)f.parsed_list("tiles", parse_tile_shape); }),
            "e.json field \"tiles[1]\" = '12x': expected TQxTK, e.g. 2048x4096");
  EXPECT_EQ(message_of([&] { (void)f.parsed_list("layouts", [](const std::string& s) { return s; }); }),
            "e.json field \"layouts[1]\": expected a string, got 3");
  EXPECT_EQ(message_of([&] { (void)f.non_empty_array("masks"); }), "e.json field \"masks\": expected a non-empty array");
  EXPECT_EQ(message_of([&] { (void)f.count_list("seq_lens"); }),
            "e.json field \"seq_lens[2]\": expected an integer or a string like \"128k\", got true");
  EXPECT_EQ(message_of([&] { (void)f.string_list_or("layouts", {}); }), "e.json field \"layouts[1]\": expected a string, got 3");
  const nlohmann::json bad_count = {{"seq_lens", {128, "12q"}}};
  EXPECT_TRUE(message_of([&] { (void)JsonFields(bad_count, "e.json").count_list("seq_lens"); })
                  .starts_with("e.json field \"seq_lens[1]\""));

  const nlohmann::json good = {{"tiles", {"64x64", "128x32"}}, {"seq_lens", {128, "1k"}}};
  const JsonFields g(good, "e.json");
  const std::vector<TileShape> tiles = g.parsed_list("tiles", parse_tile_shape);
  ASSERT_EQ(tiles.size(), 2u);
  EXPECT_EQ(tiles[1].query, 128);
  EXPECT_EQ(tiles[1].key, 32);
  EXPECT_EQ(g.count_list("seq_lens"), (std::vector<Count>{128, 1024}));
  EXPECT_EQ(g.string_list_or("masks", {"causal"}), (std::vector<std::string>{"causal"}));
  const nlohmann::json empty = {{"masks", nlohmann::json::array()}};
  EXPECT_TRUE(JsonFields(empty, "e.json").string_list_or("masks", {"causal"}).empty());
}

// A field a schema types as an integer takes no string: a count a config writes as "256k" is
// positive_count's, a file stripesim writes (a saved run, an exported layout) or a kernel profile
// holds integers.
TEST(JsonFields, PositiveIntegersAreJsonIntegers) {
  const nlohmann::json doc = {{"devices", 2}, {"as_text", "2"}, {"suffixed", "1k"}, {"real", 2.0}, {"zero", 0}};
  const JsonFields f(doc, "r.json");
  EXPECT_EQ(f.positive_integer("devices"), 2);
  EXPECT_EQ(f.positive_count("as_text"), 2);
  EXPECT_EQ(message_of([&] { (void)f.positive_integer("as_text"); }), "r.json field \"as_text\": expected a positive integer, got \"2\"");
  EXPECT_EQ(message_of([&] { (void)f.positive_integer("suffixed"); }), "r.json field \"suffixed\": expected a positive integer, got \"1k\"");
  EXPECT_EQ(message_of([&] { (void)f.positive_integer("real"); }), "r.json field \"real\": expected a positive integer, got 2.0");
  EXPECT_EQ(message_of([&] { (void)f.positive_integer("zero"); }), "r.json field \"zero\": must be at least 1, got 0");
  EXPECT_EQ(message_of([&] { (void)f.positive_integer("devices", 1); }), "r.json field \"devices\": must be between 1 and 1, got 2");
  EXPECT_EQ(f.positive_integer_or("absent", 7), 7);
}

}  // namespace
}  // namespace stripesim::model
