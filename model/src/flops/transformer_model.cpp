#include "stripesim/model/flops/transformer_model.hpp"

#include <fmt/format.h>

#include "stripesim/model/flops/attention_heads.hpp"
#include "stripesim/model/io/input_error.hpp"
#include "stripesim/model/io/json_fields.hpp"

namespace stripesim::model {

TransformerModel transformer_model_from_json(const nlohmann::json& doc, const std::string& label) {
  const JsonFields f(doc, label);
  f.allow_only({"name", "description", "vocab", "d_model", "d_ff", "layers", "heads", "kv_heads", "head_dim", "mlp",
                "source"});
  TransformerModel m;
  m.name = f.non_empty_string("name");
  m.vocab = f.positive_count("vocab", kMaxVocab);
  m.d_model = f.positive_count("d_model", kMaxDModel);
  m.d_ff = f.positive_count("d_ff", kMaxDff);
  m.layers = f.positive_count("layers", kMaxLayers);
  m.heads = f.positive_count("heads", kMaxHeads);
  m.kv_heads = f.has("kv_heads") ? f.positive_count("kv_heads", kMaxHeads) : m.heads;
  JsonFields::located(f.where("kv_heads"), [&] { require_kv_heads_divide(m.heads, m.kv_heads); });
  if (!f.has("head_dim") && m.d_model % m.heads != 0) {
    throw InputError(fmt::format("{}: d_model {} is not divisible by heads {}; give head_dim", label, m.d_model, m.heads));
  }
  if (f.has("head_dim")) {
    m.head_dim = f.positive_count("head_dim", kMaxHeadDim);
  } else if ((m.head_dim = m.d_model / m.heads) > kMaxHeadDim) {
    throw InputError(fmt::format("{}: d_model {} over {} heads is a head size of {}, above the {} stripesim prices", f.where("d_model"),
                                 m.d_model, m.heads, m.head_dim, kMaxHeadDim));
  }
  m.mlp = f.string_or("mlp", "swiglu");
  if (m.mlp != "swiglu" && m.mlp != "gelu") {
    throw InputError(fmt::format("{}: must be \"swiglu\" or \"gelu\", got \"{}\"", f.where("mlp"), m.mlp));
  }
  m.source = f.string_or("source", "");
  return m;
}

nlohmann::ordered_json to_json(const TransformerModel& m) {
  return {{"name", m.name},         {"vocab", m.vocab}, {"d_model", m.d_model},   {"d_ff", m.d_ff},
          {"layers", m.layers},     {"heads", m.heads}, {"kv_heads", m.kv_heads}, {"head_dim", m.head_dim},
          {"mlp", m.mlp}};
}

}  // namespace stripesim::model
