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

}  // namespace stripesim::validate::gpu
