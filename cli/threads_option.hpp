#pragma once
// --threads of analyze and sweep: a whole number in decimal, 0 meaning one per core. Read as text
// and parsed here, not by CLI11: its conversion would read 0x10 as 16, and its errors take the
// shape "--threads: ..." where every other flag's is "--flag 'value': constraint".
#include <CLI/CLI.hpp>

#include <algorithm>
#include <string>

#include "stripesim/model/io/input_error.hpp"

namespace stripesim::cli {

inline constexpr unsigned kMaxThreads = 1024;

inline CLI::Option* add_threads_option(CLI::App* cmd, std::string& threads, const std::string& help) {
  return cmd->add_option("--threads", threads, help)->option_text("0.." + std::to_string(kMaxThreads));
}

// The value of --threads as add_threads_option read it; InputError unless 0..kMaxThreads in decimal.
inline unsigned parse_threads(const std::string& text) {
  const bool digits =
      !text.empty() && text.size() <= 4 && std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
  const unsigned long value = digits ? std::stoul(text) : 0;
  if (!digits || value > kMaxThreads) {
    throw model::InputName("--threads").error(
        text, "expected a whole number from 0 (one per core) to " + std::to_string(kMaxThreads), model::Shown::quoted);
  }
  return static_cast<unsigned>(value);
}

}  // namespace stripesim::cli
