#include "stripesim/model/flops/attention_heads.hpp"

#include <fmt/format.h>

#include <string>

#include "stripesim/model/io/input_error.hpp"

namespace stripesim::model {

void require_kv_heads_divide(Count heads, Count kv_heads) {
  if (kv_heads < 1 || heads % kv_heads != 0) {
    throw InputError(Input::kv_heads, std::to_string(kv_heads), fmt::format("must divide the {} heads", heads));
  }
}

std::optional<Count> heads_per_member(Count heads, Count group, bool replicate) {
  if (heads < 1 || group < 1) return std::nullopt;
  if (heads % group == 0) return heads / group;
  if (replicate && group % heads == 0) return 1;
  return std::nullopt;
}

Count model_parallel_heads(Count heads, Count model_parallel, const char* what, bool replicate) {
  if (const std::optional<Count> share = heads_per_member(heads, model_parallel, replicate)) return *share;
  throw InputError(Input::model_parallel, std::to_string(model_parallel),
                   fmt::format("must divide the {} {}{}", heads, what, replicate ? " (or be a multiple of it)" : ""));
}

}  // namespace stripesim::model
