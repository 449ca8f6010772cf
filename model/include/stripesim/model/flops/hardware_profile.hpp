#pragma once
// An accelerator's profile: peak rates per precision, which precision the matmuls and the
// attention run in (their ratio is the attention FLOP weight of the paper's TMS: 2 on an A100,
// where attention runs in TF32 against bf16 matmuls), memory and link bandwidths, the tile the
// paper used, its SM count and default attention kernel (configs/kernels/<name>/<kernel>.json,
// read by the simulator), and the source of each figure. Read from configs/hardware/*.json.
#include <map>
#include <optional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "stripesim/model/work/tile_shape.hpp"

namespace stripesim::model {

using TeraflopsPerSecond = double;  // dense peak, 10^12 FLOP/s
using GigabytesPerSecond = double;  // 10^9 B/s, per direction for links

// Bounds a profile's SMs and a kernel's blocks per SM (sim/kernel_profile.hpp), so that their
// product, the block slots a call is scheduled on, is a sane count (the largest GPUs have a few
// hundred SMs and hold at most 32 blocks on each).
inline constexpr Count kMaxSms = 65536;
inline constexpr Count kMaxBlocksPerSm = 1024;

// Memory sizes are quoted in GiB (memory_gib below, the memory a step or a plan reports).
inline constexpr double kBytesPerGib = 1024.0 * 1024.0 * 1024.0;

struct HardwareProfile {
  std::string name;
  std::string description;
  std::vector<std::string> aliases;
  // What the driver calls this GPU contains one of these ("H100" in "NVIDIA H100 80GB HBM3"): how
  // `validate` picks the profile for the device it ran on. The longest match wins.
  std::vector<std::string> device_names;
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
  TileShape default_tile{128, 128};  // the paper's tile (TMS); kernels name their own
  Count sms = 108;                   // streaming multiprocessors (TensorCores on a TPU): where thread blocks run
  // Shared memory one SM offers its thread blocks, bytes: with a kernel's tile it bounds how many
  // of its blocks an SM holds (validate's kernel fit tries no more). Unset: no bound known.
  std::optional<Count> shared_memory_per_sm;
  std::string default_kernel;        // the kernel profile simulate uses without --kernel
  // A GPU with another's SMs and clocks (an H800 is an H100 with slower NVLink) runs the same
  // kernels at the same speed: its kernel profiles are looked up under that hardware's name too
  // (configs/kernels/<kernels_from>/), not copied.
  std::string kernels_from;
  // What `simulate --scope layer|step` prices outside attention. matmul_efficiency: the fraction
  // of peak[matmul_precision] the model's matmuls (projections, MLP, LM head) reach; unset, those
  // scopes refuse the profile. elementwise_bytes_per_dmodel: the memory traffic of a layer's
  // element-wise work (norms, activations, residual adds, casts, rematerialisation copies) per
  // token and per unit of d_model in the forward (twice that backward), at memory_bandwidth.
  std::optional<double> matmul_efficiency;
  double elementwise_bytes_per_dmodel = 0;
  nlohmann::json sources;  // where each figure comes from, kept verbatim for the record
  // The JSON file it was read from when given as a path (--hardware FILE); empty for a preset.
  std::string file;

  // How messages name it: "hardware h100-sxm", and the file it came from when given as one
  // ("hardware h100-sxm (my-h100.json)"), the file being what a user mends.
  [[nodiscard]] std::string label() const;
};

[[nodiscard]] HardwareProfile hardware_profile_from_json(const nlohmann::json& doc, const std::string& label);
[[nodiscard]] nlohmann::ordered_json to_json(const HardwareProfile& hardware);

}  // namespace stripesim::model
