#include "stripesim/model/work/document_lengths.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>

#include "stripesim/model/io/input_error.hpp"
#include "stripesim/model/io/size_parse.hpp"
#include "stripesim/model/io/spec_syntax.hpp"
#include "stripesim/model/work/layout_spec.hpp"
#include "stripesim/model/work/splitmix64.hpp"

namespace stripesim::model {
namespace {

using Random = SplitMix64;

std::vector<std::string> split(std::string_view text, char separator) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    const size_t at = text.find(separator, start);
    parts.emplace_back(text.substr(start, at == std::string_view::npos ? text.npos : at - start));
    if (at == std::string_view::npos) return parts;
    start = at + 1;
  }
}

Count lognormal_draw(Random& random, double mean, double sigma) {
  const double mu = std::log(mean) - sigma * sigma / 2;  // so that E[length] = mean
  return std::max<Count>(1, std::llround(std::exp(mu + sigma * random.normal())));
}

}  // namespace

bool is_length_distribution(std::string_view spec) {
  for (const SpecSyntax& each : kDistributionSyntaxes) {
    if (spec.starts_with(each.name) && spec.substr(each.name.size()).starts_with(':')) return true;
  }
  return false;
}

std::vector<Count> draw_document_lengths(std::string_view spec, Count seq_len) {
  const std::string mask = fmt::format("documents:{}", spec);
  const auto fail = [&](const std::string& why) { return InputError(Input::mask, mask, why); };
  const auto part = [&](const char* name) { return InputName(Input::mask, mask + " " + name); };
  std::vector<std::string> parts = split(spec, ':');
  std::uint64_t seed = 1;
  const std::string& kind = parts.front();
  const bool seeded = parts.size() > 1 && parts.back().starts_with("seed=");
  const auto refuse_seed_if = [&](bool nothing_random, const char* why) {
    if (seeded && nothing_random) throw fail(fmt::format("{} draws nothing at random: a seed changes nothing", why));
  };
  if (seeded) {
    if (kind == "fixed") throw fail("fixed lengths draw nothing at random: a seed changes nothing");
    seed = static_cast<std::uint64_t>(parse_count(parts.back().substr(5), part("seed")));
    parts.pop_back();
  }
  const auto expect = [&](size_t count, const char* form) {
    if (parts.size() != count) throw fail(fmt::format("expected {}", form));
  };
  Random random(seed);
  std::function<Count()> draw;
  if (kind == "fixed") {
    expect(2, "fixed:L");
    const Count length = parse_count(parts[1], part("length"));
    if (length < 1) throw fail("the length must be at least 1");
    draw = [length] { return length; };
  } else if (kind == "uniform") {
    expect(2, "uniform:A-B");
    const auto range = split(parts[1], '-');
    if (range.size() != 2) throw fail("expected uniform:A-B");
    const Count lo = parse_count(range[0], part("lower bound"));
    const Count hi = parse_count(range[1], part("upper bound"));
    if (lo < 1 || hi < lo) throw fail("needs 1 <= A <= B");
    refuse_seed_if(lo == hi, "a range of one length");
    draw = [&random, lo, hi] { return lo + static_cast<Count>(random.next() % static_cast<std::uint64_t>(hi - lo + 1)); };
  } else if (kind == "lognormal") {
    expect(3, "lognormal:MEAN:SIGMA");
    const double mean = static_cast<double>(parse_count(parts[1], part("mean")));
    const double sigma = parse_number(parts[2], part("sigma"));
    if (mean < 1 || sigma < 0 || sigma > 5) throw fail("needs MEAN >= 1 and 0 <= SIGMA <= 5");
    refuse_seed_if(sigma == 0, "SIGMA 0");
    draw = [&random, mean, sigma] { return lognormal_draw(random, mean, sigma); };
  } else if (kind == "longtail") {
    expect(4, "longtail:SHORT:LONG:P");
    const double short_mean = static_cast<double>(parse_count(parts[1], part("short mean")));
    const double long_mean = static_cast<double>(parse_count(parts[2], part("long mean")));
    const double p = parse_number(parts[3], part("probability"));
    if (short_mean < 1 || long_mean < 1 || p < 0 || p > 1) {
      throw fail("needs SHORT, LONG >= 1 and 0 <= P <= 1");
    }
    draw = [&random, short_mean, long_mean, p] {
      return lognormal_draw(random, random.uniform() < p ? long_mean : short_mean, 1.0);
    };
  } else {
    throw fail("unknown distribution, expected " + expected_list(kDistributionSyntaxes, true));
  }
  std::vector<Count> lengths;
  for (Count left = seq_len; left > 0;) {
    const Count length = std::min(left, draw());  // the last document is cut at the sequence's end
    if (static_cast<Count>(lengths.size()) == kMostDocuments) {
      throw fail(fmt::format("draws more than {} documents over {} tokens, the most a mask holds; give longer documents",
                             kMostDocuments, seq_len));
    }
    lengths.push_back(length);
    left -= length;
  }
  return lengths;
}

}  // namespace stripesim::model
