#include "cli_app.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <exception>
#include <new>
#include <regex>
#include <string>
#include <system_error>

#include "analyze_command.hpp"
#include "calibrate_step_command.hpp"
#include "check_command.hpp"
#include "layout_command.hpp"
#include "output_file.hpp"
#include "plan_command.hpp"
#include "report_command.hpp"
#include "simulate_command.hpp"
#include "sweep_command.hpp"
#include "tms_command.hpp"
#include "validate_command.hpp"
#include "stripesim/model/io/input_error.hpp"
#include "stripesim/model/io/name_match.hpp"
#include "stripesim/validate/ring_backend.hpp"

namespace stripesim::cli {
namespace {

constexpr const char* kExamples = R"(Examples:
  stripesim analyze                         paper setting: n = 256k, N = 8, tiles 2048x4096
  stripesim analyze --seq-len 2048 --devices 8 --layouts contiguous,zigzag
  stripesim analyze --seq-len 1M --devices 64 --tile 128x128 --format json -o work.json
  stripesim tms --model 1b --hardware a100 --devices 8 --seq-len 256k
                                            the paper's Theoretical Maximum Speedup
  stripesim sweep --experiment configs/experiments/paper-tms.json
                                            the paper's whole TMS grid as CSV
  stripesim simulate --topology cluster:2x8 --devices 16 --hardware h100
                                            the ring as a discrete-event simulation
  stripesim simulate --model 1b --scope step --devices 8 --seq-len 256k
                                            a whole training step, with its breakdown and MFU
  stripesim plan --model llama3-8b --hardware h100 --topology cluster:4x8 --gpus 32 --seq-len 128k
                                            which context parallelism, layout and mesh trains fastest
  stripesim layout --layout zigzag -n 32k -N 8 -o zigzag.json
                                            each device's original positions, for training code
  stripesim report work.json --out-dir my-report
                                            Markdown and SVG figures from work.json above (or
                                            tms, sweep, simulate and validate JSON)
  stripesim check --baseline reports/baseline/imbalance.json
                                            CI: exit 1 when an imbalance or speedup got worse
  stripesim <command> --help                every flag, with more examples)";

// CLI11 reports tokens it did not expect; a person who typed `analyse` or `--device` wants the
// nearest real name. Empty when every command and option given exists.
std::string unknown_name_hint(const CLI::App& app, int argc, char** argv) {
  if (argc < 2) return "";
  const std::string first = argv[1];
  if (first.starts_with("-")) return "";
  const std::vector<const CLI::App*> subcommands = app.get_subcommands([](const CLI::App*) { return true; });
  const auto command = std::ranges::find(subcommands, first, &CLI::App::get_name);
  if (command == subcommands.end()) {
    std::vector<std::string> commands;
    for (const CLI::App* sub : subcommands) commands.push_back(sub->get_name());
    return fmt::format("'{}': unknown command{}; the commands are {}", first, model::did_you_mean(first, commands),
                       fmt::join(commands, ", "));
  }
  std::vector<std::string> options;
  for (const CLI::Option* option : (*command)->get_options([](const CLI::Option*) { return true; })) {
    for (const std::string& name : option->get_lnames()) options.push_back("--" + name);
    for (const std::string& name : option->get_snames()) options.push_back("-" + name);
  }
  for (int i = 2; i < argc; ++i) {
    const std::string token = argv[i];
    if (!token.starts_with("-") || token == "-" || token == "--" || std::isdigit(static_cast<unsigned char>(token[1]))) continue;
    const std::string name = token.substr(0, token.find('='));
    if (std::find(options.begin(), options.end(), name) == options.end()) {
      return fmt::format("{}: unknown option of {}{} (see stripesim {} --help)", name, first, model::did_you_mean(name, options),
                         first);
    }
  }
  return "";
}

// Where the help for a parse error is: the command's own ("stripesim analyze --help", where its
// flags are listed) when argv names one, else the top level's.
std::string help_command(const CLI::App& app, int argc, char** argv) {
  if (argc >= 2) {
    for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
      if (sub->get_name() == argv[1]) return fmt::format("stripesim {} --help", sub->get_name());
    }
  }
  return "stripesim --help";
}

// CLI11's own wording of a parse error, where it has a clearer one: a single-valued option given
// twice ("--seq-len: At Most 1 required but received 2") says so.
std::string parse_error_message(const CLI::ParseError& e) {
  static const std::regex repeated(R"(^(\S+): At Most 1 required but received (\d+)$)");
  const std::string message = e.what();
  std::smatch match;
  if (std::regex_match(message, match, repeated)) {
    return fmt::format("{}: given {} times; it takes one value", match[1].str(), match[2].str());
  }
  return message;
}

// An option given an empty value (`--topology ""`, `-o ''`, often a shell variable that was not
// set) would otherwise mean the same as leaving it out. "" when every value given has text.
std::string empty_value_error(const CLI::App& app) {
  for (const CLI::App* command : app.get_subcommands()) {
    for (const CLI::Option* option : command->get_options()) {
      // Absent, a flag, or a positional input (whose command names it better: "report input ''").
      if (option->count() == 0 || option->get_type_size() == 0 || !option->nonpositional()) continue;
      for (const std::string& value : option->results()) {
        if (value.empty()) return fmt::format("{}: an empty value; give one or leave the option out", option->get_name());
      }
    }
  }
  return "";
}

void print_error(std::FILE* errors, std::string message) {
  std::replace(message.begin(), message.end(), '\n', ' ');
  // Not fmt::print, which throws where stderr is closed: the exit code still says what failed.
  const std::string line = fmt::format("stripesim: error: {}\n", message);
  (void)std::fwrite(line.data(), 1, line.size(), errors);
}


int run_cli_unguarded(int argc, char** argv, std::FILE* errors, RunMode mode) {
  CLI::App app{"stripesim: exact load-balance model of causal Ring Attention (contiguous, striped, zigzag, ...) and its speedup",
               "stripesim"};
  app.footer(kExamples);
  app.set_version_flag("--version", "stripesim 0.1.0");
  app.require_subcommand(1);
  const auto run_analyze = register_analyze_command(app, mode);
  const auto run_tms = register_tms_command(app, mode);
  const auto run_sweep = register_sweep_command(app, mode);
  const auto run_simulate = register_simulate_command(app, mode);
  const auto run_plan = register_plan_command(app, mode);
  const auto run_report = register_report_command(app, mode);
  const auto run_check = register_check_command(app, mode);
  const auto run_validate = register_validate_command(app, mode);
  const auto run_calibrate_step = register_calibrate_step_command(app, mode);
  const auto run_layout = register_layout_command(app, mode);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) {  // --help, --version: output like any other
      const int code = app.exit(e);
      try {
        flush_standard_output();
      } catch (const model::InputError& failed) {
        print_error(errors, failed.what());
        return kExitBadInput;
      }
      return code;
    }
    const std::string hint = unknown_name_hint(app, argc, argv);
    print_error(errors, hint.empty() ? fmt::format("{} (see {})", parse_error_message(e), help_command(app, argc, argv)) : hint);
    return kExitBadInput;
  }
  if (const std::string empty = empty_value_error(app); !empty.empty()) {
    print_error(errors, empty);
    return kExitBadInput;
  }
  int status = kExitOk;
  try {
    run_analyze();  // each runs only if its subcommand was given
    run_tms();
    run_sweep();
    run_simulate();
    run_plan();
    run_calibrate_step();
    run_layout();
    run_report();
    status = run_check();  // 1 when a metric moved
    if (status == kExitOk) status = run_validate();  // 1 when an output missed its tolerance
    flush_standard_output();  // a full disk or a closed pipe is not success
  } catch (const model::InputError& e) {
    print_error(errors, e.what());
    return kExitBadInput;
  } catch (const validate::DeviceFailure& e) {
    // A GPU out of memory, missing, an NCCL error or a peer that never answered: named by rank
    // and operation. Not the user's input (2) nor a bug (1).
    print_error(errors, e.what());
    return kExitDeviceFailure;
  }
  return status;
}

}  // namespace

int run_cli(int argc, char** argv, std::FILE* errors, RunMode mode) {
  // Around everything, the options' registration too: under a tight memory limit even building
  // the command line can run out.
  try {
    return run_cli_unguarded(argc, argv, errors, mode);
  } catch (const std::bad_alloc&) {
    print_error(errors, "out of memory: the requested sizes are too large for this machine");
    return kExitBadInput;
  } catch (const std::system_error& e) {
    if (e.code() != std::errc::resource_unavailable_try_again) {
      print_error(errors, fmt::format("internal error: {}", e.what()));
      return kExitInternal;
    }
    // What std::thread throws when the system refuses one more thread (the process or user
    // limit, or memory for its stack): the request's --threads, not a bug.
    print_error(errors, fmt::format("the system refused a worker thread ({}); give fewer --threads (0, the default, "
                                    "is one per core) or raise the process limit (ulimit -u)",
                                    e.code().message()));
    return kExitBadInput;
  } catch (const std::exception& e) {
    print_error(errors, fmt::format("internal error: {}", e.what()));
    return kExitInternal;
  }
}

}  // namespace stripesim::cli
