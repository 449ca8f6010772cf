#pragma once
// RAII owners of device memory, streams and events, and deadline-bounded waiting: the GPU
// backends never block on the device without a deadline (a hung peer must become a
// DeviceFailure, not a hung process).
#include <cuda_runtime_api.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "gpu_error.hpp"

namespace stripesim::validate::gpu {

// `bytes` rounded up to 256, cudaMalloc's own alignment: where sub-buffers carved out of one
// allocation start (vector loads and the row copies need 16).
[[nodiscard]] constexpr std::int64_t align_up(std::int64_t bytes) { return (bytes + 255) / 256 * 256; }

class DeviceMemory {
 public:
  DeviceMemory() = default;
  // cudaMalloc of `bytes` on the current device; a failure is a DeviceFailure naming
  // "cudaMalloc of <what> (<size>)". When `inject_oom` is set it is consumed and this
  // allocation asks for 1 TiB instead (STRIPESIM_INJECT_FAULT=oom).
  DeviceMemory(std::int64_t bytes, Count rank, std::string_view what, bool& inject_oom);
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;
  DeviceMemory(DeviceMemory&& other) noexcept;
  DeviceMemory& operator=(DeviceMemory&& other) noexcept;
  ~DeviceMemory();

  [[nodiscard]] std::byte* get() const { return data_; }
  // Forgets the memory without freeing it: after a timeout, cudaFree could wait forever on the
  // hung device, so the memory is left to the process's exit.
  void abandon() noexcept { data_ = nullptr; }

 private:
  std::byte* data_ = nullptr;
  int device_ = 0;  // freed with its own device current, whatever device is current then
};

class Stream {
 public:
  Stream() = default;
  // A non-blocking stream on the current device (no implicit sync with the legacy stream).
  Stream(Count rank, std::string_view what);
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  Stream(Stream&& other) noexcept;
  Stream& operator=(Stream&& other) noexcept;
  ~Stream();
  [[nodiscard]] cudaStream_t get() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

class Event {
 public:
  Event() = default;
  // A timing event on the current device.
  explicit Event(Count rank);
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  Event(Event&& other) noexcept;
  Event& operator=(Event&& other) noexcept;
  ~Event();
  [[nodiscard]] cudaEvent_t get() const { return event_; }

 private:
  cudaEvent_t event_ = nullptr;
};

using Clock = std::chrono::steady_clock;

struct Deadline {
  Clock::time_point at;
  double seconds = 0;  // the timeout it was made from, for messages
  [[nodiscard]] static Deadline after(double timeout_s);
  [[nodiscard]] bool passed() const { return Clock::now() >= at; }
};

// true once `event` has completed, false while it is pending; an error status (a kernel that
// faulted, say) is a DeviceFailure naming `operation`.
template <typename Operation>
[[nodiscard]] bool event_done(cudaEvent_t event, Count rank, Operation&& operation) {
  const cudaError_t status = cudaEventQuery(event);
  if (status == cudaSuccess) return true;
  if (status == cudaErrorNotReady) return false;
  throw DeviceFailure(rank, describe(operation), cudaGetErrorString(status));
}

// Milliseconds between two completed events.
[[nodiscard]] double elapsed_us(cudaEvent_t start, cudaEvent_t end, Count rank);

// Records an event on `stream` and polls it until done; past the deadline a DeviceFailure
// "<operation>" "did not complete within T s". For setup and download copies.
void wait_stream(cudaStream_t stream, Count rank, std::string_view operation, const Deadline& deadline);

// A short pause between polls: yields the core without sleeping through a whole scheduler tick.
void poll_pause();

[[nodiscard]] std::string timeout_detail(const Deadline& deadline);

}  // namespace stripesim::validate::gpu
