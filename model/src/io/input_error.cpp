#include "stripesim/model/io/input_error.hpp"

#include <fmt/format.h>

namespace stripesim::model {

std::string_view flag_of(Input input) {
  switch (input) {
    case Input::seq_len: return "--seq-len";
    case Input::devices: return "--devices";
    case Input::model_parallel: return "--model-parallel";
    case Input::layouts: return "--layouts";
    case Input::mask: return "--mask";
    case Input::tile: return "--tile";
    case Input::hardware: return "--hardware";
    case Input::model: return "--model";
    case Input::heads: return "--heads";
    case Input::kv_heads: return "--kv-heads";
    case Input::head_dim: return "--head-dim";
    case Input::batch: return "--batch";
    case Input::kv_buffers: return "--kv-buffers";
    case Input::pass: return "--pass";
    case Input::sync: return "--sync";
    case Input::scope: return "--scope";
    case Input::dtype: return "--dtype";
    case Input::kernel: return "--kernel";
    case Input::topology: return "--topology";
    case Input::cp: return "--cp";
    case Input::recompute: return "--recompute";
    case Input::zero: return "--zero";
    case Input::pad_documents: return "--pad-documents";
    case Input::pad_seq: return "--pad-seq";
    case Input::merges: return "--merges";
    case Input::skip_unread_hops: return "--skip-unread-hops";
    case Input::convention: return "--convention";
    case Input::tiling: return "--tiling";
    case Input::ring_order: return "--ring-order";
  }
  return "";  // past the last Input (every_input stops there)
}

std::vector<Input> every_input() {
  std::vector<Input> inputs;
  for (int i = 0; !flag_of(static_cast<Input>(i)).empty(); ++i) inputs.push_back(static_cast<Input>(i));
  return inputs;
}

namespace {

std::string shown_value(const std::string& value, Shown shown) { return shown == Shown::quoted ? "'" + value + "'" : value; }

}  // namespace

InputError::InputError(Fields fields, std::string_view name, std::string_view before_value)
    : std::runtime_error(fmt::format("{}{}{}: {}", name, fields.part.empty() ? "" : " " + fields.part,
                                     fields.value.empty() ? "" : std::string(before_value) + shown_value(fields.value, fields.shown),
                                     fields.detail)),
      fields_(std::move(fields)) {}

InputError::InputError(Input input, std::string value, std::string detail, Shown shown)
    : InputError(Fields{input, "", std::move(value), std::move(detail), shown}, flag_of(input), " ") {}

InputError InputError::part_of(Input input, std::string part, std::string value, std::string detail, Shown shown) {
  return InputError(Fields{input, std::move(part), std::move(value), std::move(detail), shown}, flag_of(input), " ");
}

InputError InputError::renamed(std::string_view name) const { return fields_ ? InputError(*fields_, name, " ") : *this; }

InputError InputError::at(std::string_view where) const { return fields_ ? InputError(*fields_, where, " = ") : *this; }

InputError InputName::error(std::string_view value, std::string_view detail, Shown shown) const {
  if (input_) return InputError::part_of(*input_, text_, std::string(value), std::string(detail), shown);
  return InputError(fmt::format("{} {}: {}", text_, shown_value(std::string(value), shown), detail));
}

}  // namespace stripesim::model
