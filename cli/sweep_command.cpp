#include "sweep_command.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <memory>

#include "config_dir.hpp"
#include "distinct_list.hpp"
#include "file_flags.hpp"
#include "output_file.hpp"
#include "output_format.hpp"
#include "preset_help.hpp"
#include "run_mode.hpp"
#include "threads_option.hpp"
#include "stripesim/model/io/json_file.hpp"
#include "stripesim/model/io/name_match.hpp"
#include "stripesim/model/io/size_parse.hpp"
#include "stripesim/model/work/layout_spec.hpp"
#include "stripesim/model/workflows/balance_sweep.hpp"
#include "stripesim/model/workflows/grid.hpp"
#include "stripesim/model/workflows/sweep.hpp"
#include "stripesim/model/workflows/experiment_files.hpp"
#include "stripesim/output/rows.hpp"
#include "stripesim/sim/step_sweep.hpp"

namespace stripesim::cli {
namespace {

struct SweepOptions {
  std::string kind = "tms";
  std::string experiment;
  std::string masks = "documents:lognormal:512:1.0,documents:lognormal:4096:1.0,documents:lognormal:32768:1.0";
  bool pad_documents = false;
  std::string hardware = "a100";
  std::string models = "1b";
  std::string meshes;
  std::string devices = "2,4,8";
  std::string model_parallel = "1";
  std::string seq_lens = "32k,64k,128k,256k";
  std::string tiles = "default";
  std::string tiling;
  std::string layouts;
  std::string columns;
  std::string convention = "paper";
  std::string pass = "fwdbwd";
  bool recompute = false;
  std::string format = "csv";
  std::string output;
  std::string threads = "0";  // parse_threads reads it
  FileFlags grid;  // the flags an experiment file replaces: refused beside it
  FileFlags tms_only, balance_only;  // the grid flags of one kind of sweep: refused under the other
};

constexpr const char* kSweepExamples = R"(Examples:
  stripesim sweep --experiment configs/experiments/paper-tms.json --output reports/paper-tms.csv
      the paper's whole grid (A100, TPU v3, TPU v4), one row per point
  stripesim sweep --experiment configs/experiments/paper-measured.json --output reports/paper-step.csv
      the same grid with each point's training step simulated (an experiment with a "step" object)
  stripesim sweep --hardware a100,h100 --models 1b,llama3-8b --devices 4,8,16 --seq-lens 64k,256k,1M
  stripesim sweep --meshes 2x4,4x2 --seq-lens 16k,32k --tiles 128x128,2048x4096 --format json
  stripesim sweep --devices 8 --seq-lens 256k --layouts block-striped:16 --columns model,n_seq,tms,tms_block_striped_16
  stripesim sweep --kind balance --seq-lens 128k,1M --devices 8,32 --masks documents:lognormal:512:1.0,window:8k \
                  --layouts contiguous,striped,zigzag,doc-zigzag,balanced --pad-documents --format table
      where each layout stops being balanced (imbalance per layout, mask and size)
  stripesim sweep --experiment configs/experiments/documents.json --output reports/documents/documents.csv)";

template <typename T, typename Parse>
std::vector<T> parse_list(const std::string& text, const std::string& flag, Parse parse) {
  return parse_distinct_list<T>(text, flag, parse);
}

model::SweepSpec spec_from_flags(const SweepOptions& o) {
  model::SweepSpec spec;
  spec.convention = model::parse_flop_convention(o.convention);
  spec.pass = model::parse_training_pass(o.pass);
  spec.recompute = o.recompute;
  if (!o.layouts.empty()) spec.extra_layouts = model::split_distinct_list(o.layouts, "--layouts");
  if (!o.columns.empty()) spec.columns = model::split_distinct_list(o.columns, "--columns");
  model::SweepGroup g;
  g.hardware = model::split_distinct_list(o.hardware, "--hardware");
  g.models = model::split_distinct_list(o.models, "--models");
  if (!o.meshes.empty()) {
    g.meshes = parse_list<model::Mesh>(o.meshes, "--meshes", [](const std::string& s) { return model::parse_mesh(s, "--meshes"); });
  } else {
    const auto model_parallel = parse_list<model::Count>(o.model_parallel, "--model-parallel",
                                                         [](const std::string& s) { return model::parse_count(s, "--model-parallel"); });
    const auto devices = parse_list<model::Count>(o.devices, "--devices",
                                                  [](const std::string& s) { return model::parse_count(s, "--devices"); });
    model::for_each_grid_point(std::array{model_parallel.size(), devices.size()}, [&](auto at) {
      const auto [m, n] = at;
      g.meshes.push_back({model_parallel[m], devices[n]});
    });
  }
  g.seq_lens = parse_list<model::Count>(o.seq_lens, "--seq-lens",
                                        [](const std::string& s) { return model::parse_count(s, "--seq-lens"); });
  g.tiles = parse_list<std::optional<model::TileShape>>(o.tiles, "--tiles", [](const std::string& s) {
    return s == "default" ? std::nullopt : std::optional<model::TileShape>(model::parse_tile_shape(s));
  });
  spec.groups.push_back(std::move(g));
  return spec;
}

model::BalanceSweepSpec balance_spec_from_flags(const SweepOptions& o) {
  model::BalanceSweepSpec spec;
  model::BalanceGroup g;
  g.seq_lens = parse_list<model::Count>(o.seq_lens, "--seq-lens",
                                        [](const std::string& s) { return model::parse_count(s, "--seq-lens"); });
  g.devices = parse_list<model::Count>(o.devices, "--devices",
                                       [](const std::string& s) { return model::parse_count(s, "--devices"); });
  g.masks = model::split_distinct_list(o.masks, "--masks");
  g.tiles.clear();
  for (const auto& tile : model::split_distinct_list(o.tiles == "default" ? "128x128" : o.tiles, "--tiles")) {
    g.tiles.push_back(model::parse_tile_shape(tile));
  }
  if (!o.layouts.empty()) g.layouts = model::split_distinct_list(o.layouts, "--layouts");
  g.pad_documents = o.pad_documents;
  if (g.pad_documents && std::none_of(g.masks.begin(), g.masks.end(), [](const std::string& m) {
        return model::is_documents_mask(model::lowercase(m));
      })) {
    throw model::InputError("--pad-documents: needs a documents mask among --masks (it pads documents)");
  }
  spec.groups.push_back(std::move(g));
  return spec;
}

// The grid flags that give an input by another name than the one flag the libraries name it by
// (--meshes gives both degrees, where --model-parallel and --devices are refused beside it).
model::InputOrigins grid_flags(bool meshes) {
  model::InputOrigins flags;
  flags.add_flag(model::Input::seq_len, "--seq-lens");
  flags.add_flag(model::Input::mask, "--masks");
  flags.add_flag(model::Input::tile, "--tiles");
  flags.add_flag(model::Input::model, "--models");
  if (meshes) {
    flags.add_flag(model::Input::model_parallel, "--meshes (M of MxN)");
    flags.add_flag(model::Input::devices, "--meshes (N of MxN)");
  }
  return flags;
}

// A progress bar on stderr, only when stderr is a terminal (never in logs or pipes).
model::SweepProgress progress_bar() {
  if (::isatty(STDERR_FILENO) == 0) return {};
  return [](model::Count done, model::Count total) {
    constexpr int kWidth = 40;
    const int filled = static_cast<int>(kWidth * done / std::max<model::Count>(1, total));
    fmt::print(stderr, "\r[{:=<{}}{: <{}}] {}/{} points", "", filled, "", kWidth - filled, done, total);
    if (done == total) fmt::print(stderr, "\n");
    std::fflush(stderr);
  };
}

}  // namespace

std::function<void()> register_sweep_command(CLI::App& app, RunMode mode) {
  auto options = std::make_shared<SweepOptions>();
  SweepOptions& o = *options;
  CLI::App* cmd = app.add_subcommand("sweep", "TMS over a grid of hardware, models, meshes, sequence lengths and tiles");
  cmd->footer(kSweepExamples);
  o.grid.track(cmd->add_option("--kind", o.kind, "tms: TMS over models and hardware; balance: imbalance over masks and sizes")
                   ->check(CLI::IsMember({"tms", "balance"}))
                   ->capture_default_str());
  cmd->add_option("--experiment", o.experiment,
                  "JSON experiment file (configs/experiments/): the whole grid, in place of the grid flags (--tiling, "
                  "--threads, --format and --output still apply)");
  o.grid.track(cmd->add_option("--masks", o.masks, "balance: comma-separated masks (a documents mask of listed lengths, documents:16k,48k, has commas of its "
                                               "own: give it in an --experiment file)")
                   ->capture_default_str());
  o.grid.track(cmd->add_flag("--pad-documents", o.pad_documents, "balance: pad documents to multiples of 2N"));
  o.grid.track(cmd->add_option("--hardware", o.hardware, "tms: comma-separated hardware, each " + hardware_choices())->capture_default_str());
  o.grid.track(cmd->add_option("--models", o.models, "tms: comma-separated models, each " + model_choices())->capture_default_str());
  o.grid.track(cmd->add_option("--meshes", o.meshes,
                               "tms: comma-separated MxN meshes (model x sequence parallel); else --model-parallel x --devices"));
  o.grid.track(cmd->add_option("--devices,-N", o.devices, "Comma-separated devices in the ring N (sequence-parallel degrees)")->capture_default_str());
  o.grid.track(cmd->add_option("--model-parallel,-M", o.model_parallel, "tms: comma-separated model-parallel degrees")
                   ->capture_default_str());
  o.grid.track(cmd->add_option("--seq-lens", o.seq_lens, fmt::format("Comma-separated sequence lengths; {}", model::kCountSuffixes))->capture_default_str());
  o.grid.track(cmd->add_option("--tiles", o.tiles, "Comma-separated tiles TQxTK, or default (tms: the hardware's; balance: 128x128)")->capture_default_str());
  cmd->add_option("--tiling", o.tiling,
                  std::string(model::kTilingHelp) +
                      " For every point; overrides an experiment's \"tiling\" [default: fixed]");
  o.grid.track(cmd->add_option("--layouts", o.layouts, "tms: extra layouts beyond contiguous, striped, zigzag (block-striped:S, ...); balance: the layouts "
                                                     "compared [balance default: contiguous,striped,zigzag,balanced]"));
  o.grid.track(cmd->add_option("--columns", o.columns, "tms: comma-separated columns to keep, in this order [default: all]"));
  o.grid.track(cmd->add_option("--convention", o.convention, "tms: FLOP accounting")
                   ->check(CLI::IsMember({"paper", "exact"}))
                   ->capture_default_str());
  o.grid.track(cmd->add_option("--pass", o.pass, "tms: training pass counted")
                   ->check(CLI::IsMember({"fwd", "fwdbwd"}))
                   ->capture_default_str());
  o.grid.track(cmd->add_flag("--recompute", o.recompute, "tms: count activation recomputation"));
  add_format_option(cmd, o.format, output::kSweepFormats, "Output format");
  cmd->add_option("--output,-o", o.output, "Write to FILE instead of standard output");
  add_threads_option(cmd, o.threads, "Worker threads, 0 = one per core (output never depends on it)");
  for (const char* name : {"--hardware", "--models", "--meshes", "--model-parallel", "--columns", "--convention", "--pass",
                           "--recompute"}) {
    o.tms_only.track(cmd->get_option(name));
  }
  for (const char* name : {"--masks", "--pad-documents"}) o.balance_only.track(cmd->get_option(name));
  return [cmd, options, mode] {
    if (!cmd->parsed()) return;
    const SweepOptions& opts = *options;
    const unsigned threads = parse_threads(opts.threads);
    const std::optional<model::Tiling> tiling_flag =
        opts.tiling.empty() ? std::nullopt : std::optional<model::Tiling>(model::parse_tiling(opts.tiling));
    output::SweepTable sweep;
    sweep.schema = model::kSweepSchema;
    nlohmann::json experiment;
    const std::string label = "--experiment " + opts.experiment;
    // Whatever the file holds, it is the grid: one that is no JSON object is refused by its reader.
    const bool from_file = !opts.experiment.empty();
    if (from_file) {
      if (const CLI::Option* flag = opts.grid.first_given()) {
        throw model::InputError(fmt::format("{}: not with --experiment (the experiment file is the whole grid; only --tiling, "
                                            "--threads, --format and --output apply to it)",
                                            flag->get_name()));
      }
      experiment = model::with_files_beside(model::read_json_file(opts.experiment, label), opts.experiment);
    }
    // A file's "kind" of any other value or type is the TMS spec's to refuse, naming the field.
    const bool balance = from_file ? experiment.is_object() && experiment.contains("kind") && experiment.at("kind") == "balance"
                                   : opts.kind == "balance";
    // An experiment file's points name their fields; the flags' grid, its flags.
    const model::InputOrigins flags = from_file ? model::InputOrigins() : grid_flags(!opts.meshes.empty());
    if (const CLI::Option* flag = balance ? opts.tms_only.first_given() : opts.balance_only.first_given()) {
      throw model::InputError(fmt::format("{}: only with --kind {} (this sweep is --kind {})", flag->get_name(),
                                          balance ? "tms" : "balance", balance ? "balance" : "tms"));
    }
    if (!opts.meshes.empty()) {
      for (const char* name : {"--devices", "--model-parallel"}) {
        if (cmd->get_option(name)->count() > 0) {
          throw model::InputError(fmt::format("{}: not with --meshes (each MxN mesh names its own degrees)", name));
        }
      }
    }
    if (balance) {
      model::BalanceSweepSpec spec = from_file ? model::balance_spec_from_json(experiment, label)
                                               : flags.run([&] { return balance_spec_from_flags(opts); });
      spec.tiling = sweep.tiling = tiling_flag.value_or(spec.tiling);
      const model::BalanceSweepPlan plan = flags.run([&] { return model::plan_balance_sweep(spec); });
      if (mode == RunMode::parse_only) return;
      sweep.rows = model::run_balance_sweep(plan, progress_bar(), threads);
      sweep.description = spec.description;
      sweep.schema = model::kBalanceSchema;
    } else if (sim::is_step_sweep(experiment)) {
      sim::StepSweepSpec spec = sim::step_sweep_spec_from_json(experiment, label);
      // The TMS columns' and the simulated step's (which must be its kernel's).
      spec.grid.tiling = tiling_flag.value_or(spec.grid.tiling);
      if (tiling_flag) spec.step.tiling = tiling_flag;
      sweep.tiling = spec.grid.tiling;
      const model::ConfigCatalog catalog(config_dir());
      const sim::StepSweepPlan plan = sim::plan_step_sweep(spec, catalog);
      if (mode == RunMode::parse_only) return;
      sweep.rows = sim::run_step_sweep(plan);
      sweep.description = spec.grid.description;
    } else {
      model::SweepSpec spec = from_file ? model::sweep_spec_from_json(experiment, label)
                                        : flags.run([&] { return spec_from_flags(opts); });
      spec.tiling = sweep.tiling = tiling_flag.value_or(spec.tiling);
      const model::ConfigCatalog catalog(config_dir());
      const model::SweepPlan plan = flags.run([&] { return model::plan_sweep(spec, catalog); });
      if (mode == RunMode::parse_only) return;
      sweep.rows = model::run_sweep(plan, progress_bar(), threads);
      sweep.description = spec.description;
    }
    write_output(output::render(sweep, output_format(opts.format)), opts.output);
  };
}

}  // namespace stripesim::cli
