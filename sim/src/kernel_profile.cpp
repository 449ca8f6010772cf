#include "stripesim/sim/kernel_profile.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>

#include "stripesim/model/flops/attention_heads.hpp"
#include "stripesim/model/io/config_catalog.hpp"
#include "stripesim/model/io/input_error.hpp"
#include "stripesim/model/io/json_fields.hpp"
#include "stripesim/model/io/json_file.hpp"
#include "stripesim/model/io/name_match.hpp"
#include "stripesim/model/io/schemas.hpp"
#include "stripesim/sim/simulation.hpp"

namespace stripesim::sim {

using model::InputError;

namespace {

// `head_dim`: the profile's, where its costs were measured.
PassCosts pass_costs_from_json(const model::JsonFields& parent, const std::string& key, Count head_dim) {
  const model::JsonFields f(parent.raw(key), parent.where(key));
  f.allow_only({"launch_us", "block_us", "full_tile_us", "partial_tile_us", "trimmed_factor", "score_head_dims",
                 "score_head_dims_up_to"});
  PassCosts c;
  c.launch_us = f.non_negative_number_or("launch_us", 0.0);
  c.block_us = f.non_negative_number_or("block_us", 0.0);
  c.full_tile_us = f.positive_number("full_tile_us");
  c.partial_tile_us = f.positive_number("partial_tile_us");
  c.trimmed_factor = f.has("trimmed_factor") ? f.positive_number("trimmed_factor") : 1.0;
  c.score_head_dims = f.non_negative_number_or("score_head_dims", 0.0);
  if (f.has("score_head_dims_up_to")) {
    if (c.score_head_dims == 0) throw InputError(fmt::format("{}: needs a score_head_dims above 0", f.where("score_head_dims_up_to")));
    c.score_head_dims_up_to = f.positive_integer("score_head_dims_up_to", model::kMaxHeadDim);
    // The share was measured at least as far as the profile's own head size, whose costs these are.
    if (*c.score_head_dims_up_to < head_dim) {
      throw InputError(fmt::format("{}: {} is below the profile's head_dim {}", f.where("score_head_dims_up_to"),
                                   *c.score_head_dims_up_to, head_dim));
    }
  }
  // A partial tile does the full tile's work and evaluates the mask on top of it.
  if (c.partial_tile_us < c.full_tile_us) {
    throw InputError(fmt::format("{}: partial_tile_us {} must be at least full_tile_us {}", parent.where(key),
                                 c.partial_tile_us, c.full_tile_us));
  }
  return c;
}

// The trimmed factor is written for kernels that trim: it means nothing for the others; the
// score's head dims when there are any.
nlohmann::ordered_json to_json(const PassCosts& c, bool trims) {
  nlohmann::ordered_json doc = {{"launch_us", c.launch_us},
                                {"block_us", c.block_us},
                                {"full_tile_us", c.full_tile_us},
                                {"partial_tile_us", c.partial_tile_us}};
  if (trims) doc["trimmed_factor"] = c.trimmed_factor;
  if (c.score_head_dims > 0) doc["score_head_dims"] = c.score_head_dims;
  if (c.score_head_dims_up_to) doc["score_head_dims_up_to"] = *c.score_head_dims_up_to;
  return doc;
}

BlockOrder block_order_from_json(const model::JsonFields& f) {
  return parse_block_order(f.string_or("block_order", "launch"), f.where("block_order"));
}

// A lone block runs no slower than one on a full SM, and no faster than the whole SM's share of
// blocks_per_sm blocks.
double lone_block_speedup_from_json(const model::JsonFields& f, Count blocks_per_sm) {
  if (!f.has("lone_block_speedup")) return 1.0;
  const double speedup = f.positive_number("lone_block_speedup");
  if (speedup < 1 || speedup > static_cast<double>(blocks_per_sm)) {
    throw InputError(fmt::format("{}: must be between 1 and blocks_per_sm ({}), got {}", f.where("lone_block_speedup"),
                                 blocks_per_sm, speedup));
  }
  return speedup;
}

// SMs that share their throughput need SMs: a profile that runs fixed slots has none.
void check_shares_with_slots(const model::JsonFields& f, double lone_block_speedup, const std::optional<Count>& slots) {
  if (slots && lone_block_speedup != 1) {
    throw InputError(fmt::format("{}: a profile with \"slots\" runs fixed slots, not SMs that share their throughput",
                                 f.where("lone_block_speedup")));
  }
}

// How the SM's blocks speed up as it empties; said only of SMs that do (a lone block faster
// than a slot), where it means something.
SmSharing sm_sharing_from_json(const model::JsonFields& f, double lone_block_speedup) {
  if (!f.has("sm_sharing")) return SmSharing::throughput;
  const std::string sharing = f.string("sm_sharing");
  if (lone_block_speedup == 1) {
    throw InputError(fmt::format("{}: needs lone_block_speedup above 1 (without it every block runs as a fixed slot)",
                                 f.where("sm_sharing")));
  }
  if (sharing == "throughput") return SmSharing::throughput;
  if (sharing == "lone_block") return SmSharing::lone_block;
  throw InputError(fmt::format("{}: expected \"throughput\" or \"lone_block\", got \"{}\"", f.where("sm_sharing"), sharing));
}

// A placement's fields in `f` (blocks_per_sm, block_order, lone_block_speedup, sm_sharing), each
// with its default; `slots`: the profile's, when it runs fixed slots.
BlockPlacement placement_from_json(const model::JsonFields& f, const std::optional<Count>& slots) {
  BlockPlacement p;
  p.blocks_per_sm = f.positive_integer_or("blocks_per_sm", 1, model::kMaxBlocksPerSm);
  p.lone_block_speedup = lone_block_speedup_from_json(f, p.blocks_per_sm);
  check_shares_with_slots(f, p.lone_block_speedup, slots);
  // Fixed slots stand for every SM's blocks together: an SM's count beside them would be ignored.
  if (slots && p.blocks_per_sm != 1) {
    throw InputError(fmt::format("{}: a profile with \"slots\" runs {} fixed slot{}, not blocks on SMs: must be 1 or left out, "
                                 "got {}",
                                 f.where("blocks_per_sm"), *slots, *slots == 1 ? "" : "s", p.blocks_per_sm));
  }
  p.sharing = sm_sharing_from_json(f, p.lone_block_speedup);
  p.order = block_order_from_json(f);
  return p;
}

std::optional<BlockPlacement> backward_placement_from_json(const model::JsonFields& parent, const std::optional<Count>& slots) {
  if (!parent.has("backward_placement")) return std::nullopt;
  const model::JsonFields f(parent.raw("backward_placement"), parent.where("backward_placement"));
  f.allow_only({"blocks_per_sm", "block_order", "lone_block_speedup", "sm_sharing"});
  return placement_from_json(f, slots);
}

// "backward_blocks" and, with the two-set grid only, "backward_dq_share" (a share strictly
// between 0 and 1: either set of blocks does some of every tile's work).
void backward_blocks_from_json(const model::JsonFields& f, KernelProfile& k) {
  if (f.has("backward_blocks")) {
    const std::string text = f.string("backward_blocks");
    const auto known = {BackwardBlocks::query_tiles, BackwardBlocks::key_tiles, BackwardBlocks::key_tiles_then_query_tiles};
    const auto it = std::find_if(known.begin(), known.end(), [&](BackwardBlocks b) { return text == backward_blocks_name(b); });
    if (it == known.end()) {
      throw InputError(fmt::format("{}: expected \"query_tiles\", \"key_tiles\" or \"key_tiles_then_query_tiles\", got \"{}\"",
                                   f.where("backward_blocks"), text));
    }
    k.backward_blocks = *it;
  }
  if (!f.has("backward_dq_share")) return;
  if (k.backward_blocks != BackwardBlocks::key_tiles_then_query_tiles) {
    throw InputError(fmt::format("{}: applies only with \"backward_blocks\": \"key_tiles_then_query_tiles\"", f.where("backward_dq_share")));
  }
  k.backward_dq_share = f.positive_number("backward_dq_share");
  if (k.backward_dq_share >= 1) {
    throw InputError(fmt::format("{}: must be between 0 and 1 (the dQ blocks' share of a tile), got {}", f.where("backward_dq_share"),
                                 k.backward_dq_share));
  }
}

// The fields of SMs that share, written only where they do: profiles with fixed slots read as
// they always have.
void write_sharing(nlohmann::ordered_json& doc, const BlockPlacement& p) {
  if (p.lone_block_speedup == 1) return;
  doc["lone_block_speedup"] = p.lone_block_speedup;
  if (p.sharing != SmSharing::throughput) doc["sm_sharing"] = sm_sharing_name(p.sharing);
}

nlohmann::ordered_json to_json(const BlockPlacement& p) {
  nlohmann::ordered_json doc = {{"blocks_per_sm", p.blocks_per_sm}, {"block_order", block_order_name(p.order)}};
  write_sharing(doc, p);
  return doc;
}

// A trimmed factor means something only to a kernel that trims.
void check_trimmed_factors(const model::JsonFields& f, const PassCosts& forward, const PassCosts& backward, bool trims) {
  for (const auto& [key, costs] : {std::pair{"forward", &forward}, std::pair{"backward", &backward}}) {
    if (!trims && costs->trimmed_factor != 1.0) {
      throw InputError(fmt::format("{}: trimmed_factor applies only to a kernel with \"trims_below_diagonal\": true",
                                   f.where(key)));
    }
  }
}

}  // namespace

KernelProfile at_tile(KernelProfile kernel, model::TileShape tile) {
  const auto it = std::find_if(kernel.other_tiles.begin(), kernel.other_tiles.end(),
                               [&](const TileVariant& v) { return v.tile == tile; });
  if (it == kernel.other_tiles.end()) return kernel;
  const TileVariant variant = *it;
  kernel.tile = variant.tile;
  kernel.placement = variant.placement;
  kernel.backward_placement = variant.backward_placement;
  kernel.forward = variant.forward;
  kernel.backward = variant.backward;
  return kernel;
}

TileVariant main_variant(const KernelProfile& kernel) {
  return {kernel.tile, kernel.placement, kernel.forward, kernel.backward, kernel.backward_placement};
}

bool partial_tile_cost_identified(const KernelProfile& kernel) {
  if (!kernel.fit.is_object() || !kernel.fit.contains("partial_tiles") || !kernel.fit.at("partial_tiles").is_string()) return true;
  return !kernel.fit.at("partial_tiles").get<std::string>().starts_with(kPartialTilesNotIdentified);
}

BlockPlacement backward_placement(const KernelProfile& kernel) { return kernel.backward_placement.value_or(kernel.placement); }

double BlockPlacement::block_rate(Count k) const {
  if (sharing == SmSharing::lone_block) return k == 1 ? lone_block_speedup : 1.0;
  return std::min(lone_block_speedup, static_cast<double>(blocks_per_sm) / static_cast<double>(k));
}

const char* sm_sharing_name(SmSharing sharing) {
  switch (sharing) {
    case SmSharing::throughput: return "throughput";
    case SmSharing::lone_block: return "lone_block";
  }
  return "throughput";
}

const char* backward_blocks_name(BackwardBlocks blocks) {
  switch (blocks) {
    case BackwardBlocks::query_tiles: return "query_tiles";
    case BackwardBlocks::key_tiles: return "key_tiles";
    case BackwardBlocks::key_tiles_then_query_tiles: return "key_tiles_then_query_tiles";
  }
  return "query_tiles";
}

BlockOrder parse_block_order(std::string_view text, std::string_view what) {
  if (text == "launch") return BlockOrder::launch;
  if (text == "longest_first") return BlockOrder::longest_first;
  throw InputError(fmt::format("{}: expected \"launch\" or \"longest_first\", got \"{}\"", what, text));
}

const char* block_order_name(BlockOrder order) {
  switch (order) {
    case BlockOrder::launch: return "launch";
    case BlockOrder::longest_first: return "longest_first";
  }
  return "launch";
}

KernelProfile kernel_profile_from_json(const nlohmann::json& doc, const std::string& label) {
  const model::JsonFields f(doc, label);
  f.allow_only({"schema", "name", "hardware", "description", "tile", "tiling", "blocks_per_sm", "lone_block_speedup", "sm_sharing", "slots",
                "block_order", "backward_placement", "backward_block_keys", "backward_blocks", "backward_dq_share",
                "empty_calls_launch", "empty_query_tiles_launch", "trims_below_diagonal", "dtype", "head_dim", "max_head_dim", "forward", "backward", "other_tiles", "merge", "calibrated", "sources",
                "fit"});
  if (f.has("schema")) f.require_schema(model::kKernelProfileSchema);
  KernelProfile k;
  k.name = f.non_empty_string("name");
  k.hardware = f.non_empty_string("hardware");
  k.description = f.string_or("description", "");
  k.tile = f.parsed("tile", model::parse_tile_shape);  // named at the file's field, not as --tile
  if (f.has("tiling")) k.tiling = model::parse_tiling(f.string("tiling"), f.where("tiling"));
  if (f.has("slots")) k.slots = f.positive_integer("slots", model::kMaxSms * model::kMaxBlocksPerSm);
  k.placement = placement_from_json(f, k.slots);
  k.backward_placement = backward_placement_from_json(f, k.slots);
  if (f.has("backward_block_keys")) k.backward_block_keys = f.positive_integer("backward_block_keys", Count{1} << 20);
  backward_blocks_from_json(f, k);
  k.empty_calls_launch = f.boolean_or("empty_calls_launch", false);
  k.empty_query_tiles_launch = f.boolean_or("empty_query_tiles_launch", false);
  k.trims_below_diagonal = f.boolean_or("trims_below_diagonal", false);
  k.calibrated = f.boolean_or("calibrated", false);
  k.dtype = f.string_or("dtype", "bf16");
  if (f.has("dtype")) (void)f.parsed("dtype", dtype_bytes);  // refused here, named at the field
  // Bounded as --head-dim is: a head size no model has is a typing error.
  k.head_dim = f.positive_integer_or("head_dim", 128, model::kMaxHeadDim);
  if (f.has("max_head_dim")) {
    k.max_head_dim = f.positive_integer("max_head_dim", model::kMaxHeadDim);
    // Its costs were timed at head_dim: a kernel that cannot run that size was not timed at it.
    if (*k.max_head_dim < k.head_dim) {
      throw InputError(fmt::format("{}: {} is below the profile's head_dim {}, the size its costs were timed at",
                                   f.where("max_head_dim"), *k.max_head_dim, k.head_dim));
    }
  }
  k.forward = pass_costs_from_json(f, "forward", k.head_dim);
  k.backward = pass_costs_from_json(f, "backward", k.head_dim);
  check_trimmed_factors(f, k.forward, k.backward, k.trims_below_diagonal);
  if (f.has("other_tiles")) {
    const nlohmann::json& list = f.raw("other_tiles");
    if (!list.is_array()) throw InputError(fmt::format("{}: expected an array", f.where("other_tiles")));
    for (size_t i = 0; i < list.size(); ++i) {
      const model::JsonFields v(list[i], f.where_item("other_tiles", i));
      v.allow_only({"tile", "blocks_per_sm", "lone_block_speedup", "sm_sharing", "block_order", "backward_placement", "forward",
                    "backward"});
      TileVariant variant;
      variant.tile = v.parsed("tile", model::parse_tile_shape);
      const bool seen = variant.tile == k.tile || std::any_of(k.other_tiles.begin(), k.other_tiles.end(),
                                                              [&](const TileVariant& o) { return o.tile == variant.tile; });
      if (seen) {
        throw InputError(fmt::format("{}: tile {} appears twice (the main tile is {})", v.where("tile"),
                                     variant.tile.to_string(), k.tile.to_string()));
      }
      variant.placement = placement_from_json(v, k.slots);
      variant.backward_placement = backward_placement_from_json(v, k.slots);
      variant.forward = pass_costs_from_json(v, "forward", k.head_dim);
      variant.backward = pass_costs_from_json(v, "backward", k.head_dim);
      check_trimmed_factors(v, variant.forward, variant.backward, k.trims_below_diagonal);
      k.other_tiles.push_back(variant);
    }
  }
  if (f.has("merge")) {
    const model::JsonFields m(f.raw("merge"), f.where("merge"));
    m.allow_only({"forward_bytes_per_element", "backward_bytes_per_element", "forward_slice_bytes_per_element"});
    k.merge.forward_bytes_per_element = m.non_negative_number_or("forward_bytes_per_element", 0.0);
    k.merge.backward_bytes_per_element = m.non_negative_number_or("backward_bytes_per_element", 0.0);
    k.merge.forward_slice_bytes_per_element = m.non_negative_number_or("forward_slice_bytes_per_element", 0.0);
  }
  // Records for readers, kept as written; the fit's "partial_tiles" is also read (simulate's note).
  for (const char* record : {"sources", "fit"}) {
    if (f.has(record)) (void)f.object(record);
  }
  if (f.has("fit") && f.raw("fit").contains("partial_tiles") && !f.raw("fit").at("partial_tiles").is_string()) {
    throw model::InputError(fmt::format("{}: \"partial_tiles\" must be a string (what the timings identify)", f.where("fit")));
  }
  k.sources = f.has("sources") ? f.raw("sources") : nlohmann::json::object();
  k.fit = f.has("fit") ? f.raw("fit") : nlohmann::json::object();
  return k;
}

nlohmann::ordered_json to_json(const KernelProfile& k) {
  nlohmann::ordered_json doc = {{"schema", model::kKernelProfileSchema},
                                {"name", k.name},
                                {"hardware", k.hardware},
                                {"description", k.description},
                                {"tile", k.tile.to_string()},
                                {"tiling", model::tiling_name(k.tiling)},
                                {"blocks_per_sm", k.placement.blocks_per_sm},
                                {"block_order", block_order_name(k.placement.order)},
                                {"empty_calls_launch", k.empty_calls_launch},
                                {"empty_query_tiles_launch", k.empty_query_tiles_launch},
                                {"trims_below_diagonal", k.trims_below_diagonal},
                                {"dtype", k.dtype},
                                {"head_dim", k.head_dim}};
  if (k.max_head_dim) doc["max_head_dim"] = *k.max_head_dim;
  doc["forward"] = to_json(k.forward, k.trims_below_diagonal);
  doc["backward"] = to_json(k.backward, k.trims_below_diagonal);
  for (const TileVariant& v : k.other_tiles) {
    nlohmann::ordered_json variant = {{"tile", v.tile.to_string()},
                                      {"blocks_per_sm", v.placement.blocks_per_sm},
                                      {"block_order", block_order_name(v.placement.order)},
                                      {"forward", to_json(v.forward, k.trims_below_diagonal)},
                                      {"backward", to_json(v.backward, k.trims_below_diagonal)}};
    write_sharing(variant, v.placement);
    if (v.backward_placement) variant["backward_placement"] = to_json(*v.backward_placement);
    doc["other_tiles"].push_back(std::move(variant));
  }
  if (k.merge != OutputMerge{}) {
    doc["merge"] = {{"forward_bytes_per_element", k.merge.forward_bytes_per_element},
                    {"backward_bytes_per_element", k.merge.backward_bytes_per_element},
                    {"forward_slice_bytes_per_element", k.merge.forward_slice_bytes_per_element}};
  }
  doc["calibrated"] = k.calibrated;
  if (k.slots) doc["slots"] = *k.slots;
  write_sharing(doc, k.placement);
  if (k.backward_placement) doc["backward_placement"] = to_json(*k.backward_placement);
  if (k.backward_block_keys) doc["backward_block_keys"] = *k.backward_block_keys;
  // Written where it is not the default, so that the profiles of before read byte for byte.
  if (k.backward_blocks != BackwardBlocks::query_tiles) doc["backward_blocks"] = backward_blocks_name(k.backward_blocks);
  if (k.backward_blocks == BackwardBlocks::key_tiles_then_query_tiles) doc["backward_dq_share"] = k.backward_dq_share;
  if (!k.sources.empty()) doc["sources"] = k.sources;
  if (!k.fit.empty()) doc["fit"] = k.fit;
  return doc;
}

std::optional<model::HardwareProfile> hardware_named_by(const model::ConfigCatalog& catalog, const std::string& name,
                                                       const std::string& field) {
  try {
    return catalog.find_hardware(name);
  } catch (const model::InputError& e) {
    // Raised plain, so that no caller blames the flag or file field that named the profile.
    throw model::InputError(std::string(e.at(field).what()));
  }
}

std::vector<std::string> kernel_homes(const model::HardwareProfile& hardware, const model::ConfigCatalog& catalog) {
  std::vector<std::string> names;
  const auto add = [&](const std::string& name) {
    if (std::ranges::none_of(names, [&](const std::string& n) { return model::same_name(n, name); })) names.push_back(name);
  };
  model::HardwareProfile at = hardware;
  for (int depth = 0;; ++depth) {
    add(at.name);
    for (const std::string& alias : at.aliases) add(alias);
    // A chain back to a name already met (a loop) or longer than any real one ends here.
    if (at.kernels_from.empty() || depth == 8 ||
        std::ranges::any_of(names, [&](const std::string& n) { return model::same_name(n, at.kernels_from); })) {
      break;
    }
    const std::string next = at.kernels_from;
    add(next);
    // A folder of kernels without a hardware profile of that name: the name is all there is.
    std::optional<model::HardwareProfile> found =
        hardware_named_by(catalog, next, fmt::format("{} field \"kernels_from\"", at.label()));
    if (!found) break;
    at = std::move(*found);
  }
  return names;
}

KernelProfile load_kernel_profile(const std::string& spec, const model::ConfigCatalog& catalog,
                                  const model::HardwareProfile& hardware) {
  // A file names itself: no folder to look it up in, so no homes to take.
  if (model::is_config_path(spec.empty() ? hardware.default_kernel : spec)) return load_kernel_profile(spec, catalog, hardware, {});
  return load_kernel_profile(spec, catalog, hardware, kernel_homes(hardware, catalog));
}

KernelProfile load_kernel_profile(const std::string& spec, const model::ConfigCatalog& catalog,
                                  const model::HardwareProfile& hardware, const std::vector<std::string>& homes) {
  const std::string& config_dir = catalog.root();
  const std::string wanted = spec.empty() ? hardware.default_kernel : spec;
  if (wanted.empty()) {
    throw InputError(fmt::format("--kernel: {} names no default kernel; give --kernel NAME or a JSON file", hardware.label()));
  }
  if (model::is_config_path(wanted)) {
    return kernel_profile_from_json(model::read_json_file(wanted, "--kernel " + wanted, model::FileUse::kernel_profile), "--kernel " + wanted);
  }
  namespace fs = std::filesystem;
  std::vector<std::string> known;
  for (const std::string& folder : homes) {
    const fs::path dir = fs::path(config_dir) / "kernels" / folder;
    // Case aside, as hardware and models are found ("FA2", "Sdpa").
    if (const auto file = model::find_json_by_stem(dir, wanted, known)) {
      return kernel_profile_from_json(model::read_json_file(file->string(), file->string(), model::FileUse::kernel_profile), file->string());
    }
  }
  // A kernels_from that leads to no folder at all (a misspelt one) is why no kernel was found.
  const bool no_folder = std::ranges::none_of(homes, [&](const std::string& home) {
    return fs::is_directory(fs::path(config_dir) / "kernels" / home);
  });
  const std::string unfound_home = !hardware.kernels_from.empty() && no_folder
                                       ? fmt::format(", and its \"kernels_from\" = '{}' leads to no folder of kernels", hardware.kernels_from)
                                       : "";
  const std::string detail =
      known.empty() ? fmt::format("no such kernel for hardware {} (it has no kernel profiles; give a JSON file){}", hardware.name,
                                  unfound_home)
                    : fmt::format("no such kernel for hardware {}{}, expected one of {}{}", hardware.name,
                                  model::did_you_mean(wanted, known), fmt::join(known, ", "), unfound_home);
  // Not asked for: the hardware profile's default, named as its field (no --kernel was given).
  if (spec.empty()) {
    throw InputError(fmt::format("{} field \"default_kernel\" = '{}': {}; give --kernel NAME or mend the profile",
                                 hardware.label(), wanted, detail));
  }
  throw InputError(model::Input::kernel, wanted, detail, model::Shown::quoted);
}

OutputMerge merge_style(std::string_view name, std::string_view what) {
  if (name == "eager") return {38, 10, 8};
  if (name == "fused") return {10, 6, 0};
  if (name == "none") return {};
  throw model::InputError(fmt::format("{} '{}': expected {}", what, name, kMergeStyles));
}

}  // namespace stripesim::sim
