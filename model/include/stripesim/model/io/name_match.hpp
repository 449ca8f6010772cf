#pragma once
// Names people type (commands, flags, models, hardware, layouts): compared without regard to
// case, and when one is unknown the nearest known one is offered.
#include <string>
#include <string_view>
#include <vector>

namespace stripesim::model {

[[nodiscard]] std::string lowercase(std::string_view text);
[[nodiscard]] bool same_name(std::string_view a, std::string_view b);
// " (did you mean 'x'?)" for the known name closest to `wanted` in edits, case aside, when it is
// within a quarter of the longer name's length ("13b" is not a typo of "1b"), or for the one known
// name that `wanted` begins when it has three letters or more ("--memory" for "--memory-gib");
// else "".
[[nodiscard]] std::string did_you_mean(std::string_view wanted, const std::vector<std::string>& known);

}  // namespace stripesim::model
