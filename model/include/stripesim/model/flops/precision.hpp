#pragma once
// The number formats stripesim knows, by the names hardware profiles (peak_tflops), kernel
// profiles and --dtype give them, with their widths: one table, so that a format a profile may
// list is one the simulator can also price K/V bytes in wherever whole bytes hold it.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace stripesim::model {

// Every format's name, widest first ("fp64", "fp32", ... "int4").
[[nodiscard]] const std::vector<std::string>& precision_names();

// The bits one element of `name` takes; nullopt for a name not in the table.
[[nodiscard]] std::optional<int> precision_bits(std::string_view name);

// The formats an element of which fills whole bytes, the ones a tensor can be stored in:
// "fp64, fp32, tf32, bf16, fp16, fp8 or int8".
[[nodiscard]] std::string whole_byte_precisions_text();

}  // namespace stripesim::model
