#include "stripesim/report/figures.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "stripesim/model/io/json_file.hpp"
#include "stripesim/model/io/size_parse.hpp"
#include "stripesim/model/work/layout_spec.hpp"
#include "stripesim/model/work/mask.hpp"
#include "stripesim/model/work/work_model.hpp"
#include "stripesim/report/svg.hpp"
#include "json_read.hpp"

namespace stripesim::report {

using model::Count;

namespace {

constexpr double kMargin = 40;

// Nice round axis ticks between lo and hi.
std::vector<double> ticks(double lo, double hi, int wanted) {
  const double span = std::max(hi - lo, 1e-12);
  const double raw = span / wanted;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double step = magnitude;
  for (const double m : {1.0, 2.0, 2.5, 5.0, 10.0}) {
    if (magnitude * m >= raw) {
      step = magnitude * m;
      break;
    }
  }
  std::vector<double> out;
  for (double t = std::ceil(lo / step) * step; t <= hi + 1e-9 * span; t += step) out.push_back(t);
  return out;
}

std::string short_count(double value) {
  if (value >= 1e12) return fmt::format("{:.1f}T", value / 1e12);
  if (value >= 1e9) return fmt::format("{:.1f}G", value / 1e9);
  if (value >= 1e6) return fmt::format("{:.1f}M", value / 1e6);
  if (value >= 1e4) return fmt::format("{:.0f}k", value / 1e3);
  return fmt::format("{:.0f}", value);
}

// The document's config.devices: a count from 1 up (a hand-edited 0 divided by zero below, a
// negative count sized the heat map's vectors), else the document is not a complete one.
Count device_count(const nlohmann::json& document) { return read_size(field(document, "config"), "devices"); }

// One bar of the timeline: a round, or a run of rounds too thin to draw apart.
struct BarRun {
  double start = 0;
  double stop = 0;
  size_t first_round = 0;
  size_t last_round = 0;
};

}  // namespace

std::string work_heatmap_svg(const nlohmann::json& analyze, const std::string& matrix) {
  const auto& results = non_empty_array_field(analyze, "results");
  const Count devices = device_count(analyze);
  // At most kMaxCells cells a side: beyond, each cell is a bin of `bin` x `bin` (rounds, devices)
  // drawn at its mean (2048 devices drew 4M cells a layout, 560 MB of SVG). The mean keeps the
  // picture's total work; the tooltip gives the bin's largest value too.
  constexpr Count kMaxCells = 128;
  const Count bin = (devices + kMaxCells - 1) / kMaxCells;
  const Count cells = (devices + bin - 1) / bin;
  const auto binned = [&](const nlohmann::json& values) {
    std::vector<std::vector<std::pair<double, double>>> mean_max(static_cast<size_t>(cells),
                                                                  std::vector<std::pair<double, double>>(static_cast<size_t>(cells)));
    for (Count row = 0; row < cells; ++row) {
      for (Count col = 0; col < cells; ++col) {
        double sum = 0, most = 0;
        Count count = 0;
        for (Count round = row * bin; round < std::min(devices, (row + 1) * bin); ++round) {
          for (Count d = col * bin; d < std::min(devices, (col + 1) * bin); ++d) {
            const double v = read_item<double>(element(values, static_cast<size_t>(round)), static_cast<size_t>(d));
            sum += v;
            most = std::max(most, v);
            ++count;
          }
        }
        mean_max[static_cast<size_t>(row)][static_cast<size_t>(col)] = {sum / static_cast<double>(count), most};
      }
    }
    return mean_max;
  };
  std::vector<std::vector<std::vector<std::pair<double, double>>>> panels;
  double peak = 1;
  for (const auto& r : results) {
    panels.push_back(binned(field(r, matrix)));
    for (const auto& row : panels.back()) {
      for (const auto& [mean, most] : row) peak = std::max(peak, mean);
    }
  }
  const double cell = std::clamp(360.0 / static_cast<double>(cells), 2.0, 40.0);
  const double panel = cell * static_cast<double>(cells);
  const double width = kMargin + static_cast<double>(results.size()) * (panel + kMargin);
  const double height = panel + 3 * kMargin + 20;
  SvgCanvas svg(width, height);
  svg.text(kMargin, 22,
           fmt::format("{} per round (rows) and device (columns){}; darker is more work, scale shared", matrix,
                       bin > 1 ? fmt::format(", each cell the mean of {} x {}", bin, bin) : ""),
           13);
  const std::string unit = matrix == "unmasked_elements" ? "elements" : "tiles";
  for (size_t l = 0; l < results.size(); ++l) {
    const auto& r = results[l];
    const double x0 = kMargin + static_cast<double>(l) * (panel + kMargin);
    const double y0 = 2 * kMargin;
    const double speedup = read<double>(field(field(r, "metrics"), unit), "lockstep_speedup");
    svg.text(x0, y0 - 8, fmt::format("{} (lockstep {:.2f}x)", read<std::string>(r, "layout"), speedup), 12, "start",
             "#222", true);
    for (Count row = 0; row < cells; ++row) {
      for (Count col = 0; col < cells; ++col) {
        const auto [value, most] = panels[l][static_cast<size_t>(row)][static_cast<size_t>(col)];
        const double x = x0 + static_cast<double>(col) * cell;
        const double y = y0 + static_cast<double>(row) * cell;
        const std::string tooltip =
            bin == 1 ? fmt::format("round {}, device {}: {}", row, col, static_cast<long long>(value))
                     : fmt::format("rounds {}-{}, devices {}-{}: mean {:.0f}, largest {}", row * bin,
                                   std::min(devices, (row + 1) * bin) - 1, col * bin, std::min(devices, (col + 1) * bin) - 1,
                                   value, static_cast<long long>(most));
        svg.rect(x, y, cell, cell, heat_colour(value / peak), cells <= 32 ? "#ffffff" : "none", tooltip);
        if (cells <= 10) {
          svg.text(x + cell / 2, y + cell / 2 + 4, short_count(value), std::min(10.0, cell / 3.5), "middle",
                   value / peak > 0.5 ? "#ffffff" : "#222");
        }
      }
    }
    svg.text(x0 + panel / 2, y0 + panel + 16, "device", 11, "middle");
    svg.text(x0 - 6, y0 + 10, "r0", 10, "end");
    if (devices > 1) svg.text(x0 - 6, y0 + panel, fmt::format("r{}", devices - 1), 10, "end");
  }
  return svg.finish();
}

std::string attention_matrix_svg(const std::vector<std::string>& layouts, Count seq_len, Count devices,
                                 const std::string& mask_spec) {
  const model::Mask mask = model::parse_mask(mask_spec, seq_len);
  // Cells of 12 px and more carry their round as a number (up to n = 37); smaller ones only in
  // their tooltip, and the caption says which.
  constexpr double kNumberedCell = 12;
  const double cell = std::clamp(448.0 / static_cast<double>(seq_len), 3.0, 22.0);
  const bool numbered = cell >= kNumberedCell;
  const double panel = cell * static_cast<double>(seq_len);
  const double width = kMargin + static_cast<double>(layouts.size()) * (panel + kMargin);
  const double height = panel + 3 * kMargin + 40;
  SvgCanvas svg(width, height);
  svg.text(kMargin, 18,
           fmt::format("attention matrix, n = {}, N = {}: query q (row) x key k (column) in original positions", seq_len,
                       devices),
           12);
  svg.text(kMargin, 34,
           fmt::format("colour = device that computes the pair, {}; blank = masked",
                       numbered ? "number = the round it is computed in" : "its round in the cell's tooltip"),
           12);
  for (size_t l = 0; l < layouts.size(); ++l) {
    const model::Layout layout = model::parse_layout(layouts[l], seq_len, devices);
    const double x0 = kMargin + static_cast<double>(l) * (panel + kMargin);
    const double y0 = 2 * kMargin;
    svg.text(x0, y0 - 8, layout.name(), 12, "start", "#222", true);
    svg.rect(x0, y0, panel, panel, "#ffffff", "#999999");
    for (Count q = 0; q < seq_len; ++q) {
      const auto query = layout.locate(q);
      for (Count k = 0; k < seq_len; ++k) {
        if (!mask.allows(q, k)) continue;
        const auto key = layout.locate(k);
        const Count round = model::round_of(query.device, key.device, devices);
        const double x = x0 + static_cast<double>(k) * cell;
        const double y = y0 + static_cast<double>(q) * cell;
        svg.rect(x, y, cell, cell, device_colour(query.device), "#ffffff",
                 fmt::format("q {} k {}: device {}, round {}", q, k, query.device, round));
        if (numbered) svg.text(x + cell / 2, y + cell / 2 + 3.5, std::to_string(round), cell / 2.2, "middle", "#ffffff");
      }
    }
  }
  // Legend: one swatch per device.
  const double legend_y = height - 18;
  for (Count d = 0; d < std::min<Count>(devices, 10); ++d) {
    const double x = kMargin + static_cast<double>(d) * 80;
    svg.rect(x, legend_y - 10, 12, 12, device_colour(d));
    svg.text(x + 16, legend_y, fmt::format("device {}", d), 11);
  }
  return svg.finish();
}

std::string tms_curves_svg(const nlohmann::json& sweep, const std::string& hardware, const std::string& model_name) {
  std::vector<const nlohmann::json*> rows;
  std::set<std::string> tiles, conventions;
  double lo_x = 1e300, hi_x = -1e300, hi_y = 1.0;
  for (const auto& row : non_empty_array_field(sweep, "rows")) {
    // A sweep whose --columns left hardware or model out: "" for all its rows.
    if (read_or<std::string>(row, "hardware", "") != hardware || read_or<std::string>(row, "model", "") != model_name) continue;
    rows.push_back(&row);
    if (row.contains("tile")) tiles.insert(read<std::string>(row, "tile"));
    if (row.contains("convention")) conventions.insert(read<std::string>(row, "convention"));
    // Its log is the axis: 0 made it -inf, and the tick loop endless.
    const double x = std::log2(static_cast<double>(read_size(row, "n_seq")));
    lo_x = std::min(lo_x, x);
    hi_x = std::max(hi_x, x);
    hi_y = std::max(hi_y, read<double>(row, "tms"));
  }
  // One curve a mesh, and a tile and a FLOP convention where the sweep has several: two tiles'
  // points at one length on one line drew a zigzag. Meshes in numeric order (1x3 before 1x16).
  const auto series_order = [](const std::string& a, const std::string& b) { return natural_less(a, b); };
  std::map<std::string, std::vector<const nlohmann::json*>, decltype(series_order)> by_series(series_order);
  for (const auto* row : rows) {
    std::string name = fmt::format("mesh {}", read<std::string>(*row, "mesh"));
    if (tiles.size() > 1) name += ", " + read<std::string>(*row, "tile");
    if (conventions.size() > 1) name += ", " + read<std::string>(*row, "convention");
    by_series[name].push_back(row);
  }
  const double height = 400, plot_w = 480, plot_h = 300, x0 = 70, y0 = 40;
  // Wide enough for the longest legend entry (about 6.5 px a character at 11 px).
  size_t longest = 0;
  for (const auto& entry : by_series) longest = std::max(longest, entry.first.size());
  const double width = std::max(640.0, x0 + plot_w + 36 + 6.5 * static_cast<double>(longest) + 10);
  SvgCanvas svg(width, height);
  std::vector<std::string> named;
  for (const std::string& part : {hardware, model_name}) {
    if (!part.empty()) named.push_back(part);
  }
  svg.text(x0, 24, fmt::format("TMS of striped over contiguous{}{} (solid: elements, dashed: tiles)", named.empty() ? "" : ": ",
                               fmt::join(named, " ")), 13);
  // A curve with two rows at one length: the columns that tell them apart were left out (--columns).
  for (const auto& [name, series] : by_series) {
    std::set<Count> lengths;
    for (const auto* row : series) {
      if (lengths.insert(read_size(*row, "n_seq")).second) continue;
      svg.text(x0, y0 + 20,
               fmt::format("{} has two rows at n = {}: keep the columns that tell them apart (tile, convention)", name,
                           model::count_with_suffix(read_size(*row, "n_seq"))),
               12);
      return svg.finish();
    }
  }
  if (by_series.empty() || hi_x <= lo_x) {
    if (hi_x <= lo_x && !by_series.empty()) {
      hi_x = lo_x + 1;
    } else {
      svg.text(x0, y0 + 20, "no rows for this hardware and model", 12);
      return svg.finish();
    }
  }
  const double y_lo = 1.0, y_hi = std::ceil(hi_y * 10 + 0.5) / 10;
  const auto px = [&](double x) { return x0 + (x - lo_x) / (hi_x - lo_x) * plot_w; };
  const auto py = [&](double y) { return y0 + plot_h - (y - y_lo) / (y_hi - y_lo) * plot_h; };
  svg.rect(x0, y0, plot_w, plot_h, "#ffffff", "#999999");
  for (const double t : ticks(y_lo, y_hi, 5)) {
    svg.line(x0, py(t), x0 + plot_w, py(t), "#e5e5e5");
    svg.text(x0 - 6, py(t) + 4, fmt::format("{:.2f}", t), 10, "end");
  }
  // 2^62 the last tick a count holds (the axis may reach 2^63 - 1, a hand-edited length).
  for (double e = std::ceil(lo_x); e <= std::min(hi_x + 1e-9, 62.0); e += 1) {
    svg.line(px(e), y0 + plot_h, px(e), y0 + plot_h + 4, "#666666");
    svg.text(px(e), y0 + plot_h + 16, model::count_with_suffix(Count{1} << static_cast<int>(e)), 10, "middle");
  }
  svg.text(x0 + plot_w / 2, height - 12, "sequence length n (log scale)", 11, "middle");
  svg.text(16, y0 + plot_h / 2, "TMS", 11, "middle");
  size_t index = 0;
  for (const auto& [name, series] : by_series) {
    std::vector<std::pair<double, double>> solid, dashed;
    for (const auto* row : series) {
      const double x = px(std::log2(read<double>(*row, "n_seq")));
      solid.emplace_back(x, py(read<double>(*row, "tms")));
      if (row->contains("tms_tiles")) dashed.emplace_back(x, py(read<double>(*row, "tms_tiles")));
    }
    std::sort(solid.begin(), solid.end());
    std::sort(dashed.begin(), dashed.end());
    // Past the palette's ten colours, the marker's shape tells the series apart.
    const std::string colour = device_colour(static_cast<long long>(index));
    const int shape = static_cast<int>(index / 10);
    svg.polyline(solid, colour, 2.0);
    for (const auto& [x, y] : solid) svg.marker(x, y, 3, colour, shape);
    if (!dashed.empty()) svg.polyline(dashed, colour, 1.5, "5,4");
    const double ly = y0 + 14 + 16 * static_cast<double>(index);
    svg.line(x0 + plot_w + 12, ly - 4, x0 + plot_w + 32, ly - 4, colour, 2.0);
    svg.marker(x0 + plot_w + 22, ly - 4, 3, colour, shape);
    svg.text(x0 + plot_w + 36, ly, name, 11);
    ++index;
  }
  return svg.finish();
}

std::string timeline_svg(const nlohmann::json& simulate) {
  const auto& results = non_empty_array_field(simulate, "results");
  // The devices of the ring the records follow: config.devices, but for a hybrid's (--cp
  // hybrid:UxR) ring of R, whose every pass lists R devices.
  const auto& first_pass = element(non_empty_array_field(element(results, 0), "passes"), 0);
  const Count devices =
      first_pass.contains("devices") ? static_cast<Count>(non_empty_array_field(first_pass, "devices").size()) : device_count(simulate);
  const Count shown = std::min<Count>(devices, 64);
  const double row_h = std::clamp(240.0 / static_cast<double>(shown), 4.0, 22.0);
  const double plot_w = 720, x0 = 90;
  const double panel_h = row_h * static_cast<double>(shown) + 50;
  // The axis spans the passes drawn: at --scope layer or step a result's time is the layer's or
  // step's, of which these passes (one layer's attention) are a part.
  const bool whole = scope_of(field(simulate, "config")) != "attention";
  const auto passes_end = [](const nlohmann::json& r) {
    double end = 0;
    for (const auto& pass : non_empty_array_field(r, "passes")) end = std::max(end, read<double>(pass, "end_us"));
    return end;
  };
  double end = 0;
  for (const auto& r : results) end = std::max(end, whole ? passes_end(r) : read<double>(r, "time_us"));
  const double height = 50 + static_cast<double>(results.size()) * panel_h + 30;
  SvgCanvas svg(x0 + plot_w + 30, height);
  svg.text(x0, 22,
           fmt::format("simulated timeline, shared time axis (ms); blue: compute, orange: K/V sent, purple: dK/dV sent, "
                       "gaps: idle{}",
                       shown < devices ? fmt::format("; first {} of {} devices", shown, devices) : ""),
           12);
  const auto px = [&](double t) { return x0 + t / std::max(end, 1e-9) * plot_w; };
  for (size_t l = 0; l < results.size(); ++l) {
    const auto& r = results[l];
    const double y0 = 50 + static_cast<double>(l) * panel_h;
    svg.text(x0, y0 - 6,
             whole ? fmt::format("{}: one layer's attention, {:.3f} ms", read<std::string>(r, "layout"), passes_end(r) / 1e3)
                   : fmt::format("{}: {:.3f} ms ({:.2f}x contiguous)", read<std::string>(r, "layout"),
                                 read<double>(r, "time_us") / 1e3, read<double>(r, "speedup_vs_contiguous")),
             12, "start", "#222", true);
    svg.rect(x0, y0, plot_w, row_h * static_cast<double>(shown), "#f4f4f4", "#cccccc");
    for (Count d = 0; d < shown; ++d) {
      if (shown <= 16 || d % 8 == 0) svg.text(x0 - 6, y0 + (static_cast<double>(d) + 0.75) * row_h, fmt::format("d{}", d), std::min(10.0, row_h), "end");
    }
    for (const auto& pass : non_empty_array_field(r, "passes")) {
      if (!pass.contains("rounds")) continue;
      const auto& rounds = array_field(pass, "rounds");
      const std::string pass_name = read<std::string>(pass, "pass");
      for (Count d = 0; d < shown; ++d) {
        const double y = y0 + static_cast<double>(d) * row_h;
        // Rounds too thin to tell apart (a run under 2 px, the next within a pixel) are drawn
        // as one bar: a thousand rounds on 720 px drew a rectangle each (95 MB at 1024 devices).
        // Wider rounds keep their own bar, and the white edge between them.
        const auto bars = [&](const char* begin, const char* finish, bool skip_empty, const auto& draw) {
          BarRun run;
          bool open = false;  // whether `run` holds rounds not drawn yet
          for (size_t round = 0; round <= rounds.size(); ++round) {
            std::optional<std::pair<double, double>> span;
            if (round < rounds.size()) {
              const auto& cell = element(element(rounds, round), static_cast<size_t>(d));
              if (!cell.is_object()) throw FieldError(&cell, "", "expected an object (a round's record), got " + model::json_excerpt(cell));
              if (cell.contains(begin) && !field(cell, begin).is_null()) span = {{read<double>(cell, begin), read<double>(cell, finish)}};
              if (span && skip_empty && span->second <= span->first) span.reset();  // no compute that round
            }
            if (span && open && px(span->first) - px(run.stop) < 1 && px(run.stop) - px(run.start) < 2) {
              run.stop = std::max(run.stop, span->second);
              run.last_round = round;
              continue;
            }
            if (open) draw(run);
            open = span.has_value();
            if (span) run = BarRun{span->first, span->second, round, round};
          }
        };
        const auto rounds_text = [](size_t first, size_t last) {
          return first == last ? fmt::format("round {}", first) : fmt::format("rounds {}-{}", first, last);
        };
        bars("compute_start_us", "compute_end_us", true, [&](const BarRun& bar) {
          svg.rect(px(bar.start), y + 1, px(bar.stop) - px(bar.start), row_h * 0.62, "#4e79a7", "#ffffff",
                   fmt::format("{} {} device {}: compute {:.1f}-{:.1f} us", pass_name, rounds_text(bar.first_round, bar.last_round),
                               d, bar.start, bar.stop));
        });
        const auto send = [&](const char* colour, double offset) {
          return [&, colour, offset](const BarRun& bar) {
            svg.rect(px(bar.start), y + row_h * offset, std::max(px(bar.stop) - px(bar.start), 0.5), row_h * 0.15, colour);
          };
        };
        bars("send_start_us", "send_end_us", false, send("#f28e2b", 0.66));
        bars("grad_send_start_us", "grad_send_end_us", false, send("#b07aa1", 0.82));
      }
    }
    if (l + 1 == results.size()) {
      for (const double t : ticks(0, end / 1e3, 6)) {
        const double x = px(t * 1e3);
        svg.line(x, y0 + row_h * static_cast<double>(shown), x, y0 + row_h * static_cast<double>(shown) + 4, "#666666");
        svg.text(x, y0 + row_h * static_cast<double>(shown) + 16, fmt::format("{:g}", t), 10, "middle");
      }
    }
  }
  return svg.finish();
}

std::string predicted_vs_measured_svg(const nlohmann::json& validate) {
  const auto& points = non_empty_array_field(validate, "comparisons");
  double hi = 0;
  for (const auto& p : points) hi = std::max({hi, read<double>(p, "predicted_us"), read<double>(p, "measured_us")});
  hi = hi > 0 ? hi * 1.05 : 1;
  const double size = 360, x0 = 70, y0 = 40;
  SvgCanvas svg(x0 + size + 40, y0 + size + 50);
  svg.text(x0, 24, "predicted (x) against measured (y) latency, us; on the diagonal the prediction is exact", 12);
  const auto px = [&](double v) { return x0 + v / hi * size; };
  const auto py = [&](double v) { return y0 + size - v / hi * size; };
  svg.rect(x0, y0, size, size, "#ffffff", "#999999");
  for (const double t : ticks(0, hi, 5)) {
    svg.text(x0 - 6, py(t) + 4, short_count(t), 10, "end");
    svg.text(px(t), y0 + size + 16, short_count(t), 10, "middle");
  }
  svg.line(px(0), py(0), px(hi), py(hi), "#888888", 1.0, "4,4");
  for (const auto& p : points) {
    svg.circle(px(read<double>(p, "predicted_us")), py(read<double>(p, "measured_us")), 4, "#e15759");
  }
  return svg.finish();
}

}  // namespace stripesim::report
