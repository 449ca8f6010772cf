#include "stripesim/report/report_builder.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <iterator>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <utility>

#include "stripesim/model/flops/hardware_profile.hpp"
#include "stripesim/model/io/input_error.hpp"
#include "stripesim/model/io/schemas.hpp"
#include "stripesim/model/work/layout_spec.hpp"
#include "stripesim/report/figures.hpp"
#include "json_read.hpp"

namespace stripesim::report {
namespace {

template <typename... Args>
void append(std::string& out, fmt::format_string<Args...> format, Args&&... args) {
  fmt::format_to(std::back_inserter(out), format, std::forward<Args>(args)...);
}

std::string slug(std::string text) {
  std::replace_if(text.begin(), text.end(), [](char ch) { return !std::isalnum(static_cast<unsigned char>(ch)); }, '-');
  return text;
}

// How the kernel cuts tiles (fixed or varlen); documents written before tiling existed were fixed.
std::string tiling_of(const nlohmann::json& config) { return read_or<std::string>(config, "tiling", "fixed"); }

void analyze_section(const ReportInput& in, std::string& md, std::vector<ReportFile>& files) {
  const auto& doc = in.document;
  const auto& c = field(doc, "config");
  const std::string tag = slug(std::to_string(files.size()));
  append(md, "## Work per round and device (`{}`)\n\n", in.path);
  append(md, "n = {} tokens on N = {} devices (c = {}), tiles {}x{} ({} tiling), mask {}.\n\n", read_size(c, "seq_len"),
         read_size(c, "devices"), read_size(c, "block_size"), read_size(field(c, "tile"), "query"),
         read_size(field(c, "tile"), "key"), tiling_of(c), read<std::string>(field(c, "mask"), "spec"));
  md += "| layout | speedup | imbalance | lockstep speedup | idle | vs contiguous | tile lockstep speedup | tile idle | tiles vs contiguous |\n";
  md += "|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& r : non_empty_array_field(doc, "results")) {
    const auto& e = field(field(r, "metrics"), "elements");
    const auto& t = field(field(r, "metrics"), "tiles");
    append(md, "| {} | {:.2f}x | {:.2f}x | {:.2f}x | {:.1f}% | {:.2f}x | {:.2f}x | {:.1f}% | {:.2f}x |\n",
           read<std::string>(r, "layout"), read<double>(e, "speedup"), read<double>(e, "imbalance"),
           read<double>(e, "lockstep_speedup"), 100 * read<double>(e, "idle_fraction"),
           read<double>(e, "lockstep_speedup_vs_contiguous"), read<double>(t, "lockstep_speedup"),
           100 * read<double>(t, "idle_fraction"), read<double>(t, "lockstep_speedup_vs_contiguous"));
  }
  const std::string elements = fmt::format("work-elements-{}.svg", tag);
  const std::string tiles = fmt::format("work-tiles-{}.svg", tag);
  files.push_back({elements, work_heatmap_svg(doc, "unmasked_elements")});
  files.push_back({tiles, work_heatmap_svg(doc, "active_tiles")});
  append(md, "\nUnmasked (q, k) pairs per round and device:\n\n![unmasked pairs per round and device]({})\n\n", elements);
  append(md, "Active tiles per round and device:\n\n![active tiles per round and device]({})\n\n", tiles);

  // The same layouts on a sequence small enough to draw every pair (the paper's figure 4): those
  // whose shape does not depend on the workload, at the smallest n (a multiple of 8N) that each
  // divides. A block-striped layout whose stripe needs more than kMaxExampleTokens per device is
  // left out, and the text says so.
  constexpr long long kMaxExampleTokens = 32;
  const long long devices = std::min<long long>(read_size(c, "devices"), 4);
  long long example_n = 8 * devices;
  std::vector<std::string> layouts;
  std::vector<std::string> left_out;
  std::vector<std::string> shaped_by_workload;  // drawn small they would not be the layout analysed
  for (const auto& r : non_empty_array_field(doc, "results")) {
    const std::string name = read<std::string>(r, "layout");
    const std::optional<model::LayoutKind> kind = model::layout_kind_of(name);
    if (!kind || !model::same_shape_at_every_size(*kind)) {
      shaped_by_workload.push_back(name);
      continue;
    }
    if (*kind == model::LayoutKind::block_striped) {
      // Its stripe, read by the layout parser at the analyzed size (where it was valid). One it
      // refuses there was edited: named at the file's field, not at analyze's flags.
      long long stripe = 0;
      try {
        stripe = model::parse_layout(name, read_size(c, "seq_len"), read_size(c, "devices")).stripe();
      } catch (const model::InputError&) {
        throw FieldError(&r, "layout",
                         fmt::format("'{}' cannot lay out the analysed n = {} over N = {} (its stripe times N must divide n), "
                                     "so analyze did not write it",
                                     name, read_size(c, "seq_len"), read_size(c, "devices")));
      }
      if (stripe > kMaxExampleTokens) {
        left_out.push_back(name);
        continue;
      }
      example_n = std::lcm(example_n, stripe * devices);
    }
    layouts.push_back(name);
  }
  // The example keeps the mask's kind where one size fits any n: a prefix keeps its share of the
  // sequence (at least one token); windows and documents, whose lengths do not scale, draw causal.
  const auto& analysed_mask = field(c, "mask");
  std::string mask = read<std::string>(analysed_mask, "kind") == "bidirectional" ? "bidirectional" : "causal";
  if (analysed_mask.contains("prefix")) {
    // In doubles: an edited prefix near 2^63 would overflow the product (and a prefix past the
    // sequence is the whole of it, bidirectional).
    const double share = read<double>(analysed_mask, "prefix") / static_cast<double>(read_size(c, "seq_len"));
    const double prefix = std::clamp(share * static_cast<double>(example_n), 1.0, static_cast<double>(example_n));
    mask = fmt::format("prefix:{}", static_cast<long long>(prefix));
  }
  if (!layouts.empty()) {
    const std::string attention = fmt::format("attention-matrix-{}.svg", tag);
    files.push_back({attention, attention_matrix_svg(layouts, example_n, devices, mask)});
    append(md, "The attention matrix of a small example with the same layouts (n = {}, N = {}, {} mask): each "
               "allowed pair coloured by the device that computes it, with the round it is computed in (written in "
               "the cell, or in its tooltip where cells are small).{}\n\n"
               "![attention matrix of a small example]({})\n\n",
           example_n, devices, mask,
           (left_out.empty() ? ""
                             : fmt::format(" Not drawn: {} (a stripe wider than {} tokens per device).",
                                           fmt::join(left_out, ", "), kMaxExampleTokens)) +
               (shaped_by_workload.empty()
                    ? ""
                    : fmt::format(" Not drawn: {} (shaped by the analysed mask, tile or file, which a small example "
                                  "does not have).",
                                  fmt::join(shaped_by_workload, ", "))),
           attention);
  }
}

void tms_section(const ReportInput& in, std::string& md) {
  const auto& doc = in.document;
  const auto& c = field(doc, "config");
  append(md, "## Theoretical maximum speedup (`{}`)\n\n", in.path);
  append(md, "Model {} on {}: N = {} sequence-parallel, M = {} model-parallel, n = {} tokens, tiles {}x{}, {} convention, "
             "attention FLOP weight {:g}.\n\n",
         read<std::string>(field(c, "model"), "name"), read<std::string>(c, "hardware"), read_size(c, "devices"),
         read_size(c, "model_parallel"), read_size(c, "seq_len"), read_size(field(c, "tile"), "query"),
         read_size(field(c, "tile"), "key"), read<std::string>(c, "convention"),
         read<double>(field(doc, "flops"), "attention_flop_weight"));
  md += "| layout | TMS | tile-aware TMS | lockstep pairs | lockstep tiles | imbalance |\n|---|---|---|---|---|---|\n";
  for (const auto& l : non_empty_array_field(doc, "layouts")) {
    append(md, "| {} | {:.3f}x | {:.3f}x | {} | {} | {:.3f}x |\n", read<std::string>(l, "layout"),
           read<double>(l, "tms"), read<double>(l, "tms_tiles"), read<long long>(l, "lockstep_pairs"),
           read<long long>(l, "lockstep_tiles"), read<double>(l, "imbalance"));
  }
  md += "\n";
}

void sweep_section(const ReportInput& in, std::string& md, std::vector<ReportFile>& files) {
  const auto& rows = non_empty_array_field(in.document, "rows");
  // Every row holds the sweep's --columns: a row without one the first has (or with one it has
  // not) is a damaged file, not a sweep that chose fewer columns.
  std::map<std::string, size_t> first_with;  // each column, and the first row that holds it
  for (size_t i = 0; i < rows.size(); ++i) {
    if (!rows[i].is_object()) throw FieldError(&rows[i], "", "expected an object, got " + std::string(rows[i].type_name()));
    for (const auto& [key, value] : rows[i].items()) first_with.emplace(key, i);
  }
  for (const auto& row : rows) {
    for (const auto& [key, holder] : first_with) {
      if (!row.contains(key)) {
        throw FieldError(&row, key, fmt::format("missing (row {} has it: every row holds the sweep's columns)", holder));
      }
    }
  }
  append(md, "## TMS against sequence length (`{}`)\n\n", in.path);
  std::vector<std::string> absent;
  for (const char* column : {"tms", "mesh", "n_seq"}) {
    if (!rows[0].contains(column)) absent.push_back(fmt::format("`{}`", column));
  }
  if (!absent.empty()) {
    append(md, "Not plotted: the sweep has no {} column{} (its `--columns` left {} out).\n\n", fmt::join(absent, ", "),
           absent.size() == 1 ? "" : "s", absent.size() == 1 ? "it" : "them");
    return;
  }
  // A figure per hardware and model, as far as the columns name them (all rows in one where they do not).
  std::set<std::pair<std::string, std::string>> pairs;
  for (const auto& row : rows) pairs.emplace(read_or<std::string>(row, "hardware", ""), read_or<std::string>(row, "model", ""));
  for (const auto& [hardware, model] : pairs) {
    std::string stem = "tms";
    for (const std::string& part : {hardware, model}) {
      if (!part.empty()) stem += fmt::format("-{}", slug(part));
    }
    // A second sweep of the same hardware and model (reports of several sweeps) gets a figure of
    // its own, numbered as the figures before it are; a first keeps the plain name.
    std::string name = stem + ".svg";
    if (std::any_of(files.begin(), files.end(), [&](const ReportFile& f) { return f.name == name; })) {
      name = fmt::format("{}-{}.svg", stem, files.size());
    }
    files.push_back({name, tms_curves_svg(in.document, hardware, model)});
    append(md, "![TMS{}{} against sequence length]({})\n\n", model.empty() ? "" : fmt::format(" of {}", model),
           hardware.empty() ? "" : fmt::format(" on {}", hardware), name);
  }
}

// What ran, in the words of simulate's --cp ("ring", "allgather:2", "ulysses", "hybrid:2x4"): files
// written before --cp existed ran a ring.
std::string cp_of(const nlohmann::json& config) { return read_or<std::string>(config, "cp", "ring"); }
bool has_ring(const std::string& cp) { return cp == "ring" || cp.starts_with("hybrid"); }

void simulate_section(const ReportInput& in, std::string& md, std::vector<ReportFile>& files) {
  const auto& doc = in.document;
  const auto& c = field(doc, "config");
  const std::string cp = cp_of(c);
  const std::string scope = scope_of(c);
  const bool whole = scope != "attention";  // a layer's or a step's time, of which attention is a part
  append(md, "## Simulated {} (`{}`)\n\n",
         whole ? fmt::format("training {}, `--cp {}`", scope, cp) : cp == "ring" ? std::string("ring") : fmt::format("`--cp {}`", cp),
         in.path);
  append(md, "n = {} tokens on N = {} devices of {} on {}, context parallelism {}, pass {}, sync {}{}, tiles {}x{} ({} tiling).\n\n",
         read_size(c, "seq_len"), read_size(c, "devices"), read<std::string>(c, "hardware"),
         read<std::string>(c, "topology"), cp, read<std::string>(c, "pass"), read<std::string>(c, "sync"),
         has_ring(cp) ? fmt::format(", {} K/V buffers", read_size(c, "kv_buffers")) : std::string(),
         read_size(field(c, "tile"), "query"), read_size(field(c, "tile"), "key"), tiling_of(c));
  const auto& results = non_empty_array_field(doc, "results");
  if (whole) {
    // The row's time is the layer's or step's; its idle and exposed communication are one
    // layer's attention (simulate's JSON and CSV say so), shown apart so that neither is read as
    // a share of the other.
    md += "| layout | time (ms) | vs contiguous | tokens/s | MFU | memory (GiB) |\n|---|---|---|---|---|---|\n";
    for (const auto& r : results) {
      const auto& step = field(r, "step");
      append(md, "| {} | {:.3f} | {:.2f}x | {:.0f} | {:.1f}% | {:.1f}{} |\n", read<std::string>(r, "layout"),
             read<double>(r, "time_us") / 1e3, read<double>(r, "speedup_vs_contiguous"),
             read<double>(step, "tokens_per_second"), 100 * read<double>(step, "mfu"),
             read<double>(field(step, "memory_bytes"), "total") / model::kBytesPerGib, read<bool>(step, "exceeds_memory") ? " (over)" : "");
    }
    md += "\nOne layer's attention, every pass:\n\n";
  }
  // The worst device's totals over the passes, as simulate's table gives them (sim::ring_totals).
  md += whole ? "| layout | attention (ms) | max idle (ms) | max exposed comm (ms) |\n|---|---|---|---|\n"
              : "| layout | time (ms) | vs contiguous | max idle (ms) | max exposed comm (ms) |\n|---|---|---|---|---|\n";
  bool has_rounds = false;
  for (const auto& r : results) {
    double passes_us = 0;
    for (const auto& pass : non_empty_array_field(r, "passes")) {
      has_rounds = has_rounds || pass.contains("rounds");
      passes_us += read<double>(pass, "time_us");
    }
    const std::string time = whole ? fmt::format("{:.3f}", passes_us / 1e3)
                                   : fmt::format("{:.3f} | {:.2f}x", read<double>(r, "time_us") / 1e3,
                                                 read<double>(r, "speedup_vs_contiguous"));
    append(md, "| {} | {} | {:.3f} | {:.3f} |\n", read<std::string>(r, "layout"), time,
           read<double>(r, "max_idle_us") / 1e3, read<double>(r, "max_exposed_comm_us") / 1e3);
  }
  if (has_rounds) {
    const std::string name = fmt::format("timeline-{}.svg", files.size());
    files.push_back({name, timeline_svg(doc)});
    append(md, "\n![simulated timeline per device{}]({})\n\n", whole ? ", one layer's attention" : "", name);
  } else {
    // Left out by --summary-only, or by default above simulate's ring size for them: not said
    // which, the file does not record it.
    md += "\nThe simulation holds no per-round records to draw (`simulate --format json --rounds` writes them for a ring of any "
          "size; `--summary-only` leaves them out).\n\n";
  }
}

// Imbalance sweeps: one table per (n, N, tile), a row per mask, a column per layout.
void balance_section(const ReportInput& in, std::string& md) {
  const auto& rows = non_empty_array_field(in.document, "rows");
  append(md, "## Balance across masks and sizes (`{}`)\n\n", in.path);
  if (in.document.contains("description") && !read<std::string>(in.document, "description").empty()) {
    append(md, "{}\n\n", read<std::string>(in.document, "description"));
  }
  if (in.document.contains("tiling")) append(md, "Tiles cut with {} tiling.\n\n", read<std::string>(in.document, "tiling"));
  md += "Each cell, in active tiles over the best possible (the fewest tiles any of these layouts needs, spread "
        "evenly): the busiest device (a ring without a barrier) / the sum over rounds of the busiest device (a "
        "barrier every round, lockstep). 1.00 / 1.00 is perfect; **bold** marks the least busy device, and the lowest "
        "lockstep is in italics.\n\n";
  // One table per (n, N, tile): a tile's rows never fill another tile's cells, and each table has
  // the columns of its own layouts (ptrr is named for its block, which follows the tile).
  struct Size {
    long long n, devices;
    std::string tile;
    bool operator==(const Size&) const = default;
  };
  const auto size_of = [](const nlohmann::json& row) {
    return Size{read_size(row, "n_seq"), read_size(row, "devices"), read<std::string>(row, "tile")};
  };
  std::vector<Size> sizes;
  for (const auto& row : rows) {
    if (const Size size = size_of(row); std::find(sizes.begin(), sizes.end(), size) == sizes.end()) sizes.push_back(size);
  }
  for (const Size& size : sizes) {
    std::vector<std::string> layouts;
    std::vector<std::string> masks;
    for (const auto& row : rows) {
      if (size_of(row) != size) continue;
      const std::string layout = read<std::string>(row, "layout");
      if (std::find(layouts.begin(), layouts.end(), layout) == layouts.end()) layouts.push_back(layout);
      const std::string mask = read<std::string>(row, "mask");
      if (std::find(masks.begin(), masks.end(), mask) == masks.end()) masks.push_back(mask);
    }
    append(md, "### n = {}, N = {}, tiles {}\n\n| mask | documents | padding |", size.n, size.devices, size.tile);
    for (const auto& layout : layouts) append(md, " {} |", layout);
    md += "\n|---|---|---|";
    for (size_t i = 0; i < layouts.size(); ++i) md += "---|";
    md += "\n";
    for (const auto& mask : masks) {
      std::map<std::string, const nlohmann::json*> by_layout;
      for (const auto& row : rows) {
        if (size_of(row) == size && field(row, "mask") == mask) by_layout[read<std::string>(row, "layout")] = &row;
      }
      double best = 1e300;
      double best_lockstep = 1e300;
      for (const auto& [layout, row] : by_layout) {
        best = std::min(best, read<double>(*row, "tiles_vs_bound"));
        best_lockstep = std::min(best_lockstep, row->value("tiles_lockstep_vs_bound", 1e300));
      }
      const auto& any = *by_layout.begin()->second;
      append(md, "| `{}` | {} | {:.2f}% |", mask, read<long long>(any, "documents"),
             100 * read<double>(any, "padding_fraction"));
      for (const auto& layout : layouts) {
        const auto it = by_layout.find(layout);
        if (it == by_layout.end()) {
          md += " - |";
          continue;
        }
        // Rounded as shown, so that equal cells are marked alike.
        const double vs_bound = read<double>(*it->second, "tiles_vs_bound");
        const double lockstep = it->second->value("tiles_lockstep_vs_bound", 0.0);
        const std::string busiest = fmt::format("{:.3f}", vs_bound);
        const std::string round_sum = fmt::format("{:.3f}", lockstep);
        append(md, " {} / {} |", busiest == fmt::format("{:.3f}", best) ? "**" + busiest + "**" : busiest,
               round_sum == fmt::format("{:.3f}", best_lockstep) ? "*" + round_sum + "*" : round_sum);
      }
      md += "\n";
    }
    md += "\n";
  }
}

void validate_section(const ReportInput& in, std::string& md, std::vector<ReportFile>& files) {
  if (in.document.is_object() && !in.document.contains("comparisons")) {
    throw model::InputError(fmt::format("report input '{}': a validate run without --compare or --calibrate has no predictions to "
                                        "draw against its timings (stripesim validate --compare --from {} writes one that has)",
                                        in.path, in.path));
  }
  append(md, "## Predicted against measured (`{}`)\n\n", in.path);
  const std::string name = fmt::format("predicted-vs-measured-{}.svg", files.size());
  files.push_back({name, predicted_vs_measured_svg(in.document)});
  append(md, "![predicted against measured latency]({})\n\n", name);
  const auto& doc = in.document;
  if (doc.contains("summary")) {  // a kernel profile scored on measured workloads
    const auto& s = field(doc, "summary");
    append(md, "Kernel {}: per (round, device) call median error {:.1f}%, worst {:.1f}%; lockstep speedup over contiguous "
               "mean error {:.3f}, worst {:.3f} ({}).\n\n",
           read<std::string>(field(doc, "kernel"), "name"), 100 * read<double>(s, "median_abs_call_error"),
           100 * read<double>(s, "max_abs_call_error"), read<double>(s, "mean_abs_speedup_error"),
           read<double>(s, "max_abs_speedup_error"), read<std::string>(doc, "method"));
  }
  if (doc.contains("backend") && doc.contains("device")) {
    append(md, "Backend {} on {}.\n\n", read<std::string>(doc, "backend"), read<std::string>(doc, "device"));
  }
  if (doc.contains("errors")) {
    md += "| cases | count | median abs error (total) | worst (total) | median abs error (kernel) | worst (kernel) |\n"
          "|---|---:|---:|---:|---:|---:|\n";
    for (const auto& [role, e] : field(doc, "errors").items()) {
      append(md, "| {} | {} | {:.1f}% | {:.1f}% | {:.1f}% | {:.1f}% |\n", role, read<long long>(e, "cases"),
             100 * read<double>(e, "median_abs_total_error"), 100 * read<double>(e, "max_abs_total_error"),
             100 * read<double>(e, "median_abs_kernel_error"), 100 * read<double>(e, "max_abs_kernel_error"));
    }
    md += "\n";
  }
}

// The document's "schema" string, or "" where it has none.
std::string schema_id(const nlohmann::json& document) {
  if (!document.is_object() || !document.contains("schema") || !field(document, "schema").is_string()) return "";
  return read<std::string>(document, "schema");
}

}  // namespace

std::string schema_kind(const nlohmann::json& document) {
  const std::string schema = schema_id(document);
  constexpr std::pair<const char*, const char*> kSections[] = {
      {"analyze", model::kAnalyzeSchema},   {"tms", model::kTmsSchema},           {"sweep", model::kSweepSchema},
      {"simulate", model::kSimulateSchema}, {"validate", model::kValidateSchema}, {"balance", model::kBalanceSchema},
      {"kernel-accuracy", model::kKernelAccuracySchema}};
  for (const auto& [kind, id] : kSections) {
    if (schema == id) return kind;
  }
  return "";
}

std::vector<ReportFile> build_report(const std::vector<ReportInput>& inputs) {
  if (inputs.empty()) throw model::InputError("report: needs at least one JSON file written by analyze, tms, sweep, simulate or validate");
  std::vector<ReportFile> figures;
  std::string md = "# stripesim report\n\nInputs:\n\n";
  for (const auto& in : inputs) {
    const std::string schema = schema_id(in.document);
    if (schema_kind(in.document).empty()) {
      if (std::ranges::find(model::kSchemas, schema) != std::end(model::kSchemas)) {
        throw model::InputError(fmt::format("report input '{}': a {} document, which report does not draw (it draws the JSON of "
                                            "analyze, tms, sweep, simulate or validate)",
                                            in.path, schema));
      }
      throw model::InputError(fmt::format("report input '{}': no known \"schema\" (expected the JSON of analyze, tms, "
                                          "sweep, simulate or validate)",
                                          in.path));
    }
    append(md, "- `{}` ({})\n", in.path, schema);
  }
  md += "\n";
  bool validated = false;
  bool latency_inputs = false;
  for (const auto& in : inputs) {
    const std::string kind = schema_kind(in.document);
    latency_inputs = latency_inputs || kind == "simulate" || kind == "analyze";
    try {
      if (kind == "analyze") analyze_section(in, md, figures);
      if (kind == "tms") tms_section(in, md);
      if (kind == "sweep") sweep_section(in, md, figures);
      if (kind == "balance") balance_section(in, md);
      if (kind == "simulate") simulate_section(in, md, figures);
      if (kind == "validate" || kind == "kernel-accuracy") {
        validate_section(in, md, figures);
        validated = true;
      }
    } catch (const FieldError& e) {
      const std::string path = json_path(in.document, e.node) + (e.key.empty() ? "" : "/" + e.key);
      throw model::InputError(fmt::format("report input '{}': field \"{}\": {} (not a complete {} document)", in.path,
                                          path.empty() ? "/" : path, e.what(), kind));
    } catch (const nlohmann::json::exception& e) {
      // The library's message without its "[json.exception.out_of_range.403] " prefix.
      const std::string what = e.what();
      const size_t bracket = what.starts_with("[json.exception.") ? what.find("] ") : std::string::npos;
      throw model::InputError(fmt::format("report input '{}': not a complete {} document ({})", in.path, kind,
                                          bracket == std::string::npos ? what : what.substr(bracket + 2)));
    }
  }
  if (!validated && latency_inputs) {
    md += "## Predicted against measured\n\nNo validator output was given: run `stripesim validate --compare` on a GPU "
          "node and pass its JSON to `stripesim report`.\n";
  }
  std::vector<ReportFile> files{{"report.md", md}};
  files.insert(files.end(), figures.begin(), figures.end());
  return files;
}

}  // namespace stripesim::report
