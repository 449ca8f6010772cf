#pragma once
// Where the inputs of one point of an experiment's grid came from in its file, so that an error
// about one of them names the file and the field instead of the flag that would have given it:
// '--experiment sweep.json field "groups[0].seq_lens[1]" = 1001: layout zigzag needs it divisible
// by ...'.
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "stripesim/model/io/input_error.hpp"

namespace stripesim::model {

class InputOrigins {
 public:
  InputOrigins() = default;  // not read from a file: errors name the flags (unless add_flag)
  explicit InputOrigins(std::string label) : label_(std::move(label)) {}
  // The inputs a file of flags (analyze's or simulate's --experiment) gives and no flag
  // overrides: fields named as the flags are ("seq_len" for --seq-len).
  // `doc` may be an object inside the file: its fields are then named from `within` ("step.kernel").
  [[nodiscard]] static InputOrigins of_file(const nlohmann::json& doc, std::string label,
                                            const std::function<bool(Input)>& overridden, std::string_view within = "");

  // `input` is the value at `path` ("groups[0].seq_lens[1]").
  void add(Input input, std::string path);
  // `input` is one of `items`, the list at `path` ("layouts"): an error names the item it is about.
  void add_list(Input input, std::string path, std::vector<std::string> items);
  // `input` came from `flag`, not the one flag_of names (sweep's --seq-lens gives --seq-len's).
  void add_flag(Input input, std::string flag);

  // `error` named at its field when it is about one of these inputs; otherwise as it is.
  [[nodiscard]] InputError locate(const InputError& error) const;

  // Runs `work`, its InputErrors located.
  template <typename Work>
  decltype(auto) run(Work&& work) const {
    try {
      return std::forward<Work>(work)();
    } catch (const InputError& e) {
      throw locate(e);
    }
  }

 private:
  struct Origin {
    Input input;
    std::string path;                // or the flag
    std::vector<std::string> items;  // a list's; empty for a single value
    bool flag = false;
  };
  std::string label_;
  std::vector<Origin> origins_;
};

}  // namespace stripesim::model
