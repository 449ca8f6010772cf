#pragma once
// How far a command goes. Parse-only is for the CLI fuzzer (fuzz/fuzz_cli.cpp) alone: every
// command parses and validates all of its input (flags, experiment and config files, models,
// hardware, topologies, masks, layouts) exactly as a real run would, then returns before
// counting, simulating or writing anything. run_cli passes it to every command it registers.
namespace stripesim::cli {

enum class RunMode { full, parse_only };

}  // namespace stripesim::cli
