#pragma once
// A layout is a bijection between original positions p in [0, n) and (device, local index):
// which tokens each of the N devices holds, and in which order it holds them.
#include <string>
#include <string_view>
#include <vector>

#include "stripesim/model/io/input_error.hpp"
#include "stripesim/model/work/types.hpp"

namespace stripesim::model {

enum class LayoutKind { contiguous, striped, zigzag, block_striped, permutation, doc_zigzag, doc_striped, balanced, ptrr };

// An arithmetic progression of positions held at consecutive local indices:
// local index (local_begin + i) holds position (first + i * stride), i in [0, length).
// stride >= 1 always, so `first` is the run's smallest position and the last one its largest.
struct Run {
  Position first = 0;
  Position stride = 1;
  Count length = 0;
  Count local_begin = 0;

  [[nodiscard]] Position last() const { return first + (length - 1) * stride; }
  [[nodiscard]] Position at(Count i) const { return first + i * stride; }
};

struct Placement {
  DeviceId device = 0;
  Count local = 0;
  friend bool operator==(const Placement&, const Placement&) = default;
};

// What require_seq_len_divisible raises: an InputError (by kind, on the sequence length) that also
// says the multiple it asked for, so that a list of layouts can name lengths all of them take.
class IndivisibleLength : public InputError {
 public:
  IndivisibleLength(Count seq_len, Count divisor, std::string need);
  [[nodiscard]] Count seq_len() const { return seq_len_; }
  [[nodiscard]] Count divisor() const { return divisor_; }
  // Why, without the hint: "layout zigzag needs it divisible by 2N = 16".
  [[nodiscard]] const std::string& need() const { return need_; }

 private:
  Count seq_len_;
  Count divisor_;
  std::string need_;
};

// Throws IndivisibleLength unless `divisor` divides `seq_len`: "--seq-len 1000: layout zigzag
// needs it divisible by 2N = 16; the nearest such lengths are 992 and 1008 (pad 8 tokens to
// reach 1008)". `what` names the divisor ("N", "2N", "s*N").
void require_seq_len_divisible(Count seq_len, Count divisor, std::string_view layout, std::string_view what);
// The multiples of `multiple` nearest seq_len within the lengths stripesim counts, as that hint
// says them ("the nearest such lengths are 992 and 1008 (pad 8 tokens ...)"; for a list of
// layouts, "the nearest lengths every listed layout takes are ...").
// `longest`: the longest length the command takes (the validator's 2^20, below what is counted).
[[nodiscard]] std::string nearest_multiples(Count seq_len, Count multiple, bool every_listed_layout = false, Count longest = kMaxSeqLen);
// Throws InputError unless 1 <= devices <= kMaxDevices.
void require_devices(Count devices);
// Throws InputError unless 1 <= seq_len <= kMaxSeqLen: checked where a sequence is first taken
// (its mask parsed, its layout built), before anything sized by it is allocated.
void require_seq_len(Count seq_len);

class Layout {
 public:
  // Factories reject sizes that do not divide with an InputError.
  [[nodiscard]] static Layout contiguous(Count seq_len, Count devices);
  [[nodiscard]] static Layout striped(Count seq_len, Count devices);
  [[nodiscard]] static Layout zigzag(Count seq_len, Count devices);
  [[nodiscard]] static Layout block_striped(Count seq_len, Count devices, Count stripe);
  // blocks[d][l] is the original position device d holds at local index l. `source` names where
  // the permutation came from (a file name) for messages and output.
  [[nodiscard]] static Layout permutation(const std::vector<std::vector<Position>>& blocks,
                                          Count seq_len, std::string source);
  // An explicit layout built by stripesim itself (per-document and balanced layouts): named
  // `name`, of kind `kind`, validated as a bijection like a permutation file.
  [[nodiscard]] static Layout from_blocks(const std::vector<std::vector<Position>>& blocks, Count seq_len,
                                          std::string name, LayoutKind kind);

  [[nodiscard]] LayoutKind kind() const { return kind_; }
  // The spec that recreates this layout: "striped", "block-striped:64", "permutation:FILE".
  [[nodiscard]] const std::string& name() const { return name_; }
  [[nodiscard]] Count seq_len() const { return seq_len_; }
  [[nodiscard]] Count devices() const { return devices_; }
  [[nodiscard]] Count block_size() const { return block_size_; }
  [[nodiscard]] Count stripe() const { return stripe_; }

  [[nodiscard]] Position position(DeviceId device, Count local) const;
  [[nodiscard]] Placement locate(Position position) const;

  // The positions of `device` as maximal runs, in local order, covering local 0..c-1.
  // Structured layouts have one or two runs per device (c/s for block-striped); an explicit
  // permutation has as many as its order needs. The work model counts on runs, not positions.
  [[nodiscard]] std::vector<Run> runs(DeviceId device) const;

 private:
  Layout(LayoutKind kind, std::string name, Count seq_len, Count devices, Count stripe);

  LayoutKind kind_;
  std::string name_;
  Count seq_len_;
  Count devices_;
  Count block_size_;
  Count stripe_;                      // block-striped stripe width s; zigzag chunk h; else 0
  std::vector<Position> slots_;       // permutation: position at slot d*c + l
  std::vector<Count> slot_of_;        // permutation: inverse of slots_
};

}  // namespace stripesim::model
