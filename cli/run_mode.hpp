#pragma once
// Parse-only mode, for the CLI fuzzer (fuzz/fuzz_cli.cpp) alone: every command parses and
// validates all of its input (flags, experiment and config files, models, hardware, topologies,
// masks, layouts) exactly as a real run would, then returns before counting, simulating or
// writing anything. Off unless a test harness turns it on; a normal run never reads it as true.
namespace stripesim::cli {

inline bool& parse_only_flag() {
  static bool flag = false;
  return flag;
}

[[nodiscard]] inline bool parse_only() { return parse_only_flag(); }
inline void set_parse_only(bool on) { parse_only_flag() = on; }

}  // namespace stripesim::cli
