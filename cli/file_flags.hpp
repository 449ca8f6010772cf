#pragma once
// Options of a command and which of them the user gave on the command line. analyze and
// simulate take a flag given beside their file of flags (--experiment) over the file's field;
// sweep, whose file is the whole grid, refuses a grid flag beside it; layout takes analyze's
// defaults for what is not given; validate refuses what would be ignored.
#include <CLI/CLI.hpp>

#include <string>
#include <string_view>
#include <vector>

#include "stripesim/model/io/input_error.hpp"

namespace stripesim::cli {

class FileFlags {
 public:
  // Remembers `option` (an option or a flag of the command) and returns it.
  CLI::Option* track(CLI::Option* option) {
    options_.push_back(option);
    return option;
  }
  // Whether the option named by its long name ("--seq-len") was given.
  [[nodiscard]] bool given(std::string_view flag) const {
    for (const CLI::Option* option : options_) {
      if (option->check_lname(std::string(flag.substr(2))) && option->count() > 0) return true;
    }
    return false;
  }
  // Whether the flag that names `input` was given: the file's field for it is overridden.
  [[nodiscard]] bool overrides(model::Input input) const { return given(model::flag_of(input)); }
  // The first tracked option given, or nullptr.
  [[nodiscard]] const CLI::Option* first_given() const {
    for (const CLI::Option* option : options_) {
      if (option->count() > 0) return option;
    }
    return nullptr;
  }

 private:
  std::vector<CLI::Option*> options_;
};

}  // namespace stripesim::cli
