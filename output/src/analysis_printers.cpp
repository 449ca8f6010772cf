#include "stripesim/output/analysis_printers.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <numeric>

#include "stripesim/model/work/work_model.hpp"
#include "stripesim/output/rows.hpp"

namespace stripesim::output {

nlohmann::ordered_json to_json(const model::WorkMatrix& matrix) {
  nlohmann::ordered_json rounds = nlohmann::ordered_json::array();
  for (model::Count r = 0; r < matrix.rounds(); ++r) {
    nlohmann::ordered_json row = nlohmann::ordered_json::array();
    for (model::Count d = 0; d < matrix.devices(); ++d) row.push_back(matrix.at(r, d));
    rounds.push_back(std::move(row));
  }
  return rounds;
}

nlohmann::ordered_json to_json(const model::Metrics& m, double lockstep_speedup_vs_contiguous) {
  return nlohmann::ordered_json{{"total", m.total},
                        {"lockstep", m.lockstep},
                        {"slowest_device", m.slowest_device},
                        {"imbalance", m.imbalance},
                        {"spread", m.spread},
                        {"cv", m.cv},
                        {"speedup", m.speedup},
                        {"lockstep_speedup", m.lockstep_speedup},
                        {"idle_fraction", m.idle_fraction},
                        {"lockstep_speedup_vs_contiguous", lockstep_speedup_vs_contiguous}};
}

nlohmann::ordered_json to_json(const model::Analysis& analysis) {
  const model::AnalyzeConfig& c = analysis.config;
  nlohmann::ordered_json mask = model::mask_to_json(analysis.mask, c.mask);
  nlohmann::ordered_json doc;
  doc["schema"] = model::kAnalyzeSchema;
  doc["config"] = {{"seq_len", analysis.seq_len},
                   {"devices", c.devices},
                   {"block_size", analysis.seq_len / c.devices},
                   {"tile", {{"query", c.tile.query}, {"key", c.tile.key}}},
                   {"tiling", model::tiling_name(c.tiling)},
                   {"mask", std::move(mask)},
                   {"layouts", c.layouts}};
  if (c.pad_documents) {
    doc["config"]["padding"] = {{"unpadded_seq_len", c.seq_len},
                                {"tokens", analysis.padding_tokens},
                                {"fraction", static_cast<double>(analysis.padding_tokens) / static_cast<double>(analysis.seq_len)}};
  }
  nlohmann::ordered_json results = nlohmann::ordered_json::array();
  for (const model::LayoutResult& r : analysis.results) {
    results.push_back({{"layout", r.layout},
                       {"unmasked_elements", to_json(r.work.unmasked_elements)},
                       {"active_tiles", to_json(r.work.active_tiles)},
                       {"partial_tiles", to_json(r.work.partial_tiles)},
                       {"metrics",
                        {{"elements", to_json(r.elements, r.elements_lockstep_speedup_vs_contiguous)},
                         {"tiles", to_json(r.tiles, r.tiles_lockstep_speedup_vs_contiguous)}}},
                       {"tiles_vs_bound", r.tiles_vs_bound},
                       {"tiles_lockstep_vs_bound", r.tiles_lockstep_vs_bound},
                       {"best", &r == &analysis.results[analysis.best]}});
    if (!r.document_pieces.empty()) results.back()["document_pieces"] = r.document_pieces;
  }
  doc["tile_bound"] = analysis.tile_bound;
  doc["best_layout"] = analysis.results[analysis.best].layout;
  doc["results"] = std::move(results);
  return doc;
}

std::vector<nlohmann::ordered_json> analysis_rows(const model::Analysis& analysis) {
  const model::AnalyzeConfig& c = analysis.config;
  std::vector<nlohmann::ordered_json> rows;
  for (size_t i = 0; i < analysis.results.size(); ++i) {
    const model::LayoutResult& r = analysis.results[i];
    nlohmann::ordered_json row{{"layout", r.layout},        {"seq_len", analysis.seq_len},
                               {"devices", c.devices},      {"tile", c.tile.to_string()},
                               {"tiling", model::tiling_name(c.tiling)}, {"mask", c.mask}};
    // The JSON's metrics objects, flattened with their unit as prefix.
    const std::pair<const char*, nlohmann::ordered_json> units[] = {
        {"elements", to_json(r.elements, r.elements_lockstep_speedup_vs_contiguous)},
        {"tiles", to_json(r.tiles, r.tiles_lockstep_speedup_vs_contiguous)}};
    for (const auto& [unit, metrics] : units) {
      for (const auto& [key, value] : metrics.items()) row[fmt::format("{}_{}", unit, key)] = value;
    }
    row["tiles_vs_bound"] = r.tiles_vs_bound;
    row["tiles_lockstep_vs_bound"] = r.tiles_lockstep_vs_bound;
    row["best"] = i == analysis.best;
    rows.push_back(std::move(row));
  }
  return rows;
}

namespace {

using model::Count;

template <typename... Args>
void append(std::string& out, fmt::format_string<Args...> format, Args&&... args) {
  fmt::format_to(std::back_inserter(out), format, std::forward<Args>(args)...);
}

void append_matrix(std::string& out, const std::string& title, const model::WorkMatrix& matrix) {
  append(out, "  {} [round][device]\n", title);
  append(out, "  {:>6}", "round");
  for (Count d = 0; d < matrix.devices(); ++d) append(out, " {:>14}", fmt::format("d{}", d));
  out += "\n";
  for (Count r = 0; r < matrix.rounds(); ++r) {
    append(out, "  {:>6}", r);
    for (Count d = 0; d < matrix.devices(); ++d) append(out, " {:>14}", matrix.at(r, d));
    out += "\n";
  }
}

}  // namespace

std::string analysis_table(const model::Analysis& analysis, bool matrices) {
  const model::AnalyzeConfig& c = analysis.config;
  std::string out;
  append(out, "ring attention work: n = {} tokens, N = {} devices, c = {} tokens per device, mask {}, tiles {}{}\n",
      analysis.seq_len, c.devices, analysis.seq_len / c.devices, analysis.mask.name(), c.tile.to_string(),
      model::tiling_matters(c.tiling, analysis.mask.kind()) ? " (varlen)" : "");
  if (analysis.mask.kind() == model::MaskKind::documents) {
    append(out, "{} documents", analysis.mask.document_lengths().size());
    if (analysis.mask.windowed()) append(out, ", a window of {} tokens inside each", analysis.mask.window_width());
    if (analysis.mask.padded()) {
      const auto& padding = analysis.mask.document_padding();
      const Count tokens = std::accumulate(padding.begin(), padding.end(), Count{0});
      append(out, ", {} padding tokens that attend to nothing ({:.2f}% of the sequence)", tokens,
             100.0 * static_cast<double>(tokens) / static_cast<double>(analysis.seq_len));
    }
    if (c.pad_documents) {
      append(out, ", padded to multiples of 2N = {}: {} padding tokens ({:.2f}% of the sequence is waste)", 2 * c.devices,
             analysis.padding_tokens, 100.0 * static_cast<double>(analysis.padding_tokens) / static_cast<double>(analysis.seq_len));
    }
    out += "\n";
  }
  out += "\n";
  size_t width = 22;  // the layout column grows for long names (permutation file paths)
  for (const auto& r : analysis.results) width = std::max(width, r.layout.size());
  append(out, "{:<{}} | {:^45} | {:^45} | {:>17}\n", "", width, "unmasked (q, k) pairs",
         fmt::format("active {} tiles", c.tile.to_string()), "vs tile bound");
  const auto group = fmt::format("{:>8} {:>9} {:>8} {:>6} {:>10}", "speedup", "imbalance", "lockstep", "idle", "vs contig");
  append(out, "{:<{}} | {} | {} | {:>8} {:>8}\n", "layout", width, group, group, "busiest", "lockstep");
  append(out, "{:-<{}}-+-{:-<45}-+-{:-<45}-+-{:-<17}\n", "", width, "", "", "");
  auto metrics_cells = [](const model::Metrics& m, double vs_contiguous) {
    return fmt::format("{:>7.2f}x {:>8.2f}x {:>7.2f}x {:>5.1f}% {:>9.2f}x", m.speedup, m.imbalance, m.lockstep_speedup,
                       100.0 * m.idle_fraction, vs_contiguous);
  };
  for (size_t i = 0; i < analysis.results.size(); ++i) {
    const auto& r = analysis.results[i];
    append(out, "{:<{}} | {} | {} | {:>7.2f}x {:>7.2f}x{}\n", r.layout, width,
           metrics_cells(r.elements, r.elements_lockstep_speedup_vs_contiguous),
           metrics_cells(r.tiles, r.tiles_lockstep_speedup_vs_contiguous), r.tiles_vs_bound, r.tiles_lockstep_vs_bound,
           i == analysis.best ? "  <- best" : "");
  }
  append(out, "\nspeedup = total / slowest device (no barrier); lockstep = total / sum over rounds of the busiest device;\n"
      "imbalance = slowest / mean device; idle = 1 - total / (N x lockstep); vs contig = contiguous lockstep / this lockstep.\n"
      "These divide by each layout's own total; the last two columns divide every layout by one tile bound, the fewest\n"
      "active tiles any layout above needs / N = {:.1f} tiles: busiest = the busiest device's tiles / bound, lockstep =\n"
      "the lockstep tiles / bound (1.00x is perfect). best = the lowest busiest, then the lowest lockstep.\n",
      analysis.tile_bound);
  if (!analysis.results.front().document_pieces.empty()) {
    append(out, "\npieces of documents per device (the cu_seqlens entries of a varlen call), most:");
    for (const auto& r : analysis.results) {
      append(out, " {} {}", r.layout, *std::max_element(r.document_pieces.begin(), r.document_pieces.end()));
    }
    out += "\n";
  }
  if (matrices) {
    for (const auto& r : analysis.results) {
      append(out, "\n{}\n", r.layout);
      append_matrix(out, "unmasked (q, k) pairs", r.work.unmasked_elements);
      append_matrix(out, "active tiles", r.work.active_tiles);
      append_matrix(out, "partial tiles", r.work.partial_tiles);
    }
  }
  return out;
}

std::string analysis_csv(const model::Analysis& analysis, bool matrices) {
  if (!matrices) return rows_to_csv(analysis_rows(analysis));
  std::string out = "layout,round,device,kv_source,unmasked_elements,active_tiles,partial_tiles\n";
  const Count devices = analysis.config.devices;
  for (const auto& r : analysis.results) {
    const std::string layout = csv_field(r.layout);
    for (Count round = 0; round < devices; ++round) {
      for (Count d = 0; d < devices; ++d) {
        append(out, "{},{},{},{},{},{},{}\n", layout, round, d,
                       model::kv_source(d, round, devices), r.work.unmasked_elements.at(round, d),
                       r.work.active_tiles.at(round, d), r.work.partial_tiles.at(round, d));
      }
    }
  }
  return out;
}

std::string render(const model::Analysis& analysis, OutputFormat format, bool matrices) {
  switch (format) {
    case OutputFormat::table: return analysis_table(analysis, matrices);
    case OutputFormat::json: return to_json(analysis).dump(2) + "\n";
    case OutputFormat::csv: return analysis_csv(analysis, matrices);
    case OutputFormat::markdown: break;
  }
  throw not_offered(format);
}

}  // namespace stripesim::output
