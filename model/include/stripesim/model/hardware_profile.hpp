#pragma once
// An accelerator's profile: peak rates per precision, which precision the matmuls and the
// attention run in (their ratio is the attention FLOP weight of the paper's TMS: 2 on an A100,
// where attention runs in TF32 against bf16 matmuls), memory and link bandwidths, the tile the
// paper used, and the source of each figure. Read from configs/hardware/*.json.
#include <map>
#include <optional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "stripesim/model/tile_shape.hpp"

namespace stripesim::model {

using TeraflopsPerSecond = double;  // dense peak, 10^12 FLOP/s
using GigabytesPerSecond = double;  // 10^9 B/s, per direction for links

// How the simulator prices an attention kernel on this accelerator: thread blocks (one per query
// tile, head and sequence) run on `sms * blocks_per_sm` slots; a full tile costs its FLOPs at
// `efficiency` of the attention peak spread over the slots. The validator calibrates these.
struct KernelProfile {
  Count sms = 108;
  Count blocks_per_sm = 1;
  double efficiency = 0.6;                // fraction of the attention-precision peak a full tile achieves
  double launch_overhead_us = 4.0;        // per kernel launch (one per round and device)
  double block_overhead_us = 0.5;         // per thread block (prologue, epilogue, output write)
  double partial_tile_extra = 0.2;        // a tile that applies the mask costs (1 + this) full tiles
  double backward_tile_multiplier = 2.5;  // backward tile cost over forward (FlashAttention's count)
};

struct HardwareProfile {
  std::string name;
  std::vector<std::string> aliases;
  std::map<std::string, TeraflopsPerSecond> peak_tflops;  // by precision: bf16, fp16, tf32, fp32, fp8
  std::string matmul_precision = "bf16";
  std::string attention_precision = "bf16";
  double attention_flop_weight = 1.0;  // peak[matmul_precision] / peak[attention_precision] unless given
  double memory_gib = 0;
  GigabytesPerSecond memory_bandwidth = 0;
  GigabytesPerSecond link_bandwidth = 0;  // one ring hop's link, per direction
  // Per link crossed (a hop through an NVSwitch crosses two); unset: the topology's default.
  // `stripesim validate --calibrate` measures it.
  std::optional<double> link_latency_us;
  TileShape default_tile{128, 128};
  KernelProfile kernel;
  nlohmann::json sources;  // where each figure comes from, kept verbatim for the record
};

[[nodiscard]] HardwareProfile hardware_profile_from_json(const nlohmann::json& doc, const std::string& label);
[[nodiscard]] nlohmann::ordered_json to_json(const HardwareProfile& hardware);

}  // namespace stripesim::model
