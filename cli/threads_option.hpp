#pragma once
// --threads of analyze and sweep: a whole number in decimal, 0 meaning one per core. CLI11's own
// conversion would read 0x10 as 16 and answer "abc" with "not in range".
#include <CLI/CLI.hpp>

#include <algorithm>
#include <string>

namespace stripesim::cli {

inline constexpr unsigned kMaxThreads = 1024;

inline CLI::Option* add_threads_option(CLI::App* cmd, unsigned& threads, const std::string& help) {
  return cmd->add_option("--threads", threads, help)
      ->check(CLI::Validator(
          [](const std::string& text) -> std::string {
            const bool digits = !text.empty() && text.size() <= 4 &&
                                std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
            if (digits && std::stoul(text) <= kMaxThreads) return "";
            return "'" + text + "': expected a whole number from 0 (one per core) to " + std::to_string(kMaxThreads);
          },
          "0.." + std::to_string(kMaxThreads)));
}

}  // namespace stripesim::cli
