// `stripesim layout`: a layout exported for training code and read back as permutation:FILE
// counts exactly the work analyze counts for the layout itself; its JSON, CSV and npy files
// hold the same positions; bad input leaves no file.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <cstdio>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

#include "bad_input_table.hpp"
#include "cli_runner.hpp"
#include "temp_path.hpp"

namespace stripesim::testing {
namespace {

namespace fs = std::filesystem;

fs::path scratch(const std::string& name) {
  return temp_path("stripesim_cli_layout_" + name);
}

// "COMMAND LAYOUT FLAGS [OUTPUT]"
std::string fmt_args(const std::string& command, const std::string& layout, const std::string& flags,
                     const std::string& output) {
  return command + " " + layout + " " + flags + (output.empty() ? "" : " " + output);
}

nlohmann::json run_json(const std::string& args) {
  const CliResult r = run_cli(args);
  EXPECT_EQ(r.exit_code, 0) << args << "\n" << r.err;
  return r.exit_code == 0 ? nlohmann::json::parse(r.out) : nlohmann::json();
}

struct RoundTrip {
  const char* name;
  const char* layout;
  const char* flags;  // the same for layout and both analyses
};

void PrintTo(const RoundTrip& c, std::ostream* os) { *os << c.layout << " " << c.flags; }

class CliLayoutRoundTrip : public ::testing::TestWithParam<RoundTrip> {};

TEST_P(CliLayoutRoundTrip, PermutationFileCountsWhatTheLayoutCounts) {
  const RoundTrip& c = GetParam();
  const fs::path file = scratch(std::string(c.name) + ".json");
  const CliResult exported = run_cli(fmt_args("layout --layout", c.layout, c.flags, "-o '" + file.string() + "'"));
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  EXPECT_TRUE(exported.out.empty());
  const nlohmann::json direct = run_json(fmt_args("analyze --format json --layouts", c.layout, c.flags, ""));
  const nlohmann::json loaded =
      run_json(fmt_args("analyze --format json --layouts", "'permutation:" + file.string() + "'", c.flags, ""));
  fs::remove(file);
  ASSERT_FALSE(direct.is_null());
  ASSERT_FALSE(loaded.is_null());
  // Every count, matrix and metric of the one result; only its name differs.
  nlohmann::json direct_result = direct.at("results").at(0);
  nlohmann::json loaded_result = loaded.at("results").at(0);
  EXPECT_EQ(loaded_result.at("layout"), "permutation:" + file.string());
  direct_result.erase("layout");
  loaded_result.erase("layout");
  for (const char* counts : {"unmasked_elements", "active_tiles", "partial_tiles"}) {
    EXPECT_EQ(loaded_result.at(counts), direct_result.at(counts)) << counts;
  }
  EXPECT_EQ(loaded_result, direct_result);
  nlohmann::json direct_config = direct.at("config");
  nlohmann::json loaded_config = loaded.at("config");
  direct_config.erase("layouts");
  loaded_config.erase("layouts");
  EXPECT_EQ(loaded_config, direct_config);
}

INSTANTIATE_TEST_SUITE_P(
    EveryKind, CliLayoutRoundTrip,
    ::testing::Values(
        RoundTrip{"contiguous", "contiguous", "-n 256 -N 4 --tile 16x16"},
        RoundTrip{"striped", "striped", "-n 256 -N 4 --tile 16x16"},
        RoundTrip{"zigzag", "zigzag", "-n 256 -N 4 --tile 16x16"},
        RoundTrip{"block_striped", "block-striped:4", "-n 256 -N 4 --tile 16x16"},
        RoundTrip{"zigzag_window", "zigzag", "-n 512 -N 4 --tile 16x16 --mask window:64"},
        RoundTrip{"balanced_causal", "balanced", "-n 1024 -N 4 --tile 32x32"},
        RoundTrip{"balanced_documents", "balanced", "-n 1000 -N 4 --tile 16x16 --mask documents:300,700 --pad-documents"},
        RoundTrip{"balanced_lognormal", "balanced",
                  "-n 4k -N 8 --tile 32x32 --mask documents:lognormal:256:1.0:seed=7 --pad-documents"},
        RoundTrip{"balanced_varlen", "balanced",
                  "-n 4k -N 8 --tile 32x32 --mask documents:lognormal:256:1.0:seed=7 --pad-documents --tiling varlen"},
        RoundTrip{"doc_zigzag", "doc-zigzag", "-n 1000 -N 4 --tile 16x16 --mask documents:300,700 --pad-documents"},
        RoundTrip{"doc_striped", "doc-striped", "-n 1000 -N 4 --tile 16x16 --mask documents:300,700 --pad-documents"},
        RoundTrip{"ptrr", "ptrr", "-n 1000 -N 4 --tile 16x16 --mask documents:300,700 --pad-documents"}),
    [](const ::testing::TestParamInfo<RoundTrip>& info) { return std::string(info.param.name); });

// Reads a .npy file as the format's documentation describes it, independently of the writer.
struct Npy {
  std::string header;
  std::vector<std::int64_t> values;
};

Npy parse_npy(const std::string& bytes) {
  Npy npy;
  EXPECT_GE(bytes.size(), 10u);
  if (bytes.size() < 10) return npy;
  EXPECT_EQ(bytes.substr(0, 6), "\x93NUMPY");
  EXPECT_EQ(bytes[6], 1);  // version 1.0
  EXPECT_EQ(bytes[7], 0);
  const size_t length = static_cast<unsigned char>(bytes[8]) | static_cast<size_t>(static_cast<unsigned char>(bytes[9])) << 8;
  EXPECT_EQ((10 + length) % 64, 0u) << "the data starts 64-byte aligned";
  npy.header = bytes.substr(10, length);
  EXPECT_EQ(npy.header.back(), '\n');
  const std::string data = bytes.substr(10 + length);
  EXPECT_EQ(data.size() % 8, 0u);
  for (size_t i = 0; i + 8 <= data.size(); i += 8) {
    std::uint64_t value = 0;
    for (int byte = 7; byte >= 0; --byte) value = value << 8 | static_cast<unsigned char>(data[i + static_cast<size_t>(byte)]);
    npy.values.push_back(static_cast<std::int64_t>(value));
  }
  return npy;
}

TEST(CliLayout, JsonCsvAndNpyHoldTheSamePositions) {
  const std::string flags = "--layout balanced -n 1000 -N 4 --tile 16x16 --mask documents:300,700 --pad-documents";
  const fs::path npy_file = scratch("same.npy");
  const nlohmann::json json = run_json("layout " + flags);
  ASSERT_FALSE(json.is_null());
  const auto& blocks = json.at("blocks");
  const auto devices = json.at("devices").get<size_t>();
  const auto block_size = json.at("block_size").get<size_t>();
  const auto n = json.at("seq_len").get<size_t>();
  ASSERT_EQ(n, 1008u);  // 304 + 704 after padding to multiples of 2N
  ASSERT_EQ(blocks.size(), devices);

  // npy: shape (N, n/N), int64 little-endian, C order, row d = device d.
  const CliResult npy_run = run_cli("layout " + flags + " --format npy -o '" + npy_file.string() + "'");
  ASSERT_EQ(npy_run.exit_code, 0) << npy_run.err;
  const Npy npy = parse_npy(slurp(npy_file));
  fs::remove(npy_file);
  EXPECT_NE(npy.header.find("'descr': '<i8'"), std::string::npos) << npy.header;
  EXPECT_NE(npy.header.find("'fortran_order': False"), std::string::npos) << npy.header;
  EXPECT_NE(npy.header.find("'shape': (4, 252)"), std::string::npos) << npy.header;
  ASSERT_EQ(npy.values.size(), n);
  for (size_t d = 0; d < devices; ++d) {
    for (size_t l = 0; l < block_size; ++l) ASSERT_EQ(npy.values[d * block_size + l], blocks[d][l].get<std::int64_t>());
  }

  // CSV: a header and one row per token, every position exactly once, in the JSON's order.
  const CliResult csv = run_cli("layout " + flags + " --format csv");
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  std::istringstream lines(csv.out);
  std::string line;
  std::getline(lines, line);
  EXPECT_EQ(line, "device,local_index,position");
  std::vector<int> seen(n, 0);
  size_t rows = 0;
  while (std::getline(lines, line)) {
    size_t device = 0, local = 0;
    long long position = -1;
    ASSERT_EQ(std::sscanf(line.c_str(), "%zu,%zu,%lld", &device, &local, &position), 3) << line;
    ASSERT_EQ(device, rows / block_size);
    ASSERT_EQ(local, rows % block_size);
    ASSERT_EQ(position, blocks[device][local].get<long long>());
    ASSERT_GE(position, 0);
    ASSERT_LT(static_cast<size_t>(position), n);
    ++seen[static_cast<size_t>(position)];
    ++rows;
  }
  EXPECT_EQ(rows, n);
  for (size_t p = 0; p < n; ++p) EXPECT_EQ(seen[p], 1) << "position " << p;
}

// A layout is exported for every ring simulate runs (up to 4096 devices) and beyond: the export
// keeps no N x N matrix, so analyze's bound of 2048 does not hold it; a Layout's own bound does.
TEST(CliLayout, ExportsRingsLargerThanAnalyzeCounts) {
  const nlohmann::json json = run_json("layout --layout zigzag -n 64k -N 4096");
  ASSERT_FALSE(json.is_null());
  ASSERT_EQ(json.at("devices").get<size_t>(), 4096u);
  const auto& blocks = json.at("blocks");
  ASSERT_EQ(blocks.size(), 4096u);
  // Zigzag by its definition: 2N chunks of n/2N tokens, device d holds chunks d and 2N-1-d.
  const size_t chunk = 65536 / 8192;
  for (size_t d = 0; d < 4096; ++d) {
    ASSERT_EQ(blocks[d].size(), 2 * chunk);
    for (size_t l = 0; l < chunk; ++l) {
      ASSERT_EQ(blocks[d][l].get<size_t>(), d * chunk + l) << d;
      ASSERT_EQ(blocks[d][chunk + l].get<size_t>(), (8191 - d) * chunk + l) << d;
    }
  }
  EXPECT_EQ(run_cli("analyze -n 64k -N 4096 --layouts zigzag").exit_code, 2);
}

TEST(CliLayout, JsonSaysWhatItIs) {
  const nlohmann::json doc =
      run_json("layout --layout doc-zigzag -n 1000 -N 4 --mask documents:300,700 --pad-documents --tile 16x16");
  ASSERT_FALSE(doc.is_null());
  EXPECT_EQ(doc.at("schema"), "stripesim.layout/1");
  EXPECT_EQ(doc.at("layout"), "doc-zigzag");
  EXPECT_EQ(doc.at("seq_len"), 1008);
  EXPECT_EQ(doc.at("devices"), 4);
  EXPECT_EQ(doc.at("block_size"), 252);
  EXPECT_EQ(doc.at("tile"), nlohmann::json({{"query", 16}, {"key", 16}}));
  EXPECT_EQ(doc.at("tiling"), "fixed");
  EXPECT_EQ(doc.at("mask").at("spec"), "documents:300,700");
  EXPECT_EQ(doc.at("mask").at("document_lengths"), nlohmann::json({304, 704}));
  EXPECT_EQ(doc.at("padding").at("document_lengths"), nlohmann::json({300, 700}));
  EXPECT_EQ(doc.at("padding").at("tokens"), 8);
  // doc-zigzag: device 0 holds chunk 0 and chunk 7 of each document (304 / 8 = 38 tokens a chunk).
  EXPECT_EQ(doc.at("blocks")[0][0], 0);
  EXPECT_EQ(doc.at("blocks")[0][38], 7 * 38);
  EXPECT_EQ(doc.at("blocks")[0][76], 304);
}

TEST(CliLayout, OutputIsByteIdenticalAndTheFileIsWhatStdoutShows) {
  const std::string flags = "--layout balanced -n 4k -N 8 --tile 32x32 --mask documents:lognormal:256:1.0:seed=7 --pad-documents";
  const CliResult first = run_cli("layout " + flags);
  const CliResult second = run_cli("layout " + flags);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_EQ(first.out, second.out);
  const fs::path file = scratch("stdout.json");
  ASSERT_EQ(run_cli("layout " + flags + " -o '" + file.string() + "'").exit_code, 0);
  EXPECT_EQ(slurp(file), first.out);
  for (const char* format : {"csv", "npy"}) {
    const fs::path a = scratch(std::string("a.") + format), b = scratch(std::string("b.") + format);
    ASSERT_EQ(run_cli("layout " + flags + " --format " + format + " -o '" + a.string() + "'").exit_code, 0);
    ASSERT_EQ(run_cli("layout " + flags + " --format " + format + " -o '" + b.string() + "'").exit_code, 0);
    EXPECT_EQ(slurp(a), slurp(b)) << format;
    fs::remove(a);
    fs::remove(b);
  }
  fs::remove(file);
}

TEST(CliLayout, PermutationFileNamesTheSequenceItWasExportedFor) {
  const fs::path file = scratch("padded.json");
  ASSERT_EQ(run_cli("layout --layout doc-zigzag -n 1000 -N 4 --mask documents:300,700 --pad-documents -o '" +
                    file.string() + "'")
                .exit_code,
            0);
  // Read without --pad-documents: 1000 tokens, the file covers 1008.
  const CliResult r = run_cli("analyze -n 1000 -N 4 --mask documents:300,700 --layouts 'permutation:" + file.string() + "'");
  fs::remove(file);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("field \"seq_len\": the layout covers 1008 tokens but the sequence has 1000 (give the --seq-len, "
                       "--mask and --pad-documents it was exported with)"),
            std::string::npos)
      << r.err;
}

TEST(CliLayout, HelpShowsTheRoundTrip) {
  const CliResult r = run_cli("layout --help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("stripesim layout --layout zigzag -n 32k -N 8 -o zigzag.json"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--layouts permutation:zigzag.json"), std::string::npos) << r.out;
  for (const char* format : {"json:", "csv:", "npy:"}) EXPECT_NE(r.out.find(format), std::string::npos) << format;
}

// Nor by another of its names (it went to /dev/stdout as given), nor to standard error (the
// runner sends it to a file here; at a terminal the bytes landed on the screen).
TEST(CliLayout, NpyIsNeverWrittenToStandardOutput) {
  for (const char* output : {"", " -o -", " -o /dev/stdout", " -o /dev/fd/1", " -o /dev/stderr", " -o /dev/fd/2"}) {
    if (std::string(output).starts_with(" -o /dev/") && !std::filesystem::exists(std::string(output).substr(4))) continue;
    const CliResult r = run_cli(std::string("layout --layout zigzag -n 64 -N 4 --format npy") + output);
    EXPECT_EQ(r.exit_code, 2) << output;
    EXPECT_TRUE(r.out.empty());
    EXPECT_EQ(r.err, "stripesim: error: --format npy: binary output, give --output FILE (it is not written to standard "
                     "output or error, nor to a terminal)\n")
        << output;
  }
}

std::vector<BadInput> bad_layout_inputs() {
  return {
      {"not_divisible", "--layout zigzag -n 1000 -N 3",
       "--seq-len 1000: layout zigzag needs it divisible by 2N = 6; the nearest such lengths are 996 and 1002"},
      {"misspelt_layout", "--layout zigzg -n 64 -N 4", "--layout 'zigzg': unknown layout (did you mean 'zigzag'?)"},
      {"two_layouts", "--layout zigzag,striped -n 64 -N 4",
       "--layout 'zigzag,striped': one layout per file (analyze --layouts compares several)"},
      {"no_layout", "-n 64 -N 4", "--layout is required"},
      {"no_seq_len", "--layout zigzag -N 4", "--seq-len is required"},
      {"no_devices", "--layout zigzag -n 64", "--devices is required"},
      {"zero_devices", "--layout zigzag -n 64 -N 0", "--devices 0: must be between 1 and 65536"},
      {"too_many_devices", "--layout zigzag -n 1M -N 65537", "--devices 65537: must be between 1 and 65536"},
      {"balanced_without_a_tile", "--layout balanced -n 32k -N 8", "--layout 'balanced': it is cut for a kernel tile, give --tile"},
      {"ptrr_without_a_tile", "--layout ptrr -n 32k -N 8", "--layout 'ptrr': it is cut for a kernel tile, give --tile"},
      {"balanced_beyond_its_pair_pricing", "--layout balanced -n 1M -N 8192 --tile 128x128",
       "--devices 8192: layout balanced takes at most 4096 devices (it prices every pair of devices)"},
      {"seq_len_not_a_number", "--layout zigzag -n abc -N 4", "--seq-len 'abc'"},
      {"unknown_format", "--layout zigzag -n 64 -N 4 --format xml",
       "--format 'xml': unknown layout format, expected json, csv or npy"},
      {"misspelt_format", "--layout zigzag -n 64 -N 4 --format jsn", "(did you mean 'json'?)"},
      {"doc_zigzag_without_documents", "--layout doc-zigzag -n 64 -N 4", "--layout doc-zigzag: needs a documents mask"},
      {"doc_zigzag_indivisible", "--layout doc-zigzag -n 1000 -N 4 --mask documents:300,700",
       "not divisible by 2N = 8 (pad every document: --pad-documents where the command takes it"},
      {"pad_without_documents", "--layout zigzag -n 64 -N 4 --pad-documents", "--pad-documents: needs a documents mask"},
      {"unknown_mask", "--layout zigzag -n 64 -N 4 --mask sliding:4", "--mask 'sliding:4': unknown mask"},
      {"permutation_missing", "--layout permutation:/nonexistent/perm.json -n 64 -N 4", "does not exist"},
      // Built in memory before it is written: 2G tokens (16 GiB in npy, 22 in json) was killed
      // for memory at 23 GB, with no message.
      {"file_too_large", "--layout striped -n 2G -N 65536",
       "GiB, built in memory before it is written: layout writes at most 4 GiB"},
      {"output_dir_missing", "--layout zigzag -n 64 -N 4 --output /nonexistent/dir/layout.json",
       "--output '/nonexistent/dir/layout.json': directory '/nonexistent/dir' does not exist"},
  };
}

class CliLayoutBadInput : public ::testing::TestWithParam<BadInput> {};

TEST_P(CliLayoutBadInput, OneLineExitTwoNoFile) {
  const BadInput& input = GetParam();
  for (const char* format : {"json", "npy"}) {
    const fs::path output = scratch(std::string("bad_") + input.name + "." + format);
    fs::remove(output);
    const bool writes_elsewhere = input.args.find("--output") != std::string::npos;
    const bool names_format = input.args.find("--format") != std::string::npos;
    std::string args = "layout " + input.args;
    if (!names_format) args += std::string(" --format ") + format;
    if (!writes_elsewhere) args += " --output '" + output.string() + "'";
    const CliResult r = run_cli(args);
    expect_rejected(r, input);
    EXPECT_FALSE(fs::exists(output)) << "no partial output file";
    // Nor its temporary sibling (written beside it, then renamed).
    for (const auto& entry : fs::directory_iterator(output.parent_path())) {
      EXPECT_EQ(entry.path().filename().string().find(output.filename().string()), std::string::npos) << entry.path();
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Table, CliLayoutBadInput, ::testing::ValuesIn(bad_layout_inputs()), bad_input_name);

}  // namespace
}  // namespace stripesim::testing
