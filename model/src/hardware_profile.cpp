#include "stripesim/model/hardware_profile.hpp"

#include <fmt/format.h>

#include "stripesim/model/input_error.hpp"
#include "stripesim/model/json_fields.hpp"

namespace stripesim::model {

HardwareProfile hardware_profile_from_json(const nlohmann::json& doc, const std::string& label) {
  const JsonFields f(doc, label);
  f.allow_only({"name", "description", "aliases", "peak_tflops", "matmul_precision", "attention_precision",
                "attention_flop_weight", "memory_gib", "memory_bandwidth_gbps", "link_bandwidth_gbps", "link_latency_us",
                "default_tile", "kernel", "sources"});
  HardwareProfile h;
  h.name = f.string("name");
  h.aliases = f.string_list_or("aliases", {});
  const JsonFields peaks(f.raw("peak_tflops"), f.where("peak_tflops"));
  for (const auto& [precision, value] : f.raw("peak_tflops").items()) h.peak_tflops[precision] = peaks.positive_number(precision);
  h.matmul_precision = f.string_or("matmul_precision", "bf16");
  h.attention_precision = f.string_or("attention_precision", h.matmul_precision);
  for (const auto& precision : {h.matmul_precision, h.attention_precision}) {
    if (!h.peak_tflops.contains(precision)) {
      throw InputError(fmt::format("{}: precision \"{}\" has no entry in peak_tflops", label, precision));
    }
  }
  h.attention_flop_weight = f.positive_number_or(
      "attention_flop_weight", h.peak_tflops.at(h.matmul_precision) / h.peak_tflops.at(h.attention_precision));
  h.memory_gib = f.positive_number("memory_gib");
  h.memory_bandwidth = f.positive_number("memory_bandwidth_gbps");
  h.link_bandwidth = f.positive_number("link_bandwidth_gbps");
  if (f.has("link_latency_us")) h.link_latency_us = f.non_negative_number_or("link_latency_us", 0.0);
  if (f.has("default_tile")) h.default_tile = parse_tile_shape(f.string("default_tile"));
  if (f.has("kernel")) {
    const JsonFields k(f.raw("kernel"), f.where("kernel"));
    k.allow_only({"sms", "blocks_per_sm", "efficiency", "launch_overhead_us", "block_overhead_us", "partial_tile_extra",
                  "backward_tile_multiplier"});
    KernelProfile& kp = h.kernel;
    kp.sms = k.positive_count_or("sms", kp.sms);
    kp.blocks_per_sm = k.positive_count_or("blocks_per_sm", kp.blocks_per_sm);
    kp.efficiency = k.positive_number_or("efficiency", kp.efficiency);
    if (kp.efficiency > 1) throw InputError(fmt::format("{}: must be at most 1, got {}", k.where("efficiency"), kp.efficiency));
    kp.launch_overhead_us = k.non_negative_number_or("launch_overhead_us", kp.launch_overhead_us);
    kp.block_overhead_us = k.non_negative_number_or("block_overhead_us", kp.block_overhead_us);
    kp.partial_tile_extra = k.non_negative_number_or("partial_tile_extra", kp.partial_tile_extra);
    kp.backward_tile_multiplier = k.positive_number_or("backward_tile_multiplier", kp.backward_tile_multiplier);
  }
  h.sources = f.has("sources") ? f.raw("sources") : nlohmann::json::object();
  return h;
}

nlohmann::ordered_json to_json(const HardwareProfile& h) {
  nlohmann::ordered_json peaks = nlohmann::ordered_json::object();
  for (const auto& [precision, value] : h.peak_tflops) peaks[precision] = value;
  nlohmann::ordered_json doc = {{"name", h.name},
          {"peak_tflops", std::move(peaks)},
          {"matmul_precision", h.matmul_precision},
          {"attention_precision", h.attention_precision},
          {"attention_flop_weight", h.attention_flop_weight},
          {"memory_gib", h.memory_gib},
          {"memory_bandwidth_gbps", h.memory_bandwidth},
          {"link_bandwidth_gbps", h.link_bandwidth},
          {"default_tile", h.default_tile.to_string()},
          {"kernel",
           {{"sms", h.kernel.sms},
            {"blocks_per_sm", h.kernel.blocks_per_sm},
            {"efficiency", h.kernel.efficiency},
            {"launch_overhead_us", h.kernel.launch_overhead_us},
            {"block_overhead_us", h.kernel.block_overhead_us},
            {"partial_tile_extra", h.kernel.partial_tile_extra},
            {"backward_tile_multiplier", h.kernel.backward_tile_multiplier}}}};
  if (h.link_latency_us) doc["link_latency_us"] = *h.link_latency_us;
  if (!h.sources.empty()) doc["sources"] = h.sources;
  return doc;
}

}  // namespace stripesim::model
