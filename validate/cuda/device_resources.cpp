#include "device_resources.hpp"

#include <fmt/format.h>

#include <thread>
#include <utility>

#include "fault_injection.hpp"

namespace stripesim::validate::gpu {

std::string format_bytes(std::int64_t bytes) {
  constexpr std::int64_t kKiB = 1024;
  if (bytes >= kKiB * kKiB * kKiB * kKiB) return fmt::format("{:.0f} TiB", static_cast<double>(bytes) / static_cast<double>(kKiB * kKiB * kKiB * kKiB));
  if (bytes >= kKiB * kKiB * kKiB) return fmt::format("{:.1f} GiB", static_cast<double>(bytes) / static_cast<double>(kKiB * kKiB * kKiB));
  if (bytes >= kKiB * kKiB) return fmt::format("{:.0f} MiB", static_cast<double>(bytes) / static_cast<double>(kKiB * kKiB));
  if (bytes >= kKiB) return fmt::format("{:.0f} KiB", static_cast<double>(bytes) / static_cast<double>(kKiB));
  return fmt::format("{} B", bytes);
}

DeviceMemory::DeviceMemory(std::int64_t bytes, Count rank, std::string_view what, bool& inject_oom) {
  std::int64_t asked = bytes;
  std::string note;
  if (inject_oom) {
    inject_oom = false;
    asked = kInjectedAllocationBytes;
    note = ", injected by STRIPESIM_INJECT_FAULT=oom";
  }
  check_cuda(cudaGetDevice(&device_), rank, "cudaGetDevice");
  void* data = nullptr;
  check_cuda(cudaMalloc(&data, static_cast<std::size_t>(asked)), rank,
             [&] { return fmt::format("cudaMalloc of {} ({}{})", what, format_bytes(asked), note); });
  data_ = static_cast<std::byte*>(data);
}

DeviceMemory::DeviceMemory(DeviceMemory&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), device_(other.device_) {}

DeviceMemory& DeviceMemory::operator=(DeviceMemory&& other) noexcept {
  if (this != &other) {
    DeviceMemory old(std::move(*this));
    data_ = std::exchange(other.data_, nullptr);
    device_ = other.device_;
  }
  return *this;
}

DeviceMemory::~DeviceMemory() {
  if (data_ == nullptr) return;
  // A destructor cannot report: a failed free (device already lost) changes nothing for the run
  // that is ending, so these statuses are deliberately dropped. The caller's current device is
  // restored.
  int current = device_;
  const bool restore = cudaGetDevice(&current) == cudaSuccess && current != device_;
  if (restore) static_cast<void>(cudaSetDevice(device_));
  static_cast<void>(cudaFree(data_));
  if (restore) static_cast<void>(cudaSetDevice(current));
}

Stream::Stream(Count rank, std::string_view what) {
  check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), rank,
             [&] { return fmt::format("cudaStreamCreate of the {} stream", what); });
}
Stream::Stream(Stream&& other) noexcept : stream_(std::exchange(other.stream_, nullptr)) {}
Stream& Stream::operator=(Stream&& other) noexcept {
  if (this != &other) {
    Stream old(std::move(*this));
    stream_ = std::exchange(other.stream_, nullptr);
  }
  return *this;
}
Stream::~Stream() {
  // Does not wait for pending work (the stream is released once it drains); status dropped as above.
  if (stream_ != nullptr) static_cast<void>(cudaStreamDestroy(stream_));
}

Event::Event(Count rank) { check_cuda(cudaEventCreate(&event_), rank, "cudaEventCreate"); }
Event::Event(Event&& other) noexcept : event_(std::exchange(other.event_, nullptr)) {}
Event& Event::operator=(Event&& other) noexcept {
  if (this != &other) {
    Event old(std::move(*this));
    event_ = std::exchange(other.event_, nullptr);
  }
  return *this;
}
Event::~Event() {
  if (event_ != nullptr) static_cast<void>(cudaEventDestroy(event_));
}

Deadline Deadline::after(double timeout_s) {
  const auto span = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
  return {Clock::now() + span, timeout_s};
}

double elapsed_us(cudaEvent_t start, cudaEvent_t end, Count rank) {
  float ms = 0;
  check_cuda(cudaEventElapsedTime(&ms, start, end), rank, "cudaEventElapsedTime");
  return static_cast<double>(ms) * 1000.0;
}

void poll_pause() { std::this_thread::yield(); }

std::string timeout_detail(const Deadline& deadline) {
  return fmt::format("did not complete within {} s (RunOptions::timeout_s)", deadline.seconds);
}

void wait_stream(cudaStream_t stream, Count rank, std::string_view operation, const Deadline& deadline) {
  Event done(rank);
  check_cuda(cudaEventRecord(done.get(), stream), rank, [&] { return fmt::format("cudaEventRecord after {}", operation); });
  while (!event_done(done.get(), rank, operation)) {
    if (deadline.passed()) throw DeviceFailure(rank, std::string(operation), timeout_detail(deadline));
    poll_pause();
  }
}

}  // namespace stripesim::validate::gpu
