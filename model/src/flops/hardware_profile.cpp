#include "stripesim/model/flops/hardware_profile.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <string>
#include <vector>

#include "stripesim/model/flops/precision.hpp"
#include "stripesim/model/io/input_error.hpp"
#include "stripesim/model/io/json_fields.hpp"
#include "stripesim/model/io/name_match.hpp"

namespace stripesim::model {

std::string HardwareProfile::label() const {
  return file.empty() ? fmt::format("hardware {}", name) : fmt::format("hardware {} ({})", name, file);
}

HardwareProfile hardware_profile_from_json(const nlohmann::json& doc, const std::string& label) {
  const JsonFields f(doc, label);
  f.allow_only({"name", "description", "aliases", "device_names", "peak_tflops", "matmul_precision", "attention_precision",
                "attention_flop_weight", "memory_gib", "memory_bandwidth_gbps", "link_bandwidth_gbps", "link_latency_us",
                "default_tile", "sms", "shared_memory_per_sm_kib", "default_kernel", "kernels_from", "matmul_efficiency", "elementwise_bytes_per_dmodel",
                "sources"});
  HardwareProfile h;
  h.name = f.non_empty_string("name");
  h.description = f.string_or("description", "");
  h.aliases = f.distinct_string_list_or("aliases", {});
  h.device_names = f.distinct_string_list_or("device_names", {});
  const JsonFields peaks(f.raw("peak_tflops"), f.where("peak_tflops"));
  // A rate under a misspelt name would sit unused beside the real one.
  for (const auto& [precision, value] : f.raw("peak_tflops").items()) {
    if (!precision_bits(precision)) {
      throw InputError(fmt::format("{}: unknown precision \"{}\"{}, expected one of {}", f.where("peak_tflops"), precision,
                                   did_you_mean(precision, precision_names()), fmt::join(precision_names(), ", ")));
    }
    h.peak_tflops[precision] = peaks.positive_number(precision);
  }
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
  if (f.has("default_tile")) h.default_tile = f.parsed("default_tile", parse_tile_shape);
  h.sms = f.positive_count("sms", kMaxSms);
  if (f.has("shared_memory_per_sm_kib")) h.shared_memory_per_sm = 1024 * f.positive_count("shared_memory_per_sm_kib", Count{1} << 30);
  // Left out, the profile has no default kernel (a --kernel is then needed); given, it names one.
  if (f.has("default_kernel")) h.default_kernel = f.non_empty_string("default_kernel");
  h.kernels_from = f.string_or("kernels_from", "");
  if (f.has("kernels_from") && (h.kernels_from.empty() || h.kernels_from == h.name)) {
    throw InputError(fmt::format("{}: must name another hardware profile, got \"{}\"", f.where("kernels_from"), h.kernels_from));
  }
  if (f.has("matmul_efficiency")) {
    const double efficiency = f.positive_number("matmul_efficiency");
    if (efficiency > 1) throw InputError(fmt::format("{}: {} is above 1 (a fraction of the peak)", f.where("matmul_efficiency"), efficiency));
    h.matmul_efficiency = efficiency;
  }
  h.elementwise_bytes_per_dmodel = f.non_negative_number_or("elementwise_bytes_per_dmodel", 0.0);
  // Layers and steps price both; without the element-wise cost they would price it as nothing.
  if (h.matmul_efficiency && !f.has("elementwise_bytes_per_dmodel")) {
    throw InputError(fmt::format("{}: a profile with matmul_efficiency prices a layer's element-wise work too; give "
                                 "elementwise_bytes_per_dmodel (0 when it is to cost nothing)",
                                 f.where("elementwise_bytes_per_dmodel")));
  }
  // Records for readers, kept as written; the element-wise cost's is also read (simulate's note).
  if (f.has("sources")) {
    const JsonFields sources(f.object("sources"), f.where("sources"));
    if (sources.has("elementwise_bytes_per_dmodel")) (void)sources.string("elementwise_bytes_per_dmodel");
  }
  h.sources = f.has("sources") ? f.raw("sources") : nlohmann::json::object();
  return h;
}

nlohmann::ordered_json to_json(const HardwareProfile& h) {
  nlohmann::ordered_json peaks = nlohmann::ordered_json::object();
  for (const auto& [precision, value] : h.peak_tflops) peaks[precision] = value;
  nlohmann::ordered_json doc = {{"name", h.name},
          {"aliases", h.aliases},
          {"description", h.description},
          {"peak_tflops", std::move(peaks)},
          {"matmul_precision", h.matmul_precision},
          {"attention_precision", h.attention_precision},
          {"attention_flop_weight", h.attention_flop_weight},
          {"memory_gib", h.memory_gib},
          {"memory_bandwidth_gbps", h.memory_bandwidth},
          {"link_bandwidth_gbps", h.link_bandwidth},
          {"default_tile", h.default_tile.to_string()},
          {"sms", h.sms}};
  // Optional, and never empty where given: a profile without one is written without it.
  if (!h.default_kernel.empty()) doc["default_kernel"] = h.default_kernel;
  if (!h.kernels_from.empty()) doc["kernels_from"] = h.kernels_from;
  if (h.link_latency_us) doc["link_latency_us"] = *h.link_latency_us;
  if (h.shared_memory_per_sm) doc["shared_memory_per_sm_kib"] = *h.shared_memory_per_sm / 1024;
  if (h.matmul_efficiency) doc["matmul_efficiency"] = *h.matmul_efficiency;
  if (h.matmul_efficiency || h.elementwise_bytes_per_dmodel > 0) doc["elementwise_bytes_per_dmodel"] = h.elementwise_bytes_per_dmodel;
  if (!h.sources.empty()) doc["sources"] = h.sources;
  if (!h.device_names.empty()) doc["device_names"] = h.device_names;
  return doc;
}

}  // namespace stripesim::model
