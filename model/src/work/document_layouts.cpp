#include "stripesim/model/work/document_layouts.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "stripesim/model/io/input_error.hpp"

namespace stripesim::model {
namespace {

void require_documents(const Mask& mask, const char* layout) {
  if (mask.kind() != MaskKind::documents) {
    // Named: validate and the sweeps run a layout under several masks, a documents one among them.
    throw InputError(Input::layouts, layout, fmt::format("needs a documents mask (--mask documents:...), and '{}' is not one", mask.name()));
  }
}

void require_lengths_divisible(const Mask& mask, Count multiple, const char* layout, const char* what) {
  const auto& lengths = mask.document_lengths();
  for (size_t j = 0; j < lengths.size(); ++j) {
    if (lengths[j] % multiple != 0) {
      throw InputError(Input::layouts, layout,
                       // tms and validate take no --pad-documents; the mask's V+P lengths pad anywhere but in
                       // validate, whose kernels define no row that attends to nothing.
                       fmt::format("document {} has length {}, not divisible by {} = {} (pad every document: "
                                   "--pad-documents where the command takes it, or lengths V+P in the mask, here {}+{}; "
                                   "validate, which runs no padding, takes neither: give lengths that divide)",
                                   j, lengths[j], what, multiple, lengths[j], multiple - lengths[j] % multiple));
    }
  }
}

}  // namespace

std::vector<Count> document_pieces(const Layout& layout, const Mask& mask) {
  const std::vector<Position> whole{0, mask.seq_len()};  // any other mask is one document
  const auto& starts = mask.kind() == MaskKind::documents ? mask.document_starts() : whole;
  std::vector<Count> pieces;
  for (Count d = 0; d < layout.devices(); ++d) {
    Count count = 0;
    Position previous = -2;
    for (const Run& run : layout.runs(d)) {
      for (Count i = 0; i < run.length;) {
        const Position p = run.at(i);
        const auto next_start = std::upper_bound(starts.begin(), starts.end(), p);
        if (p != previous + 1 || *(next_start - 1) == p) ++count;  // not a continuation
        // A run of stride 1 continues the piece to its document's end; a longer stride makes
        // every position a piece of its own.
        const Count step = run.stride == 1 ? std::min(run.length - i, *next_start - p) : 1;
        previous = p + step - 1;
        i += step;
      }
    }
    pieces.push_back(count);
  }
  return pieces;
}

std::vector<Count> pad_document_lengths(const std::vector<Count>& lengths, Count multiple) {
  std::vector<Count> padded;
  padded.reserve(lengths.size());
  for (const Count length : lengths) padded.push_back((length + multiple - 1) / multiple * multiple);
  return padded;
}

PaddedDocuments pad_documents(const Mask& mask, Count devices) {
  if (mask.kind() != MaskKind::documents) throw InputError(Input::pad_documents, "", "needs a documents mask");
  if (mask.padded()) {
    throw InputError(Input::pad_documents, "",
                     "the documents mask already gives its padding (V+P lengths); give one or the other");
  }
  if (devices < 1) throw InputError(Input::devices, std::to_string(devices), "must be at least 1");
  const auto padded = pad_document_lengths(mask.document_lengths(), 2 * devices);
  const Count padded_len = std::accumulate(padded.begin(), padded.end(), Count{0});
  if (padded_len > kMaxSeqLen) throw InputError("--pad-documents: the padded sequence exceeds 2^31 tokens");
  return {Mask::documents(padded_len, padded, mask.window_width()), padded_len, padded_len - mask.seq_len()};
}

void check_doc_zigzag_layout(const Mask& documents, Count devices) {
  require_documents(documents, "doc-zigzag");
  require_lengths_divisible(documents, 2 * devices, "doc-zigzag", "2N");
}

void check_doc_striped_layout(const Mask& documents, Count devices) {
  require_documents(documents, "doc-striped");
  require_lengths_divisible(documents, devices, "doc-striped", "N");
}

Layout doc_zigzag_layout(const Mask& documents, Count devices) {
  check_doc_zigzag_layout(documents, devices);
  std::vector<std::vector<Position>> blocks(static_cast<size_t>(devices));
  const auto& starts = documents.document_starts();
  for (size_t j = 0; j + 1 < starts.size(); ++j) {
    const Count chunk = (starts[j + 1] - starts[j]) / (2 * devices);
    for (Count d = 0; d < devices; ++d) {
      auto& block = blocks[static_cast<size_t>(d)];
      for (const Count g : {d, 2 * devices - 1 - d}) {  // the early chunk, then the late one
        for (Count i = 0; i < chunk; ++i) block.push_back(starts[j] + g * chunk + i);
      }
    }
  }
  return Layout::from_blocks(blocks, documents.seq_len(), "doc-zigzag", LayoutKind::doc_zigzag);
}

Layout doc_striped_layout(const Mask& documents, Count devices) {
  check_doc_striped_layout(documents, devices);
  std::vector<std::vector<Position>> blocks(static_cast<size_t>(devices));
  const auto& starts = documents.document_starts();
  for (size_t j = 0; j + 1 < starts.size(); ++j) {
    for (Position p = starts[j]; p < starts[j + 1]; ++p) blocks[static_cast<size_t>((p - starts[j]) % devices)].push_back(p);
  }
  return Layout::from_blocks(blocks, documents.seq_len(), "doc-striped", LayoutKind::doc_striped);
}

}  // namespace stripesim::model
