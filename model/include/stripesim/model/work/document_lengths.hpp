#pragma once
// Document lengths for packed sequences: drawn from a named distribution with a seed and packed
// into one sequence of n tokens the way training data loaders do (documents in the order drawn;
// the one that does not fit is cut at the end of the sequence).
//
//   fixed:L                      every document L tokens
//   uniform:A-B                  uniform on [A, B]
//   lognormal:MEAN:SIGMA         log-normal with this mean; SIGMA is the spread of log(length)
//   longtail:SHORT:LONG:P        log-normal (sigma 1) around SHORT, with probability P around LONG
// Each may end in ":seed=S" (default 1). The generator is SplitMix64 with its own transforms, so
// the same spec gives the same lengths on every platform and standard library.
#include <string_view>
#include <vector>

#include "stripesim/model/work/types.hpp"

namespace stripesim::model {

// The most documents a mask holds: 128-token documents over the longest sequence (2^31 tokens).
// Each costs about 50 bytes in the mask and the layouts built on it; 2^31 one-token documents
// filled the memory and the process was killed.
inline constexpr Count kMostDocuments = Count{1} << 24;

// True when `spec` names a distribution rather than a list of lengths or a file.
[[nodiscard]] bool is_length_distribution(std::string_view spec);

[[nodiscard]] std::vector<Count> draw_document_lengths(std::string_view spec, Count seq_len);

}  // namespace stripesim::model
