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

// Validates: every size positive, heads divisible by kv_heads. `label` names the file.
[[nodiscard]] TransformerModel transformer_model_from_json(const nlohmann::json& doc, const std::string& label);
[[nodiscard]] nlohmann::ordered_json to_json(const TransformerModel& model);

}  // namespace stripesim::model
