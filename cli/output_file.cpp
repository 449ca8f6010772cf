#include "output_file.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <optional>
#include <utility>

#include "stripesim/model/io/input_error.hpp"
#include "stripesim/model/io/json_file.hpp"

namespace stripesim::cli {

namespace {

bool to_standard_output(const std::string& path) { return path.empty() || path == "-"; }

// Whether descriptor `fd` is open on the file `at` describes: the same device and inode, so
// /dev/stdout, /dev/fd/1 and the file a stream is redirected into all answer for it.
bool descriptor_is(int fd, const struct stat& at) {
  struct stat open_file {};
  return ::fstat(fd, &open_file) == 0 && open_file.st_dev == at.st_dev && open_file.st_ino == at.st_ino;
}

}  // namespace

bool reaches_standard_output(const std::string& path) {
  if (to_standard_output(path)) return true;
  struct stat at {};
  if (::stat(path.c_str(), &at) != 0 || !descriptor_is(STDOUT_FILENO, at)) return false;
  return !(S_ISCHR(at.st_mode) && ::isatty(STDOUT_FILENO) == 0);
}

namespace {

// The path the link `at` names (a relative target taken from the link's folder); none where
// `at` is not a link (or cannot be read as one).
std::optional<std::filesystem::path> link_target(const std::filesystem::path& at) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_symlink(fs::symlink_status(at, ec))) return std::nullopt;
  const fs::path target = fs::read_symlink(at, ec);
  if (ec) return std::nullopt;
  return target.is_absolute() ? target : at.parent_path() / target;
}

// `path` as the file it names: absolute, '.' and '..' and links resolved, a link to a file not
// yet there (a dangling link) followed to the file it would create, as writing through it does.
std::filesystem::path resolved_path(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path at = fs::absolute(path, ec);
  if (ec) return fs::path(path).lexically_normal();
  for (int hops = 0; hops < 40; ++hops) {
    const fs::path canonical = fs::weakly_canonical(at, ec);  // every existing part's links
    if (ec) break;
    const std::optional<fs::path> target = link_target(canonical);  // only a dangling link is left
    at = target.value_or(canonical);
    if (!target) break;
  }
  return at.lexically_normal();
}

}  // namespace

namespace {
bool written_directly(const std::string& path);
}  // namespace

void check_output_path(const std::string& path, const std::string& flag) {
  if (to_standard_output(path)) return;
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    throw model::InputError(fmt::format("{} '{}': is a directory, expected a file name", flag, path));
  }
  std::error_code followed;
  (void)fs::status(path, followed);
  if (followed == std::errc::too_many_symbolic_link_levels) {
    throw model::InputError(fmt::format("{} '{}': its symbolic links form a loop, expected a file name", flag, path));
  }
  const fs::path parent = fs::path(path).parent_path();
  if (!parent.empty() && !fs::is_directory(parent, ec)) {
    throw model::InputError(fs::exists(parent, ec) ? fmt::format("{} '{}': '{}' is not a directory", flag, path, parent.string())
                                                   : fmt::format("{} '{}': directory '{}' does not exist", flag, path, parent.string()));
  }
  // A file this process may not write is not replaced by one renamed over it (which would not
  // ask): read-only (no write bit, for anyone, root too) or another user's. Standard output or
  // error by another name is written through the stream already open, not reopened.
  struct stat at {};
  if (!written_directly(path) && ::stat(path.c_str(), &at) == 0 && S_ISREG(at.st_mode)) {
    if ((at.st_mode & 0222) == 0) {
      throw model::InputError(fmt::format("{} '{}': the file is read-only; make it writable or give another path", flag, path));
    }
    if (::access(path.c_str(), W_OK) != 0) {
      throw model::InputError(fmt::format("{} '{}': this user may not write the file; give another path", flag, path));
    }
  }
}

bool same_file(const std::string& a, const std::string& b) { return resolved_path(a) == resolved_path(b); }

void check_output_paths(const std::vector<std::pair<std::string, std::string>>& paths_and_flags) {
  // What an output is called in an error: its flag and path, or (no path) the command's own output.
  const auto named = [](const std::pair<std::string, std::string>& output) {
    return output.first.empty() ? std::string("the command's output") : fmt::format("{} '{}'", output.second, output.first);
  };
  for (size_t i = 0; i < paths_and_flags.size(); ++i) {
    const auto& [path, flag] = paths_and_flags[i];
    check_output_path(path, flag);
    if (reaches_standard_output(path)) {
      // Two outputs on standard output would run together (two JSON documents, XML and a table).
      for (size_t j = 0; j < i; ++j) {
        if (!reaches_standard_output(paths_and_flags[j].first)) continue;
        const auto& given = path.empty() ? paths_and_flags[j] : paths_and_flags[i];
        throw model::InputError(fmt::format("{} and {}: both go to standard output, where they would run together; give {} a file",
                                            named(paths_and_flags[j]), named(paths_and_flags[i]), given.second));
      }
      continue;
    }
    // Two outputs into one file: the second would overwrite the first.
    for (size_t j = 0; j < i; ++j) {
      const auto& [other, other_flag] = paths_and_flags[j];
      if (reaches_standard_output(other)) continue;
      if (same_file(other, path)) {
        throw model::InputError(fmt::format("{} '{}', {} '{}': the same file; give each its own", other_flag, other, flag, path));
      }
    }
  }
}

namespace {

// How an output reaches its path. A name of standard output or standard error (/dev/stdout,
// /dev/fd/2, the file either is redirected into) is written through that stream, where the
// shell's redirection put it (`>> log` appends: reopening the file would truncate it). A path
// that is not a regular file (a terminal, /dev/null, a pipe) is written as it is: renaming onto
// it would replace the device. Anything else is staged beside the file it resolves to, through
// every link (/proc/self/cwd/x.json is ./x.json: checked against the inputs and replaced whole
// as that file is).
enum class WriteWay { standard_output, standard_error, directly, staged };

WriteWay write_way(const std::string& path) {
  if (to_standard_output(path) || reaches_standard_output(path)) return WriteWay::standard_output;
  struct stat at {};
  if (::stat(path.c_str(), &at) != 0) return WriteWay::staged;  // not there yet (or unreachable: said when written)
  if (!S_ISREG(at.st_mode)) return WriteWay::directly;
  return descriptor_is(STDERR_FILENO, at) ? WriteWay::standard_error : WriteWay::staged;
}

bool written_directly(const std::string& path) { return write_way(path) != WriteWay::staged; }

// Creates the file that will replace `destination` with the mode and (where the process may)
// the owner of the file it replaces, before a byte is written: an output written over a private
// file stays private, at no moment readable by others.
void create_like(const std::string& temporary, const std::string& destination) {
  struct stat old {};
  if (::stat(destination.c_str(), &old) != 0 || !S_ISREG(old.st_mode)) return;
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) return;  // write_file says it cannot open it
  (void)::fchown(fd, old.st_uid, old.st_gid);  // refused unless privileged: the mode is kept anyway
  (void)::fchmod(fd, old.st_mode & 07777);     // after chown, which may clear set-id bits
  ::close(fd);
}

// A profile's "name" (and a kernel's "hardware"): what says two profile files are one profile.
std::pair<std::string, std::string> profile_identity(const std::string& text) {
  const nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object()) return {};
  const auto field = [&](const char* key) { return doc.contains(key) && doc[key].is_string() ? doc[key].get<std::string>() : ""; };
  return {field("name"), field("hardware")};
}

// Refuses an output onto a file the command read: writing it would destroy an input (a
// baseline, an experiment, a measurement file, a preset a lookup passed over, another profile
// it priced with), unless a profile output refits that very profile: read as the profile of its
// kind, with the same name (and, for a kernel, hardware) as `text`.
void check_not_an_input(const std::string& path, const std::string& flag, OutputKind kind, const std::string& text) {
  const std::vector<model::FileRead> reads = model::files_read();
  const auto replaceable = [&](const model::FileRead& read) {
    const bool of_kind = (kind == OutputKind::hardware_profile && read.use == model::FileUse::hardware_profile) ||
                         (kind == OutputKind::kernel_profile && read.use == model::FileUse::kernel_profile);
    if (!of_kind || !same_file(read.path, path)) return false;
    std::ifstream in(path, std::ios::binary);
    const std::string existing((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return profile_identity(existing) == profile_identity(text);
  };
  if (std::ranges::any_of(reads, replaceable)) return;
  for (const model::FileRead& read : reads) {
    if (same_file(read.path, path)) {
      throw model::InputError(
          fmt::format("{} '{}': the command reads this file ({}); give the output another path", flag, path, read.label));
    }
  }
}

// Writes `text` whole into `target` (the path itself, or a file beside it that then replaces
// it), naming `path` in its errors; a partial file beside the path is removed.
void write_file(const std::string& target, const std::string& text, const std::string& path, const std::string& flag) {
  std::ofstream out(target, std::ios::binary | std::ios::trunc);
  if (!out) throw model::InputError(fmt::format("{} '{}': cannot open for writing", flag, path));
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  out.flush();
  if (!out) {
    out.close();
    std::error_code ec;
    if (target != path) std::filesystem::remove(target, ec);
    throw model::InputError(fmt::format("{} '{}': write failed (disk full?)", flag, path));
  }
}

}  // namespace

void OutputFiles::add(std::string text, std::string path, std::string flag, OutputKind kind) {
  // Refused here, not only at commit(), so that nothing the command prints after adding it
  // (a summary line) precedes the refusal; commit() checks again for files read since.
  if (!written_directly(path)) check_not_an_input(path, flag, kind, text);
  outputs_.push_back({std::move(text), std::move(path), std::move(flag), kind});
}

void OutputFiles::add_folder(std::string dir, std::string flag) { folders_.emplace_back(std::move(dir), std::move(flag)); }

void OutputFiles::commit() {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::vector<fs::path> created;  // folders made here, parents before children
  struct Staged {
    std::string temporary;    // the file written beside its destination
    std::string destination;  // the path, or the file its link names
    const Output* output;
  };
  std::vector<Staged> staged;
  const auto undo = [&] {
    for (const Staged& s : staged) fs::remove(s.temporary, ec);
    for (auto it = created.rbegin(); it != created.rend(); ++it) fs::remove(*it, ec);  // only if empty
  };
  try {
    for (const auto& [dir, flag] : folders_) {
      std::vector<fs::path> missing;
      for (fs::path p = fs::path(dir).lexically_normal(); !p.empty() && !fs::exists(p, ec); p = p.parent_path()) {
        missing.push_back(p);
        if (p == p.parent_path()) break;
      }
      fs::create_directories(dir, ec);
      if (ec || !fs::is_directory(dir, ec)) throw model::InputError(fmt::format("{} '{}': cannot create the folder", flag, dir));
      created.insert(created.end(), missing.rbegin(), missing.rend());
    }
    std::vector<std::pair<std::string, std::string>> paths;
    for (const Output& o : outputs_) paths.emplace_back(o.path, o.flag);
    check_output_paths(paths);
    // Regular files are staged beside their paths (beside the file a link names, so the link
    // stays). A path that is not a regular file (a terminal, /dev/null, a pipe, /dev/stdout) is
    // written directly, after them: renaming onto it would replace the device itself.
    std::vector<const Output*> direct;
    for (const Output& o : outputs_) {
      if (written_directly(o.path)) {
        direct.push_back(&o);
        continue;
      }
      check_not_an_input(o.path, o.flag, o.kind, o.text);
      const std::string destination = resolved_path(o.path).string();
      staged.push_back({fmt::format("{}.tmp{}", destination, ::getpid()), destination, &o});
      create_like(staged.back().temporary, destination);
      write_file(staged.back().temporary, o.text, o.path, o.flag);
    }
    for (const Output* o : direct) {
      const WriteWay way = write_way(o->path);
      if (way == WriteWay::directly) {
        write_file(o->path, o->text, o->path, o->flag);
      } else if (way == WriteWay::standard_error) {
        (void)std::fwrite(o->text.data(), 1, o->text.size(), stderr);
        if (std::fflush(stderr) != 0 || std::ferror(stderr) != 0) {
          throw model::InputError(fmt::format("{} '{}': standard error: write failed (disk full?)", o->flag, o->path));
        }
      } else {
        // A short write sets stdout's error flag, which the flush below reports.
        (void)std::fwrite(o->text.data(), 1, o->text.size(), stdout);
      }
    }
    // What the command printed itself (a summary line) is output too.
    flush_standard_output();
    for (size_t i = 0; i < staged.size(); ++i) {
      fs::rename(staged[i].temporary, staged[i].destination, ec);
      if (ec) {
        const Output* output = staged[i].output;
        staged.erase(staged.begin(), staged.begin() + static_cast<std::ptrdiff_t>(i));
        throw model::InputError(fmt::format("{} '{}': cannot replace the file", output->flag, output->path));
      }
    }
  } catch (...) {
    undo();
    throw;
  }
}

void flush_standard_output() {
  std::cout.flush();  // CLI11 prints help and the version through iostreams
  if (!std::cout.good() || std::fflush(stdout) != 0 || std::ferror(stdout) != 0) {
    throw model::InputError("standard output: write failed (disk full or closed pipe?)");
  }
}

bool reaches_a_reader(const std::string& path) {
  const WriteWay way = write_way(path);
  if (way == WriteWay::standard_output || way == WriteWay::standard_error) return true;
  struct stat at {};
  if (way != WriteWay::directly || ::stat(path.c_str(), &at) != 0 || !S_ISCHR(at.st_mode)) return false;
  const int fd = ::open(path.c_str(), O_WRONLY | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) return false;
  const bool terminal = ::isatty(fd) != 0;
  ::close(fd);
  return terminal;
}

void write_output(const std::string& text, const std::string& path, const std::string& flag) {
  OutputFiles one;
  one.add(text, path, flag);
  one.commit();
}

}  // namespace stripesim::cli
