#include "stripesim/output/tms_printers.hpp"

#include <fmt/format.h>

#include "stripesim/model/work/work_model.hpp"
#include "stripesim/output/rows.hpp"

namespace stripesim::output {

namespace {

// One layout's entry of the JSON's "layouts", and the per-layout half of a CSV row.
nlohmann::ordered_json layout_json(const model::TmsResult& r, const model::LayoutTms& l) {
  return {{"layout", l.layout},
          {"tms", l.tms},
          {"tms_tiles", l.tms_tiles},
          {"lockstep_pairs", l.elements.lockstep},
          {"lockstep_tiles", l.tiles.lockstep},
          {"attention_per_device", l.time - r.non_attention_per_device},
          {"attention_per_device_tiles", l.time_tiles - r.non_attention_per_device},
          {"time_flop_equivalents", l.time},
          {"time_flop_equivalents_tiles", l.time_tiles},
          {"imbalance", l.elements.imbalance},
          {"tiles_imbalance", l.tiles.imbalance},
          {"lockstep_speedup", l.elements.lockstep_speedup},
          {"tiles_lockstep_speedup", l.tiles.lockstep_speedup}};
}

}  // namespace

nlohmann::ordered_json to_json(const model::TmsResult& r) {
  const model::TmsRequest& q = r.request;
  nlohmann::ordered_json doc;
  doc["schema"] = model::kTmsSchema;
  doc["config"] = {{"model", model::to_json(q.model)},
                   {"hardware", q.hardware.name},
                   {"convention", model::to_string(q.convention)},
                   {"pass", model::to_string(q.pass)},
                   {"recompute", q.recompute},
                   {"devices", q.devices},
                   {"model_parallel", q.model_parallel},
                   {"seq_len", q.seq_len},
                   {"block_size", q.seq_len / q.devices},
                   {"tile", {{"query", r.tile.query}, {"key", r.tile.key}}},
                   {"tiling", model::tiling_name(q.tiling)},
                   {"mask", q.mask}};
  doc["tms"] = r.layout("striped").tms;
  doc["tms_tiles"] = r.layout("striped").tms_tiles;
  doc["tms_zigzag"] = r.layout("zigzag").tms;
  doc["tms_tiles_zigzag"] = r.layout("zigzag").tms_tiles;
  doc["flops"] = {{"attention_flop_weight", r.attention_flop_weight},
                  {"multipliers", {{"matmul", r.multipliers.matmul}, {"attention", r.multipliers.attention}}},
                  {"non_attention_per_token", r.flops.non_attention_per_token},
                  {"attention_per_pair", r.flops.attention_per_pair},
                  {"non_attention_per_device", r.non_attention_per_device}};
  nlohmann::ordered_json layouts = nlohmann::ordered_json::array();
  for (const model::LayoutTms& l : r.layouts) layouts.push_back(layout_json(r, l));
  doc["layouts"] = std::move(layouts);
  return doc;
}

std::vector<nlohmann::ordered_json> tms_rows(const model::TmsResult& r) {
  const model::TmsRequest& q = r.request;
  std::vector<nlohmann::ordered_json> rows;
  for (const model::LayoutTms& l : r.layouts) {
    nlohmann::ordered_json row{{"model", q.model.name},
                               {"hardware", q.hardware.name},
                               {"convention", model::to_string(q.convention)},
                               {"pass", model::to_string(q.pass)},
                               {"recompute", q.recompute},
                               {"devices", q.devices},
                               {"model_parallel", q.model_parallel},
                               {"seq_len", q.seq_len},
                               {"tile", r.tile.to_string()},
                               {"tiling", model::tiling_name(q.tiling)},
                               {"mask", q.mask},
                               {"attention_flop_weight", r.attention_flop_weight}};
    const nlohmann::ordered_json fields = layout_json(r, l);  // named: items() does not keep a temporary alive
    for (const auto& [key, value] : fields.items()) row[key] = value;
    rows.push_back(std::move(row));
  }
  return rows;
}

std::string tms_table(const model::TmsResult& r) {
  const auto& q = r.request;
  std::string out;
  auto put = [&out](const std::string& text) { out += text; };
  put(fmt::format("theoretical maximum speedup over contiguous ring attention ({} convention, pass {}{})\n",
                  to_string(q.convention), to_string(q.pass), q.recompute ? ", recompute" : ""));
  put(fmt::format("model {} on {}: N = {} sequence-parallel x M = {} model-parallel, n = {} tokens (c = {}), tiles {}{}, "
                  "attention FLOP weight {:g}\n\n",
                  q.model.name, q.hardware.name, q.devices, q.model_parallel, q.seq_len, q.seq_len / q.devices,
                  r.tile.to_string(),
                  model::tiling_matters(q.tiling, r.mask_kind) ? " (varlen)" : "",
                  r.attention_flop_weight));
  put(fmt::format("{:<22} {:>8} {:>12} {:>18} {:>16} {:>10}\n", "layout", "TMS", "TMS (tiles)", "lockstep pairs",
                  "lockstep tiles", "imbalance"));
  for (const auto& l : r.layouts) {
    put(fmt::format("{:<22} {:>7.3f}x {:>11.3f}x {:>18} {:>16} {:>9.3f}x\n", l.layout, l.tms, l.tms_tiles,
                    l.elements.lockstep, l.tiles.lockstep, l.elements.imbalance));
  }
  const auto& contiguous = r.layout("contiguous");
  put(fmt::format("\nper device: {:.4g} non-attention FLOPs, {:.4g} weighted attention FLOPs under contiguous "
                  "({:.1f}% of its time)\n",
                  r.non_attention_per_device, contiguous.time - r.non_attention_per_device,
                  100.0 * (contiguous.time - r.non_attention_per_device) / contiguous.time));
  return out;
}

std::string render(const model::TmsResult& result, OutputFormat format) {
  switch (format) {
    case OutputFormat::table: return tms_table(result);
    case OutputFormat::json: return to_json(result).dump(2) + "\n";
    case OutputFormat::csv: return rows_to_csv(tms_rows(result));
    case OutputFormat::markdown: break;
  }
  throw not_offered(format);
}

}  // namespace stripesim::output
