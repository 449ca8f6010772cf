#include "stripesim/sim/kernel_profile.hpp"

#include <fmt/format.h>

#include <filesystem>

#include "stripesim/model/io/config_catalog.hpp"
#include "stripesim/model/io/input_error.hpp"
#include "stripesim/model/io/json_fields.hpp"
#include "stripesim/model/io/json_file.hpp"

namespace stripesim::sim {

using model::InputError;

namespace {

PassCosts pass_costs_from_json(const model::JsonFields& parent, const std::string& key) {
  const model::JsonFields f(parent.raw(key), parent.where(key));
  f.allow_only({"launch_us", "block_us", "full_tile_us", "partial_tile_us", "trimmed_factor"});
  PassCosts c;
  c.launch_us = f.non_negative_number_or("launch_us", 0.0);
  c.block_us = f.non_negative_number_or("block_us", 0.0);
  c.full_tile_us = f.positive_number("full_tile_us");
  c.partial_tile_us = f.positive_number("partial_tile_us");
  c.trimmed_factor = f.has("trimmed_factor") ? f.positive_number("trimmed_factor") : 1.0;
  // A partial tile does the full tile's work and evaluates the mask on top of it.
  if (c.partial_tile_us < c.full_tile_us) {
    throw InputError(fmt::format("{}: partial_tile_us {} must be at least full_tile_us {}", parent.where(key),
                                 c.partial_tile_us, c.full_tile_us));
  }
  return c;
}

// The trimmed factor is written for kernels that trim: it means nothing for the others.
nlohmann::ordered_json to_json(const PassCosts& c, bool trims) {
  nlohmann::ordered_json doc = {{"launch_us", c.launch_us},
                                {"block_us", c.block_us},
                                {"full_tile_us", c.full_tile_us},
                                {"partial_tile_us", c.partial_tile_us}};
  if (trims) doc["trimmed_factor"] = c.trimmed_factor;
  return doc;
}

}  // namespace

const char* block_order_name(BlockOrder order) {
  switch (order) {
    case BlockOrder::launch: return "launch";
    case BlockOrder::longest_first: return "longest_first";
  }
  return "launch";
}

KernelProfile kernel_profile_from_json(const nlohmann::json& doc, const std::string& label) {
  const model::JsonFields f(doc, label);
  f.allow_only({"schema", "name", "hardware", "description", "tile", "tiling", "blocks_per_sm", "slots", "block_order",
                "empty_calls_launch", "empty_query_tiles_launch", "trims_below_diagonal", "dtype", "head_dim", "forward", "backward", "merge", "calibrated",
                "sources", "fit"});
  if (f.has("schema") && f.string("schema") != "stripesim.kernel/1") {
    throw InputError(fmt::format("{}: expected \"stripesim.kernel/1\"", f.where("schema")));
  }
  KernelProfile k;
  k.name = f.string("name");
  k.hardware = f.string("hardware");
  k.description = f.string_or("description", "");
  k.tile = model::parse_tile_shape(f.string("tile"));
  if (f.has("tiling")) k.tiling = model::parse_tiling(f.string("tiling"), f.where("tiling"));
  k.blocks_per_sm = f.positive_count_or("blocks_per_sm", 1);
  if (f.has("slots")) k.slots = f.positive_count("slots");
  const std::string order = f.string_or("block_order", "launch");
  if (order == "launch") {
    k.order = BlockOrder::launch;
  } else if (order == "longest_first") {
    k.order = BlockOrder::longest_first;
  } else {
    throw InputError(fmt::format("{}: expected \"launch\" or \"longest_first\", got \"{}\"", f.where("block_order"), order));
  }
  k.empty_calls_launch = f.boolean_or("empty_calls_launch", false);
  k.empty_query_tiles_launch = f.boolean_or("empty_query_tiles_launch", false);
  k.trims_below_diagonal = f.boolean_or("trims_below_diagonal", false);
  k.calibrated = f.boolean_or("calibrated", false);
  k.dtype = f.string_or("dtype", "bf16");
  k.head_dim = f.positive_count_or("head_dim", 128);
  k.forward = pass_costs_from_json(f, "forward");
  k.backward = pass_costs_from_json(f, "backward");
  for (const auto& [key, costs] : {std::pair{"forward", &k.forward}, std::pair{"backward", &k.backward}}) {
    if (!k.trims_below_diagonal && costs->trimmed_factor != 1.0) {
      throw InputError(fmt::format("{}: trimmed_factor applies only to a kernel with \"trims_below_diagonal\": true",
                                   f.where(key)));
    }
  }
  if (f.has("merge")) {
    const model::JsonFields m(f.raw("merge"), f.where("merge"));
    m.allow_only({"forward_bytes_per_element", "backward_bytes_per_element", "forward_slice_bytes_per_element"});
    k.merge.forward_bytes_per_element = m.non_negative_number_or("forward_bytes_per_element", 0.0);
    k.merge.backward_bytes_per_element = m.non_negative_number_or("backward_bytes_per_element", 0.0);
    k.merge.forward_slice_bytes_per_element = m.non_negative_number_or("forward_slice_bytes_per_element", 0.0);
  }
  k.sources = f.has("sources") ? f.raw("sources") : nlohmann::json::object();
  k.fit = f.has("fit") ? f.raw("fit") : nlohmann::json::object();
  return k;
}

nlohmann::ordered_json to_json(const KernelProfile& k) {
  nlohmann::ordered_json doc = {{"schema", "stripesim.kernel/1"},
                                {"name", k.name},
                                {"hardware", k.hardware},
                                {"description", k.description},
                                {"tile", k.tile.to_string()},
                                {"tiling", model::tiling_name(k.tiling)},
                                {"blocks_per_sm", k.blocks_per_sm},
                                {"block_order", block_order_name(k.order)},
                                {"empty_calls_launch", k.empty_calls_launch},
                                {"empty_query_tiles_launch", k.empty_query_tiles_launch},
                                {"trims_below_diagonal", k.trims_below_diagonal},
                                {"dtype", k.dtype},
                                {"head_dim", k.head_dim},
                                {"forward", to_json(k.forward, k.trims_below_diagonal)},
                                {"backward", to_json(k.backward, k.trims_below_diagonal)}};
  if (k.merge != OutputMerge{}) {
    doc["merge"] = {{"forward_bytes_per_element", k.merge.forward_bytes_per_element},
                    {"backward_bytes_per_element", k.merge.backward_bytes_per_element},
                    {"forward_slice_bytes_per_element", k.merge.forward_slice_bytes_per_element}};
  }
  doc["calibrated"] = k.calibrated;
  if (k.slots) doc["slots"] = *k.slots;
  if (!k.sources.empty()) doc["sources"] = k.sources;
  if (!k.fit.empty()) doc["fit"] = k.fit;
  return doc;
}

KernelProfile load_kernel_profile(const std::string& spec, const std::string& config_dir,
                                  const model::HardwareProfile& hardware) {
  const std::string wanted = spec.empty() ? hardware.default_kernel : spec;
  if (wanted.empty()) {
    throw InputError(fmt::format("--kernel: hardware {} names no default kernel; give --kernel NAME or a JSON file",
                                 hardware.name));
  }
  if (model::is_config_path(wanted)) {
    return kernel_profile_from_json(model::read_json_file(wanted, "--kernel " + wanted), "--kernel " + wanted);
  }
  namespace fs = std::filesystem;
  std::vector<std::string> folders{hardware.name};
  folders.insert(folders.end(), hardware.aliases.begin(), hardware.aliases.end());
  std::string known;
  for (const std::string& folder : folders) {
    const fs::path dir = fs::path(config_dir) / "kernels" / folder;
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) continue;
    const fs::path file = dir / (wanted + ".json");
    if (fs::exists(file, ec)) return kernel_profile_from_json(model::read_json_file(file.string(), file.string()), file.string());
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      if (entry.path().extension() == ".json") names.push_back(entry.path().stem().string());
    }
    std::sort(names.begin(), names.end());
    for (const auto& name : names) known += (known.empty() ? "" : ", ") + name;
  }
  throw InputError(fmt::format("--kernel '{}': no such kernel for hardware {}{}", wanted, hardware.name,
                               known.empty() ? " (it has no kernel profiles; give a JSON file)" : ", expected one of " + known));
}

}  // namespace stripesim::sim
