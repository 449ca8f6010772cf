// The validator's GPU backends (validate/cuda). On a machine without a CUDA GPU every test that
// needs one skips, saying so; what runs everywhere: a missing GPU is a prompt DeviceFailure of
// rank 0 naming the operation, and shapes the kernel was not compiled for are InputErrors. On a
// GPU: the ring's output equals dense attention for every layout and mask in bf16 and fp16 on
// both backends, the kernel's own tile classification equals the work model's counts, timings
// sit where the work is, and the out-of-memory and hung-peer paths fail with named ranks; the
// backward ring's dQ, dK and dV equal dense gradients, and so do the GPU reference's.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "stripesim/model/io/config_catalog.hpp"
#include "stripesim/model/io/input_error.hpp"
#include "stripesim/model/work/work_model.hpp"
#include "stripesim/sim/kernel_profile.hpp"
#include "stripesim/validate/block_attention_backward.hpp"
#include "stripesim/validate/comparison.hpp"
#include "stripesim/validate/gpu_backends.hpp"
#include "stripesim/validate/reference_attention.hpp"
#include "stripesim/validate/reference_cache.hpp"
#include "stripesim/validate/validation_run.hpp"

namespace stripesim::validate {
namespace {

#define SKIP_WITHOUT_GPU()                                                     \
  do {                                                                         \
    if (gpu_count() == 0) GTEST_SKIP() << "no CUDA GPU on this machine";       \
  } while (false)
#define SKIP_WITHOUT_HOPPER()                                                                    \
  do {                                                                                           \
    SKIP_WITHOUT_GPU();                                                                          \
    if (!gpu_is_hopper()) GTEST_SKIP() << "the wgmma kernel needs a Hopper GPU (compute capability 9.0)"; \
  } while (false)

RingCase gpu_case(std::string layout, std::string mask, Count devices, Precision precision) {
  RingCase c;
  c.seq_len = 2048;
  c.devices = devices;
  c.layout = std::move(layout);
  c.mask = std::move(mask);
  c.tile = {64, 64};
  c.heads = 4;
  c.kv_heads = 2;  // grouped K/V heads
  c.head_dim = 64;
  c.precision = precision;
  c.seed = 11;
  return c;
}

// Sets STRIPESIM_INJECT_FAULT for one scope.
class InjectedFault {
 public:
  explicit InjectedFault(const char* value) { setenv("STRIPESIM_INJECT_FAULT", value, 1); }
  InjectedFault(const InjectedFault&) = delete;
  InjectedFault& operator=(const InjectedFault&) = delete;
  ~InjectedFault() { unsetenv("STRIPESIM_INJECT_FAULT"); }
};

// --- everywhere -------------------------------------------------------------------------------

TEST(GpuBackends, WithoutAGpuFailPromptlyNamingRankAndOperation) {
  if (gpu_count() > 0) GTEST_SKIP() << "a CUDA GPU is visible: this test is for machines without one";
  for (const char* name : {"cuda", "nccl", "cuda allgather", "cuda ulysses", "nccl allgather", "nccl ulysses"}) {
    const std::string what(name);
    RingCase c = gpu_case("zigzag", "causal", 2, Precision::bf16);
    if (what.find(' ') != std::string::npos) c.cp = what.substr(5);
    const RingProblem problem(c);
    auto backend = what.starts_with("cuda") ? make_cuda_backend() : make_nccl_backend();
    const auto start = std::chrono::steady_clock::now();
    try {
      static_cast<void>(backend->run(problem, RunOptions{0, 1, 60}));
      ADD_FAILURE() << name << ": run() returned without a GPU";
    } catch (const DeviceFailure& failure) {
      EXPECT_EQ(failure.rank(), 0) << name;
      EXPECT_EQ(failure.operation(), "cudaGetDeviceCount") << name;
      EXPECT_NE(std::string(failure.what()).find("no CUDA device is visible"), std::string::npos) << failure.what();
      EXPECT_NE(std::string(failure.what()).find("cudaGetDeviceCount"), std::string::npos) << failure.what();
    }
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 1.0) << name;
  }
}

TEST(GpuBackends, ShapesWithoutACompiledKernelAreInputErrors) {
  // Checked before any device is touched: the same answer with or without a GPU.
  auto expect_input_error = [](RingCase c, const std::string& flag) {
    const RingProblem problem(c);
    try {
      static_cast<void>(make_cuda_backend()->run(problem, RunOptions{0, 1, 60}));
      ADD_FAILURE() << "no InputError for " << flag;
    } catch (const model::InputError& error) {
      EXPECT_EQ(std::string(error.what()).rfind(flag, 0), 0u) << error.what();
    }
  };
  RingCase c = gpu_case("striped", "causal", 2, Precision::bf16);
  c.head_dim = 96;
  expect_input_error(c, "--head-dim 96");
  c = gpu_case("striped", "causal", 2, Precision::bf16);
  c.tile = {32, 64};
  expect_input_error(c, "--tile 32x64");
  expect_input_error(gpu_case("striped", "causal", 2, Precision::fp32), "--dtype fp32");
}

TEST(GpuBackends, UnknownInjectedFaultIsAnInputError) {
  const InjectedFault fault("skip-sends:1");
  const RingProblem problem(gpu_case("striped", "causal", 2, Precision::bf16));
  EXPECT_THROW(static_cast<void>(make_cuda_backend()->run(problem, RunOptions{0, 1, 60})), model::InputError);
}

// A skipped send the run never reaches would let the hung-peer test pass without a hang: refused
// before any device is touched, with or without a GPU.
TEST(GpuBackends, SkippedSendThatTheRunNeverReachesIsAnInputError) {
  const InjectedFault fault("skip-send:0");
  const RingProblem problem(gpu_case("zigzag", "causal", 2, Precision::bf16));
  auto expect_refused = [&](RingBackend& backend, const RunOptions& options, const std::string& expected) {
    try {
      static_cast<void>(backend.run(problem, options));
      ADD_FAILURE() << "no InputError for " << expected;
    } catch (const model::InputError& error) {
      EXPECT_NE(std::string(error.what()).find(expected), std::string::npos) << error.what();
    }
  };
  // The cuda backend has no NCCL transfer to skip.
  expect_refused(*make_cuda_backend(), RunOptions{1, 1, 60}, "this run is --backend cuda");
  // One pass: the first pass connects the ranks and runs whole.
  expect_refused(*make_nccl_backend(), RunOptions{0, 1, 60}, "this run makes 1 (warm-up + iterations)");
}

// validate checks a matrix's ring sizes against this before the first case runs (a default
// --compare matrix of N = 2, 4 and 8 on a node of 4 GPUs was refused at its first N = 8 case).
TEST(GpuBackends, NcclRingsAreBoundedByTheVisibleGpus) {
  EXPECT_EQ(make_cuda_backend()->device_limit(), std::nullopt);  // one GPU plays every device
  const std::optional<Count> limit = make_nccl_backend()->device_limit();
  if (gpu_count() == 0) {
    EXPECT_EQ(limit, std::nullopt);  // run() reports the missing GPU, exit code 3
  } else {
    EXPECT_EQ(limit, std::optional<Count>(gpu_count()));
  }
}

// The shipped profiles of the validator's GPU kernels describe the scalar backward kernel compiled
// here (their backward costs were fitted on it): a thread block per 32 keys, so the time model
// places as many blocks as it launches.
TEST(GpuKernelProfiles, BackwardBlocksHoldTheKeysTheKernelGivesThem) {
  const model::ConfigCatalog catalog(STRIPESIM_SOURCE_DIR "/configs");
  for (const char* hardware : {"h100", "h200"}) {
    for (const char* kernel : {"stripesim-flash", "stripesim-wmma"}) {
      const sim::KernelProfile k = sim::load_kernel_profile(kernel, catalog, catalog.hardware(hardware));
      ASSERT_TRUE(k.backward_block_keys.has_value()) << hardware << "/" << kernel;
      EXPECT_EQ(*k.backward_block_keys, gpu_backward_block_keys(GpuBackwardKernel::scalar)) << hardware << "/" << kernel;
    }
  }
}

TEST(GpuBackends, BackendsComputeInHalfPrecisionOnly) {
  auto cuda = make_cuda_backend();
  auto nccl = make_nccl_backend();
  for (RingBackend* backend : {cuda.get(), nccl.get()}) {
    EXPECT_TRUE(backend->supports(Precision::bf16));
    EXPECT_TRUE(backend->supports(Precision::fp16));
    EXPECT_FALSE(backend->supports(Precision::fp32));
  }
}

TEST(GpuReference, WithoutAGpuFailsPromptlyNamingTheOperation) {
  if (gpu_count() > 0) GTEST_SKIP() << "a CUDA GPU is visible: this test is for machines without one";
  const RingProblem problem(gpu_case("zigzag", "causal", 2, Precision::bf16));
  try {
    static_cast<void>(gpu_reference_attention(problem, 60));
    ADD_FAILURE() << "gpu_reference_attention returned without a GPU";
  } catch (const DeviceFailure& failure) {
    EXPECT_EQ(failure.rank(), 0);
    EXPECT_EQ(failure.operation(), "cudaGetDeviceCount");
  }
}

// --- on a GPU ---------------------------------------------------------------------------------

struct LayoutMask {
  const char* layout;
  const char* mask;
};

std::string param_name(const ::testing::TestParamInfo<LayoutMask>& info) {
  std::string name = std::string(info.param.layout) + "_" + info.param.mask;
  for (char& ch : name) {
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return name;
}

const auto kLayoutsTimesMasks = ::testing::Values(
    LayoutMask{"contiguous", "causal"}, LayoutMask{"striped", "causal"}, LayoutMask{"zigzag", "causal"},
    LayoutMask{"block-striped:8", "causal"}, LayoutMask{"contiguous", "bidirectional"},
    LayoutMask{"striped", "bidirectional"}, LayoutMask{"zigzag", "bidirectional"},
    LayoutMask{"block-striped:8", "bidirectional"}, LayoutMask{"contiguous", "window:300"},
    LayoutMask{"striped", "window:300"}, LayoutMask{"zigzag", "window:300"}, LayoutMask{"block-striped:8", "window:300"},
    LayoutMask{"contiguous", "documents:700,1000,348"}, LayoutMask{"striped", "documents:700,1000,348"},
    LayoutMask{"zigzag", "documents:700,1000,348"}, LayoutMask{"block-striped:8", "documents:700,1000,348"},
    LayoutMask{"striped", "documents:700,1000,348:window=300"}, LayoutMask{"zigzag", "prefix:700"},
    LayoutMask{"striped", "prefix:700"});

// Runs `backend` in bf16 and fp16 on N devices and checks the output against dense attention.
void expect_matches_dense(RingBackend& backend, const LayoutMask& param, Count devices, const std::string& cp = "ring",
                          GpuKernel kernel = GpuKernel::flash) {
  std::vector<double> reference;  // the same Q, K, V and mask for both precisions
  for (const Precision precision : {Precision::bf16, Precision::fp16}) {
    RingCase c = gpu_case(param.layout, param.mask, devices, precision);
    c.cp = cp;
    c.gpu_kernel = kernel;
    const RingProblem problem(c);
    if (reference.empty()) reference = reference_attention(problem);
    const RingMeasurement m = backend.run(problem, RunOptions{1, 2, 60});
    const OutputError error = compare_output(m.output, reference);
    EXPECT_LT(error.relative, output_tolerance(precision))
        << backend.name() << " " << problem.ring_case().label() << " " << precision_name(precision)
        << ": max abs error " << error.max_abs << " of max " << error.max_reference;
    EXPECT_GT(error.max_reference, 0.01);
  }
}

class CudaRingMatchesDense : public ::testing::TestWithParam<LayoutMask> {};

TEST_P(CudaRingMatchesDense, Bf16AndFp16) {
  SKIP_WITHOUT_GPU();
  auto backend = make_cuda_backend();
  expect_matches_dense(*backend, GetParam(), 4);
}

INSTANTIATE_TEST_SUITE_P(LayoutsTimesMasks, CudaRingMatchesDense, kLayoutsTimesMasks, param_name);

// The wgmma kernel (Hopper only) in the ring, the all-gather and Ulysses.
class CudaWgmmaMatchesDense : public ::testing::TestWithParam<LayoutMask> {};

TEST_P(CudaWgmmaMatchesDense, Bf16AndFp16) {
  SKIP_WITHOUT_HOPPER();
  auto backend = make_cuda_backend();
  for (const char* cp : {"ring", "allgather", "ulysses"}) {
    SCOPED_TRACE(cp);
    expect_matches_dense(*backend, GetParam(), 4, cp, GpuKernel::wgmma);
  }
}

INSTANTIATE_TEST_SUITE_P(LayoutsTimesMasks, CudaWgmmaMatchesDense, kLayoutsTimesMasks, param_name);

// The all-gather (each device's queries against the gathered K/V in rank order, one call) and
// Ulysses (a device's heads of the whole sequence; 2 K/V heads over 4 devices, so neighbours
// share one) on the cuda backend, with either kernel (wmma classifies tiles itself).
class CudaCollectivesMatchDense : public ::testing::TestWithParam<LayoutMask> {};

TEST_P(CudaCollectivesMatchDense, Bf16AndFp16) {
  SKIP_WITHOUT_GPU();
  auto backend = make_cuda_backend();
  for (const char* cp : {"allgather", "ulysses"}) {
    SCOPED_TRACE(cp);
    expect_matches_dense(*backend, GetParam(), 4, cp);
    expect_matches_dense(*backend, GetParam(), 4, cp, GpuKernel::wmma);
  }
}

INSTANTIATE_TEST_SUITE_P(LayoutsTimesMasks, CudaCollectivesMatchDense, kLayoutsTimesMasks, param_name);

// The same on the nccl backend: ncclAllGather of K, V and positions; Ulysses' all-to-alls as
// grouped ncclSend/ncclRecv between packed buffers.
class NcclCollectivesMatchDense : public ::testing::TestWithParam<LayoutMask> {};

TEST_P(NcclCollectivesMatchDense, Bf16AndFp16) {
  SKIP_WITHOUT_GPU();
  if (gpu_count() < 2) GTEST_SKIP() << "the nccl backend needs 2 GPUs, this machine has " << gpu_count();
  auto backend = make_nccl_backend();
  for (const char* cp : {"allgather", "ulysses"}) {
    SCOPED_TRACE(cp);
    // Ulysses over 4 devices splits the 4 heads one each, over 2 two each.
    expect_matches_dense(*backend, GetParam(), gpu_count() >= 4 ? 4 : 2, cp);
  }
}

INSTANTIATE_TEST_SUITE_P(LayoutsTimesMasks, NcclCollectivesMatchDense, kLayoutsTimesMasks, param_name);

class NcclRingMatchesDense : public ::testing::TestWithParam<LayoutMask> {};

TEST_P(NcclRingMatchesDense, Bf16AndFp16) {
  SKIP_WITHOUT_GPU();
  if (gpu_count() < 2) GTEST_SKIP() << "the nccl backend needs 2 GPUs for a ring, this machine has " << gpu_count();
  auto backend = make_nccl_backend();
  expect_matches_dense(*backend, GetParam(), gpu_count() >= 4 ? 4 : 2);
}

INSTANTIATE_TEST_SUITE_P(LayoutsTimesMasks, NcclRingMatchesDense, kLayoutsTimesMasks, param_name);

// Calls check(case, first) for zigzag at n = 2000 on 2 devices (c = 1000: neither 64 nor 128
// divides it, so every block ends in a short query and key tile) at every compiled head size and
// tile, `first` when the case is the first of its head size (whose reference the rest share).
template <typename Check>
void for_each_compiled_shape(Check&& check) {
  for (const Count head_dim : {64, 128}) {
    bool first = true;
    for (const model::TileShape tile : {model::TileShape{64, 64}, {64, 128}, {128, 64}, {128, 128}}) {
      RingCase c = gpu_case("zigzag", "causal", 2, Precision::bf16);
      c.seq_len = 2000;
      c.heads = 2;
      c.kv_heads = 1;
      c.head_dim = head_dim;
      c.tile = tile;
      check(c, first);
      first = false;
    }
  }
}

void expect_every_compiled_shape_matches_dense(GpuKernel kernel) {
  auto backend = make_cuda_backend();
  std::vector<double> reference;
  for_each_compiled_shape([&](RingCase c, bool first) {
    c.gpu_kernel = kernel;
    const RingProblem problem(c);
    if (first) reference = reference_attention(problem);
    const OutputError error = compare_output(backend->run(problem, RunOptions{0, 1, 60}).output, reference);
    EXPECT_LT(error.relative, output_tolerance(Precision::bf16)) << gpu_kernel_name(kernel) << " " << c.label()
                                                                 << " head_dim " << c.head_dim;
  });
}

TEST(CudaKernel, EveryCompiledShapeWithShortLastTiles) {
  SKIP_WITHOUT_GPU();
  expect_every_compiled_shape_matches_dense(GpuKernel::flash);
  expect_every_compiled_shape_matches_dense(GpuKernel::wmma);
}

TEST(CudaKernel, WgmmaEveryCompiledShapeWithShortLastTiles) {
  SKIP_WITHOUT_HOPPER();
  expect_every_compiled_shape_matches_dense(GpuKernel::wgmma);
}

// The two implementations compute the same thing: on every layout and mask their outputs agree
// far more closely than either agrees with the float64 reference (both accumulate in fp32 from
// the same bf16 inputs; they differ in summation order and in rounding P to bf16).
TEST(CudaKernel, FlashAgreesWithTheSimpleKernel) {
  SKIP_WITHOUT_GPU();
  auto backend = make_cuda_backend();
  for (const char* layout : {"contiguous", "striped", "zigzag"}) {
    for (const char* mask : {"causal", "bidirectional", "window:300", "documents:700,1000,348"}) {
      RingCase c = gpu_case(layout, mask, 4, Precision::bf16);
      c.gpu_kernel = GpuKernel::wmma;
      const std::vector<double> simple = backend->run(RingProblem(c), RunOptions{0, 1, 60}).output;
      c.gpu_kernel = GpuKernel::flash;
      const std::vector<double> flash = backend->run(RingProblem(c), RunOptions{0, 1, 60}).output;
      const OutputError difference = compare_output(flash, simple);
      EXPECT_LT(difference.relative, 1e-2) << c.label();
    }
  }
}

// The wgmma kernel computes what the flash kernel does, in the same order within a key tile's
// softmax (the products differ in their internal summation order only).
TEST(CudaKernel, WgmmaAgreesWithFlash) {
  SKIP_WITHOUT_HOPPER();
  auto backend = make_cuda_backend();
  for (const char* layout : {"contiguous", "striped", "zigzag"}) {
    for (const char* mask : {"causal", "bidirectional", "window:300", "documents:700,1000,348"}) {
      for (const model::TileShape tile : {model::TileShape{64, 64}, model::TileShape{128, 128}}) {
        RingCase c = gpu_case(layout, mask, 4, Precision::bf16);
        c.tile = tile;
        c.gpu_kernel = GpuKernel::flash;
        const std::vector<double> flash = backend->run(RingProblem(c), RunOptions{0, 1, 60}).output;
        c.gpu_kernel = GpuKernel::wgmma;
        const std::vector<double> wgmma = backend->run(RingProblem(c), RunOptions{0, 1, 60}).output;
        EXPECT_LT(compare_output(wgmma, flash).relative, 1e-2) << c.label();
      }
    }
  }
}

// Scores spread over tens of units (Q times 64): rows' maxima jump by more than the lazy rescale's
// slack (2^8, flash_rows.cuh) from key tile to key tile, within a call and between rounds, so the
// flash and wgmma kernels rescale their accumulators mid-row, which uniform inputs in [-1, 1)
// never make them do. The output still equals the dense reference (cuBLAS on the same rounded
// inputs) and the wmma kernel's, which rescales at every tile.
void expect_exact_when_row_maxima_jump(GpuKernel kernel) {
  auto backend = make_cuda_backend();
  for (const Precision precision : {Precision::bf16, Precision::fp16}) {
    for (const model::TileShape tile : {model::TileShape{64, 64}, model::TileShape{128, 128}}) {
      for (const char* layout : {"contiguous", "striped", "zigzag"}) {
        for (const char* mask : {"causal", "bidirectional", "documents:700,1000,348"}) {
          RingCase c = gpu_case(layout, mask, 4, precision);
          c.q_scale = 64;
          c.tile = tile;
          c.gpu_kernel = kernel;
          const RingProblem problem(c);
          const std::vector<double> lazy = backend->run(problem, RunOptions{0, 1, 60}).output;
          const OutputError error = compare_output(lazy, backend->dense_reference(problem, RunOptions{}));
          EXPECT_LT(error.relative, output_tolerance(precision))
              << gpu_kernel_name(kernel) << " " << c.label() << " " << precision_name(precision);
          c.gpu_kernel = GpuKernel::wmma;
          const std::vector<double> simple = backend->run(RingProblem(c), RunOptions{0, 1, 60}).output;
          EXPECT_LT(compare_output(lazy, simple).relative, 1e-2)
              << gpu_kernel_name(kernel) << " " << c.label() << " " << precision_name(precision);
        }
      }
    }
  }
}

TEST(CudaKernel, FlashRescalesWhenRowMaximaJump) {
  SKIP_WITHOUT_GPU();
  expect_exact_when_row_maxima_jump(GpuKernel::flash);
}

TEST(CudaKernel, WgmmaRescalesWhenRowMaximaJump) {
  SKIP_WITHOUT_HOPPER();
  expect_exact_when_row_maxima_jump(GpuKernel::wgmma);
}

TEST(CudaKernel, ClassifiesTilesExactlyLikeTheWorkModel) {
  SKIP_WITHOUT_GPU();
  for (const char* layout : {"contiguous", "striped", "zigzag", "block-striped:8"}) {
    for (const char* mask : {"causal", "bidirectional", "window:300", "documents:700,1000,220"}) {
      RingCase c = gpu_case(layout, mask, 4, Precision::bf16);
      c.seq_len = 1920;   // c = 480: short last tiles of both sizes
      c.tile = {64, 128};
      const RingProblem problem(c);
      const model::Work work = model::count_work(problem.layout(), problem.mask(), c.tile, 1);
      // wmma classifies tiles itself; flash and wgmma (on Hopper) run the host's schedule and
      // count what they ran.
      std::vector<GpuKernel> kernels{GpuKernel::wmma, GpuKernel::flash};
      if (gpu_is_hopper()) kernels.push_back(GpuKernel::wgmma);
      for (const GpuKernel kernel : kernels) {
        c.gpu_kernel = kernel;
        const KernelTileCounts counts = count_kernel_tiles(RingProblem(c));
        for (Count r = 0; r < c.devices; ++r) {
          for (Count d = 0; d < c.devices; ++d) {
            const auto cell = static_cast<std::size_t>(r * c.devices + d);
            EXPECT_EQ(counts.active[cell], work.active_tiles.at(r, d))
                << gpu_kernel_name(kernel) << " " << c.label() << " round " << r << " device " << d;
            EXPECT_EQ(counts.partial[cell], work.partial_tiles.at(r, d))
                << gpu_kernel_name(kernel) << " " << c.label() << " round " << r << " device " << d;
          }
        }
      }
    }
  }
}

TEST(CudaBackend, TimingsSitWhereTheWorkIs) {
  SKIP_WITHOUT_GPU();
  const RingProblem problem(gpu_case("contiguous", "causal", 4, Precision::bf16));
  const RingMeasurement m = make_cuda_backend()->run(problem, RunOptions{1, 3, 60});
  EXPECT_EQ(m.backend, "cuda");
  EXPECT_FALSE(m.device_name.empty());
  ASSERT_EQ(m.kernel_us.size(), 3u);
  ASSERT_EQ(m.handoff_us.size(), 3u);
  ASSERT_EQ(m.wall_us.size(), 3u);
  const RingCase& c = problem.ring_case();
  const Count block = problem.block_size();
  EXPECT_EQ(m.handoff_bytes, 2 * block * c.kv_heads * c.head_dim * 2 + block * 8);
  for (std::size_t i = 0; i < 3; ++i) {
    double sum = 0;
    for (Count r = 0; r < 4; ++r) {
      for (Count d = 0; d < 4; ++d) {
        const auto cell = static_cast<std::size_t>(r * 4 + d);
        EXPECT_EQ(m.kernel_us[i][cell] > 0, problem.block_active(r, d)) << "round " << r << " device " << d;
        EXPECT_EQ(m.handoff_us[i][cell] > 0, r < 3) << "round " << r << " device " << d;
        sum += m.kernel_us[i][cell] + m.handoff_us[i][cell];
      }
    }
    // One stream: the ring's wall time covers every kernel and copy.
    EXPECT_GE(m.wall_us[i], 0.99 * sum);
  }
  for (const double x : m.output) ASSERT_FALSE(std::isnan(x));
}

// The collectives fill round 0's cells: every device's call and its collective copies (Ulysses:
// in and back), nothing in later rounds; the wall covers them all; their hand-off bytes are the
// all-gather's block and Ulysses' pair of Q/K/V slices; and run_case checks and predicts them.
TEST(CudaBackend, CollectivesTimeOneCallPerDeviceAndArePredicted) {
  SKIP_WITHOUT_GPU();
  const model::ConfigCatalog catalog(STRIPESIM_SOURCE_DIR "/configs");
  const model::HardwareProfile h200 = catalog.hardware("h200");
  const sim::KernelProfile kernel = sim::load_kernel_profile("stripesim-flash", catalog, h200);
  for (const char* cp : {"allgather", "ulysses"}) {
    SCOPED_TRACE(cp);
    RingCase c = gpu_case("zigzag", "causal", 4, Precision::bf16);
    c.cp = cp;
    const RingProblem problem(c);
    const RingMeasurement m = make_cuda_backend()->run(problem, RunOptions{1, 3, 60});
    EXPECT_EQ(m.backend, "cuda");
    ASSERT_EQ(m.kernel_us.size(), 3u);
    ASSERT_EQ(m.wall_us.size(), 3u);
    const Count block = problem.block_size();
    // Ulysses over 4 devices: 1 of the 4 heads and 1 of the 2 K/V heads each, so a device sends
    // each other one its block's Q, K and V of one head.
    const std::int64_t expected_bytes = std::string(cp) == "allgather" ? 2 * block * c.kv_heads * c.head_dim * 2 + block * 8
                                                                      : 3 * block * c.head_dim * 2;
    EXPECT_EQ(m.handoff_bytes, expected_bytes);
    for (std::size_t i = 0; i < 3; ++i) {
      double sum = 0;
      for (Count r = 0; r < 4; ++r) {
        for (Count d = 0; d < 4; ++d) {
          const auto cell = static_cast<std::size_t>(r * 4 + d);
          EXPECT_EQ(m.kernel_us[i][cell] > 0, r == 0) << "round " << r << " device " << d;
          EXPECT_EQ(m.handoff_us[i][cell] > 0, r == 0) << "round " << r << " device " << d;
          sum += m.kernel_us[i][cell] + m.handoff_us[i][cell];
        }
      }
      EXPECT_GE(m.wall_us[i], 0.99 * sum);
    }
    for (const double x : m.output) ASSERT_FALSE(std::isnan(x));
    const CaseResult result = run_case(*make_cuda_backend(), plan_ring_problem(c), RunOptions{1, 3, 60}, true);
    EXPECT_TRUE(result.passed);
    const CasePrediction p = predict_case(result, h200, kernel, false);
    for (Count d = 0; d < 4; ++d) EXPECT_GT(p.kernel_us[static_cast<size_t>(d)], 0) << d;
    EXPECT_GT(p.total_us, 0);
  }
}

TEST(CudaBackend, OutOfMemoryIsADeviceFailureNamingTheAllocation) {
  SKIP_WITHOUT_GPU();
  const InjectedFault fault("oom");
  const RingProblem problem(gpu_case("zigzag", "causal", 2, Precision::bf16));
  try {
    static_cast<void>(make_cuda_backend()->run(problem, RunOptions{0, 1, 60}));
    ADD_FAILURE() << "no DeviceFailure";
  } catch (const DeviceFailure& failure) {
    EXPECT_EQ(failure.rank(), 0);
    EXPECT_EQ(failure.operation().rfind("cudaMalloc of", 0), 0u) << failure.operation();
    EXPECT_NE(failure.operation().find("1 TiB"), std::string::npos) << failure.operation();
  }
  // The failed allocation leaves the GPU usable.
  unsetenv("STRIPESIM_INJECT_FAULT");
  const RingMeasurement m = make_cuda_backend()->run(problem, RunOptions{0, 1, 60});
  EXPECT_LT(compare_output(m.output, reference_attention(problem)).relative, output_tolerance(Precision::bf16));
}

TEST(NcclBackend, FewerGpusThanDevicesIsAnInputError) {
  SKIP_WITHOUT_GPU();
  const Count devices = gpu_count() + 1;
  RingCase c = gpu_case("striped", "causal", devices, Precision::bf16);
  c.seq_len = 64 * devices;
  const RingProblem problem(c);
  try {
    static_cast<void>(make_nccl_backend()->run(problem, RunOptions{0, 1, 60}));
    ADD_FAILURE() << "no InputError";
  } catch (const model::InputError& error) {
    const std::string expected = "needs " + std::to_string(devices) + " GPUs, this machine has " +
                                 std::to_string(gpu_count());
    EXPECT_NE(std::string(error.what()).find(expected), std::string::npos) << error.what();
  }
}

// Last: an aborted communicator is the most disruptive thing these tests do.
TEST(NcclBackend, HungPeerTimesOutNamingTheRankThatDidNotComplete) {
  SKIP_WITHOUT_GPU();
  if (gpu_count() < 2) GTEST_SKIP() << "the nccl backend needs 2 GPUs for a ring, this machine has " << gpu_count();
  // Rank 0 does not send in round 0 after the warm-up pass (which connects the ranks): rank 1 waits.
  const InjectedFault fault("skip-send:0");
  const RingProblem problem(gpu_case("zigzag", "causal", 2, Precision::bf16));
  const auto start = std::chrono::steady_clock::now();
  try {
    static_cast<void>(make_nccl_backend()->run(problem, RunOptions{1, 1, 5}));
    ADD_FAILURE() << "no DeviceFailure";
  } catch (const DeviceFailure& failure) {
    EXPECT_EQ(failure.rank(), 1) << failure.what();
    EXPECT_EQ(failure.operation(), "ncclRecv from rank 0 in round 0") << failure.what();
    EXPECT_NE(std::string(failure.what()).find("aborted"), std::string::npos) << failure.what();
  }
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 60.0);
}

// --- the dense reference on the GPU -----------------------------------------------------------

const char* const kReferenceMasks[] = {"causal", "bidirectional", "window:300", "documents:700,1000,348"};

// The GPU reference of `problem` against the host's float64 loop on the unrounded inputs, with the
// automatic chunk (one chunk at n = 2048) and with 320 rows (seven chunks, the last one short),
// which runs the per-chunk key ranges and offsets on a small problem.
void expect_gpu_reference_near_host(const RingProblem& problem, const std::vector<double>& host, double at_least,
                                    double below) {
  for (const Count chunk_rows : {Count{0}, Count{320}}) {
    const OutputError error = compare_output(gpu_reference_attention(problem, 60, chunk_rows), host);
    const RingCase& c = problem.ring_case();
    EXPECT_LT(error.relative, below) << c.mask << " " << precision_name(c.precision) << " head_dim " << c.head_dim
                                     << " chunk rows " << chunk_rows << ": max abs " << error.max_abs;
    EXPECT_GE(error.relative, at_least) << c.mask << " " << precision_name(c.precision) << " chunk rows " << chunk_rows;
    EXPECT_GT(error.max_reference, 0.01);
  }
}

TEST(GpuReference, MatchesTheHostFloat64ReferenceInEveryPrecision) {
  SKIP_WITHOUT_GPU();
  // Bars from the host, these cases, float64 attention on rounded against unrounded inputs:
  // bf16 rounding moves the output by 2.0e-3 to 2.2e-3 of its maximum, fp16 by 2.4e-4 to 2.9e-4;
  // the same sums in fp32 differ by 1.4e-7 to 3.2e-6 (bidirectional, whose outputs are small
  // averages, most). So fp32 must be within 1e-4, and bf16 and fp16 within 2-3x of their
  // rounding's effect but not below half of it (inputs that were not rounded would pass a bar
  // alone: the GPU reference must compute on what the ring computes on).
  for (const char* mask : kReferenceMasks) {
    for (const Count head_dim : {64, 128}) {
      if (head_dim == 128 && std::string(mask) != "causal") continue;  // one case covers head_dim 128
      RingCase c = gpu_case("contiguous", mask, 4, Precision::fp32);
      c.head_dim = head_dim;
      const std::vector<double> host = reference_attention(RingProblem(c));  // the inputs ignore the precision
      expect_gpu_reference_near_host(RingProblem(c), host, 0, 1e-4);
      c.precision = Precision::bf16;
      expect_gpu_reference_near_host(RingProblem(c), host, 1e-3, 5e-3);
      c.precision = Precision::fp16;
      expect_gpu_reference_near_host(RingProblem(c), host, 1e-4, 1e-3);
    }
  }
}

TEST(GpuReference, IsWhatTheGpuBackendsCheckAgainst) {
  SKIP_WITHOUT_GPU();
  const RingProblem problem(gpu_case("striped", "window:300", 4, Precision::bf16));
  const std::vector<double> direct = gpu_reference_attention(problem, 60);
  EXPECT_LT(compare_output(make_cuda_backend()->dense_reference(problem, RunOptions{}), direct).relative, 1e-6);
  std::unique_ptr<RingBackend> nccl;
  try {
    nccl = make_nccl_backend();
  } catch (const model::InputError&) {
    return;  // built without NCCL
  }
  EXPECT_LT(compare_output(nccl->dense_reference(problem, RunOptions{}), direct).relative, 1e-6);
}

TEST(GpuReference, RunCaseChecksEveryLayoutAgainstOneReference) {
  SKIP_WITHOUT_GPU();
  shared_reference_cache().clear();
  auto backend = make_cuda_backend();
  for (const char* layout : {"contiguous", "zigzag", "striped"}) {
    const RingCase c = gpu_case(layout, "causal", 4, Precision::bf16);
    const CaseResult result = run_case(*backend, plan_ring_problem(c), RunOptions{0, 1, 60}, true);
    EXPECT_TRUE(result.checked);
    EXPECT_TRUE(result.passed) << layout << ": relative error " << result.error.relative;
  }
  EXPECT_EQ(shared_reference_cache().entries(), 1u);
}

// float64 dense attention of a few query rows on the host (the whole reference is too slow at
// this size), as [row][h][i].
std::vector<double> host_rows(const RingProblem& problem, const std::vector<Position>& rows) {
  const RingCase& c = problem.ring_case();
  const auto heads = static_cast<std::size_t>(c.heads);
  const auto dim = static_cast<std::size_t>(c.head_dim);
  const auto kv_heads = static_cast<std::size_t>(c.kv_heads);
  std::vector<double> out;
  for (const Position p : rows) {
    const auto lo = static_cast<std::size_t>(problem.mask().lowest_key(p));
    const auto hi = static_cast<std::size_t>(problem.mask().highest_key(p));
    for (std::size_t h = 0; h < heads; ++h) {
      const double* q = &problem.q()[(static_cast<std::size_t>(p) * heads + h) * dim];
      const std::size_t kvh = h / (heads / kv_heads);
      std::vector<double> scores;
      for (std::size_t key = lo; key <= hi; ++key) {
        double dot = 0;
        for (std::size_t i = 0; i < dim; ++i) dot += q[i] * problem.k()[(key * kv_heads + kvh) * dim + i];
        scores.push_back(dot * problem.scale());
      }
      const double best = *std::max_element(scores.begin(), scores.end());
      std::vector<double> o(dim, 0.0);
      double sum = 0;
      for (std::size_t key = lo; key <= hi; ++key) {
        const double weight = std::exp(scores[key - lo] - best);
        sum += weight;
        for (std::size_t i = 0; i < dim; ++i) o[i] += weight * problem.v()[(key * kv_heads + kvh) * dim + i];
      }
      for (const double x : o) out.push_back(x / sum);
    }
  }
  return out;
}

// GPU-sized problems: prints the reference's time (host rounding and transfers included) and
// checks a few rows, in the first, a middle and the last chunk, against the host.
TEST(GpuReference, LargeProblemsTimeAndSpotCheck) {
  SKIP_WITHOUT_GPU();
  struct Large {
    Count seq_len;
    const char* mask;
    Precision precision;
    double below;  // as in MatchesTheHostFloat64ReferenceInEveryPrecision
  };
  // On the host, these rows of the 64k case move by 1.7e-3 under bf16 rounding (2.7e-3 for a
  // causal 32k case): the bars of the small cases hold.
  for (const Large large :
       {Large{32768, "causal", Precision::fp32, 1e-4}, Large{65536, "bidirectional", Precision::bf16, 5e-3}}) {
    RingCase c = gpu_case("contiguous", large.mask, 1, large.precision);
    c.seq_len = large.seq_len;
    c.heads = 16;
    c.kv_heads = 16;
    c.head_dim = 128;
    const RingProblem problem(c);
    const auto start = std::chrono::steady_clock::now();
    const std::vector<double> gpu = gpu_reference_attention(problem, 60);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::cout << "[ reference ] n=" << c.seq_len << " " << c.mask << " " << precision_name(c.precision)
              << " heads 16 x 128: " << seconds << " s on the GPU (chunks of " << gpu_reference_chunk_rows(c.seq_len)
              << " rows)\n";
    const std::vector<Position> rows = {0, 1, c.seq_len / 2 + 7, c.seq_len - 1};
    std::vector<double> picked;
    const auto row = static_cast<std::size_t>(c.heads * c.head_dim);
    for (const Position p : rows) {
      const auto first = gpu.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(p) * row);
      picked.insert(picked.end(), first, first + static_cast<std::ptrdiff_t>(row));
    }
    const OutputError error = compare_output(picked, host_rows(problem, rows));
    EXPECT_LT(error.relative, large.below) << c.label() << ": max abs " << error.max_abs;
  }
}

// --- the backward (--pass fwdbwd, cuda backend) ------------------------------------------------

// The cuBLAS gradients against the host's float64 ones: fp32 on the same inputs within 1e-3 (with
// chunks of 512 rows: several chunks and key ranges), bf16 within the rounding's 2e-2.
TEST(GpuReference, GradientsMatchTheHostFloat64Gradients) {
  SKIP_WITHOUT_GPU();
  for (const char* mask : {"causal", "window:300", "documents:700,1000,348"}) {
    RingCase c = gpu_case("contiguous", mask, 4, Precision::fp32);
    c.backward = true;
    const std::vector<double> host = reference_gradients(RingProblem(c));
    const GradientErrors fp32 = compare_gradients(gpu_reference_gradients(RingProblem(c), 60, 512), host, c);
    EXPECT_LT(fp32.worst_relative(), 1e-3) << mask << ": dQ " << fp32.dq.relative << " dK " << fp32.dk.relative << " dV "
                                           << fp32.dv.relative;
    c.precision = Precision::bf16;
    const GradientErrors bf16 = compare_gradients(gpu_reference_gradients(RingProblem(c), 60), host, c);
    EXPECT_LT(bf16.worst_relative(), 2e-2) << mask;
    EXPECT_GT(bf16.worst_relative(), 0.0) << mask << ": the inputs were rounded to bf16";
  }
}

// The backward ring on one GPU: dQ, dK and dV against the host's float64 gradients for every
// layout and mask in bf16 and fp16, with either backward kernel, its backward kernels timed
// exactly where the forward ones run, and a hand-off (the dK/dV accumulator) every round.
class CudaBackwardMatchesDense : public ::testing::TestWithParam<LayoutMask> {};

constexpr GpuBackwardKernel kBackwardKernels[] = {GpuBackwardKernel::scalar, GpuBackwardKernel::wmma};

TEST_P(CudaBackwardMatchesDense, Bf16AndFp16) {
  SKIP_WITHOUT_GPU();
  auto backend = make_cuda_backend();
  std::vector<double> host;  // the same Q, K, V, dO and mask for both kernels and precisions
  for (const GpuBackwardKernel kernel : kBackwardKernels) {
    for (const Precision precision : {Precision::bf16, Precision::fp16}) {
      RingCase c = gpu_case(GetParam().layout, GetParam().mask, 4, precision);
      c.backward = true;
      c.gpu_backward_kernel = kernel;
      const RingProblem problem(c);
      if (host.empty()) host = reference_gradients(problem);
      const RingMeasurement m = backend->run(problem, RunOptions{1, 2, 60});
      const GradientErrors e = compare_gradients(m.gradients, host, c);
      EXPECT_LT(e.worst_relative(), output_tolerance(precision))
          << c.label() << " " << precision_name(precision) << " " << gpu_backward_kernel_name(kernel) << ": dQ "
          << e.dq.relative << " dK " << e.dk.relative << " dV " << e.dv.relative;
      ASSERT_EQ(m.backward_kernel_us.size(), 2u);
      for (Count r = 0; r < 4; ++r) {
        for (Count d = 0; d < 4; ++d) {
          const auto cell = static_cast<std::size_t>(r * 4 + d);
          EXPECT_EQ(m.backward_kernel_us[0][cell] > 0, problem.block_active(r, d)) << "round " << r << " device " << d;
          EXPECT_GT(m.backward_handoff_us[0][cell], 0) << "round " << r << " device " << d;
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(LayoutsTimesMasks, CudaBackwardMatchesDense, kLayoutsTimesMasks, param_name);

TEST(CudaBackward, EveryCompiledShapeWithShortLastTiles) {
  SKIP_WITHOUT_GPU();
  // The last key tile of a block holds 104 or 40 keys, so the last thread block of a tile holds
  // 8 (scalar, 32 keys a block) or 40 (wmma, 64), and the last query tile 104 or 40 queries.
  auto backend = make_cuda_backend();
  for (const GpuBackwardKernel kernel : kBackwardKernels) {
    std::vector<double> host;
    for_each_compiled_shape([&](RingCase c, bool first) {
      c.backward = true;
      c.gpu_backward_kernel = kernel;
      const RingProblem problem(c);
      if (first) host = reference_gradients(problem);
      const GradientErrors e = compare_gradients(backend->run(problem, RunOptions{0, 1, 60}).gradients, host, c);
      EXPECT_LT(e.worst_relative(), 2e-2) << gpu_backward_kernel_name(kernel) << " " << c.label() << " head_dim " << c.head_dim;
    });
  }
}

// The two backward kernels compute the same gradients: on every layout and mask they agree far
// more closely than either agrees with the float64 reference (both accumulate in fp32 from the
// same bf16 inputs; the tensor-core one rounds P and dS to bf16 before its products).
TEST(CudaBackward, TensorCoreKernelAgreesWithTheScalarOne) {
  SKIP_WITHOUT_GPU();
  auto backend = make_cuda_backend();
  for (const char* layout : {"contiguous", "striped", "zigzag"}) {
    for (const char* mask : {"causal", "bidirectional", "window:300", "documents:700,1000,348"}) {
      RingCase c = gpu_case(layout, mask, 4, Precision::bf16);
      c.backward = true;
      c.gpu_backward_kernel = GpuBackwardKernel::scalar;
      const std::vector<double> scalar = backend->run(RingProblem(c), RunOptions{0, 1, 60}).gradients;
      c.gpu_backward_kernel = GpuBackwardKernel::wmma;
      const std::vector<double> wmma = backend->run(RingProblem(c), RunOptions{0, 1, 60}).gradients;
      const GradientErrors difference = compare_gradients(wmma, scalar, c);
      EXPECT_LT(difference.worst_relative(), 1e-2) << c.label() << ": dQ " << difference.dq.relative << " dK "
                                                   << difference.dk.relative << " dV " << difference.dv.relative;
      EXPECT_GT(difference.worst_relative(), 0.0) << c.label() << ": the two kernels round differently";
    }
  }
}

TEST(GpuReference, RunCaseChecksTheGradientsOfABackwardCase) {
  SKIP_WITHOUT_GPU();
  shared_reference_cache().clear();
  auto backend = make_cuda_backend();
  RingCase c = gpu_case("zigzag", "causal", 4, Precision::bf16);
  c.backward = true;
  const CaseResult result = run_case(*backend, plan_ring_problem(c), RunOptions{0, 1, 60}, true);
  ASSERT_TRUE(result.gradient_error.has_value());
  EXPECT_TRUE(result.passed) << "output " << result.error.relative << ", gradients " << result.gradient_error->worst_relative();
  EXPECT_EQ(result.summary.backward_kernel.size(), 16u);
  EXPECT_EQ(shared_reference_cache().entries(), 2u);  // the output's and the gradients'
}

}  // namespace
}  // namespace stripesim::validate
