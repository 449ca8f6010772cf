#pragma once
// Raised for every invalid user input (flag, spec, file). The message is one line that names
// the input and the constraint it breaks; the CLI prints it and exits with code 2.
//
// An input the libraries check for every caller (a sequence length, a layout, a mask...) is
// raised by kind (`Input`) with its value and what is wrong with it, and named by its
// command-line flag unless the caller knows better: a sweep names the field of its experiment
// file the value came from (`at`), `stripesim layout` its own flag (`renamed`).
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace stripesim::model {

enum class Input {
  seq_len, devices, model_parallel, layouts, mask, tile, hardware, model, heads, kv_heads, head_dim, batch, kv_buffers,
  pass, sync, scope, dtype, kernel, topology, cp, recompute, zero, pad_documents, pad_seq, merges, skip_unread_hops, convention,
  tiling, ring_order
};

// The flag that gives `input` on the command line ("--seq-len").
[[nodiscard]] std::string_view flag_of(Input input);
// Every Input, in order: those flag_of names (its switch is checked complete by the compiler).
[[nodiscard]] std::vector<Input> every_input();

// How a message shows the value: as given (`--seq-len 1000`) or quoted (`--layouts 'zigzg'`).
enum class Shown { plain, quoted };

class InputError : public std::runtime_error {
 public:
  explicit InputError(const std::string& message) : std::runtime_error(message) {}
  // "<flag> <value>: <detail>" ("<flag>: <detail>" when value is empty).
  InputError(Input input, std::string value, std::string detail, Shown shown = Shown::plain);
  // "<flag> <part> <value>: <detail>": a part of the input is wrong ("--mask window:W width 'x'").
  [[nodiscard]] static InputError part_of(Input input, std::string part, std::string value, std::string detail,
                                          Shown shown);

  // Empty for an error not raised by kind.
  [[nodiscard]] std::optional<Input> input() const { return fields_ ? std::optional(fields_->input) : std::nullopt; }
  // The value the error is about, as given ("block-striped:16"); empty for an error not raised by kind.
  [[nodiscard]] std::string value() const { return fields_ ? fields_->value : std::string(); }

  // The same error with its input named `name` instead of its flag: "<name> <value>: <detail>".
  // An error not raised by kind comes back as it is.
  [[nodiscard]] InputError renamed(std::string_view name) const;
  // The same error at a field of a file: "<where> = <value>: <detail>" ("<where> <part> = ..."
  // for a part), e.g. "sweep.json: groups[0].seq_lens[1] = 1001: ...". Likewise only by kind.
  [[nodiscard]] InputError at(std::string_view where) const;

 private:
  struct Fields {
    Input input;
    std::string part, value, detail;
    Shown shown;
  };
  InputError(Fields fields, std::string_view name, std::string_view before_value);

  std::optional<Fields> fields_;
};

// How a parser names what it parses in its errors: free text ("config.json field \"seq_len\""),
// or a part of an Input, raised by kind so that its caller can say where it came from.
class InputName {
 public:
  InputName(const char* text) : text_(text) {}                // NOLINT: a name is given as text
  InputName(const std::string& text) : text_(text) {}         // NOLINT
  InputName(std::string_view text) : text_(text) {}           // NOLINT
  InputName(Input input, std::string part) : input_(input), text_(std::move(part)) {}

  // "<name> <shown value>: <detail>".
  [[nodiscard]] InputError error(std::string_view value, std::string_view detail, Shown shown) const;

 private:
  std::optional<Input> input_;
  std::string text_;
};

}  // namespace stripesim::model
