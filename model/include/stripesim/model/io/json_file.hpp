#pragma once
// Reading a JSON document from disk with errors that name the file (missing, unreadable,
// malformed), so every config and input file fails the same clear way. Every file read is
// remembered, so that a command's outputs can refuse to overwrite one of its own inputs.
#include <nlohmann/json.hpp>

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace stripesim::model {

// What a file read is to its command: an input that no output may replace, or a kernel or
// hardware profile, which a fit's profile output (--kernel-out, --profile-out, --hardware-out)
// may refit in place.
// What a file was read as: an input no output may replace, or the hardware or kernel profile a
// command prices with (the one a fit may be written over, as a profile of the same kind). A
// catalog lookup reads every preset of a kind as input and the one it picked as its profile.
enum class FileUse { input, hardware_profile, kernel_profile };

// Reads and parses `path`; `label` prefixes error messages ("permutation:perm.json").
[[nodiscard]] nlohmann::json read_json_file(const std::string& path, std::string_view label, FileUse use = FileUse::input);

// The whole text of `path`, or an InputError naming `label` when it cannot be read or holds more
// than kMostInputBytes (an endless stream such as /dev/zero would otherwise fill the memory).
[[nodiscard]] std::string read_text_file(const std::string& path, std::string_view label, FileUse use = FileUse::input);
inline constexpr std::size_t kMostInputBytes = std::size_t{1} << 30;  // 1 GiB: far above any input stripesim reads

// The file `path` names, however it is spelled ("a.json", "./a.json", a link to it): its path with
// links, "." and ".." resolved as far as it exists, or, where that cannot be taken (a folder that
// may not be read), the path as given made lexically normal; never empty, so two paths that
// both fail are not taken for one file.
[[nodiscard]] std::filesystem::path file_identity(const std::string& path);

// Refuses a file of `paths` named twice (by any path to it: "a.json", "./a.json", a link) where
// each file's contents would count once: "<flags> <path>: given twice (<why>)"; and a copy of an
// earlier one, byte for byte: "<flags> <path>: the same contents as <earlier>, byte for byte (<why>)".
void refuse_repeated_files(const std::vector<std::string>& paths, std::string_view flags, std::string_view why);

// Parses `text`, read from a file that `what` names ("--baseline b.json: 'b.json'"), refusing
// what JSON parsers let through unsaid: a key given twice in one object (the last would win),
// and a number no double holds (1e400); and arrays or objects nested deeper than
// kMostJsonDepth, which no input has and which every recursive walk over the document (the
// parser's own destructor and printer among them) would overflow the stack on.
[[nodiscard]] nlohmann::json parse_json_text(const std::string& text, std::string_view what);
inline constexpr int kMostJsonDepth = 64;

// A JSON value as an error message quotes it: its text, cut to its first 60 characters and "..."
// when longer (a whole array of a file would make one line of megabytes).
[[nodiscard]] std::string json_excerpt(const nlohmann::json& value);

struct FileRead {
  std::string path;   // as given
  std::string label;  // as its errors name it
  FileUse use = FileUse::input;
};
// Every file this process has read so far, in order (thread-safe).
[[nodiscard]] std::vector<FileRead> files_read();
// Logs `path`, already read, as read for `use` too (the preset a catalog lookup picked).
void note_read_as(const std::string& path, std::string_view label, FileUse use);

}  // namespace stripesim::model
