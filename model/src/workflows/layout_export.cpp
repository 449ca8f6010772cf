#include "stripesim/model/workflows/layout_export.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <iterator>
#include <stdexcept>
#include <vector>

#include "stripesim/model/io/input_error.hpp"
#include "stripesim/model/io/spec_syntax.hpp"
#include "stripesim/model/io/name_match.hpp"
#include "stripesim/model/work/layout_spec.hpp"
#include "stripesim/model/work/mask.hpp"

namespace stripesim::model {
namespace {

// Compact, and never throwing on a file name that is not UTF-8 (it is replaced, not refused).
std::string compact(const nlohmann::ordered_json& value) {
  return value.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

std::string format_names() {
  std::vector<std::string_view> names;
  for (const auto& format : kLayoutFormats) names.push_back(format.name);
  return or_list(names);
}

}  // namespace

LayoutExport plan_layout_export(const AnalyzeConfig& config) {
  if (config.layouts.size() != 1) {
    throw InputError(fmt::format("--layout '{}': one layout per file (analyze --layouts compares several)",
                                 fmt::join(config.layouts, ",")));
  }
  // The layout parsers name analyze's flag; here the user typed --layout.
  const auto plan = [&] {
    try {
      return plan_layouts(config);  // no N x N matrices here: only a Layout's own device bound
    } catch (const InputError& e) {
      if (e.input() != Input::layouts) throw;
      throw e.renamed("--layout");
    }
  };
  LayoutExport exported{plan(), {}};
  // The plan keeps the padded mask only; the documents' own lengths come from the same spec.
  if (config.pad_documents) exported.unpadded_document_lengths = parse_mask(config.mask, config.seq_len).document_lengths();
  return exported;
}

const LayoutFormatInfo& layout_format_info(LayoutFormat format) {
  for (const LayoutFormatInfo& info : kLayoutFormats) {
    if (info.format == format) return info;
  }
  throw std::logic_error("layout format missing from kLayoutFormats");
}

LayoutFormat parse_layout_format(std::string_view name, std::string_view what) {
  std::vector<std::string> names;
  for (const LayoutFormatInfo& info : kLayoutFormats) {
    if (same_name(name, info.name)) return info.format;
    names.emplace_back(info.name);
  }
  throw InputError(
      fmt::format("{} '{}': unknown layout format{}, expected {}", what, name, did_you_mean(name, names), format_names()));
}

namespace {

// The decimal digits of 0, 1, ..., m - 1 together.
Count digits_below(Count m) {
  Count total = m > 0 ? 1 : 0;  // "0"
  for (Count low = 1, width = 1; low < m; low *= 10, ++width) {
    total += (std::min(m, low * 10) - low) * width;
    if (low > std::numeric_limits<Count>::max() / 10) break;
  }
  return total;
}

}  // namespace

Count layout_file_bytes(const LayoutExport& exported, LayoutFormat format) {
  const Count n = exported.plan.seq_len;
  const Count devices = exported.plan.config.devices;
  const Count block = n / devices;
  switch (format) {
    case LayoutFormat::npy: return 8 * n;
    case LayoutFormat::json: return digits_below(n) + n;  // a position and its comma, every token
    case LayoutFormat::csv: return digits_below(n) + block * digits_below(devices) + devices * digits_below(block) + 3 * n;
  }
  throw std::logic_error("unknown layout format");
}

std::string write_layout(const LayoutExport& exported, LayoutFormat format) {
  if (const Count bytes = layout_file_bytes(exported, format); bytes > kMaxLayoutFileBytes) {
    throw InputError(Input::seq_len, std::to_string(exported.plan.config.seq_len),
                     fmt::format("the {} file would be {:.1f} GiB, built in memory before it is written: layout writes at "
                                 "most {} GiB (a training run can compute each device's positions from the layout's formula, "
                                 "README \"Layouts\")",
                                 layout_format_info(format).name, static_cast<double>(bytes) / (1 << 30),
                                 kMaxLayoutFileBytes >> 30));
  }
  const Layout layout = exported.build_layout();
  switch (format) {
    case LayoutFormat::json: return layout_to_json(exported, layout);
    case LayoutFormat::csv: return layout_to_csv(layout);
    case LayoutFormat::npy: return layout_to_npy(layout);
  }
  throw std::logic_error("unknown layout format");
}

std::string layout_to_json(const LayoutExport& exported, const Layout& layout) {
  const AnalysisPlan& plan = exported.plan;
  const AnalyzeConfig& config = plan.config;
  nlohmann::ordered_json header;
  header["schema"] = kLayoutSchema;
  header["layout"] = layout.name();
  header["seq_len"] = plan.seq_len;
  header["devices"] = layout.devices();
  header["block_size"] = layout.block_size();
  header["tile"] = {{"query", config.tile.query}, {"key", config.tile.key}};
  header["tiling"] = tiling_name(config.tiling);
  header["mask"] = mask_to_json(plan.mask, config.mask);
  if (config.pad_documents) {
    header["padding"] = {{"unpadded_seq_len", config.seq_len},
                         {"tokens", plan.padding_tokens},
                         {"document_lengths", exported.unpadded_document_lengths}};
  }
  // Written by hand around the header's compact values: dump(2) would put every position of a
  // million-token layout on its own line.
  std::string out = "{\n";
  auto to = std::back_inserter(out);
  for (const auto& [key, value] : header.items()) fmt::format_to(to, "  {}: {},\n", compact(key), compact(value));
  out += "  \"blocks\": [\n";
  for (DeviceId d = 0; d < layout.devices(); ++d) {
    out += "    [";
    for (Count l = 0; l < layout.block_size(); ++l) fmt::format_to(to, "{}{}", l == 0 ? "" : ",", layout.position(d, l));
    out += d + 1 < layout.devices() ? "],\n" : "]\n";
  }
  out += "  ]\n}\n";
  return out;
}

std::string layout_to_csv(const Layout& layout) {
  std::string out = "device,local_index,position\n";
  auto to = std::back_inserter(out);
  for (DeviceId d = 0; d < layout.devices(); ++d) {
    for (Count l = 0; l < layout.block_size(); ++l) fmt::format_to(to, "{},{},{}\n", d, l, layout.position(d, l));
  }
  return out;
}

std::string layout_to_npy(const Layout& layout) {
  // https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html, version 1.0.
  std::string dict = fmt::format("{{'descr': '<i8', 'fortran_order': False, 'shape': ({}, {}), }}", layout.devices(),
                                 layout.block_size());
  const std::string magic("\x93NUMPY\x01\x00", 8);  // magic string, major version 1, minor 0
  constexpr size_t kLengthBytes = 2;                  // the header's length, uint16 little-endian
  const size_t unpadded = magic.size() + kLengthBytes + dict.size() + 1;
  dict.append((unpadded + 63) / 64 * 64 - unpadded, ' ');
  dict += '\n';
  std::string out = magic;
  out += static_cast<char>(dict.size() & 0xff);  // the dict is under 100 bytes: far below 65536
  out += static_cast<char>((dict.size() >> 8) & 0xff);
  out += dict;
  out.reserve(out.size() + static_cast<size_t>(layout.seq_len()) * 8);
  for (DeviceId d = 0; d < layout.devices(); ++d) {
    for (Count l = 0; l < layout.block_size(); ++l) {
      const auto value = static_cast<std::uint64_t>(layout.position(d, l));
      for (int byte = 0; byte < 8; ++byte) out += static_cast<char>((value >> (8 * byte)) & 0xff);
    }
  }
  return out;
}

}  // namespace stripesim::model
