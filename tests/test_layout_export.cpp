// The layout export (model/workflows/layout_export.hpp): its three formats byte for byte on a small
// layout, and the JSON loading back as a permutation file for every kind.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "stripesim/model/io/input_error.hpp"
#include "stripesim/model/work/layout_spec.hpp"
#include "stripesim/model/workflows/layout_export.hpp"
#include "temp_path.hpp"

namespace stripesim::model {
namespace {

AnalyzeConfig config_of(const std::string& layout, Count seq_len, Count devices, const std::string& mask = "causal",
                        bool pad = false, TileShape tile = {16, 16}) {
  AnalyzeConfig config;
  config.seq_len = seq_len;
  config.devices = devices;
  config.tile = tile;
  config.layouts = {layout};
  config.mask = mask;
  config.pad_documents = pad;
  return config;
}

class LayoutExportFiles : public ::testing::Test {
 protected:
  std::string write(const std::string& name, const std::string& text) {
    const auto path = temp_path("stripesim_layout_export_" + name);
    std::ofstream(path, std::ios::binary) << text;
    paths_.push_back(path);
    return path.string();
  }
  void TearDown() override {
    for (const auto& p : paths_) std::filesystem::remove(p);
  }
  std::vector<std::filesystem::path> paths_;
};

TEST(LayoutExport, JsonIsTheGoldenText) {
  // zigzag, n = 8, N = 2: chunks of 2; device 0 holds chunks 0 and 3, device 1 chunks 1 and 2.
  const LayoutExport exported = plan_layout_export(config_of("zigzag", 8, 2));
  EXPECT_EQ(layout_to_json(exported, exported.build_layout()),
            "{\n"
            "  \"schema\": \"stripesim.layout/1\",\n"
            "  \"layout\": \"zigzag\",\n"
            "  \"seq_len\": 8,\n"
            "  \"devices\": 2,\n"
            "  \"block_size\": 4,\n"
            "  \"tile\": {\"query\":16,\"key\":16},\n"
            "  \"tiling\": \"fixed\",\n"
            "  \"mask\": {\"spec\":\"causal\",\"kind\":\"causal\"},\n"
            "  \"blocks\": [\n"
            "    [0,1,6,7],\n"
            "    [2,3,4,5]\n"
            "  ]\n"
            "}\n");
  EXPECT_EQ(write_layout(exported, LayoutFormat::json), layout_to_json(exported, exported.build_layout()));
}

TEST(LayoutExport, JsonNamesThePaddingAndBothDocumentLengths) {
  const LayoutExport exported = plan_layout_export(config_of("doc-zigzag", 1000, 4, "documents:300,700", true));
  const nlohmann::json doc = nlohmann::json::parse(layout_to_json(exported, exported.build_layout()));
  EXPECT_EQ(doc.at("seq_len"), 1008);
  EXPECT_EQ(doc.at("block_size"), 252);
  EXPECT_EQ(doc.at("mask").at("document_lengths"), nlohmann::json({304, 704}));
  EXPECT_EQ(doc.at("padding"),
            nlohmann::json({{"unpadded_seq_len", 1000}, {"tokens", 8}, {"document_lengths", {300, 700}}}));
  EXPECT_EQ(doc.at("blocks").size(), 4u);
  EXPECT_EQ(doc.at("blocks")[0].size(), 252u);
}

TEST(LayoutExport, CsvIsOneRowPerTokenDeviceByDevice) {
  const LayoutExport exported = plan_layout_export(config_of("zigzag", 8, 2));
  EXPECT_EQ(write_layout(exported, LayoutFormat::csv),
            "device,local_index,position\n"
            "0,0,0\n0,1,1\n0,2,6\n0,3,7\n"
            "1,0,2\n1,1,3\n1,2,4\n1,3,5\n");
}

// The size write_layout checks before it builds a file is the file's per-token part exactly: the
// csv rows past the header, the npy data past its 128-byte header.
TEST(LayoutExport, FileBytesAreTheTokensPart) {
  for (const auto& [n, devices] : {std::pair<Count, Count>{8, 2}, {1200, 12}, {100000, 40}, {262144, 64}}) {
    const LayoutExport exported = plan_layout_export(config_of("striped", n, devices));
    EXPECT_EQ(layout_file_bytes(exported, LayoutFormat::csv),
              static_cast<Count>(write_layout(exported, LayoutFormat::csv).size() - std::string("device,local_index,position\n").size()))
        << n;
    EXPECT_EQ(layout_file_bytes(exported, LayoutFormat::npy), static_cast<Count>(write_layout(exported, LayoutFormat::npy).size()) - 128)
        << n;
  }
}

TEST(LayoutExport, NpyIsVersionOneInt64LittleEndian) {
  const LayoutExport exported = plan_layout_export(config_of("zigzag", 8, 2));
  const std::string npy = write_layout(exported, LayoutFormat::npy);
  std::string dict = "{'descr': '<i8', 'fortran_order': False, 'shape': (2, 4), }";
  // magic (6) + version (2) + length (2) + dict + '\n' fills two 64-byte lines.
  dict.append(128 - 10 - dict.size() - 1, ' ');
  dict += '\n';
  std::string expected("\x93NUMPY\x01\x00", 8);
  expected += static_cast<char>(dict.size());
  expected += '\0';
  expected += dict;
  for (const std::int64_t p : {0, 1, 6, 7, 2, 3, 4, 5}) {
    for (int byte = 0; byte < 8; ++byte) expected += static_cast<char>((p >> (8 * byte)) & 0xff);
  }
  EXPECT_EQ(npy, expected);
  EXPECT_EQ(npy.size(), 128u + 8 * 8);
}

TEST(LayoutExport, NpyHeaderIsPaddedToSixtyFourBytesForAnyShape) {
  for (const auto& [n, N] : {std::pair<Count, Count>{64, 1}, {4096, 8}, {1 << 20, 1024}, {2048, 2048}}) {
    const LayoutExport exported = plan_layout_export(config_of("striped", n, N));
    const std::string npy = layout_to_npy(exported.build_layout());
    const size_t header = static_cast<unsigned char>(npy[8]) | static_cast<size_t>(static_cast<unsigned char>(npy[9])) << 8;
    EXPECT_EQ((10 + header) % 64, 0u) << n << " " << N;
    EXPECT_EQ(npy[10 + header - 1], '\n');
    EXPECT_EQ(npy.size(), 10 + header + static_cast<size_t>(n) * 8);
  }
}

TEST_F(LayoutExportFiles, JsonLoadsBackAsThePermutationForEveryKind) {
  const std::vector<AnalyzeConfig> configs{
      config_of("contiguous", 96, 4),
      config_of("striped", 96, 4),
      config_of("zigzag", 96, 4),
      config_of("block-striped:4", 96, 4),
      config_of("balanced", 1024, 4),
      config_of("ptrr", 1024, 4),
      config_of("balanced", 1000, 4, "documents:300,700", true),
      config_of("doc-zigzag", 1000, 4, "documents:300,700", true),
      config_of("doc-striped", 1000, 4, "documents:300,700", true),
  };
  for (const AnalyzeConfig& config : configs) {
    const LayoutExport exported = plan_layout_export(config);
    const Layout layout = exported.build_layout();
    const std::string file = write("roundtrip.json", layout_to_json(exported, layout));
    const Layout loaded = parse_layout("permutation:" + file, exported.plan.seq_len, config.devices);
    EXPECT_EQ(loaded.kind(), LayoutKind::permutation);
    for (DeviceId d = 0; d < layout.devices(); ++d) {
      for (Count l = 0; l < layout.block_size(); ++l) {
        ASSERT_EQ(loaded.position(d, l), layout.position(d, l)) << config.layouts[0] << " device " << d << " local " << l;
      }
    }
  }
}

TEST(LayoutExport, FormatNamesComeFromTheRegistry) {
  EXPECT_EQ(parse_layout_format("json"), LayoutFormat::json);
  EXPECT_EQ(parse_layout_format("CSV"), LayoutFormat::csv);
  EXPECT_EQ(parse_layout_format("npy"), LayoutFormat::npy);
  try {
    (void)parse_layout_format("jsn");
    FAIL() << "accepted jsn";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "--format 'jsn': unknown layout format (did you mean 'json'?), expected json, csv or npy");
  }
  for (const LayoutFormatInfo& info : kLayoutFormats) EXPECT_EQ(layout_format_info(info.format).name, info.name);
  EXPECT_TRUE(layout_format_info(LayoutFormat::npy).binary);
}

TEST(LayoutExport, TakesExactlyOneLayout) {
  AnalyzeConfig config = config_of("zigzag", 64, 4);
  config.layouts = {"zigzag", "striped"};
  EXPECT_THROW((void)plan_layout_export(config), InputError);
}

}  // namespace
}  // namespace stripesim::model
