#pragma once
// A validate.json written by an earlier `stripesim validate --out-dir` run, read back as the
// report it was: every case with its timings (per (round, device) medians and spreads, forward
// and backward), its hand-off bytes and its check against dense attention. Predictions, fits and
// errors are not read: they are what `--calibrate` / `--compare --from FILE` recompute, so a run
// timed once on a GPU node can be fitted and scored again anywhere (another kernel profile to
// start from, another version of the model) without the GPU.
//
// The work model's counts are recomputed from each case and must equal the counts the file
// records per (round, device): a file from another layout or mask definition is refused.
// Throws model::InputError naming the file and the field.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "stripesim/validate/comparison.hpp"

namespace stripesim::validate {

[[nodiscard]] ValidationReport read_saved_report(const nlohmann::json& doc, const std::string& label);

// Several saved runs of one device read as one report, their cases side by side, so that a fit
// sees every size and pass they timed between them (a forward matrix and a forward+backward
// one). Each case keeps its own timings; the report's warm-up and iteration counts are the
// fewest any run used (every case's medians rest on at least that many). Throws
// model::InputError naming both labels when two runs differ in backend, device, how the ring's
// devices ran (at once or in turn) or where the ranks were placed.
[[nodiscard]] ValidationReport merge_saved_reports(std::vector<ValidationReport> reports, const std::vector<std::string>& labels);

}  // namespace stripesim::validate
