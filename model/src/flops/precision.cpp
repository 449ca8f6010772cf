#include "stripesim/model/flops/precision.hpp"

#include <array>

#include "stripesim/model/io/spec_syntax.hpp"

namespace stripesim::model {
namespace {

struct Format {
  std::string_view name;
  int bits;
};

// tf32 is stored in 32 bits (its 19 significant ones are the tensor cores' business).
constexpr std::array<Format, 10> kFormats{{{"fp64", 64}, {"fp32", 32}, {"tf32", 32}, {"bf16", 16}, {"fp16", 16},
                                           {"fp8", 8}, {"int8", 8}, {"fp6", 6}, {"fp4", 4}, {"int4", 4}}};

}  // namespace

const std::vector<std::string>& precision_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> all;
    for (const Format& f : kFormats) all.emplace_back(f.name);
    return all;
  }();
  return names;
}

std::optional<int> precision_bits(std::string_view name) {
  for (const Format& f : kFormats) {
    if (f.name == name) return f.bits;
  }
  return std::nullopt;
}

std::string whole_byte_precisions_text() {
  std::vector<std::string_view> whole;
  for (const Format& f : kFormats) {
    if (f.bits % 8 == 0) whole.push_back(f.name);
  }
  return or_list(whole);
}

}  // namespace stripesim::model
