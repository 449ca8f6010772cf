#pragma once
// The specs the layout and mask parsers take, listed once: the parsers' "expected ..." errors
// and their did-you-mean names, the CLI's --layouts and --mask help, and the README's flag table
// (a test checks it against these lists) all come from here. A new layout or mask kind is added
// to its parser and to its list.
#include <span>
#include <string>
#include <string_view>

namespace stripesim::model {

struct SpecSyntax {
  std::string_view name;    // what a misspelling is matched against ("block-striped")
  std::string_view syntax;  // as the user writes it ("block-striped:S")
};

inline constexpr SpecSyntax kLayoutSyntaxes[] = {
    {"contiguous", "contiguous"},       {"striped", "striped"},
    {"zigzag", "zigzag"},               {"block-striped", "block-striped:S"},
    {"permutation", "permutation:FILE"}, {"doc-zigzag", "doc-zigzag"},
    {"doc-striped", "doc-striped"},     {"ptrr", "ptrr[:BLOCK]"},
    {"balanced", "balanced[:CHUNK]"}};

inline constexpr SpecSyntax kMaskSyntaxes[] = {
    {"causal", "causal"},        {"bidirectional", "bidirectional"},    {"window", "window:W"},
    {"prefix", "prefix:P"},      {"documents", "documents:L1,L2,..."}, {"documents", "documents:FILE"}, {"documents", "documents:DISTRIBUTION"}};

// The document length distributions of documents:DISTRIBUTION (each may end in :seed=S).
inline constexpr SpecSyntax kDistributionSyntaxes[] = {{"fixed", "fixed:L"},
                                                       {"uniform", "uniform:A-B"},
                                                       {"lognormal", "lognormal:MEAN:SIGMA"},
                                                       {"longtail", "longtail:SHORT:LONG:P"}};

// "a, b, c or d": choices as an error lists them ("a" alone, "a or b" for two).
[[nodiscard]] std::string or_list(std::span<const std::string_view> items);
// The same of the syntaxes (or, with `names`, the names).
[[nodiscard]] std::string expected_list(std::span<const SpecSyntax> syntaxes, bool names = false);
// The syntaxes joined by `separator` ("a | b | c"), as help lists them.
[[nodiscard]] std::string joined_syntaxes(std::span<const SpecSyntax> syntaxes, std::string_view separator);

}  // namespace stripesim::model
