#include "report_command.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <memory>

#include "output_file.hpp"
#include "run_mode.hpp"
#include "stripesim/model/io/input_error.hpp"
#include "stripesim/model/io/json_file.hpp"
#include "stripesim/report/report_builder.hpp"
#include "stripesim/report/svg.hpp"

namespace stripesim::cli {
namespace {

struct ReportOptions {
  std::vector<std::string> inputs;
  std::string out_dir = "report";
};

constexpr const char* kReportExamples = R"(Examples:
  stripesim analyze --format json -o analyze.json && stripesim report analyze.json --out-dir my-report
  stripesim report reports/default/analyze.json reports/default/tms.json reports/default/sweep.json \
                   reports/default/simulate.json --out-dir reports/default
      what scripts/default-report.sh does (the quick start's last step))";

}  // namespace

std::function<void()> register_report_command(CLI::App& app, RunMode mode) {
  auto options = std::make_shared<ReportOptions>();
  CLI::App* cmd = app.add_subcommand("report", "Markdown report with SVG figures from analyze, tms, sweep (tms or balance), simulate or validate JSON");
  cmd->footer(kReportExamples);
  cmd->add_option("inputs", options->inputs, "JSON files written by analyze, tms, sweep (--kind tms or balance), simulate or validate")->required();
  cmd->add_option("--out-dir,-o", options->out_dir, "Folder (not a file) for report.md and its figures, created if missing")
      ->capture_default_str();
  return [cmd, options, mode] {
    if (!cmd->parsed()) return;
    std::vector<report::ReportInput> inputs;
    for (size_t i = 0; i < options->inputs.size(); ++i) {
      const std::string& path = options->inputs[i];
      // The same document twice would only draw every figure twice.
      for (size_t j = 0; j < i; ++j) {
        if (same_file(options->inputs[j], path)) {
          throw model::InputError(fmt::format("report input '{}': given twice (as '{}')", path, options->inputs[j]));
        }
      }
      inputs.push_back({path, model::read_json_file(path, "report input")});
    }
    // Everything is rendered in memory first: a bad input leaves no partial report behind.
    const auto files = report::build_report(inputs);
    if (mode == RunMode::parse_only) return;
    namespace fs = std::filesystem;
    OutputFiles outputs;
    outputs.add_folder(options->out_dir);
    for (const auto& file : files) outputs.add(file.content, (fs::path(options->out_dir) / file.name).string(), "--out-dir");
    outputs.add(fmt::format("report written to {} ({})\n", (fs::path(options->out_dir) / "report.md").string(),
                            report::count_of(files.size() - 1, "figure")),
                "-");
    outputs.commit();
  };
}

}  // namespace stripesim::cli
