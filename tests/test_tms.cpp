#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "stripesim/model/flops/attention_heads.hpp"
#include "stripesim/model/flops/tms.hpp"
#include "stripesim/model/io/config_catalog.hpp"
#include "stripesim/model/io/input_error.hpp"

namespace stripesim::model {
namespace {

const ConfigCatalog& catalog() {
  static const ConfigCatalog shipped(std::string(STRIPESIM_SOURCE_DIR) + "/configs");
  return shipped;
}

// The one rule for splitting heads over a group (tensor parallelism, Ulysses), brute-forced: a
// share exists when the group divides the heads, or, for K/V heads, when the heads divide the group.
TEST(AttentionHeads, SplitEvenlyOrReplicateKvHeads) {
  for (Count heads = 1; heads <= 64; ++heads) {
    for (Count group = 1; group <= 64; ++group) {
      const bool divides = heads % group == 0;
      const bool replicates = !divides && group % heads == 0;
      EXPECT_EQ(heads_per_member(heads, group, false), divides ? std::optional(heads / group) : std::nullopt);
      EXPECT_EQ(heads_per_member(heads, group, true),
                divides ? std::optional(heads / group) : replicates ? std::optional<Count>(1) : std::nullopt)
          << heads << " heads over " << group;
    }
  }
  EXPECT_EQ(heads_per_member(8, 32, true), 1);   // Llama-3's 8 K/V heads over an all-to-all of 32
  EXPECT_EQ(heads_per_member(8, 12, true), std::nullopt);
  EXPECT_EQ(heads_per_member(0, 4, true), std::nullopt);
}

TEST(AttentionHeads, KvHeadsMustDivideTheHeads) {
  EXPECT_NO_THROW(require_kv_heads_divide(32, 8));
  EXPECT_NO_THROW(require_kv_heads_divide(5, 5));
  try {
    require_kv_heads_divide(6, 4);
    FAIL() << "6 heads over 4 K/V heads accepted";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "--kv-heads 4: must divide the 6 heads");
    EXPECT_EQ(e.input(), Input::kv_heads);  // by kind, so a file's reader names its field
  }
  EXPECT_THROW(require_kv_heads_divide(6, 0), InputError);
}

TmsRequest request(const std::string& model, const std::string& hardware, Count devices, Count seq_len) {
  TmsRequest q;
  q.model = catalog().model(model);
  q.hardware = catalog().hardware(hardware);
  q.devices = devices;
  q.seq_len = seq_len;
  return q;
}

double round2(double x) { return std::round(x * 100.0) / 100.0; }

// The paper's A100 1B rows (section 4): (N, n) -> TMS, rounded to two decimals.
TEST(Tms, PaperA100OneBillionRows) {
  struct Row {
    Count devices, seq_len;
    double tms;
  };
  const Row rows[] = {{2, 8192, 1.22},   {2, 16384, 1.31},  {2, 32768, 1.38},  {2, 49152, 1.41},  {2, 65536, 1.43},
                      {2, 98304, 1.45},  {2, 131072, 1.46}, {4, 16384, 1.46},  {4, 32768, 1.57},  {4, 65536, 1.65},
                      {4, 98304, 1.68},  {4, 131072, 1.70}, {4, 196608, 1.71}, {8, 32768, 1.67},  {8, 65536, 1.76},
                      {8, 131072, 1.81}, {8, 196608, 1.83}};
  for (const Row& row : rows) {
    const TmsResult r = compute_tms(request("1b", "a100", row.devices, row.seq_len));
    EXPECT_EQ(round2(r.layout("striped").tms), row.tms) << "N=" << row.devices << " n=" << row.seq_len << " got "
                                                         << r.layout("striped").tms;
  }
}

// The same number from the formula written out by hand for N = 2, n = 8192.
TEST(Tms, MatchesTheFormulaByHand) {
  const double d = 2048, d_ff = 5504, vocab = 32000, layers = 22, c = 4096;
  const double per_token = 2 * (4 * d * d + 2 * d * d_ff) + 2 * d * vocab / layers;
  const double contiguous_pairs = c * (c + 1) / 2 + c * c;  // diagonal round, then one full block
  const double striped_pairs = 2 * (c * (c + 1) / 2);       // c(c+1)/2 on the busiest device each round
  const double expected = (c * per_token + 2 * 4 * d * contiguous_pairs) / (c * per_token + 2 * 4 * d * striped_pairs);
  const TmsResult r = compute_tms(request("1b", "a100", 2, 8192));
  EXPECT_NEAR(r.layout("striped").tms, expected, 1e-12);
  EXPECT_EQ(r.layout("contiguous").elements.lockstep, static_cast<Count>(contiguous_pairs));
  EXPECT_EQ(r.layout("striped").elements.lockstep, static_cast<Count>(striped_pairs));
  EXPECT_DOUBLE_EQ(r.attention_flop_weight, 2.0);
  EXPECT_DOUBLE_EQ(r.layout("contiguous").tms, 1.0);
}

TEST(Tms, ModelParallelismAndSharedMultipliersCancel) {
  const TmsResult base = compute_tms(request("7b", "a100", 4, 65536));
  for (const Count m : {2, 4, 8}) {
    TmsRequest q = request("7b", "a100", 4, 65536);
    q.model_parallel = m;
    EXPECT_NEAR(compute_tms(q).layout("striped").tms, base.layout("striped").tms, 1e-12) << "M=" << m;
  }
  for (const auto pass : {TrainingPass::forward, TrainingPass::forward_backward}) {
    for (const bool recompute : {false, true}) {
      TmsRequest q = request("7b", "a100", 4, 65536);
      q.pass = pass;
      q.recompute = recompute;
      if (recompute && pass == TrainingPass::forward) {  // nothing to recompute without a backward
        EXPECT_THROW((void)compute_tms(q), InputError);
        continue;
      }
      EXPECT_NEAR(compute_tms(q).layout("striped").tms, base.layout("striped").tms, 1e-12);
    }
  }
  // In the exact convention attention's backward (2.5x) differs from the matmuls' (2x): no cancellation.
  TmsRequest fwd = request("7b", "a100", 4, 65536);
  fwd.convention = FlopConvention::exact;
  fwd.pass = TrainingPass::forward;
  TmsRequest both = fwd;
  both.pass = TrainingPass::forward_backward;
  EXPECT_GT(compute_tms(both).layout("striped").tms, compute_tms(fwd).layout("striped").tms);
}

TEST(Tms, TileAwareTmsIsOneWhenTilesCannotSkip) {
  // Paper, section 5: with 2048x4096 tiles and a block of 4096, striping saves nothing.
  const TmsResult r = compute_tms(request("1b", "a100", 8, 8 * 4096));
  EXPECT_DOUBLE_EQ(r.layout("striped").tms_tiles, 1.0);
  EXPECT_GT(r.layout("striped").tms, 1.5);
  // Finer tiles approach the element-level TMS from below.
  TmsRequest fine = request("1b", "a100", 8, 8 * 4096);
  fine.tile = TileShape{64, 64};
  const TmsResult f = compute_tms(fine);
  EXPECT_LT(f.layout("striped").tms_tiles, f.layout("striped").tms + 1e-9);
  EXPECT_GT(f.layout("striped").tms_tiles, 1.5);
}

TEST(Tms, WeightAndSequenceLengthMoveTmsTheRightWay) {
  TmsRequest tpu = request("1b", "tpu-v4", 8, 131072);
  const TmsResult a = compute_tms(request("1b", "a100", 8, 131072));
  const TmsResult t = compute_tms(tpu);
  EXPECT_DOUBLE_EQ(t.attention_flop_weight, 1.0);
  EXPECT_LT(t.layout("striped").tms, a.layout("striped").tms);  // attention weighs less
  EXPECT_LT(compute_tms(request("1b", "a100", 8, 65536)).layout("striped").tms, a.layout("striped").tms);
  // Bounded by 2 in the limit (paper, section 3).
  EXPECT_LT(compute_tms(request("1b", "a100", 64, 16 << 20)).layout("striped").tms, 2.0);
}

TEST(Tms, ExactConventionCountsGroupedKvAndSwiGlu) {
  const TransformerModel llama = catalog().model("llama3-8b");
  const FlopCounts exact = count_flops(llama, FlopConvention::exact);
  const double d = 4096, kv = 8 * 128, d_ff = 14336, vocab = 128256, layers = 32;
  EXPECT_DOUBLE_EQ(exact.non_attention_per_token,
                   layers * (2 * (d * d + 2 * d * kv + d * d) + 2 * 3 * d * d_ff) + 2 * d * vocab);
  EXPECT_DOUBLE_EQ(exact.attention_per_pair, layers * 4 * d);
  const FlopCounts paper = count_flops(llama, FlopConvention::paper);
  EXPECT_DOUBLE_EQ(paper.non_attention_per_token, layers * (2 * (4 * d * d + 2 * d * d_ff)) + 2 * d * vocab);
}

TEST(Tms, ShippedConfigsLoadWithSources) {
  // Every shipped config answers to its file's stem and to each name the listing gives it.
  const auto models = catalog().shipped_models();
  ASSERT_GE(models.size(), 5u);
  for (const auto& shipped : models) {
    const TransformerModel m = catalog().model(shipped.stem);
    EXPECT_EQ(m.name, shipped.stem);
    EXPECT_FALSE(m.source.empty()) << shipped.stem;
  }
  EXPECT_EQ(catalog().model("llama3-70b").kv_heads, 8);
  EXPECT_EQ(catalog().model("3b").d_ff, 8640);
  const auto hardware = catalog().shipped_hardware();
  ASSERT_GE(hardware.size(), 9u);
  for (const auto& shipped : hardware) {
    std::vector<std::string> names = shipped.aliases;
    names.push_back(shipped.stem);
    for (const auto& name : names) {
      const HardwareProfile h = catalog().hardware(name);
      EXPECT_EQ(h.name, shipped.stem) << name;
      EXPECT_TRUE(h.sources.contains("peak_tflops")) << name;
      EXPECT_GT(h.memory_bandwidth, 0) << name;
    }
  }
  const auto a100 = std::ranges::find(hardware, std::string("a100-80gb"), &ShippedConfig::stem);
  ASSERT_NE(a100, hardware.end());
  EXPECT_EQ(a100->aliases, std::vector<std::string>{"a100"});
  EXPECT_EQ(catalog().hardware("a100").default_tile, (TileShape{2048, 4096}));
  EXPECT_EQ(catalog().hardware("tpu-v3").default_tile, (TileShape{2048, 2048}));
}

TEST(Tms, TheDeviceADriverNamesFindsItsProfile) {
  // The names CUDA's driver reports; the longest device name a profile claims wins.
  const auto name_of = [](const char* device) {
    const auto profile = catalog().hardware_for_device(device);
    return profile ? profile->name : std::string("none");
  };
  EXPECT_EQ(name_of("NVIDIA H100 80GB HBM3"), "h100-sxm");
  EXPECT_EQ(name_of("NVIDIA H100 PCIe"), "h100-pcie");
  EXPECT_EQ(name_of("NVIDIA H200"), "h200");
  EXPECT_EQ(name_of("NVIDIA A100-SXM4-80GB"), "a100-80gb");
  EXPECT_EQ(name_of("Tesla V100-SXM2-32GB"), "none");
}

TEST(Tms, RejectsBadRequests) {
  EXPECT_THROW((void)catalog().model("13b"), InputError);
  EXPECT_THROW((void)catalog().hardware("gaudi3"), InputError);
  EXPECT_THROW((void)catalog().model("/nonexistent/model.json"), InputError);
  TmsRequest q = request("1b", "a100", 8, 262144);
  q.model_parallel = 3;  // 16 heads
  EXPECT_THROW((void)compute_tms(q), InputError);
  EXPECT_THROW((void)compute_tms(request("1b", "a100", 8, 262144 + 8)), InputError);  // zigzag needs 2N
  // The plan alone (parse-only mode) rejects the same requests and accepts a good one.
  EXPECT_THROW((void)plan_tms(q), InputError);
  EXPECT_THROW((void)plan_tms(request("1b", "a100", 8, 262144 + 8)), InputError);
  TmsRequest windowed = request("1b", "a100", 8, 262144);
  windowed.mask = "window:0";
  EXPECT_THROW((void)plan_tms(windowed), InputError);
  windowed.mask = "window:4k";
  windowed.extra_layouts = {"balanced", "block-striped:64"};
  EXPECT_NO_THROW((void)plan_tms(windowed));
}

}  // namespace
}  // namespace stripesim::model
