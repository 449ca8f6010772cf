#pragma once
// Raised for every invalid user input (flag, spec, file). The message is one line that names
// the input and the constraint it breaks; the CLI prints it and exits with code 2.
#include <stdexcept>
#include <string>

namespace stripesim::model {

class InputError : public std::runtime_error {
 public:
  explicit InputError(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace stripesim::model
