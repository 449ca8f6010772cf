#include "stripesim/model/work/mask.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <limits>
#include <optional>
#include <sstream>

#include "stripesim/model/io/input_error.hpp"
#include "stripesim/model/io/json_fields.hpp"
#include "stripesim/model/io/json_file.hpp"
#include "stripesim/model/io/size_parse.hpp"
#include "stripesim/model/io/spec_syntax.hpp"
#include "stripesim/model/work/document_lengths.hpp"
#include "stripesim/model/work/layout.hpp"
#include "stripesim/model/work/layout_spec.hpp"

namespace stripesim::model {

Mask Mask::causal(Count seq_len) { return Mask(MaskKind::causal, seq_len); }

Mask Mask::bidirectional(Count seq_len) { return Mask(MaskKind::bidirectional, seq_len); }

Mask Mask::window(Count seq_len, Count width) {
  if (width < 1) throw InputError(Input::mask, fmt::format("window:{}", width), "the window must be at least 1 token");
  Mask mask(MaskKind::window, seq_len);
  mask.set_window(width);
  return mask;
}

Mask Mask::prefix(Count seq_len, Count prefix_length) {
  if (prefix_length < 1 || prefix_length > seq_len) {
    throw InputError(Input::mask, fmt::format("prefix:{}", prefix_length),
                     fmt::format("the prefix must hold 1 to n = {} tokens", seq_len));
  }
  Mask mask(MaskKind::prefix, seq_len);
  mask.prefix_ = prefix_length;
  return mask;
}

void Mask::set_window(Count width) {
  window_ = width;
  // A window wider than the sequence is the causal mask; clamping keeps q - W far from overflow.
  effective_window_ = std::min(width, seq_len_);
}

Mask Mask::documents(Count seq_len, std::vector<Count> lengths, Count window, std::vector<Count> padding, std::string_view spec) {
  const auto fail = [&](const std::string& why) { return InputError(Input::mask, std::string(spec), why); };
  if (lengths.empty()) throw fail("needs at least one document length");
  if (static_cast<Count>(lengths.size()) > kMostDocuments) {
    throw fail(fmt::format("{} documents, more than the {} a mask holds", lengths.size(), kMostDocuments));
  }
  if (padding.empty()) padding.assign(lengths.size(), 0);
  if (padding.size() != lengths.size()) throw fail("needs one padding count per document");
  if (window < 0) throw fail(fmt::format("window={}: the window must be at least 1 token", window));
  Mask mask(MaskKind::documents, seq_len);
  if (window > 0) mask.set_window(window);
  mask.starts_.reserve(lengths.size() + 1);
  Count sum = 0;
  for (size_t j = 0; j < lengths.size(); ++j) {
    if (lengths[j] < 1) {
      throw fail(fmt::format("document {} has length {}, every length must be at least 1", j, lengths[j]));
    }
    mask.starts_.push_back(sum);
    if (lengths[j] > seq_len - sum) {
      throw fail(fmt::format("the lengths add up to more than the sequence length n = {}", seq_len));
    }
    sum += lengths[j];
  }
  if (sum != seq_len) {
    throw fail(fmt::format("the lengths add up to {}, they must add up to the sequence length n = {}", sum, seq_len));
  }
  mask.starts_.push_back(seq_len);
  for (size_t j = 0; j < lengths.size(); ++j) {
    if (padding[j] < 0 || padding[j] >= lengths[j]) {
      throw fail(fmt::format("document {} of {} tokens has {} padding tokens: padding must leave at least 1 token", j,
                             lengths[j], padding[j]));
    }
  }
  mask.lengths_ = std::move(lengths);
  mask.padded_ = std::any_of(padding.begin(), padding.end(), [](Count p) { return p > 0; });
  mask.padding_ = std::move(padding);
  return mask;
}

bool Mask::is_causal() const {
  switch (kind_) {
    case MaskKind::causal: return true;
    case MaskKind::bidirectional: return seq_len_ <= 1;
    case MaskKind::window: return effective_window_ == seq_len_;
    case MaskKind::prefix: return prefix_ == 1;
    case MaskKind::documents: return lengths_.size() == 1 && causal_inside(0);
  }
  return false;
}

const char* mask_kind_name(MaskKind kind) {
  switch (kind) {
    case MaskKind::causal: return "causal";
    case MaskKind::bidirectional: return "bidirectional";
    case MaskKind::window: return "window";
    case MaskKind::prefix: return "prefix";
    case MaskKind::documents: return "documents";
  }
  return "";
}

std::string Mask::name() const {
  switch (kind_) {
    case MaskKind::window: return fmt::format("{}:{}", mask_kind_name(kind_), window_);
    case MaskKind::prefix: return fmt::format("{}:{}", mask_kind_name(kind_), prefix_);
    default: return mask_kind_name(kind_);
  }
}

Position Mask::document_start(Position q) const { return starts_[document_of(q)]; }

size_t Mask::document_of(Position q) const {
  return static_cast<size_t>(std::upper_bound(starts_.begin(), starts_.end(), q) - starts_.begin() - 1);
}

Position Mask::lowest_key(Position q) const {
  switch (kind_) {
    case MaskKind::causal:
    case MaskKind::bidirectional:
    case MaskKind::prefix: return 0;
    case MaskKind::window: return window_lowest_key(q);
    case MaskKind::documents: return document_lowest_key(q, document_of(q));
  }
  return 0;
}

namespace {

bool looks_like_length_list(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char ch) {
    return (ch >= '0' && ch <= '9') || ch == ',' || ch == '+' || ch == 'k' || ch == 'K' || ch == 'm' || ch == 'M' ||
           ch == 'g' || ch == 'G';
  });
}

// Document lengths as a list or a file of lines gives them: each V, or V+P (V tokens, then P
// padding tokens).
struct DocumentList {
  std::vector<Count> lengths;  // V + P
  std::vector<Count> padding;  // P

  void add(std::string_view item, const InputName& what) {
    const auto plus = item.find('+');
    // "+32" and "16+" are neither V nor V+P: named whole, not by their empty part.
    if (plus == 0 || plus + 1 == item.size()) throw what.error(item, "expected V or V+P (V tokens, then P padding tokens)", Shown::quoted);
    const Count valid = parse_count(item.substr(0, plus), what);
    const Count pad = plus == std::string_view::npos ? 0 : parse_count(item.substr(plus + 1), what);
    if (pad > std::numeric_limits<Count>::max() - valid) throw what.error(item, "V+P above 2^63 - 1, the largest count stripesim takes", Shown::quoted);
    lengths.push_back(valid + pad);
    padding.push_back(pad);
  }
};

// Its errors begin with `label`.
DocumentList read_document_lengths(const std::string& path, const std::string& label) {
  const std::string text = read_text_file(path, label);
  const auto first = text.find_first_not_of(" \t\r\n");
  DocumentList list;
  if (first != std::string::npos && text[first] == '[') {
    const nlohmann::json doc = parse_json_text(text, label);
    for (const auto& item : doc) {
      if (!item.is_number_integer()) {
        throw InputError(fmt::format("{}: holds {}, expected integer document lengths", label, json_excerpt(item)));
      }
      list.lengths.push_back(json_count(item, label));
    }
    list.padding.assign(list.lengths.size(), 0);
    return list;
  }
  std::istringstream lines(text);
  std::string line;
  Count line_number = 0;
  while (std::getline(lines, line)) {
    ++line_number;
    line.erase(std::min(line.find('#'), line.size()));  // a comment, on its own line or after a length
    const auto begin = line.find_first_not_of(" \t\r");
    if (begin == std::string::npos) continue;
    const auto end = line.find_last_not_of(" \t\r");
    list.add(std::string_view(line).substr(begin, end - begin + 1), fmt::format("{} line {}", label, line_number));
  }
  return list;
}

// A documents spec (what follows "documents:") parted from its ":window=W" suffix, if any.
struct WindowSuffix {
  std::string_view documents;
  std::optional<std::string_view> width;  // the text after "window=", absent without the suffix
};

WindowSuffix split_window_suffix(std::string_view rest) {
  constexpr std::string_view kSuffix = ":window=";
  const auto at = rest.rfind(kSuffix);
  if (at == std::string_view::npos) return {rest, std::nullopt};
  return {rest.substr(0, at), rest.substr(at + kSuffix.size())};
}

// The documents mask's window from the suffix's width, 0 when there is none.
Count parse_document_window(std::string_view spec, std::optional<std::string_view> suffix) {
  if (!suffix) return 0;
  const std::string_view width = *suffix;
  const auto fail = [&] {
    return InputError(Input::mask, std::string(spec), "the window of documents:...:window=W must be at least 1 token",
                      Shown::quoted);
  };
  if (width.starts_with('-')) throw fail();
  const Count w = parse_count(width, InputName(Input::mask, "documents window=W width"));
  if (w < 1) throw fail();
  return w;
}

}  // namespace

constexpr std::string_view kDocuments = "documents:";

bool is_documents_mask(std::string_view spec) { return spec.starts_with(kDocuments); }

std::string mask_file(std::string_view spec) {
  if (!spec.starts_with(kDocuments) || spec.size() == kDocuments.size()) return "";
  const std::string_view rest = split_window_suffix(spec.substr(kDocuments.size())).documents;
  return is_length_distribution(rest) || looks_like_length_list(rest) ? "" : std::string(rest);
}

Mask parse_mask(std::string_view spec, Count seq_len) {
  // Before a document list of seq_len entries is drawn (documents:fixed:1 at -n 4G took 17 GB).
  require_seq_len(seq_len);
  if (spec == "causal") return Mask::causal(seq_len);
  if (spec == "bidirectional") return Mask::bidirectional(seq_len);
  constexpr std::string_view kWindow = "window:";
  constexpr std::string_view kPrefix = "prefix:";
  if (spec.starts_with(kPrefix)) {
    const std::string_view length = spec.substr(kPrefix.size());
    if (length.starts_with('-')) {
      throw InputError(Input::mask, std::string(spec), fmt::format("the prefix must hold 1 to n = {} tokens", seq_len),
                       Shown::quoted);
    }
    return Mask::prefix(seq_len, parse_count(length, InputName(Input::mask, "prefix:P length")));
  }
  if (spec.starts_with(kWindow)) {
    const std::string_view width = spec.substr(kWindow.size());
    if (width.starts_with('-')) throw InputError(Input::mask, std::string(spec), "the window must be at least 1 token", Shown::quoted);
    return Mask::window(seq_len, parse_count(width, InputName(Input::mask, "window:W width")));
  }
  if (spec.starts_with(kDocuments) && spec.size() > kDocuments.size()) {
    const auto [rest, width] = split_window_suffix(spec.substr(kDocuments.size()));
    const Count window = parse_document_window(spec, width);
    if (rest.empty() || rest.starts_with("window=")) {
      throw InputError(Input::mask, std::string(spec), "documents needs its lengths before :window=W", Shown::quoted);
    }
    // A second suffix would otherwise be read as part of a lengths file's name.
    if (rest.find(":window=") != std::string_view::npos) {
      throw InputError(Input::mask, std::string(spec), "documents takes one :window=W", Shown::quoted);
    }
    if (is_length_distribution(rest)) return Mask::documents(seq_len, draw_document_lengths(rest, seq_len), window, {}, spec);
    DocumentList list;
    if (looks_like_length_list(rest)) {
      for (const auto& item : split_list(rest, InputName(Input::mask, "documents"))) {
        list.add(item, InputName(Input::mask, "documents length"));
      }
    } else {
      // What mask_file(spec) names. Its errors name the flag's value; raised again by kind, so
      // that a value from a file (an experiment's point) is named at its field instead.
      const std::string path(rest), label = "--mask documents:" + path;
      try {
        list = read_document_lengths(path, label);
      } catch (const InputError& e) {
        std::string_view detail = e.what();
        if (e.input() || !detail.starts_with(label)) throw;
        detail.remove_prefix(label.size());
        if (detail.starts_with(":")) detail.remove_prefix(1);
        if (detail.starts_with(" ")) detail.remove_prefix(1);
        throw InputError(Input::mask, "documents:" + path, std::string(detail));
      }
    }
    return Mask::documents(seq_len, std::move(list.lengths), window, std::move(list.padding), spec);
  }
  throw InputError(Input::mask, std::string(spec), "unknown mask, expected " + expected_list(kMaskSyntaxes), Shown::quoted);
}

}  // namespace stripesim::model
