// Dense attention on GPU 0 with cuBLAS, the reference the GPU backends are checked against.
//
// The inputs are the problem's Q, K, V ROUNDED to the case's precision (bf16/fp16, the same host
// conversion the ring's upload uses) and widened to fp32: that is what the ring computes on, so
// the check measures the ring's arithmetic, not the inputs' rounding. Everything after is fp32:
// plain SGEMM (pedantic math, no TF32) for the scores and for the product with V, an fp32
// softmax in between.
//
// Query rows go in chunks of consecutive original positions, sized so one head's fp32 scores of
// a chunk stay within 1 GiB. Every mask of the model gives each query one interval of keys with
// ends that never decrease, so a chunk needs only the keys from its lowest allowed key to its
// highest: half the products of a full square under a causal mask, a band under a window.
// cuBLAS is column-major and the arrays are row-major [p][h][d]: head h of Q is a D x n
// column-major matrix at offset h * D with leading dimension heads * D (K and V likewise with
// kv_heads). So per (chunk, head):
//   S^T (keys x rows)  = K_h(D x keys)^T * Q_h(D x rows)   times scale
//   P^T               = masked softmax of each column of S^T, in place
//   O_h (D x rows)     = V_h(D x keys) * P^T(keys x rows)  written straight into [p][h][d]
// The gradients (a backward case) continue from P^T and O of the same (chunk, head), with dO
// rounded like the inputs:
//   delta (rows)       = per row dO . O
//   dS^T (keys x rows) = P^T * (V_h^T dO_h - delta) * scale  (an SGEMM, then element-wise)
//   dV_h += dO_h P,  dK_h += Q_h dS  (both accumulated over the heads of a K/V group)
//   dQ_h (D x rows)    = K_h dS^T
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cublas_error.hpp"
#include "device_resources.hpp"
#include "gpu_devices.hpp"
#include "gpu_reference_kernels.hpp"
#include "stripesim/validate/gpu_backends.hpp"

namespace stripesim::validate {
namespace {

using gpu::check_cublas;
using gpu::check_cuda;
using gpu::Deadline;
using gpu::DeviceMemory;

constexpr int kDevice = 0;
constexpr Count kRank = 0;  // failures name the GPU as rank 0, like the cuda backend's setup
constexpr std::int64_t kScoreBytes = std::int64_t{1} << 30;

// Owns a cuBLAS handle. cublasDestroy synchronises the device, so after a timeout the handle is
// abandoned instead (the hung work would make the destructor hang too).
class CublasHandle {
 public:
  explicit CublasHandle(Count rank) { check_cublas(cublasCreate(&handle_), rank, "cublasCreate"); }
  CublasHandle(const CublasHandle&) = delete;
  CublasHandle& operator=(const CublasHandle&) = delete;
  ~CublasHandle() {
    if (handle_ != nullptr) static_cast<void>(cublasDestroy(handle_));  // nothing to report to at teardown
  }
  [[nodiscard]] cublasHandle_t get() const { return handle_; }
  void abandon() noexcept { handle_ = nullptr; }

 private:
  cublasHandle_t handle_ = nullptr;
};

class DenseOnGpu {
 public:
  DenseOnGpu(const RingProblem& problem, double timeout_s, Count chunk_rows)
      : problem_(problem), c_(problem.ring_case()), timeout_s_(timeout_s), chunk_rows_(chunk_rows),
        stream_(kRank, "dense reference"), cublas_(kRank) {
    check_cublas(cublasSetStream(cublas_.get(), stream_.get()), kRank, "cublasSetStream for the dense reference");
    // Pedantic: the prescribed fp32 compute and storage at every step, never TF32 or a reduced
    // precision reduction, whatever the library would pick by default.
    check_cublas(cublasSetMathMode(cublas_.get(), CUBLAS_PEDANTIC_MATH), kRank,
                 "cublasSetMathMode(CUBLAS_PEDANTIC_MATH) for the dense reference");
  }

  DenseOnGpu(const DenseOnGpu&) = delete;
  DenseOnGpu& operator=(const DenseOnGpu&) = delete;

  ~DenseOnGpu() {
    if (!hung_) return;
    // The device may still run the hung work: freeing or destroying would wait on it.
    for (DeviceMemory* memory : {&q_, &k_, &v_, &lowest_, &highest_, &scores_, &out_, &dout_, &dscores_, &delta_, &dq_, &dk_, &dv_}) {
      memory->abandon();
    }
    cublas_.abandon();
  }

  // Dense attention in original order [(p * heads + h) * head_dim + i].
  std::vector<double> compute() {
    run(false);
    return download(out_, c_.seq_len * c_.heads * c_.head_dim, "the dense reference");
  }

  // reference_gradients's layout: dQ, then dK and dV.
  std::vector<double> gradients() {
    run(true);
    std::vector<double> all = download(dq_, c_.seq_len * c_.heads * c_.head_dim, "the dense reference's dQ");
    for (const DeviceMemory* part : {&dk_, &dv_}) {
      const std::vector<double> more = download(*part, c_.seq_len * c_.kv_heads * c_.head_dim, "the dense reference's dK and dV");
      all.insert(all.end(), more.begin(), more.end());
    }
    return all;
  }

 private:
  // Every chunk and head: the output, and with `backward` the gradients after it.
  void run(bool backward) {
    const Count n = c_.seq_len;
    const Count row = c_.heads * c_.head_dim;
    const Count kv_row = c_.kv_heads * c_.head_dim;
    q_ = upload_rounded(problem_.q(), "Q");
    k_ = upload_rounded(problem_.k(), "K");
    v_ = upload_rounded(problem_.v(), "V");
    if (backward) dout_ = upload_rounded(problem_.dout(), "dO");
    std::vector<std::int64_t> lowest(static_cast<std::size_t>(n)), highest(static_cast<std::size_t>(n));
    for (Position p = 0; p < n; ++p) {
      lowest[static_cast<std::size_t>(p)] = problem_.mask().lowest_key(p);
      highest[static_cast<std::size_t>(p)] = problem_.mask().highest_key(p);
    }
    lowest_ = upload(lowest.data(), n * 8, "the queries' lowest keys");
    highest_ = upload(highest.data(), n * 8, "the queries' highest keys");
    wait("upload of the dense reference's inputs");

    const Count chunk = chunk_rows_ > 0 ? std::min(chunk_rows_, n) : gpu_reference_chunk_rows(n);
    bool no_fault = false;  // STRIPESIM_INJECT_FAULT=oom is for the ring's allocations, not this one
    scores_ = DeviceMemory(chunk * n * 4, kRank, "the dense reference's scores", no_fault);
    out_ = DeviceMemory(n * row * 4, kRank, "the dense reference's output", no_fault);
    if (backward) {
      dscores_ = DeviceMemory(chunk * n * 4, kRank, "the dense reference's score gradients", no_fault);
      delta_ = DeviceMemory(chunk * 4, kRank, "the dense reference's row dots", no_fault);
      dq_ = DeviceMemory(n * row * 4, kRank, "the dense reference's dQ", no_fault);
      dk_ = DeviceMemory(n * kv_row * 4, kRank, "the dense reference's dK", no_fault);
      dv_ = DeviceMemory(n * kv_row * 4, kRank, "the dense reference's dV", no_fault);
      for (const DeviceMemory* sum : {&dk_, &dv_}) {  // the heads of a K/V group add to them
        check_cuda(cudaMemsetAsync(sum->get(), 0, static_cast<std::size_t>(n * kv_row * 4), stream_.get()), kRank,
                   "cudaMemsetAsync of the dense reference's dK and dV");
      }
    }
    for (Count p0 = 0; p0 < n; p0 += chunk) {
      const Count p1 = std::min(n, p0 + chunk);
      const auto first = static_cast<std::size_t>(p0);
      const auto last = static_cast<std::size_t>(p1);
      const Position key_lo = *std::min_element(lowest.begin() + first, lowest.begin() + last);
      const Position key_hi = *std::max_element(highest.begin() + first, highest.begin() + last);
      for (Count h = 0; h < c_.heads; ++h) {
        const Count kv_head = h / (c_.heads / c_.kv_heads);
        const Count kv_offset = kv_head * c_.head_dim + key_lo * kv_row;
        attend(p0, p1, h, key_lo, key_hi - key_lo + 1, kv_offset);
        if (backward) attend_backward(p0, p1, h, key_hi - key_lo + 1, kv_offset);
      }
      wait(fmt::format("dense reference of query rows {} to {}", p0, p1 - 1));
    }
  }

  // `count` floats of `memory`, as doubles.
  std::vector<double> download(const DeviceMemory& memory, Count count, const std::string& what) {
    std::vector<float> host(static_cast<std::size_t>(count));
    check_cuda(cudaMemcpyAsync(host.data(), memory.get(), host.size() * sizeof(float), cudaMemcpyDeviceToHost, stream_.get()),
               kRank, [&] { return "cudaMemcpy of " + what + " to the host"; });
    wait("download of " + what);
    return std::vector<double>(host.begin(), host.end());
  }

  // The gradients of one head of one chunk, from attend()'s P^T (in scores_) and O (in out_).
  void attend_backward(Count p0, Count p1, Count head, Count keys, Count kv_offset) {
    const int rows = static_cast<int>(p1 - p0);
    const int dim = static_cast<int>(c_.head_dim);
    const int key_count = static_cast<int>(keys);
    const int q_ld = static_cast<int>(c_.heads * c_.head_dim);
    const int kv_ld = static_cast<int>(c_.kv_heads * c_.head_dim);
    const auto scale = static_cast<float>(problem_.scale());
    const float one = 1.f;
    const float zero = 0.f;
    const Count row_at = (p0 * c_.heads + head) * c_.head_dim;
    const float* q = floats(q_) + row_at;
    const float* dout = floats(dout_) + row_at;
    const float* out = floats(out_) + row_at;
    const float* k = floats(k_) + kv_offset;
    const float* v = floats(v_) + kv_offset;
    const float* probs = floats(scores_);
    float* dscores = floats(dscores_);
    float* delta = floats(delta_);
    const auto where = [&] { return fmt::format("head {}, query rows {} to {}", head, p0, p1 - 1); };
    check_cuda(gpu::launch_row_dots(out, dout, rows, dim, q_ld, delta, stream_.get()), kRank,
               [&] { return "launch of the reference's row dots (" + where() + ")"; });
    check_cublas(cublasSgemm(cublas_.get(), CUBLAS_OP_T, CUBLAS_OP_N, key_count, rows, dim, &one, v, kv_ld, dout, q_ld, &zero,
                             dscores, key_count),
                 kRank, [&] { return "cuBLAS SGEMM of the reference dP (" + where() + ")"; });
    check_cuda(gpu::launch_softmax_backward(probs, dscores, rows, keys, delta, scale, stream_.get()), kRank,
               [&] { return "launch of the reference softmax backward (" + where() + ")"; });
    check_cublas(cublasSgemm(cublas_.get(), CUBLAS_OP_N, CUBLAS_OP_T, dim, key_count, rows, &one, dout, q_ld, probs, key_count,
                             &one, floats(dv_) + kv_offset, kv_ld),
                 kRank, [&] { return "cuBLAS SGEMM of the reference dV (" + where() + ")"; });
    check_cublas(cublasSgemm(cublas_.get(), CUBLAS_OP_N, CUBLAS_OP_T, dim, key_count, rows, &one, q, q_ld, dscores, key_count,
                             &one, floats(dk_) + kv_offset, kv_ld),
                 kRank, [&] { return "cuBLAS SGEMM of the reference dK (" + where() + ")"; });
    check_cublas(cublasSgemm(cublas_.get(), CUBLAS_OP_N, CUBLAS_OP_N, dim, rows, key_count, &one, k, kv_ld, dscores, key_count,
                             &zero, floats(dq_) + row_at, q_ld),
                 kRank, [&] { return "cuBLAS SGEMM of the reference dQ (" + where() + ")"; });
  }

  // One head of one chunk: scores, masked softmax, product with V. `kv_offset`: the first key's
  // K/V head in floats from the start of K (and of V).
  void attend(Count p0, Count p1, Count head, Position key_lo, Count keys, Count kv_offset) {
    const int rows = static_cast<int>(p1 - p0);
    const int dim = static_cast<int>(c_.head_dim);
    const int q_ld = static_cast<int>(c_.heads * c_.head_dim);
    const int kv_ld = static_cast<int>(c_.kv_heads * c_.head_dim);
    const auto scale = static_cast<float>(problem_.scale());
    const float one = 1.f;
    const float zero = 0.f;
    const float* q = floats(q_) + (p0 * c_.heads + head) * c_.head_dim;
    const float* k = floats(k_) + kv_offset;
    const float* v = floats(v_) + kv_offset;
    float* scores = floats(scores_);
    float* out = floats(out_) + (p0 * c_.heads + head) * c_.head_dim;
    const auto where = [&] { return fmt::format("head {}, query rows {} to {}", head, p0, p1 - 1); };
    check_cublas(cublasSgemm(cublas_.get(), CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(keys), rows, dim, &scale, k,
                             kv_ld, q, q_ld, &zero, scores, static_cast<int>(keys)),
                 kRank, [&] { return "cuBLAS SGEMM of the reference scores (" + where() + ")"; });
    const auto* lowest = reinterpret_cast<const std::int64_t*>(lowest_.get()) + p0;
    const auto* highest = reinterpret_cast<const std::int64_t*>(highest_.get()) + p0;
    check_cuda(gpu::launch_masked_softmax(scores, rows, keys, key_lo, lowest, highest, stream_.get()), kRank,
               [&] { return "launch of the reference softmax (" + where() + ")"; });
    check_cublas(cublasSgemm(cublas_.get(), CUBLAS_OP_N, CUBLAS_OP_N, dim, rows, static_cast<int>(keys), &one, v, kv_ld,
                             scores, static_cast<int>(keys), &zero, out, q_ld),
                 kRank, [&] { return "cuBLAS SGEMM of the reference output (" + where() + ")"; });
  }

  // `values` rounded to the case's precision, widened to fp32 on the device. fp32 and fp64 cases
  // are rounded to fp32: the reference computes in fp32 either way.
  DeviceMemory upload_rounded(const std::vector<double>& values, const char* what) {
    const auto count = static_cast<std::int64_t>(values.size());
    bool no_fault = false;
    DeviceMemory wide(count * 4, kRank, fmt::format("the dense reference's {} (fp32)", what), no_fault);
    if (c_.precision == Precision::bf16 || c_.precision == Precision::fp16) {
      std::vector<std::uint16_t> narrow(values.size());
      gpu::convert_to_precision(values.data(), values.size(), c_.precision, narrow.data());
      DeviceMemory staging = upload(narrow.data(), count * 2, fmt::format("the dense reference's {}", what));
      try {
        check_cuda(gpu::launch_widen_to_fp32(staging.get(), c_.precision, floats(wide), count, stream_.get()), kRank,
                   [&] { return fmt::format("launch of the widening of the dense reference's {}", what); });
        wait(fmt::format("upload of the dense reference's {}", what));  // before `staging` and `narrow` go
      } catch (...) {
        if (hung_) {
          staging.abandon();
          wide.abandon();
        }
        throw;
      }
    } else {
      const std::vector<float> single(values.begin(), values.end());
      check_cuda(cudaMemcpyAsync(wide.get(), single.data(), single.size() * sizeof(float), cudaMemcpyHostToDevice,
                                 stream_.get()),
                 kRank, [&] { return fmt::format("cudaMemcpy of the dense reference's {}", what); });
      try {
        wait(fmt::format("upload of the dense reference's {}", what));
      } catch (...) {
        if (hung_) wide.abandon();
        throw;
      }
    }
    return wide;
  }

  // Device memory holding a copy of `bytes` at `host`; the copy is only enqueued.
  DeviceMemory upload(const void* host, std::int64_t bytes, const std::string& what) {
    bool no_fault = false;
    DeviceMemory memory(bytes, kRank, what, no_fault);
    check_cuda(cudaMemcpyAsync(memory.get(), host, static_cast<std::size_t>(bytes), cudaMemcpyHostToDevice,
                               stream_.get()),
               kRank, [&] { return "cudaMemcpy of " + what; });
    return memory;
  }

  void wait(const std::string& operation) {
    try {
      gpu::wait_stream(stream_.get(), kRank, operation, Deadline::after(timeout_s_));
    } catch (...) {
      hung_ = true;
      throw;
    }
  }

  static float* floats(const DeviceMemory& memory) { return reinterpret_cast<float*>(memory.get()); }

  const RingProblem& problem_;
  const RingCase& c_;
  double timeout_s_;
  Count chunk_rows_;
  gpu::Stream stream_;  // declared first: destroyed after the handle and the memory that use it
  CublasHandle cublas_;
  DeviceMemory q_, k_, v_, lowest_, highest_, scores_, out_;
  DeviceMemory dout_, dscores_, delta_, dq_, dk_, dv_;  // the gradients only
  bool hung_ = false;
};

}  // namespace

Count gpu_reference_chunk_rows(Count seq_len) {
  // Rows of at most seq_len keys each: a multiple of 64 rows within kScoreBytes, at least 64.
  const Count fitting = kScoreBytes / (4 * std::max<Count>(seq_len, 1)) / 64 * 64;
  return std::min(seq_len, std::max<Count>(fitting, 64));
}

std::vector<double> gpu_reference_attention(const RingProblem& problem, double timeout_s, Count chunk_rows) {
  static_cast<void>(gpu::visible_gpus());  // no GPU: the same prompt DeviceFailure as the backends
  check_cuda(cudaSetDevice(kDevice), kRank, "cudaSetDevice(0) for the dense reference");
  DenseOnGpu dense(problem, timeout_s, chunk_rows);
  return dense.compute();
}

std::vector<double> gpu_reference_gradients(const RingProblem& problem, double timeout_s, Count chunk_rows) {
  static_cast<void>(gpu::visible_gpus());
  check_cuda(cudaSetDevice(kDevice), kRank, "cudaSetDevice(0) for the dense reference");
  DenseOnGpu dense(problem, timeout_s, chunk_rows);
  return dense.gradients();
}

}  // namespace stripesim::validate
