// bench_kernel_gpu: the validator's blockwise attention kernel as plain attention (N = 1: one
// device holds the whole sequence, one launch covers it), timed like FlashAttention is
// benchmarked so that bench/sdpa_reference.py can time PyTorch's SDPA on the same shapes:
// warm-up launches, then `reps` timed launches between CUDA events, median reported.
// Timed: the attention kernel plus the output normalisation (SDPA's time includes writing the
// normalised output); the softmax-state reset before each launch is not.
// TFLOP/s counts unmasked pairs only (FlashAttention's convention): 4 * pairs * head_dim * heads.
// One JSON line per (sequence length, mask, tile) on standard output.
#include <CLI/CLI.hpp>
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "stripesim/model/work/tile_shape.hpp"
#include "stripesim/validate/block_attention.hpp"
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
  int warmup = 5;
  int reps = 20;
};

// One shape: returns the median and minimum milliseconds of `reps` launches.
std::pair<double, double> time_shape(const Options& o, std::int64_t n, bool causal, const gpu::KernelShape& shape) {
  const auto elements = static_cast<std::size_t>(n) * static_cast<std::size_t>(o.heads * o.head_dim);
  const auto rows = n * o.heads;
  Buffer q(elements * 2), k(elements * 2), v(elements * 2);
  Buffer out_acc(elements * 4), out(elements * 4);
  Buffer row_max(static_cast<std::size_t>(rows) * 4), row_sum(static_cast<std::size_t>(rows) * 4);
  Buffer positions(static_cast<std::size_t>(n) * 8), lowest(static_cast<std::size_t>(n) * 8),
      highest(static_cast<std::size_t>(n) * 8);
  check(gpu::launch_fill_uniform(q.as<void>(), static_cast<std::int64_t>(elements), shape.precision, 1, nullptr), "fill q");
  check(gpu::launch_fill_uniform(k.as<void>(), static_cast<std::int64_t>(elements), shape.precision, 2, nullptr), "fill k");
  check(gpu::launch_fill_uniform(v.as<void>(), static_cast<std::int64_t>(elements), shape.precision, 3, nullptr), "fill v");
  // One device holding the whole sequence in order: position = local index.
  std::vector<std::int64_t> host_positions(static_cast<std::size_t>(n)), host_lowest(static_cast<std::size_t>(n), 0),
      host_highest(static_cast<std::size_t>(n));
  for (std::int64_t p = 0; p < n; ++p) {
    host_positions[static_cast<std::size_t>(p)] = p;
    host_highest[static_cast<std::size_t>(p)] = causal ? p : n - 1;
  }
  check(cudaMemcpy(positions.as<void>(), host_positions.data(), host_positions.size() * 8, cudaMemcpyHostToDevice), "upload positions");
  check(cudaMemcpy(lowest.as<void>(), host_lowest.data(), host_lowest.size() * 8, cudaMemcpyHostToDevice), "upload lowest keys");
  check(cudaMemcpy(highest.as<void>(), host_highest.data(), host_highest.size() * 8, cudaMemcpyHostToDevice), "upload highest keys");
  // The flash kernel's tile schedule (the wmma kernel ignores it), built as the ring builds it.
  const stripesim::validate::TileSchedule schedule =
      stripesim::validate::build_tile_schedule(host_lowest, host_highest, host_positions, shape.tile);
  const std::vector<std::int32_t> image = schedule.packed();
  Buffer schedule_buffer(image.size() * 4);
  check(cudaMemcpy(schedule_buffer.as<void>(), image.data(), image.size() * 4, cudaMemcpyHostToDevice), "upload schedule");

  gpu::BlockAttentionArgs args;
  args.q = q.as<void>();
  args.k = k.as<void>();
  args.v = v.as<void>();
  args.query_lowest = lowest.as<std::int64_t>();
  args.query_highest = highest.as<std::int64_t>();
  args.key_positions = positions.as<std::int64_t>();
  args.out_acc = out_acc.as<float>();
  args.row_max = row_max.as<float>();
  args.row_sum = row_sum.as<float>();
  args.queries = n;
  args.keys = n;
  args.heads = o.heads;
  args.kv_heads = o.heads;
  args.scale = 1.0f / std::sqrt(static_cast<float>(o.head_dim));
  args.tile_order = schedule_buffer.as<std::int32_t>();
  args.tile_offsets = args.tile_order + schedule.offsets_at();
  args.tile_entries = args.tile_order + schedule.entries_at();

  EventPair events;
  std::vector<double> ms;
  for (int rep = -o.warmup; rep < o.reps; ++rep) {
    check(gpu::launch_init_state(args.out_acc, args.row_max, args.row_sum, rows, o.head_dim, nullptr), "init state");
    check(cudaEventRecord(events.start(), nullptr), "cudaEventRecord");
    check(gpu::launch_block_attention(shape, args, nullptr), "attention kernel launch");
    check(gpu::launch_normalise(args.out_acc, args.row_sum, out.as<float>(), rows, o.head_dim, nullptr), "normalise launch");
    check(cudaEventRecord(events.end(), nullptr), "cudaEventRecord");
    check(cudaEventSynchronize(events.end()), "attention kernel");
    float elapsed = 0;
    check(cudaEventElapsedTime(&elapsed, events.start(), events.end()), "cudaEventElapsedTime");
    if (rep >= 0) ms.push_back(elapsed);
  }
  std::sort(ms.begin(), ms.end());
  const std::size_t mid = ms.size() / 2;
  const double median = ms.size() % 2 == 1 ? ms[mid] : (ms[mid - 1] + ms[mid]) / 2;
  return {median, ms.front()};
}

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
  app.add_option("--kernels", o.kernels, "flash, wmma")->delimiter(',')->capture_default_str();
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
    for (const std::string& kernel : o.kernels) {
    for (const std::string& tile_text : o.tiles) {
      const gpu::KernelShape shape{precision, o.head_dim, stripesim::model::parse_tile_shape(tile_text),
                                   stripesim::validate::parse_gpu_kernel(kernel)};
      gpu::check_kernel_shape(shape);
      if (gpu::kernel_shared_bytes(shape) > properties.sharedMemPerBlockOptin) {
        std::cerr << "bench_kernel_gpu: tile " << tile_text << " needs more shared memory than " << properties.name
                  << " allows per block; skipped\n";
        continue;
      }
      check(gpu::prepare_block_attention(shape), "cudaFuncSetAttribute");
      for (const std::int64_t n : o.seq_lens) {
        for (const std::string& mask : o.masks) {
          if (mask != "causal" && mask != "bidirectional") throw std::runtime_error("--masks: causal or bidirectional");
          const bool causal = mask == "causal";
          const auto [median_ms, min_ms] = time_shape(o, n, causal, shape);
          const double pairs = causal ? static_cast<double>(n) * static_cast<double>(n + 1) / 2
                                      : static_cast<double>(n) * static_cast<double>(n);
          const double flops = 4.0 * pairs * o.head_dim * o.heads;
          std::cout << fmt::format(
                           R"({{"impl": "stripesim", "kernel": "{}", "device": "{}", "dtype": "{}", "seq_len": {}, "heads": {}, )"
                           R"("head_dim": {}, "mask": "{}", "tile": "{}", "reps": {}, "median_ms": {:.4f}, )"
                           R"("min_ms": {:.4f}, "tflops": {:.2f}}})",
                           kernel, properties.name, o.dtype, n, o.heads, o.head_dim, mask, tile_text, o.reps, median_ms,
                           min_ms, flops / (median_ms * 1e-3) / 1e12)
                    << std::endl;
        }
      }
    }
    }
  } catch (const std::exception& error) {
    std::cerr << "bench_kernel_gpu: " << error.what() << "\n";
    return 1;
  }
  return 0;
}
