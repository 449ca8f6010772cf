#include "stripesim/model/work/layout_spec.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <numeric>
#include <stdexcept>

#include "stripesim/model/io/input_error.hpp"
#include "stripesim/model/io/json_fields.hpp"
#include "stripesim/model/io/json_file.hpp"
#include "stripesim/model/io/name_match.hpp"
#include "stripesim/model/io/size_parse.hpp"
#include "stripesim/model/io/spec_syntax.hpp"
#include "stripesim/model/work/document_layouts.hpp"
#include "stripesim/model/work/ptrr_layout.hpp"

namespace stripesim::model {

std::vector<std::string> split_list(std::string_view text, const InputName& what) {
  std::vector<std::string> items;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    const std::string_view item = text.substr(start, comma == std::string_view::npos ? text.npos : comma - start);
    if (item.empty()) throw what.error(text, "empty item in a comma-separated list", Shown::quoted);
    items.emplace_back(item);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return items;
}

std::vector<std::string> split_distinct_list(std::string_view text, const InputName& what) {
  std::vector<std::string> items = split_list(text, what);
  for (size_t i = 1; i < items.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (layout_identity(items[i]) == layout_identity(items[j])) throw what.error(items[i], "given twice in the list", Shown::quoted);
    }
  }
  return items;
}

std::string layout_file(std::string_view spec) {
  constexpr std::string_view kPermutation = "permutation:";
  if (spec.size() <= kPermutation.size() || lowercase(spec.substr(0, kPermutation.size())) != kPermutation) return "";
  return std::string(spec.substr(kPermutation.size()));
}

std::string layout_identity(std::string_view spec) {
  const std::string file = layout_file(spec);
  if (!file.empty()) return "permutation:" + file_identity(file).string();
  // A size however written is one layout (ptrr:1k, ptrr:1024); what it is checked for later.
  // (Lists of other names, masks among them, come here too: theirs are compared as written.)
  const size_t colon = spec.find(':');
  const std::optional<LayoutKind> kind = layout_kind_of(spec);
  if (colon != spec.npos && (kind == LayoutKind::block_striped || kind == LayoutKind::ptrr || kind == LayoutKind::balanced)) {
    try {
      return fmt::format("{}:{}", lowercase(spec.substr(0, colon)), parse_count(spec.substr(colon + 1), InputName(Input::layouts, "size")));
    } catch (const InputError&) {
    }
  }
  return lowercase(spec);
}

std::string layout_identity_at(std::string_view spec, const LayoutPoint& point) {
  const bool default_ptrr = layout_kind_of(spec) == LayoutKind::ptrr && spec.find(':') == spec.npos;
  return default_ptrr ? fmt::format("ptrr:{}", ptrr_default_block(point.tile, point.seq_len, point.devices)) : layout_identity(spec);
}

void require_layouts_apart_at(const std::vector<std::string>& specs, const LayoutPoint& point) {
  std::vector<std::string> identities;
  for (const std::string& spec : specs) identities.push_back(layout_identity_at(spec, point));
  for (size_t i = 0; i < specs.size(); ++i) {
    const auto first = std::find(identities.begin(), identities.begin() + static_cast<std::ptrdiff_t>(i), identities[i]);
    if (first == identities.begin() + static_cast<std::ptrdiff_t>(i)) continue;
    throw InputError(Input::layouts, specs[i],
                     fmt::format("is {} at the {} tile and {} tokens a device, as '{}' is (its row would print twice under one name)",
                                 identities[i], point.tile.to_string(), point.devices > 0 ? point.seq_len / point.devices : point.seq_len,
                                 specs[static_cast<size_t>(first - identities.begin())]),
                     Shown::quoted);
  }
}

namespace {

// What may follow a layout's name after a ':'.
enum class Argument {
  none,      // "striped"
  optional,  // "ptrr" or "ptrr:BLOCK"
  required,  // "block-striped:S" (an empty S is the number's error, not an unknown layout)
  file,      // "permutation:FILE", FILE not empty
};

struct LayoutKindName {
  std::string_view name;
  LayoutKind kind;
  Argument argument;
};

// Every layout kind by the name its specs start with, in kLayoutSyntaxes' order (checked below).
constexpr LayoutKindName kLayoutKinds[] = {
    {"contiguous", LayoutKind::contiguous, Argument::none},
    {"striped", LayoutKind::striped, Argument::none},
    {"zigzag", LayoutKind::zigzag, Argument::none},
    {"block-striped", LayoutKind::block_striped, Argument::required},
    {"permutation", LayoutKind::permutation, Argument::file},
    {"doc-zigzag", LayoutKind::doc_zigzag, Argument::none},
    {"doc-striped", LayoutKind::doc_striped, Argument::none},
    {"ptrr", LayoutKind::ptrr, Argument::optional},
    {"balanced", LayoutKind::balanced, Argument::optional},
};

constexpr bool names_match_the_syntaxes() {
  if (std::size(kLayoutKinds) != std::size(kLayoutSyntaxes)) return false;
  for (size_t i = 0; i < std::size(kLayoutKinds); ++i) {
    if (kLayoutKinds[i].name != kLayoutSyntaxes[i].name) return false;
  }
  return true;
}
static_assert(names_match_the_syntaxes(), "every layout syntax needs its kind here, in the same order");

}  // namespace

std::optional<LayoutKind> layout_kind_of(std::string_view spec) {
  const size_t colon = spec.find(':');
  const std::string head = lowercase(spec.substr(0, colon));
  const bool argument = colon != std::string_view::npos;
  for (const LayoutKindName& each : kLayoutKinds) {
    if (head != each.name) continue;
    switch (each.argument) {
      case Argument::none: return argument ? std::nullopt : std::optional(each.kind);
      case Argument::optional: return each.kind;
      case Argument::required: return argument ? std::optional(each.kind) : std::nullopt;
      case Argument::file: return layout_file(spec).empty() ? std::nullopt : std::optional(each.kind);
    }
  }
  return std::nullopt;
}

bool same_shape_at_every_size(LayoutKind kind) {
  switch (kind) {
    case LayoutKind::contiguous:
    case LayoutKind::striped:
    case LayoutKind::zigzag:
    case LayoutKind::block_striped: return true;
    case LayoutKind::permutation:  // one sequence length, as its file lists it
    case LayoutKind::doc_zigzag:   // computed from the documents, the mask or the tile
    case LayoutKind::doc_striped:
    case LayoutKind::ptrr:
    case LayoutKind::balanced: return false;
  }
  return false;
}

LayoutPlan plan_layout(std::string_view typed, Count seq_len, Count devices, const LayoutContext& context) {
  // The layout's name is matched case aside ("Zigzag"); what follows a ':' (a file) is kept.
  const size_t colon = typed.find(':');
  const std::string normalized = lowercase(typed.substr(0, colon)) + std::string(colon == typed.npos ? "" : typed.substr(colon));
  const std::string_view spec = normalized;
  const std::string_view argument = colon == typed.npos ? std::string_view() : spec.substr(colon + 1);
  const std::optional<LayoutKind> kind = layout_kind_of(spec);
  if (!kind) {
    // A known layout with an argument it does not take, or without the one it needs.
    const std::string head = lowercase(typed.substr(0, colon));
    for (size_t i = 0; i < std::size(kLayoutKinds); ++i) {
      if (head != kLayoutKinds[i].name) continue;
      const bool takes_none = kLayoutKinds[i].argument == Argument::none;
      throw InputError(Input::layouts, std::string(typed),
                       fmt::format("expected {} ({})", kLayoutSyntaxes[i].syntax,
                                   takes_none ? "it takes no argument" : "with its argument"),
                       Shown::quoted);
    }
    std::vector<std::string> names;
    for (const SpecSyntax& each : kLayoutSyntaxes) names.emplace_back(each.name);
    throw InputError(Input::layouts, std::string(typed),
                     fmt::format("unknown layout{}, expected {}", did_you_mean(typed.substr(0, colon), names),
                                 expected_list(kLayoutSyntaxes)),
                     Shown::quoted);
  }
  LayoutPlan plan;
  switch (*kind) {
    case LayoutKind::contiguous: plan.built_ = Layout::contiguous(seq_len, devices); return plan;
    case LayoutKind::striped: plan.built_ = Layout::striped(seq_len, devices); return plan;
    case LayoutKind::zigzag: plan.built_ = Layout::zigzag(seq_len, devices); return plan;
    case LayoutKind::block_striped: {
      const Count stripe = parse_count(argument, InputName(Input::layouts, "block-striped:S stripe width"));
      plan.built_ = Layout::block_striped(seq_len, devices, stripe);
      return plan;
    }
    case LayoutKind::permutation: plan.built_ = load_permutation_file(layout_file(spec), seq_len, devices); return plan;
    case LayoutKind::doc_zigzag:
    case LayoutKind::doc_striped:
    case LayoutKind::ptrr:
    case LayoutKind::balanced: break;
  }
  require_devices(devices);
  const Mask& mask = plan.mask_.emplace(context.mask != nullptr ? *context.mask : Mask::causal(seq_len));
  plan.devices_ = devices;
  plan.tile_ = context.tile;
  plan.tiling_ = context.tiling;
  plan.computed_ = *kind;
  switch (*kind) {
    case LayoutKind::doc_zigzag: check_doc_zigzag_layout(mask, devices); break;
    case LayoutKind::doc_striped: check_doc_striped_layout(mask, devices); break;
    case LayoutKind::ptrr:
      plan.size_ = colon != typed.npos ? parse_count(argument, InputName(Input::layouts, "ptrr:BLOCK block size"))
                                       : ptrr_default_block(context.tile, mask.seq_len(), devices);
      check_ptrr_layout(mask, devices, plan.size_);
      // A block given longer than a device's share deals nothing: each device keeps a contiguous run.
      if (colon != typed.npos && devices > 0 && plan.size_ > mask.seq_len() / devices) {
        throw InputError(Input::layouts, std::string(typed),
                         fmt::format("the block must be at most n/N = {} (a device's share)", mask.seq_len() / devices));
      }
      break;
    case LayoutKind::balanced:
      if (colon != typed.npos) {
        plan.size_ = parse_count(argument, InputName(Input::layouts, "balanced:CHUNK chunk size"));
        if (plan.size_ < 1) throw InputError(Input::layouts, std::string(spec), "the chunk must be at least 1 token", Shown::quoted);
      }
      check_balanced_layout(mask, devices, plan.size_);
      break;
    case LayoutKind::contiguous:  // built above
    case LayoutKind::striped:
    case LayoutKind::zigzag:
    case LayoutKind::block_striped:
    case LayoutKind::permutation: break;
  }
  return plan;
}

InputError for_every_layout(const IndivisibleLength& first, const std::vector<std::string>& specs, Count devices) {
  return for_every_layout(first, specs, std::vector<Count>{devices});
}

InputError for_every_layout(const IndivisibleLength& first, const std::vector<std::string>& specs, const std::vector<Count>& devices,
                            Count longest) {
  const Count seq_len = first.seq_len();
  Count multiple = first.divisor();
  // Each layout whose shape is the same at every length is tried at the nearest multiples found
  // so far, on every ring size; one that refuses a multiple adds its own, until every one takes
  // both (a few rounds: each adds a layout's multiple, or none).
  for (size_t round = 0; round <= specs.size() * devices.size(); ++round) {
    const Count below = seq_len - seq_len % multiple;
    const Count grown = multiple;
    for (const std::string& spec : specs) {
      const std::optional<LayoutKind> kind = layout_kind_of(spec);
      if (kind == LayoutKind::permutation) return first;
      if (!kind || !same_shape_at_every_size(*kind)) continue;
      for (const Count n : devices) {
        for (const Count length : {below, below + multiple}) {
          if (length < 1 || length > longest) continue;
          try {
            (void)plan_layout(spec, length, n);
          } catch (const IndivisibleLength& e) {
            multiple = std::lcm(multiple, e.divisor());
            if (multiple > longest) return first;  // no length the command takes suits them all
          } catch (const InputError&) {
            return first;  // refused for another reason there (a stripe wider than a device's share)
          }
        }
      }
    }
    if (multiple == grown) break;
  }
  if (multiple == first.divisor() && longest == kMaxSeqLen) return first;
  return InputError(Input::seq_len, first.value(),
                    fmt::format("{}; {}", first.need(), nearest_multiples(seq_len, multiple, multiple != first.divisor(), longest)));
}

Layout parse_layout(std::string_view spec, Count seq_len, Count devices, const LayoutContext& context) {
  return plan_layout(spec, seq_len, devices, context).build();
}

Layout LayoutPlan::build(unsigned threads) const& {
  if (built_) return *built_;
  switch (computed_) {
    case LayoutKind::doc_zigzag: return doc_zigzag_layout(*mask_, devices_);
    case LayoutKind::doc_striped: return doc_striped_layout(*mask_, devices_);
    case LayoutKind::ptrr: return ptrr_layout(*mask_, devices_, size_);
    case LayoutKind::balanced: return balanced_layout(*mask_, devices_, tile_, size_, tiling_, threads).layout;
    case LayoutKind::contiguous:  // held built
    case LayoutKind::striped:
    case LayoutKind::zigzag:
    case LayoutKind::block_striped:
    case LayoutKind::permutation: break;
  }
  throw std::logic_error("LayoutPlan: a structured layout that was not built");
}

Layout LayoutPlan::build(unsigned threads) && {
  if (built_) return std::move(*built_);
  return build(threads);
}

namespace {

// A header's list of JSON integers of at least `least` (document lengths, their padding).
void check_integer_list(const JsonFields& fields, const std::string& key, Count least) {
  const auto& list = fields.raw(key);
  if (!list.is_array()) throw InputError(fmt::format("{}: expected an array of integers, got {}", fields.where(key), json_excerpt(list)));
  for (size_t i = 0; i < list.size(); ++i) {
    if (!list[i].is_number_integer() || json_count(list[i], fields.where_item(key, i)) < least) {
      throw InputError(fmt::format("{}: expected an integer of at least {}, got {}", fields.where_item(key, i), least, json_excerpt(list[i])));
    }
  }
}

// What an exported layout says it is, against the sequence it is loaded for: "seq_len 1008"
// read under --seq-len 1000 without --pad-documents names the mismatch instead of a position
// out of range.
void check_permutation_header(const JsonFields& fields, Count seq_len, Count devices) {
  if (fields.has("schema")) fields.require_schema(kLayoutSchema);
  if (fields.has("seq_len") && fields.positive_integer("seq_len") != seq_len) {
    throw InputError(fmt::format(
        "{}: the layout covers {} tokens but the sequence has {} (give the --seq-len, --mask and --pad-documents "
        "it was exported with)",
        fields.where("seq_len"), fields.positive_integer("seq_len"), seq_len));
  }
  if (fields.has("devices") && fields.positive_integer("devices") != devices) {
    throw InputError(fmt::format("{}: the layout is for {} devices but the ring has N = {}", fields.where("devices"),
                                 fields.positive_integer("devices"), devices));
  }
  // How it was exported, kept for readers: checked for its form, not against this run (a layout
  // may be studied under another tile or mask), so that a damaged header is not taken for one.
  (void)fields.string_or("description", "");
  (void)fields.string_or("layout", "");
  if (fields.has("tiling")) (void)parse_tiling(fields.string("tiling"), fields.where("tiling"));
  if (fields.has("padding")) {
    const JsonFields padding(fields.object("padding"), fields.where("padding"));
    padding.allow_only({"unpadded_seq_len", "tokens", "document_lengths"});
    (void)padding.positive_integer("unpadded_seq_len");
    (void)padding.non_negative_count("tokens");
    check_integer_list(padding, "document_lengths", 1);
  }
  if (fields.has("tile")) {
    const JsonFields tile(fields.object("tile"), fields.where("tile"));
    tile.allow_only({"query", "key"});
    (void)tile.positive_integer("query"), (void)tile.positive_integer("key");
  }
  if (fields.has("mask")) {
    const JsonFields mask(fields.object("mask"), fields.where("mask"));
    mask.allow_only({"spec", "kind", "window", "prefix", "document_lengths", "document_padding"});
    (void)mask.string("spec");
    const std::string kind = mask.string("kind");
    constexpr MaskKind kKinds[] = {MaskKind::causal, MaskKind::bidirectional, MaskKind::window, MaskKind::prefix, MaskKind::documents};
    if (std::ranges::none_of(kKinds, [&](MaskKind k) { return kind == mask_kind_name(k); })) {
      throw InputError(fmt::format("{}: '{}' is no mask kind (causal, bidirectional, window, prefix or documents)", mask.where("kind"), kind));
    }
    for (const char* size : {"window", "prefix"}) {
      if (mask.has(size)) (void)mask.positive_integer(size);
    }
    if (mask.has("document_lengths")) check_integer_list(mask, "document_lengths", 1);
    if (mask.has("document_padding")) check_integer_list(mask, "document_padding", 0);
  }
  if (fields.has("block_size") && devices > 0 && fields.positive_integer("block_size") != seq_len / devices) {
    throw InputError(fmt::format("{}: {} tokens per device, but {} tokens over {} devices are {} each",
                                 fields.where("block_size"), fields.positive_integer("block_size"), seq_len, devices,
                                 seq_len / devices));
  }
}

}  // namespace

namespace {

// A permutation file's per-device arrays: its "blocks", or the document itself where it is a bare
// array of arrays.
const nlohmann::json& permutation_blocks(const nlohmann::json& doc, const std::string& label) {
  const nlohmann::json* blocks = &doc;
  if (doc.is_object()) {
    if (!doc.contains("blocks")) throw InputError(fmt::format("{}: expected a \"blocks\" array of per-device arrays", label));
    blocks = &doc.at("blocks");
  }
  if (!blocks->is_array()) throw InputError(fmt::format("{}: expected a \"blocks\" array of per-device arrays", label));
  return *blocks;
}

}  // namespace

namespace {

// Runs `read` on the permutation file `label` names; its errors ("label: detail" or "label field
// ...: detail") raised again as the layout's, so that a list that named the file (--layouts, an
// experiment's "layouts") is blamed at its item, as for any other layout.
template <typename Read>
auto as_layout_errors(const std::string& label, Read&& read) {
  try {
    return read();
  } catch (const InputError& e) {
    const std::string_view message = e.what();
    if (e.input() || !message.starts_with(label) || message.size() < label.size() + 2) throw;
    const std::string_view rest = message.substr(label.size());
    if (!rest.starts_with(": ") && !rest.starts_with(" ")) throw;
    throw InputError(Input::layouts, label, std::string(rest.substr(rest.starts_with(": ") ? 2 : 1)));
  }
}

Layout read_permutation_file(const std::string& path, const std::string& label, Count seq_len, Count devices);

}  // namespace

Count permutation_file_devices(const std::string& path) {
  const std::string label = fmt::format("permutation:{}", path);
  return as_layout_errors(label, [&] { return static_cast<Count>(permutation_blocks(read_json_file(path, label), label).size()); });
}

Layout load_permutation_file(const std::string& path, Count seq_len, Count devices) {
  const std::string label = fmt::format("permutation:{}", path);
  return as_layout_errors(label, [&] { return read_permutation_file(path, label, seq_len, devices); });
}

namespace {

Layout read_permutation_file(const std::string& path, const std::string& label, Count seq_len, Count devices) {
  const nlohmann::json doc = read_json_file(path, label);
  const nlohmann::json* blocks = &permutation_blocks(doc, label);
  if (doc.is_object()) {
    const JsonFields fields(doc, label);
    fields.allow_only({"description", "schema", "layout", "seq_len", "devices", "block_size", "tile", "tiling", "mask",
                       "padding", "blocks"});
    check_permutation_header(fields, seq_len, devices);
  }
  if (static_cast<Count>(blocks->size()) != devices) {
    throw InputError(fmt::format("{}: holds {} device blocks but the ring has N = {}", label, blocks->size(), devices));
  }
  std::vector<std::vector<Position>> positions;
  positions.reserve(blocks->size());
  for (size_t d = 0; d < blocks->size(); ++d) {
    const auto& block = (*blocks)[d];
    if (!block.is_array()) throw InputError(fmt::format("{}: block {} is not an array of positions", label, d));
    auto& out = positions.emplace_back();
    out.reserve(block.size());
    for (size_t l = 0; l < block.size(); ++l) {
      const auto& p = block[l];
      if (!p.is_number_integer()) {
        // Past 2^64 the JSON reader holds an integer as a double: named as too large, not as a fraction.
        const bool too_large = p.is_number_float() && p.get<double>() >= 0x1p63;
        throw InputError(fmt::format("{}: (device {}, local {}) holds {}, {}expected an integer position in [0, {})", label, d, l,
                                     json_excerpt(p), too_large ? "more than 2^63 - 1: " : "", seq_len));
      }
      out.push_back(json_count(p, fmt::format("{}: (device {}, local {})", label, d, l)));
    }
  }
  return Layout::permutation(positions, seq_len, path);
}

}  // namespace

}  // namespace stripesim::model
