#include "stripesim/model/workflows/mesh.hpp"

#include <fmt/format.h>

#include "stripesim/model/io/input_error.hpp"
#include "stripesim/model/io/size_parse.hpp"

namespace stripesim::model {

std::string Mesh::to_string() const {
  return data_parallel > 1 ? fmt::format("{}x{}x{}", model_parallel, devices, data_parallel)
                           : fmt::format("{}x{}", model_parallel, devices);
}

Mesh parse_mesh(std::string_view text, std::string_view what) {
  const auto sides = split_product(text);
  if (!sides) throw InputError(fmt::format("{} '{}': expected MxN (model-parallel x sequence-parallel), e.g. 2x4", what, text));
  const std::string label = fmt::format("{} '{}'", what, text);
  Mesh mesh{parse_count(sides->first, label + " model-parallel degree"),
            parse_count(sides->second, label + " sequence-parallel degree")};
  if (mesh.model_parallel < 1 || mesh.devices < 1) {
    throw InputError(fmt::format("{} '{}': both degrees must be at least 1", what, text));
  }
  return mesh;
}

}  // namespace stripesim::model
