#pragma once
// Kernel timings from outside (or from the validator's own runs) in one shape: a workload is a
// ring's every (round, device) attention call, each timed alone on one GPU with no
// communication. Files: `stripesim.measurements/1` (reports/schema/measurements.schema.json:
// a workload and, per layout, us[round][device] and optionally the BlockMask's active blocks)
// and `stripesim.block-costs/1` (one c x c block, full or causal, per row and kernel column:
// a one-device ring).
#include <nlohmann/json.hpp>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "stripesim/model/io/input_origins.hpp"
#include "stripesim/model/work/tile_shape.hpp"
#include "stripesim/model/work/types.hpp"
#include "stripesim/sim/simulation.hpp"

namespace stripesim::validate {

using model::Count;

struct MeasuredWorkload {
  std::string group;   // the file it came from (file_labels): leave-one-out holds a whole group back
  std::string kernel;  // as the file names it
  std::string device;
  Count seq_len = 0;
  Count devices = 0;
  Count heads = 0;
  Count kv_heads = 0;
  Count head_dim = 0;
  Count batch = 1;
  std::string dtype = "bf16";
  std::optional<model::TileShape> tile;  // the BlockMask's; absent when the kernel picks its own
  std::string mask;
  sim::PassSelection pass = sim::PassSelection::forward;
  std::string layout;
  std::vector<double> us;                          // [round * devices + device]
  std::string us_where;                            // where the file gives them ('--measurements f.json layout "zigzag" field "us"')
  std::optional<std::vector<Count>> active_blocks;  // [round * devices + device]
  std::string active_blocks_where;                  // where the file gives them, as us_where
  // Where its inputs stand in the file, so that a value the work model or the simulator refuses
  // is named by its field ('--measurements f.json field "workload.heads" = 4096: ...'), not by
  // a flag the user never gave. Empty for workloads not read from a file (errors name flags).
  model::InputOrigins origins;

  [[nodiscard]] double at(Count round, Count device) const { return us[static_cast<size_t>(round * devices + device)]; }
  // "causal-fwd-n32768-N4.json zigzag"
  [[nodiscard]] std::string label() const;
};

// The names that tell the given files apart in reports and leave-one-out groups, one per path:
// the file's name, with as many of its folders before it as it takes to differ from every other
// file's (two runs' causal-fwd-n65536-N4.json read from h100/sdpa/ and from rerun/ are
// "sdpa/causal-fwd-n65536-N4.json" and "rerun/causal-fwd-n65536-N4.json"; same-named files would
// otherwise be taken for one workload). Throws model::InputError for a file given twice.
[[nodiscard]] std::vector<std::string> file_labels(const std::vector<std::string>& paths);
// A path's folders and name, lexically normalised, without the root or "." ("./a//b.json": a, b.json).
[[nodiscard]] std::vector<std::string> path_components(const std::filesystem::path& path);

// Throws model::InputError naming the file and the field for anything malformed. `group`: the
// file's label (file_labels).
[[nodiscard]] std::vector<MeasuredWorkload> read_measurements(const std::string& path, const std::string& group);
// The same on a document already parsed, its errors named by `label` ("--measurements f.json").
[[nodiscard]] std::vector<MeasuredWorkload> measurements_from_json(const nlohmann::json& doc, const std::string& label,
                                                                   const std::string& group);
// `kernel`: which columns of the file to read ("sdpa", "flex": the column prefix).
[[nodiscard]] std::vector<MeasuredWorkload> read_block_costs(const std::string& path, const std::string& kernel,
                                                             const std::string& group);
[[nodiscard]] std::vector<MeasuredWorkload> block_costs_from_json(const nlohmann::json& doc, const std::string& kernel,
                                                                  const std::string& label, const std::string& group);

}  // namespace stripesim::validate
