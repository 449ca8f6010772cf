#pragma once
// A decoder-only transformer's shape: what the FLOP accounting needs. Read from
// configs/models/*.json.
#include <nlohmann/json.hpp>
#include <string>

#include "stripesim/model/work/types.hpp"

namespace stripesim::model {

struct TransformerModel {
  std::string name;
  Count vocab = 0;
  Count d_model = 0;
  Count d_ff = 0;
  Count layers = 0;
  Count heads = 0;
  Count kv_heads = 0;   // grouped-query attention: fewer K/V heads than query heads
  Count head_dim = 0;   // d_model / heads unless the file says otherwise
  std::string mlp = "swiglu";  // "swiglu" (three d x d_ff matrices) or "gelu" (two)
  std::string source;
};

// The largest sizes a model file may give: far beyond any model trained (a vocabulary of 256k,
// d_model 16k, d_ff 53k, 126 layers), and small enough that a device's parameters and their bytes
// (layers x d_model x d_ff, about 2^54 at the bounds) stay exact in 64-bit counts.
inline constexpr Count kMaxVocab = Count{1} << 24, kMaxDModel = Count{1} << 18, kMaxDff = Count{1} << 20,
                       kMaxLayers = Count{1} << 14;

// Validates: every size positive and within its bound, heads divisible by kv_heads. `label` names the file.
[[nodiscard]] TransformerModel transformer_model_from_json(const nlohmann::json& doc, const std::string& label);
[[nodiscard]] nlohmann::ordered_json to_json(const TransformerModel& model);

}  // namespace stripesim::model
