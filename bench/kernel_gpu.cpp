// bench_kernel_gpu: the validator's blockwise attention kernel as plain attention (N = 1: one
// device holds the whole sequence, one launch covers it), timed like FlashAttention is
// benchmarked so that bench/sdpa_reference.py can time PyTorch's SDPA on the same shapes:
// warm-up launches, then `reps` timed launches between CUDA events, median reported.
// Timed: the attention kernel plus the output normalisation (SDPA's time includes writing the
// normalised output); the softmax-state reset before each launch is not.
// TFLOP/s counts unmasked pairs only (FlashAttention's convention): 4 * pairs * head_dim * heads.
// With --backward-kernels, the backward kernel too, alone, after one forward (as PyTorch times
// the backward of a saved forward). One JSON line per (pass, kernel, sequence length, mask, tile)
// on standard output.
#include <CLI/CLI.hpp>
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <stdexcept>
#include <optional>
#include <string>
#include <vector>

#include "stripesim/model/flops/flop_model.hpp"
#include "stripesim/model/work/tile_shape.hpp"
#include "stripesim/validate/block_attention.hpp"
#include "stripesim/validate/block_attention_backward.hpp"
#include "stripesim/validate/tile_schedule.hpp"

namespace {

using stripesim::validate::Precision;
namespace gpu = stripesim::validate::gpu;

void check(cudaError_t status, const std::string& what) {
  if (status != cudaSuccess) throw std::runtime_error(fmt::format("{}: {}", what, cudaGetErrorString(status)));
}

// cudaMalloc'd memory released on every path.
class Buffer {
 public:
  explicit Buffer(std::size_t bytes) {
    check(cudaMalloc(&data_, bytes), fmt::format("cudaMalloc of {} bytes", bytes));
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() { static_cast<void>(cudaFree(data_)); }  // nothing to report from a destructor
  template <typename T>
  [[nodiscard]] T* as() const {
    return static_cast<T*>(data_);
  }

 private:
  void* data_ = nullptr;
};

class EventPair {
 public:
  EventPair() {
    check(cudaEventCreate(&start_), "cudaEventCreate");
    check(cudaEventCreate(&end_), "cudaEventCreate");
  }
  EventPair(const EventPair&) = delete;
  EventPair& operator=(const EventPair&) = delete;
  ~EventPair() {
    static_cast<void>(cudaEventDestroy(start_));
    static_cast<void>(cudaEventDestroy(end_));
  }
  [[nodiscard]] cudaEvent_t start() const { return start_; }
  [[nodiscard]] cudaEvent_t end() const { return end_; }

 private:
  cudaEvent_t start_ = nullptr, end_ = nullptr;
};

struct Options {
  std::vector<std::int64_t> seq_lens{4096, 8192, 16384, 32768};
  std::vector<std::string> masks{"causal", "bidirectional"};
  std::vector<std::string> tiles{"128x128", "128x64", "64x128", "64x64"};
  int heads = 16;
  int head_dim = 128;
  std::string dtype = "bf16";
  std::vector<std::string> kernels{"flash"};
  std::vector<std::string> backward_kernels;  // none: the forward only
  std::vector<std::string> backward_tiles{"128x128"};  // the backward's blocks hold 32 or 64 keys whatever the tile
  int warmup = 5;
  int reps = 20;
};

// Median and minimum milliseconds of `reps` runs of `timed` between two events, each after an
// untimed `setup`, following `warmup` untimed runs of both.
template <typename Setup, typename Timed>
std::pair<double, double> time_launches(const Options& o, Setup&& setup, Timed&& timed) {
  EventPair events;
  std::vector<double> ms;
  for (int rep = -o.warmup; rep < o.reps; ++rep) {
    setup();
    check(cudaEventRecord(events.start(), nullptr), "cudaEventRecord");
    timed();
    check(cudaEventRecord(events.end(), nullptr), "cudaEventRecord");
    check(cudaEventSynchronize(events.end()), "the timed kernels");
    float elapsed = 0;
    check(cudaEventElapsedTime(&elapsed, events.start(), events.end()), "cudaEventElapsedTime");
    if (rep >= 0) ms.push_back(elapsed);
  }
  std::sort(ms.begin(), ms.end());
  const std::size_t mid = ms.size() / 2;
  const double median = ms.size() % 2 == 1 ? ms[mid] : (ms[mid - 1] + ms[mid]) / 2;
  return {median, ms.front()};
}

// One problem on the GPU: Q, K, V (and dO) of n tokens, the forward's state and output, the
// gradients, and both tile schedules (the flash kernel's by query tile, the backward's by key
// tile), built as the ring builds them.
class PlainAttention {
 public:
  PlainAttention(const Options& o, std::int64_t n, bool causal, const gpu::KernelShape& shape)
      : o_(o),
        shape_(shape),
        elements_(static_cast<std::size_t>(n) * static_cast<std::size_t>(o.heads * o.head_dim)),
        rows_(n * o.heads),
        q_(elements_ * 2), k_(elements_ * 2), v_(elements_ * 2), dout_(elements_ * 2),
        out_acc_(elements_ * 4), out_(elements_ * 4), dq_(elements_ * 4), dk_(elements_ * 4), dv_(elements_ * 4),
        row_max_(static_cast<std::size_t>(rows_) * 4), row_sum_(static_cast<std::size_t>(rows_) * 4),
        lse2_(static_cast<std::size_t>(rows_) * 4), delta_(static_cast<std::size_t>(rows_) * 4),
        positions_(static_cast<std::size_t>(n) * 8), lowest_(static_cast<std::size_t>(n) * 8),
        highest_(static_cast<std::size_t>(n) * 8) {
    const auto count = static_cast<std::int64_t>(elements_);
    check(gpu::launch_fill_uniform(q_.as<void>(), count, shape.precision, 1, nullptr), "fill q");
    check(gpu::launch_fill_uniform(k_.as<void>(), count, shape.precision, 2, nullptr), "fill k");
    check(gpu::launch_fill_uniform(v_.as<void>(), count, shape.precision, 3, nullptr), "fill v");
    check(gpu::launch_fill_uniform(dout_.as<void>(), count, shape.precision, 4, nullptr), "fill dout");
    // One device holding the whole sequence in order: position = local index.
    std::vector<std::int64_t> positions(static_cast<std::size_t>(n)), lowest(static_cast<std::size_t>(n), 0),
        highest(static_cast<std::size_t>(n));
    for (std::int64_t p = 0; p < n; ++p) {
      positions[static_cast<std::size_t>(p)] = p;
      highest[static_cast<std::size_t>(p)] = causal ? p : n - 1;
    }
    check(cudaMemcpy(positions_.as<void>(), positions.data(), positions.size() * 8, cudaMemcpyHostToDevice), "upload positions");
    check(cudaMemcpy(lowest_.as<void>(), lowest.data(), lowest.size() * 8, cudaMemcpyHostToDevice), "upload lowest keys");
    check(cudaMemcpy(highest_.as<void>(), highest.data(), highest.size() * 8, cudaMemcpyHostToDevice), "upload highest keys");
    const stripesim::validate::TileSchedule by_query =
        stripesim::validate::build_tile_schedule(lowest, highest, positions, shape.tile);
    const stripesim::validate::TileSchedule by_key =
        stripesim::validate::by_key_tile(by_query, (n + shape.tile.key - 1) / shape.tile.key);
    std::vector<std::int32_t> image = by_query.packed();
    const std::size_t backward_at = image.size();
    const std::vector<std::int32_t> backward_image = by_key.packed();
    image.insert(image.end(), backward_image.begin(), backward_image.end());
    schedules_.emplace(image.size() * 4);
    check(cudaMemcpy(schedules_->as<void>(), image.data(), image.size() * 4, cudaMemcpyHostToDevice), "upload schedules");

    forward_.q = q_.as<void>();
    forward_.k = k_.as<void>();
    forward_.v = v_.as<void>();
    forward_.query_lowest = lowest_.as<std::int64_t>();
    forward_.query_highest = highest_.as<std::int64_t>();
    forward_.key_positions = positions_.as<std::int64_t>();
    forward_.out_acc = out_acc_.as<float>();
    forward_.row_max = row_max_.as<float>();
    forward_.row_sum = row_sum_.as<float>();
    forward_.queries = forward_.keys = n;
    forward_.heads = forward_.kv_heads = o.heads;
    forward_.scale = 1.0f / std::sqrt(static_cast<float>(o.head_dim));
    forward_.tile_order = schedules_->as<std::int32_t>();
    forward_.tile_offsets = forward_.tile_order + by_query.offsets_at();
    forward_.tile_entries = forward_.tile_order + by_query.entries_at();

    backward_.q = forward_.q;
    backward_.dout = dout_.as<void>();
    backward_.k = forward_.k;
    backward_.v = forward_.v;
    backward_.query_lowest = forward_.query_lowest;
    backward_.query_highest = forward_.query_highest;
    backward_.key_positions = forward_.key_positions;
    backward_.lse2 = lse2_.as<float>();
    backward_.delta = delta_.as<float>();
    backward_.dq = dq_.as<float>();
    backward_.dk = dk_.as<float>();
    backward_.dv = dv_.as<float>();
    backward_.queries = backward_.keys = n;
    backward_.heads = backward_.kv_heads = o.heads;
    backward_.scale = forward_.scale;
    backward_.tile_order = schedules_->as<std::int32_t>() + backward_at;
    backward_.tile_offsets = backward_.tile_order + by_key.offsets_at();
    backward_.tile_entries = backward_.tile_order + by_key.entries_at();
  }

  // The forward: the attention kernel plus the output normalisation (SDPA's time includes
  // writing the normalised output); the softmax-state reset before each launch is not timed.
  std::pair<double, double> time_forward() {
    return time_launches(
        o_, [&] { check(gpu::launch_init_state(forward_.out_acc, forward_.row_max, forward_.row_sum, rows_, o_.head_dim, nullptr), "init state"); },
        [&] { run_forward(); });
  }

  // The shape's backward kernel alone, after one forward and the lse2/delta preparation (as
  // PyTorch's backward of a saved forward); zeroing the gradients before each launch is not timed.
  std::pair<double, double> time_backward() {
    check(gpu::prepare_block_attention_backward(shape_), "cudaFuncSetAttribute of the backward kernel");
    check(gpu::launch_init_state(forward_.out_acc, forward_.row_max, forward_.row_sum, rows_, o_.head_dim, nullptr), "init state");
    run_forward();
    check(gpu::launch_backward_prepare(out_.as<float>(), dout_.as<void>(), shape_.precision, forward_.row_max, forward_.row_sum,
                                       lse2_.as<float>(), delta_.as<float>(), rows_, o_.head_dim, nullptr),
          "backward preparation");
    return time_launches(
        o_,
        [&] {
          for (const Buffer* gradient : {&dq_, &dk_, &dv_}) {
            check(cudaMemsetAsync(gradient->as<void>(), 0, elements_ * 4, nullptr), "zero the gradients");
          }
        },
        [&] { check(gpu::launch_block_attention_backward(shape_, backward_, nullptr), "backward kernel launch"); });
  }

 private:
  void run_forward() {
    check(gpu::launch_block_attention(shape_, forward_, nullptr), "attention kernel launch");
    check(gpu::launch_normalise(forward_.out_acc, forward_.row_sum, out_.as<float>(), rows_, o_.head_dim, nullptr), "normalise launch");
  }

  const Options& o_;
  gpu::KernelShape shape_;
  std::size_t elements_;
  std::int64_t rows_;
  Buffer q_, k_, v_, dout_, out_acc_, out_, dq_, dk_, dv_, row_max_, row_sum_, lse2_, delta_, positions_, lowest_, highest_;
  std::optional<Buffer> schedules_;
  gpu::BlockAttentionArgs forward_;
  gpu::BlockBackwardArgs backward_;
};

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"Time the validator's attention kernel as plain attention (one JSON line per shape)"};
  app.add_option("--seq-lens", o.seq_lens, "Sequence lengths")->delimiter(',')->capture_default_str();
  app.add_option("--masks", o.masks, "causal, bidirectional")->delimiter(',')->capture_default_str();
  app.add_option("--tiles", o.tiles, "Kernel tiles TQxTK")->delimiter(',')->capture_default_str();
  app.add_option("--heads", o.heads, "Heads")->capture_default_str();
  app.add_option("--head-dim", o.head_dim, "64 or 128")->capture_default_str();
  app.add_option("--dtype", o.dtype, "bf16 or fp16")->capture_default_str();
  app.add_option("--kernels", o.kernels, "Forward kernels: flash, wmma, wgmma (Hopper only)")->delimiter(',')->capture_default_str();
  app.add_option("--backward-kernels", o.backward_kernels,
                 "Backward kernels to time too (after a flash forward): scalar, wmma [default: none]")
      ->delimiter(',');
  app.add_option("--backward-tiles", o.backward_tiles, "Tiles (of the schedule) for the backward kernels")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--warmup", o.warmup, "Untimed launches per shape")->capture_default_str();
  app.add_option("--reps", o.reps, "Timed launches per shape")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  try {
    int count = 0;
    const cudaError_t status = cudaGetDeviceCount(&count);
    if (status != cudaSuccess || count == 0) {
      std::cerr << "bench_kernel_gpu: no CUDA device is visible"
                << (status != cudaSuccess ? std::string(": ") + cudaGetErrorString(status) : std::string()) << "\n";
      return 1;
    }
    check(cudaSetDevice(0), "cudaSetDevice(0)");
    cudaDeviceProp properties{};
    check(cudaGetDeviceProperties(&properties, 0), "cudaGetDeviceProperties");
    const Precision precision = stripesim::validate::parse_precision(o.dtype);
    if (o.reps < 1) throw std::runtime_error("--reps must be at least 1");
    // One JSON line: TFLOP/s from unmasked pairs, attention_flops_per_pair for the forward and the
    // `exact` backward factor (2.5) times that for the backward.
    const auto emit = [&](const char* pass, const std::string& kernel, std::int64_t n, const std::string& mask,
                          const std::string& tile, std::pair<double, double> ms) {
      const bool causal = mask == "causal";
      const double pairs = causal ? static_cast<double>(n) * static_cast<double>(n + 1) / 2
                                  : static_cast<double>(n) * static_cast<double>(n);
      const double forward = stripesim::model::attention_flops_per_pair(static_cast<double>(o.head_dim) * o.heads) * pairs;
      const double flops = std::string(pass) == "bwd" ? stripesim::model::attention_backward_factor(stripesim::model::FlopConvention::exact) * forward : forward;
      std::cout << fmt::format(
                       R"({{"impl": "stripesim", "pass": "{}", "kernel": "{}", "device": "{}", "dtype": "{}", "seq_len": {}, )"
                       R"("heads": {}, "head_dim": {}, "mask": "{}", "tile": "{}", "reps": {}, "median_ms": {:.4f}, )"
                       R"("min_ms": {:.4f}, "tflops": {:.2f}}})",
                       pass, kernel, properties.name, o.dtype, n, o.heads, o.head_dim, mask, tile, o.reps, ms.first,
                       ms.second, flops / (ms.first * 1e-3) / 1e12)
                << std::endl;
    };
    // Every (tile, length, mask) of a kernel whose shape (and, timing a backward, its backward
    // kernel's) fits this GPU's shared memory.
    const auto for_each_shape = [&](const std::string& kernel, gpu::KernelShape shape, bool backward,
                                    const std::vector<std::string>& tiles, auto&& run) {
      for (const std::string& tile_text : tiles) {
        shape.tile = stripesim::model::parse_tile_shape(tile_text);
        gpu::check_kernel_shape(shape);
        const std::size_t bytes = std::max(gpu::kernel_shared_bytes(shape), backward ? gpu::backward_shared_bytes(shape) : 0);
        if (bytes > properties.sharedMemPerBlockOptin) {
          std::cerr << "bench_kernel_gpu: " << kernel << " at tile " << tile_text << " needs more shared memory than "
                    << properties.name << " allows per block; skipped\n";
          continue;
        }
        check(gpu::prepare_block_attention(shape), "cudaFuncSetAttribute");
        for (const std::int64_t n : o.seq_lens) {
          for (const std::string& mask : o.masks) {
            if (mask != "causal" && mask != "bidirectional") throw std::runtime_error("--masks: causal or bidirectional");
            PlainAttention problem(o, n, mask == "causal", shape);
            run(problem, n, mask, tile_text);
          }
        }
      }
    };
    for (const std::string& kernel : o.kernels) {
      const gpu::KernelShape shape{precision, o.head_dim, {}, stripesim::validate::parse_gpu_kernel(kernel)};
      for_each_shape(kernel, shape, false, o.tiles,
                     [&](PlainAttention& problem, std::int64_t n, const std::string& mask, const std::string& tile) {
                       emit("fwd", kernel, n, mask, tile, problem.time_forward());
                     });
    }
    for (const std::string& kernel : o.backward_kernels) {
      const gpu::KernelShape shape{precision, o.head_dim, {}, stripesim::validate::GpuKernel::flash,
                                   stripesim::validate::parse_gpu_backward_kernel(kernel)};
      for_each_shape(kernel, shape, true, o.backward_tiles,
                     [&](PlainAttention& problem, std::int64_t n, const std::string& mask, const std::string& tile) {
                       emit("bwd", kernel, n, mask, tile, problem.time_backward());
                     });
    }
  } catch (const std::exception& error) {
    std::cerr << "bench_kernel_gpu: " << error.what() << "\n";
    return 1;
  }
  return 0;
}
