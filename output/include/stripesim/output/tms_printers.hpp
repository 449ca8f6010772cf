#pragma once
// A TMS result (model/flops/tms.hpp) as a table, as JSON (stripesim.tms/1,
// reports/schema/tms.schema.json) and as CSV.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "stripesim/model/flops/tms.hpp"
#include "stripesim/output/output_format.hpp"

namespace stripesim::output {

[[nodiscard]] nlohmann::ordered_json to_json(const model::TmsResult& result);
// One flat row per layout: the request (model, hardware, convention, pass, recompute, devices,
// model_parallel, seq_len, tile, tiling, mask, attention_flop_weight), then the fields of the
// JSON's entry for that layout. tms's CSV.
[[nodiscard]] std::vector<nlohmann::ordered_json> tms_rows(const model::TmsResult& result);
[[nodiscard]] std::string tms_table(const model::TmsResult& result);

// What render offers for it, in the order --format lists them (the command offers exactly these).
inline constexpr OutputFormat kTmsFormats[] = {OutputFormat::table, OutputFormat::json, OutputFormat::csv};
// table, json or csv.
[[nodiscard]] std::string render(const model::TmsResult& result, OutputFormat format);

}  // namespace stripesim::output
