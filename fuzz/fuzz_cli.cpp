// libFuzzer target over the whole command line: the input, split at NUL bytes, is the argv of
// `stripesim` (argv[0] supplied), run in-process by run_cli in parse-only mode (cli/run_mode.hpp):
// every command parses and validates all its flags and files and builds its full configuration
// (models, hardware, topologies, masks, layouts, experiment files), then returns before counting,
// simulating or writing anything. The contract checked: exit 0 with nothing on the error stream,
// or exit 2 with exactly one "stripesim: error: " line. Exit 1 (an internal error: an exception
// other than InputError escaped a command), any other code, an exception out of run_cli, a crash,
// a hang or a sanitizer report is a bug.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "cli_app.hpp"
#include "run_mode.hpp"

namespace fs = std::filesystem;

namespace {

// A private copy of the files the seeds name by relative path (configs/, tests/data/,
// reports/baseline/, and report inputs written by the commands themselves): each run happens
// inside it, so a relative path can only ever reach these copies, never the repository.
std::string g_scratch;
int g_home = -1;  // the directory libFuzzer started in (its corpus and artifact paths are relative to it)

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "fuzz_cli: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

// Absolute paths, "..", and a '/' right after a separator (":/dev/zero", "=/proc/...", ",/x")
// could reach files outside the scratch folder, such as /dev/zero, which never ends: such
// inputs are skipped. A '/' after a letter, digit, '-', '_' or '.' continues a relative path.
bool stays_inside(const std::string& arg) {
  if (arg.find("..") != std::string::npos) return false;
  for (std::size_t i = 0; i < arg.size(); ++i) {
    if (arg[i] != '/') continue;
    if (i == 0) return false;
    const auto before = static_cast<unsigned char>(arg[i - 1]);
    if (std::isalnum(before) == 0 && before != '-' && before != '_' && before != '.') return false;
  }
  return arg.find("/dev") == std::string::npos && arg.find("/proc") == std::string::npos &&
         arg.find("/sys") == std::string::npos;
}

// A count as the CLI reads it (digits, optional k/M/G suffix), or -1.
double count_value(const std::string& text) {
  if (text.empty()) return -1;
  double multiplier = 1;
  std::string digits = text;
  switch (text.back()) {
    case 'k': case 'K': multiplier = 1024.0; digits.pop_back(); break;
    case 'm': case 'M': multiplier = 1048576.0; digits.pop_back(); break;
    case 'g': case 'G': multiplier = 1073741824.0; digits.pop_back(); break;
    default: break;
  }
  if (digits.empty() || digits.size() > 20) return -1;
  double value = 0;
  for (const char ch : digits) {
    if (ch < '0' || ch > '9') return -1;
    value = value * 10 + (ch - '0');
  }
  return value * multiplier;
}

std::vector<std::string> items(const std::string& list) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = list.find(',', start);
    out.push_back(list.substr(start, comma - start));
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

// Explicit layouts (balanced, doc-zigzag, doc-striped) and documents masks are built and checked
// token by token (about 1 us per token under the sanitizers), and the balancer places every chunk
// on the least loaded of N devices: planning costs about n x max(N, 64) per grid point. That cost
// is the work the command line asks for, not a parser bug (`stripesim analyze --seq-len 2G
// --layouts balanced` needs minutes and 16 GB even in a release build), so such inputs are
// skipped when the sizes given on the command line, summed over every list item and multiplied
// by the other lists' lengths, exceed 2^27 tokens x devices (2^21 tokens for up to 64 devices).
// Sizes read from experiment and config files are the committed fixtures', which plan in
// seconds at most. (A 6.25M-token balance sweep over 2 and 8 devices, 2 x 64 x 6.4M, took 14 s.)
// Documents and the balancer together are far costlier: its local search compares every unit
// (a short document) of the busiest device with every unit elsewhere, quadratic in the number of
// documents (a release build needs 1.1 s for 256k tokens of documents:lognormal:24:5.0 on 8
// devices, 5.1 s for 512k), so with both the grid may hold at most 2^15 tokens in all.
//
// `plan` plans every mesh M x N x D of its GPUs (G) in parse-only mode too, each placed on a
// topology of G GPUs with the work of an N-device ring per round and device (N^2): with --gpus it
// is priced like a grid of G devices, and more than 1024 GPUs is skipped (a whole release-build
// plan of 1M tokens takes 3.1 s and 0.8 GB on 4096 GPUs, 25 s on 16384; sanitizers multiply it).
bool too_costly(const std::vector<std::string>& args) {
  const bool plan = !args.empty() && args.front() == "plan";
  bool explicit_layouts = plan, documents = false, balancer = false;
  for (const auto& arg : args) {
    documents = documents || arg.find("documents") != std::string::npos;
    balancer = balancer || arg.find("balance") != std::string::npos;  // balanced, --kind balance
    explicit_layouts = explicit_layouts || arg.find("doc-") != std::string::npos;
  }
  explicit_layouts = explicit_layouts || documents || balancer;
  if (!explicit_layouts) return false;
  double tokens = 0, devices = 0, lists = 1, layouts = 1;
  auto add = [&](const std::string& flag, const std::string& value) {
    if (flag == "--seq-len" || flag == "-n" || flag == "--seq-lens") {
      for (const auto& item : items(value)) tokens += std::max(0.0, count_value(item));
    } else if (flag == "--devices" || flag == "-N" || (plan && (flag == "--gpus" || flag == "-G"))) {
      for (const auto& item : items(value)) devices += std::max(0.0, count_value(item));
    } else if (flag == "--meshes") {
      for (const auto& item : items(value)) devices += std::max(0.0, count_value(item.substr(item.find('x') + 1)));
    } else if (flag == "--layouts") {
      layouts *= static_cast<double>(items(value).size());
    } else if (flag == "--masks" || flag == "--tiles" || flag == "--models" || flag == "--hardware" ||
               flag == "--model-parallel" || flag == "-M") {
      lists *= static_cast<double>(items(value).size());
    }
  };
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (const std::size_t equals = arg.find('='); arg.starts_with("--") && equals != std::string::npos) {
      add(arg.substr(0, equals), arg.substr(equals + 1));
    } else if (arg.size() > 2 && arg[0] == '-' && arg[1] != '-') {
      add(arg.substr(0, 2), arg.substr(2));  // -n4k
    } else if (i + 1 < args.size()) {
      add(arg, args[i + 1]);
    }
  }
  if (plan && devices > 1024) return true;
  if (tokens == 0) tokens = 524288;  // the commands' default n (sweep's default list sums to 480k)
  if (documents && balancer && tokens * lists > 32768.0) return true;
  return tokens * std::max(devices, 64.0) * lists * layouts > 134217728.0;
}

struct Outcome {
  int code = -1;
  std::string errors;
};

Outcome run(std::vector<std::string> args, stripesim::cli::RunMode mode) {
  args.insert(args.begin(), "stripesim");
  std::vector<char*> argv;
  for (auto& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  char* buffer = nullptr;
  std::size_t size = 0;
  std::FILE* errors = open_memstream(&buffer, &size);
  if (errors == nullptr) fail("open_memstream failed");
  Outcome outcome;
  if (::chdir(g_scratch.c_str()) != 0) fail("cannot enter " + g_scratch);
  try {
    outcome.code = stripesim::cli::run_cli(static_cast<int>(args.size()), argv.data(), errors, mode);
  } catch (const std::exception& e) {
    fail(std::string("exception escaped run_cli: ") + e.what());
  } catch (...) {
    fail("non-standard exception escaped run_cli");
  }
  if (::fchdir(g_home) != 0) fail("cannot return to the starting directory");
  std::fclose(errors);
  outcome.errors.assign(buffer, size);
  std::free(buffer);
  return outcome;
}

void copy_tree(const fs::path& from, const fs::path& to) {
  fs::create_directories(to);
  fs::copy(from, to, fs::copy_options::recursive);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  char pattern[] = "/tmp/stripesim_fuzz_cli_XXXXXX";
  if (::mkdtemp(pattern) == nullptr) fail("mkdtemp failed");
  g_scratch = pattern;
  g_home = ::open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (g_home < 0) fail("cannot open the starting directory");
  const fs::path source = STRIPESIM_SOURCE_DIR;
  copy_tree(source / "configs", fs::path(g_scratch) / "configs");
  copy_tree(source / "tests" / "data", fs::path(g_scratch) / "tests" / "data");
  copy_tree(source / "reports" / "baseline", fs::path(g_scratch) / "reports" / "baseline");
  fs::create_directories(fs::path(g_scratch) / "reports" / "default");
  // --model 1b, --hardware a100, --topology dgx-h100 resolve in the repository's configs/ (read only).
  ::setenv("STRIPESIM_CONFIG_DIR", (source / "configs").c_str(), 1);
  // --help and command output go to stdout; libFuzzer reports on stderr, which stays as it is.
  const int null = ::open("/dev/null", O_WRONLY);
  if (null < 0 || ::dup2(null, STDOUT_FILENO) < 0) fail("cannot silence stdout");
  ::close(null);
  // Small report inputs, written by the commands (in normal mode) so they match today's schemas.
  const std::vector<std::vector<std::string>> inputs{
      {"analyze", "--seq-len", "2048", "--devices", "8", "--tile", "64x64", "--format", "json", "-o",
       "reports/default/analyze.json"},
      {"tms", "--seq-len", "64k", "--format", "json", "-o", "reports/default/tms.json"},
      {"sweep", "--devices", "4,8", "--seq-lens", "32k,64k", "--format", "json", "-o", "reports/default/sweep.json"},
      {"simulate", "--seq-len", "16k", "--devices", "4", "--summary-only", "--format", "json", "-o",
       "reports/default/simulate.json"},
      {"simulate", "--cp", "hybrid:2x2", "--seq-len", "16k", "--devices", "4", "--pass", "fwdbwd"},
      {"plan", "--model", "1b", "--gpus", "8", "--seq-len", "64k", "--algorithms", "ring,ulysses", "--format", "csv"},
  };
  for (const auto& args : inputs) {
    const Outcome outcome = run(args, stripesim::cli::RunMode::full);
    if (outcome.code != 0) fail("writing a report input failed: " + outcome.errors);
  }
  std::atexit([] {
    std::error_code ec;
    fs::remove_all(g_scratch, ec);
  });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<std::string> args(1);
  for (std::size_t i = 0; i < size; ++i) {
    if (data[i] == '\0') {
      args.emplace_back();
    } else {
      args.back() += static_cast<char>(data[i]);
    }
  }
  if (!args.empty() && args.back().empty()) args.pop_back();  // a trailing NUL ends the last argument
  for (const auto& arg : args) {
    if (!stays_inside(arg)) return 0;
  }
  if (too_costly(args)) return 0;
  const Outcome outcome = run(args, stripesim::cli::RunMode::parse_only);
  const std::string prefix = "stripesim: error: ";
  switch (outcome.code) {
    case stripesim::cli::kExitOk:
      if (!outcome.errors.empty()) fail("exit 0 with an error message: " + outcome.errors);
      break;
    case stripesim::cli::kExitBadInput:
      if (outcome.errors.rfind(prefix, 0) != 0 || outcome.errors.find('\n') != outcome.errors.size() - 1) {
        fail("exit 2 without exactly one error line: '" + outcome.errors + "'");
      }
      break;
    default: fail("exit " + std::to_string(outcome.code) + ": " + outcome.errors);
  }
  return 0;
}
