#include "stripesim/validate/kernel_measurements.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <regex>
#include <set>

#include "stripesim/model/flops/attention_heads.hpp"
#include "stripesim/model/io/input_error.hpp"
#include "stripesim/model/io/json_fields.hpp"
#include "stripesim/model/io/json_file.hpp"
#include "stripesim/model/io/name_match.hpp"
#include "stripesim/model/io/schemas.hpp"

namespace stripesim::validate {

using model::Input;
using model::InputError;
using model::JsonFields;

std::string MeasuredWorkload::label() const { return fmt::format("{} {}", group, layout); }


namespace {

// A [devices][devices] table of non-negative numbers: integers when `integers`, else times in us
// within the physical range.
std::vector<double> square_table(const nlohmann::json& value, const std::string& where, Count devices, bool integers) {
  const auto bad = [&](const std::string& why) { return InputError(fmt::format("{}: {}", where, why)); };
  if (!value.is_array() || static_cast<Count>(value.size()) != devices) {
    throw bad(fmt::format("expected {} rows (one per round)", devices));
  }
  std::vector<double> out;
  for (const auto& row : value) {
    if (!row.is_array() || static_cast<Count>(row.size()) != devices) {
      throw bad(fmt::format("expected {} values per round (one per device)", devices));
    }
    for (const auto& cell : row) {
      if (!cell.is_number() || (integers && !cell.is_number_integer())) {
        throw bad(fmt::format("expected {}, got {}", integers ? "integers" : "numbers", model::json_excerpt(cell)));
      }
      const double x = cell.get<double>();
      if (!(x >= 0) || !std::isfinite(x)) throw bad(fmt::format("values must be finite and >= 0, got {}", model::json_excerpt(cell)));
      if (!integers) model::require_physical_range(x, where, /*zero_allowed=*/true);  // a time in us
      out.push_back(x);
    }
  }
  return out;
}

// The last `parts` components of a path, joined by '/'.
std::string path_tail(const std::vector<std::string>& components, size_t parts) {
  std::string out;
  for (size_t i = components.size() - std::min(parts, components.size()); i < components.size(); ++i) {
    out += (out.empty() ? "" : "/") + components[i];
  }
  return out;
}

// What both formats require beside the timings: the device, how the calls were run and timed
// (what makes two files comparable), the PyTorch version when given, notes as text.
void require_descriptions(const JsonFields& f) {
  (void)f.non_empty_string("device");
  (void)f.non_empty_string("method");
  if (f.has("torch")) (void)f.non_empty_string("torch");
  if (f.has("notes")) (void)f.string("notes");
}

}  // namespace

std::vector<std::string> path_components(const std::filesystem::path& path) {
  std::vector<std::string> parts;
  for (const auto& part : path.lexically_normal()) {
    if (!part.empty() && part != "/" && part != ".") parts.push_back(part.string());
  }
  return parts;
}

std::vector<std::string> file_labels(const std::vector<std::string>& paths) {
  model::refuse_repeated_files(paths, "--measurements, --block-costs", "its timings would count twice");
  std::vector<std::vector<std::string>> components;
  for (const std::string& path : paths) components.push_back(path_components(path));
  std::vector<std::string> labels;
  for (size_t i = 0; i < paths.size(); ++i) {
    size_t parts = 1;
    const auto clashes = [&](size_t n) {
      for (size_t j = 0; j < paths.size(); ++j) {
        if (j != i && path_tail(components[j], n) == path_tail(components[i], n)) return true;
      }
      return false;
    };
    while (parts < components[i].size() && clashes(parts)) ++parts;
    labels.push_back(path_tail(components[i], parts));
  }
  return labels;
}

std::vector<MeasuredWorkload> read_measurements(const std::string& path, const std::string& group) {
  const std::string label = "--measurements " + path;
  return measurements_from_json(model::read_json_file(path, label), label, group);
}

std::vector<MeasuredWorkload> measurements_from_json(const nlohmann::json& doc, const std::string& label, const std::string& group) {
  const JsonFields f(doc, label);
  f.allow_only({"schema", "device", "kernel", "method", "workload", "layouts", "torch", "notes"});
  f.require_schema(model::kMeasurementsSchema);
  MeasuredWorkload base;
  base.group = group;
  base.kernel = f.non_empty_string("kernel");
  require_descriptions(f);
  base.device = f.string("device");
  const JsonFields w(f.raw("workload"), f.where("workload"));
  w.allow_only({"seq_len", "devices", "heads", "kv_heads", "head_dim", "batch", "dtype", "tile", "mask", "pass"});
  base.seq_len = w.positive_count("seq_len");
  base.devices = w.positive_count("devices");
  base.heads = w.positive_count("heads");
  // Every field the schema requires, as it requires it: a default would be a guess at the run.
  base.kv_heads = w.positive_count("kv_heads");
  base.head_dim = w.positive_count("head_dim");
  base.batch = w.positive_count("batch");
  base.dtype = w.non_empty_string("dtype");
  base.origins = model::InputOrigins(label);
  for (const auto& [input, field] : {std::pair{Input::seq_len, "seq_len"}, {Input::devices, "devices"}, {Input::heads, "heads"},
                                     {Input::kv_heads, "kv_heads"}, {Input::head_dim, "head_dim"}, {Input::batch, "batch"},
                                     {Input::dtype, "dtype"}, {Input::tile, "tile"}, {Input::mask, "mask"}}) {
    base.origins.add(input, fmt::format("workload.{}", field));
  }
  base.origins.add(Input::layouts, "layouts");
  if (w.has("tile")) base.tile = base.origins.run([&] { return model::parse_tile_shape(w.string("tile")); });
  base.mask = w.string("mask");
  base.pass = w.parsed("pass", sim::parse_pass_selection);
  if (base.seq_len % base.devices != 0) {
    throw InputError(fmt::format("{}: seq_len {} is not a multiple of devices {}", f.where("workload"), base.seq_len, base.devices));
  }
  JsonFields::located(w.where("kv_heads"), [&] { model::require_kv_heads_divide(base.heads, base.kv_heads); });
  const nlohmann::json& layouts = f.raw("layouts");
  if (!layouts.is_object() || layouts.empty()) throw InputError(fmt::format("{}: expected an object of layouts", f.where("layouts")));
  std::vector<MeasuredWorkload> out;
  for (const auto& [name, entry] : layouts.items()) {
    // Named as the schema names layouts: the speedups find "contiguous" by its name (a file's
    // "Contiguous" was read, and its speedups silently left out), and "zigzag" beside "Zigzag"
    // would count one layout's timings twice.
    if (const std::string kind = name.substr(0, name.find(':')); kind != model::lowercase(kind)) {
      throw InputError(fmt::format("{}: layout \"{}\": layouts are named in lower case (\"{}{}\")", f.where("layouts"), name,
                                   model::lowercase(kind), name.substr(kind.size())));
    }
    const JsonFields l(entry, fmt::format("{} layout \"{}\"", label, name));
    l.allow_only({"us", "active_blocks"});
    MeasuredWorkload m = base;
    m.layout = name;
    m.us = square_table(l.raw("us"), l.where("us"), m.devices, false);
    m.us_where = l.where("us");
    if (l.has("active_blocks")) {
      std::vector<Count> blocks;
      for (const double x : square_table(l.raw("active_blocks"), l.where("active_blocks"), m.devices, true)) {
        blocks.push_back(static_cast<Count>(x));
      }
      // 0 is a call that did not run; one with active blocks did (it had work to run).
      for (size_t i = 0; i < blocks.size(); ++i) {
        if (blocks[i] > 0 && m.us[i] == 0) {
          throw InputError(fmt::format("{}: round {}, device {} is 0 (a call that did not run), but its {} active blocks say it had "
                                       "work; time it, or give active_blocks 0",
                                       l.where("us"), static_cast<Count>(i) / m.devices, static_cast<Count>(i) % m.devices, blocks[i]));
        }
      }
      m.active_blocks = std::move(blocks);
      m.active_blocks_where = l.where("active_blocks");
    }
    out.push_back(std::move(m));
  }
  // A call that did not run is 0; a file with no call that ran holds nothing to fit or score.
  const bool timed = std::ranges::any_of(out, [](const MeasuredWorkload& m) { return std::ranges::any_of(m.us, [](double us) { return us > 0; }); });
  if (!timed) throw InputError(fmt::format("{}: every call's time is 0: nothing was timed", f.where("layouts")));
  return out;
}

std::vector<MeasuredWorkload> read_block_costs(const std::string& path, const std::string& kernel, const std::string& group) {
  const std::string label = "--block-costs " + path;
  return block_costs_from_json(model::read_json_file(path, label), kernel, label, group);
}

std::vector<MeasuredWorkload> block_costs_from_json(const nlohmann::json& doc, const std::string& kernel, const std::string& label,
                                                    const std::string& group) {
  const JsonFields f(doc, label);
  f.allow_only({"schema", "device", "torch", "method", "notes", "rows"});
  f.require_schema(model::kBlockCostsSchema);
  require_descriptions(f);
  const nlohmann::json& rows = f.raw("rows");
  if (!rows.is_array() || rows.empty()) throw InputError(fmt::format("{}: expected a non-empty array", f.where("rows")));
  // Rows of several head counts are told apart by theirs too: each (c, heads) is its own group.
  std::set<std::string> head_counts;
  for (const auto& row : rows) {
    if (row.is_object() && row.contains("heads")) head_counts.insert(row["heads"].dump());
  }
  const bool several_heads = head_counts.size() > 1;
  std::vector<MeasuredWorkload> out;
  // A row's fields: its block's shape and timing columns KERNEL_SHAPE_PASS_us (any kernel's: one
  // file may time several), so a misspelt column is refused rather than never read.
  static const std::regex timing_column("[A-Za-z0-9]+_(full|causal)_(fwd|fwdbwd)_us");
  std::vector<std::string> blocks;  // each row's (c, heads, kv_heads, head_dim), to refuse a repeated one
  for (size_t i = 0; i < rows.size(); ++i) {
    const JsonFields r(rows[i], fmt::format("{} rows[{}]", label, i));
    if (!rows[i].is_object()) throw InputError(fmt::format("{}: expected an object", r.label()));
    for (const auto& [key, value] : rows[i].items()) {
      const bool shape = key == "c" || key == "heads" || key == "kv_heads" || key == "head_dim";
      if (key == "device" || key == "torch") {
        (void)r.non_empty_string(key);
      } else if (std::regex_match(key, timing_column)) {
        // Every kernel's columns are checked, not only --block-costs-kernel's: the file is one record.
        (void)r.positive_number(key);
      } else if (!shape) {
        throw InputError(fmt::format("{}: unknown field \"{}\" (expected c, heads, kv_heads, head_dim, device, torch and "
                                     "KERNEL_{{full,causal}}_{{fwd,fwdbwd}}_us columns; a backward alone is the difference)",
                                     r.label(), key));
      }
    }
    MeasuredWorkload base;
    base.group = group;
    base.kernel = kernel;
    base.device = f.string("device");
    base.seq_len = r.positive_count("c");
    base.devices = 1;
    base.heads = r.positive_count("heads");
    base.kv_heads = r.positive_count_or("kv_heads", base.heads);  // GQA's K/V heads, where the row gives them
    base.head_dim = r.positive_count("head_dim");
    base.layout = "contiguous";
    base.origins = model::InputOrigins(label);
    for (const auto& [input, field] : {std::pair{Input::seq_len, "c"}, {Input::heads, "heads"}, {Input::head_dim, "head_dim"}}) {
      base.origins.add(input, fmt::format("rows[{}].{}", i, field));
    }
    if (r.has("kv_heads")) {
      JsonFields::located(r.where("kv_heads"), [&] { model::require_kv_heads_divide(base.heads, base.kv_heads); });
      base.origins.add(Input::kv_heads, fmt::format("rows[{}].kv_heads", i));
    }
    blocks.push_back(fmt::format("c {}, heads {}, kv_heads {}, head_dim {}", base.seq_len, base.heads, base.kv_heads, base.head_dim));
    for (size_t j = 0; j + 1 < blocks.size(); ++j) {
      if (blocks[j] == blocks.back()) {
        throw InputError(fmt::format("{}: times the block of rows[{}] again ({}): its timings would count twice", r.label(), j,
                                     blocks.back()));
      }
    }
    for (const auto& [shape, mask] : {std::pair{"full", "bidirectional"}, {"causal", "causal"}}) {
      for (const auto& [pass_name, pass] : {std::pair{"fwd", sim::PassSelection::forward}, {"fwdbwd", sim::PassSelection::forward_backward}}) {
        const std::string key = fmt::format("{}_{}_{}_us", kernel, shape, pass_name);
        if (!r.has(key)) {
          throw InputError(fmt::format("{}: no column \"{}\" (is --block-costs-kernel {} right?)", r.label(), key, kernel));
        }
        MeasuredWorkload m = base;
        m.mask = mask;
        m.pass = pass;
        m.us = {r.positive_number(key)};
        m.us_where = r.where(key);
        m.group = several_heads ? fmt::format("{} c={} h={} {} {}", base.group, base.seq_len, base.heads, shape, pass_name)
                                : fmt::format("{} c={} {} {}", base.group, base.seq_len, shape, pass_name);
        out.push_back(std::move(m));
      }
    }
  }
  return out;
}

}  // namespace stripesim::validate
