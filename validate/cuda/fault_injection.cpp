#include "fault_injection.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cstdlib>
#include <string_view>

#include "stripesim/model/io/input_error.hpp"

namespace stripesim::validate::gpu {

InjectedFault injected_fault() {
  const char* raw = std::getenv("STRIPESIM_INJECT_FAULT");
  const std::string_view value = raw == nullptr ? std::string_view{} : std::string_view{raw};
  InjectedFault fault;
  if (value.empty()) return fault;
  if (value == "oom") {
    fault.oom = true;
    return fault;
  }
  constexpr std::string_view kSkipSend = "skip-send:";
  if (value.starts_with(kSkipSend)) {
    const std::string_view digits = value.substr(kSkipSend.size());
    Count rank = -1;
    const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), rank);
    if (error == std::errc{} && end == digits.data() + digits.size() && rank >= 0) {
      fault.skip_send_rank = rank;
      return fault;
    }
  }
  throw model::InputError(
      fmt::format("STRIPESIM_INJECT_FAULT='{}': expected oom or skip-send:RANK (or unset for no fault)", value));
}

void check_fault_reached(const InjectedFault& fault, std::string_view backend, const RunOptions& options) {
  if (!fault.skip_send_rank) return;
  if (backend != "nccl") {
    throw model::InputError(fmt::format(
        "STRIPESIM_INJECT_FAULT=skip-send:{}: injects into the nccl backend's transfers, this run is --backend {}",
        *fault.skip_send_rank, backend));
  }
  if (options.warmup + options.iterations < 2) {
    throw model::InputError(fmt::format(
        "STRIPESIM_INJECT_FAULT=skip-send:{}: the send is skipped from the second pass of the ring on (the first "
        "connects the ranks), this run makes {} (warm-up + iterations)",
        *fault.skip_send_rank, options.warmup + options.iterations));
  }
}

}  // namespace stripesim::validate::gpu
