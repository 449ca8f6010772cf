#pragma once
// Attention masks, as predicates on ORIGINAL positions (q, k). Every mask the model knows lets
// query q see one interval of keys [lowest_key(q), highest_key(q)] whose ends never decrease
// as q grows; the work model's closed forms and merges rely on exactly that. A padding token
// sees none: its interval is [q + 1, q], which keeps both ends in order.
#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "stripesim/model/work/types.hpp"

namespace stripesim::model {

enum class MaskKind { causal, bidirectional, window, documents, prefix };
// "causal", "bidirectional", "window", "documents", "prefix": the kind alone, its width or
// lengths apart (JSON outputs' mask "kind").
[[nodiscard]] const char* mask_kind_name(MaskKind kind);

class Mask {
 public:
  [[nodiscard]] static Mask causal(Count seq_len);
  [[nodiscard]] static Mask bidirectional(Count seq_len);
  // Sliding window of W keys: 0 <= q - k < W.
  [[nodiscard]] static Mask window(Count seq_len, Count width);
  // Packed documents with these lengths (summing to seq_len): causal inside each document and,
  // with a window W >= 1, also 0 <= q - k < W (sliding-window attention over packed documents);
  // window 0 is none. `padding`, when given (one count per document, each below its length):
  // the document's last tokens are padding, which no query attends to and which attend to
  // nothing (the layout and the transfers still carry them), as kernels given actual and padded
  // lengths apart run them (TransformerEngine's THD format, cu_seqlens and cu_seqlens_padded).
  // `spec`: how errors name the mask (the spec it was parsed from: "--mask documents:lens.txt").
  [[nodiscard]] static Mask documents(Count seq_len, std::vector<Count> lengths, Count window = 0,
                                      std::vector<Count> padding = {}, std::string_view spec = "documents");
  // Prefix-LM: the first P tokens (an image, a prompt) attend to each other both ways, every later
  // token causally to all before it: query q sees [0, max(q, P - 1)]. P = 1 is causal, P = n
  // bidirectional.
  [[nodiscard]] static Mask prefix(Count seq_len, Count prefix_length);

  [[nodiscard]] MaskKind kind() const { return kind_; }
  // Whether it allows exactly the pairs causal does, whatever it is called: causal, a window of
  // n tokens or more, prefix:1, one document without padding (and a window, if any, of n or more).
  // A kernel runs such a mask as the causal one it is.
  [[nodiscard]] bool is_causal() const;
  [[nodiscard]] Count seq_len() const { return seq_len_; }
  // The window's width: window:W's, or a documents mask's own (0 when it has none).
  [[nodiscard]] Count window_width() const { return window_; }
  // The width that matters: a window wider than the sequence sees everything causal does.
  [[nodiscard]] Count effective_window() const { return effective_window_; }
  // The bidirectional prefix's length P (0 for any other mask).
  [[nodiscard]] Count prefix_length() const { return prefix_; }
  // Whether some query's keys start after its document's start (or the sequence's): window:W,
  // or documents with a window.
  [[nodiscard]] bool windowed() const { return window_ > 0; }
  // Each document's tokens, its padding included.
  [[nodiscard]] const std::vector<Count>& document_lengths() const { return lengths_; }
  // Each document's padding tokens (all 0 without padding; empty for any other mask).
  [[nodiscard]] const std::vector<Count>& document_padding() const { return padding_; }
  // Whether some document ends in padding.
  [[nodiscard]] bool padded() const { return padded_; }
  // Start of every document, then seq_len: document j is [starts[j], starts[j+1]).
  [[nodiscard]] const std::vector<Position>& document_starts() const { return starts_; }
  // "causal", "bidirectional", "window:4096", "prefix:1024", "documents" (lengths and a documents mask's window
  // are listed separately).
  [[nodiscard]] std::string name() const;
  // The same pairs allowed for the same reasons: kind, length, window, prefix, documents and their
  // padding (window:4k and window:4096 are one mask; so are two spellings of one distribution).
  [[nodiscard]] bool operator==(const Mask&) const = default;

  [[nodiscard]] bool allows(Position q, Position k) const { return lowest_key(q) <= k && k <= highest_key(q); }
  [[nodiscard]] Position lowest_key(Position q) const;
  [[nodiscard]] Position highest_key(Position q) const {
    switch (kind_) {
      case MaskKind::bidirectional: return seq_len_ - 1;
      case MaskKind::prefix: return std::max(q, prefix_ - 1);
      case MaskKind::causal:
      case MaskKind::window:
      case MaskKind::documents: return q;
    }
    return q;
  }
  // Whether document j allows exactly the pairs causal does inside it: no padding, and a window,
  // if any, no shorter than the document (documents mask only).
  [[nodiscard]] bool causal_inside(size_t document) const {
    return padding_[document] == 0 && (!windowed() || effective_window_ >= lengths_[document]);
  }
  // Start of the document holding q (documents mask only).
  [[nodiscard]] Position document_start(Position q) const;
  // Index of the document holding q (documents mask only).
  [[nodiscard]] size_t document_of(Position q) const;
  // Where document j's padding starts: its end without padding.
  [[nodiscard]] Position padding_start(size_t document) const { return starts_[document + 1] - padding_[document]; }
  // lowest_key(q) of a documents mask, given the document holding q (callers that walk the
  // documents in order know it without a search).
  [[nodiscard]] Position document_lowest_key(Position q, size_t document) const {
    if (q >= padding_start(document)) return q + 1;  // padding: an empty interval
    return std::max(starts_[document], window_lowest_key(q));
  }
  // The lowest key a window lets q see, 0 without a window.
  [[nodiscard]] Position window_lowest_key(Position q) const {
    return windowed() ? std::max<Position>(0, q - effective_window_ + 1) : 0;
  }

 private:
  Mask(MaskKind kind, Count seq_len) : kind_(kind), seq_len_(seq_len) {}
  void set_window(Count width);

  MaskKind kind_;
  Count seq_len_;
  Count window_ = 0;            // 0: no window
  Count effective_window_ = 0;  // min(window_, seq_len_)
  Count prefix_ = 0;            // prefix: P, the bidirectional prefix
  std::vector<Count> lengths_;
  std::vector<Count> padding_;
  bool padded_ = false;
  std::vector<Position> starts_;
};

// lowest_key over queries that never decrease, as sweeps ask it: a documents mask's document is
// searched for once and then followed forward (searched again only past the next start).
class LowestKeyWalk {
 public:
  explicit LowestKeyWalk(const Mask& mask) : mask_(mask) {}
  [[nodiscard]] Position operator()(Position q) {
    if (mask_.kind() != MaskKind::documents) return mask_.lowest_key(q);
    const auto& starts = mask_.document_starts();
    if (!started_ || starts[document_ + 1] <= q) {
      const auto from = starts.begin() + static_cast<std::ptrdiff_t>(started_ ? document_ + 1 : 0);
      document_ = static_cast<size_t>(std::upper_bound(from, starts.end(), q) - starts.begin() - 1);
      started_ = true;
    }
    return mask_.document_lowest_key(q, document_);
  }

 private:
  const Mask& mask_;
  size_t document_ = 0;
  bool started_ = false;
};

// causal | bidirectional | window:W | prefix:P | documents:L1,L2,... | documents:FILE (one length per
// line, or a JSON array) | documents:DISTRIBUTION (see document_lengths.hpp); a documents spec
// may end in :window=W. Lengths accept k/M suffixes; in a list or a file of lines a length may be
// V+P: V tokens, then P padding tokens.
[[nodiscard]] Mask parse_mask(std::string_view spec, Count seq_len);
// The file `spec` reads its document lengths from ("documents:FILE"), or empty when it reads none
// (any other mask, a list of lengths, a distribution). parse_mask decides the same way.
[[nodiscard]] std::string mask_file(std::string_view spec);
// Whether `spec` names a documents mask, by its name alone (nothing after "documents:" parsed):
// what decides, before any mask is built, that per-document layouts and padding apply.
[[nodiscard]] bool is_documents_mask(std::string_view spec);

}  // namespace stripesim::model
