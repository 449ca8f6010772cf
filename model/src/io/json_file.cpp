#include "stripesim/model/io/json_file.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <utility>
#include <vector>

#include "stripesim/model/io/input_error.hpp"

namespace stripesim::model {

namespace {

// The process's reads: layouts' permutation files may be read on the threads that count them.
// A file is logged once however often it is read (a catalog lookup rereads every shipped file
// of its kind; a sweep looks up every point), so the outputs' check stays one pass over a few.
struct ReadLog {
  std::mutex mutex;
  std::vector<FileRead> reads;
  std::set<std::pair<std::string, FileUse>> logged;  // (path, use) of each entry of reads
};

ReadLog& read_log() {
  static ReadLog log;
  return log;
}

}  // namespace

std::vector<FileRead> files_read() {
  ReadLog& log = read_log();
  const std::lock_guard lock(log.mutex);
  return log.reads;
}

namespace {

// read_text_file without logging the read.
std::string read_bounded(const std::string& path, std::string_view label) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw InputError(fmt::format("{}: file '{}' does not exist", label, path));
  if (std::filesystem::is_directory(path, ec)) throw InputError(fmt::format("{}: '{}' is a directory, expected a file", label, path));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: cannot open '{}' for reading", label, path));
  // Read a chunk at a time up to the bound: a stream need not end (/dev/zero, a pipe).
  std::string text;
  // A chunk the file's size where it has one (a preset of a few KB read a lookup at a time: a
  // zeroed MiB each read was most of a step sweep's time under the sanitizers), else 1 MiB.
  std::size_t chunk_bytes = std::size_t{1} << 20;
  if (std::filesystem::is_regular_file(path, ec)) {
    const std::uintmax_t size = std::filesystem::file_size(path, ec);
    if (!ec) chunk_bytes = static_cast<std::size_t>(std::clamp<std::uintmax_t>(size + 1, 1, chunk_bytes));
  }
  std::vector<char> chunk(chunk_bytes);
  while (in) {
    in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    text.append(chunk.data(), static_cast<std::size_t>(in.gcount()));
    if (text.size() > kMostInputBytes) {
      throw InputError(fmt::format("{}: '{}' holds more than {} GiB, more than any input stripesim reads", label, path,
                                   kMostInputBytes >> 30));
    }
  }
  if (in.bad()) throw InputError(fmt::format("{}: error while reading '{}'", label, path));
  return text;
}

}  // namespace

std::filesystem::path file_identity(const std::string& path) {
  std::error_code ec;
  std::filesystem::path identity = std::filesystem::weakly_canonical(std::filesystem::path(path), ec);
  return ec ? std::filesystem::path(path).lexically_normal() : identity;
}

void refuse_repeated_files(const std::vector<std::string>& paths, std::string_view flags, std::string_view why) {
  std::vector<std::filesystem::path> identities;
  std::vector<std::string> texts;  // each file's contents ("" where it cannot be read)
  for (size_t i = 0; i < paths.size(); ++i) {
    const std::string& path = paths[i];
    const std::filesystem::path identity = file_identity(path);  // a missing file is reported, by name, where it is read
    if (std::find(identities.begin(), identities.end(), identity) != identities.end()) {
      throw InputError(fmt::format("{} {}: given twice ({})", flags, path, why));
    }
    identities.push_back(identity);
    // A copy under another name is the same file to whatever counts its contents.
    std::string text;
    try {
      text = read_bounded(path, flags);
    } catch (const InputError&) {  // reported, by name, where it is read
    }
    texts.push_back(std::move(text));
    for (size_t j = 0; j < i && !texts.back().empty(); ++j) {
      if (texts[j] == texts.back()) {
        throw InputError(fmt::format("{} {}: the same contents as {}, byte for byte ({})", flags, path, paths[j], why));
      }
    }
  }
}

std::string read_text_file(const std::string& path, std::string_view label, FileUse use) {
  std::string text = read_bounded(path, label);
  note_read_as(path, label, use);
  return text;
}

void note_read_as(const std::string& path, std::string_view label, FileUse use) {
  ReadLog& log = read_log();
  const std::lock_guard lock(log.mutex);
  if (log.logged.emplace(path, use).second) log.reads.push_back({path, std::string(label), use});
}

nlohmann::json parse_json_text(const std::string& text, std::string_view what) {
  // The parser stops at a NUL byte and would take the text before it as the whole document.
  if (const size_t nul = text.find('\0'); nul != std::string::npos) {
    throw InputError(fmt::format("{} is not valid JSON (a NUL byte at byte {})", what, nul + 1));
  }
  using Event = nlohmann::json::parse_event_t;
  std::vector<std::set<std::string>> keys;  // of each object open at this point
  std::string twice;
  const nlohmann::json::parser_callback_t note_keys = [&](int depth, Event event, nlohmann::json& parsed) {
    if ((event == Event::object_start || event == Event::array_start) && depth >= kMostJsonDepth) {
      throw InputError(fmt::format("{}: arrays and objects nested more than {} deep, deeper than any input", what, kMostJsonDepth));
    }
    if (event == Event::object_start) keys.emplace_back();
    if (event == Event::object_end) keys.pop_back();
    if (event == Event::key && !keys.back().insert(parsed.get<std::string>()).second && twice.empty()) twice = parsed.get<std::string>();
    return true;
  };
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text, note_keys);
  } catch (const nlohmann::json::parse_error& e) {
    throw InputError(fmt::format("{} is not valid JSON (at byte {})", what, e.byte));
  } catch (const nlohmann::json::out_of_range& e) {
    // "[json.exception.out_of_range.406] number overflow parsing '1e400'": the part after the tag.
    const std::string message = e.what();
    const size_t tag_end = message.find("] ");
    throw InputError(fmt::format("{}: {}, beyond what a double holds", what,
                                 tag_end == std::string::npos ? message : message.substr(tag_end + 2)));
  }
  if (!twice.empty()) throw InputError(fmt::format("{}: key \"{}\" is given twice in one object", what, twice));
  return doc;
}

std::string json_excerpt(const nlohmann::json& value) {
  constexpr std::size_t kShown = 60;
  std::string text = value.dump();
  if (text.size() > kShown + 3) {
    std::size_t cut = kShown;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;  // not inside a UTF-8 character
    text = text.substr(0, cut) + "...";
  }
  return text;
}

nlohmann::json read_json_file(const std::string& path, std::string_view label, FileUse use) {
  return parse_json_text(read_text_file(path, label, use), fmt::format("{}: '{}'", label, path));
}

}  // namespace stripesim::model
