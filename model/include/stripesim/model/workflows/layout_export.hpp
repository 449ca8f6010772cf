#pragma once
// A layout written for training code (`stripesim layout`): per device, the original positions it
// holds in local order, blocks[d][l]. A data loader applies it as is: rank d's shard of the packed
// sequence is tokens[blocks[d]] and its position ids are blocks[d] (minus each position's
// document start where the model restarts positions per document). The layout is built exactly
// as `analyze` builds it from the same flags (mask, --pad-documents, tile, tiling), so the file
// is the layout that was analysed, and `analyze --layouts permutation:FILE` counts the same work.
//
// Every layout holds n/N tokens on every device (Layout's invariant: explicit layouts are
// checked as bijections with equal blocks), so the per-device arrays are always a full N x n/N
// matrix, which is what the npy format stores.
#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "stripesim/model/work/layout.hpp"
#include "stripesim/model/workflows/analysis.hpp"

namespace stripesim::model {

// One layout as `analyze` plans it, and what it was built from.
struct LayoutExport {
  AnalysisPlan plan;  // config.layouts holds the one spec; plan.layouts its plan
  // With --pad-documents: every document's own tokens, before padding (the padding follows
  // them inside the padded document). Empty without padding.
  std::vector<Count> unpadded_document_lengths;

  // Built on each call (a balanced layout is computed then): build once, write many.
  [[nodiscard]] Layout build_layout() const { return plan.layouts.front().build(); }
};

// Validates everything as plan_analysis does; `config.layouts` must hold exactly one spec.
[[nodiscard]] LayoutExport plan_layout_export(const AnalyzeConfig& config);

enum class LayoutFormat { json, csv, npy };

struct LayoutFormatInfo {
  LayoutFormat format;
  std::string_view name;
  std::string_view help;
  bool binary;  // not for a terminal: written to a file only
};

// Every format, once: the CLI's choices and help, the parser and the writers come from here.
inline constexpr std::array<LayoutFormatInfo, 3> kLayoutFormats{{
    {LayoutFormat::json, "json",
     "{\"schema\", \"layout\", \"seq_len\", \"devices\", \"block_size\", \"tile\", \"tiling\", \"mask\", "
     "[\"padding\"], \"blocks\": [[p, ...] per device]}, loadable as permutation:FILE",
     false},
    {LayoutFormat::csv, "csv", "one row per token: device,local_index,position", false},
    {LayoutFormat::npy, "npy", "NumPy .npy v1.0, int64 little-endian, shape (N, n/N), row d = device d's positions",
     true},
}};

[[nodiscard]] const LayoutFormatInfo& layout_format_info(LayoutFormat format);
// "json" | "csv" | "npy", case aside; anything else is an InputError naming `what`.
[[nodiscard]] LayoutFormat parse_layout_format(std::string_view name, std::string_view what = "--format");

// The file's text (bytes for npy), byte-identical for the same input. It is built in memory
// (written whole or not at all): write_layout refuses, naming --seq-len, a file of more than
// kMaxLayoutFileBytes (2^29 tokens in npy), which would hold twice that in memory.
inline constexpr Count kMaxLayoutFileBytes = Count{4} << 30;
[[nodiscard]] std::string write_layout(const LayoutExport& exported, LayoutFormat format);
// How many bytes the file of `format` takes, its per-token part exactly (every position's digits
// and separator; in csv each device's and index's too): what write_layout would build.
[[nodiscard]] Count layout_file_bytes(const LayoutExport& exported, LayoutFormat format);

// The writers on their own. JSON: one top-level field per line, each device's positions on one
// line. CSV: the header "device,local_index,position", then a row per token, device by device in
// local order. npy: the magic "\x93NUMPY", version 1.0, a header dict padded with spaces to a
// multiple of 64 bytes and ending in '\n', then the N x n/N positions in C order.
[[nodiscard]] std::string layout_to_json(const LayoutExport& exported, const Layout& layout);
[[nodiscard]] std::string layout_to_csv(const Layout& layout);
[[nodiscard]] std::string layout_to_npy(const Layout& layout);

}  // namespace stripesim::model
