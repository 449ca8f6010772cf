#pragma once
// Writing a command's outputs: to stdout, or to files that appear whole or not at all
// (written beside its destination, then renamed), so a failure never leaves a partial file.
#include <string>
#include <utility>
#include <vector>

namespace stripesim::cli {

// A command's outputs, written together so that a failure anywhere (a full disk, a device or a
// closed pipe as one of them) leaves none of its files behind: commit() creates the folders,
// writes every regular file beside its path, then the outputs that cannot be staged (standard
// output or error under any name, such as /dev/stdout, written through the stream; a device such
// as /dev/null), flushes what the command has printed, and only then renames the staged files
// into place (with the mode of the file they replace). On failure it removes what it staged and the folders it
// created, and throws model::InputError naming the flag and path that failed.
// What an output is: a result, or a kernel or hardware profile that a fit writes and may write
// over the profile of its kind it started from (the refit in place of a shipped profile's
// "fitted by"), never over another file the command read (a preset a lookup passed over, a
// profile of the other kind).
enum class OutputKind { result, hardware_profile, kernel_profile };

class OutputFiles {
 public:
  // `path` "" or "-" is standard output. No output may overwrite a file the command read
  // (model::files_read), but a profile output may replace the profile of its kind read.
  void add(std::string text, std::string path, std::string flag = "--output", OutputKind kind = OutputKind::result);
  // A folder the files added under it go into, created by commit() (and removed again, if it
  // made it and a write fails).
  void add_folder(std::string dir, std::string flag = "--out-dir");
  void commit();

 private:
  struct Output {
    std::string text, path, flag;
    OutputKind kind = OutputKind::result;
  };
  std::vector<Output> outputs_;
  std::vector<std::pair<std::string, std::string>> folders_;  // (dir, flag)
};

// One output alone: OutputFiles with one file. Throws model::InputError naming `flag` (the
// option that gave the path) and `path` when it cannot be written.
void write_output(const std::string& text, const std::string& path, const std::string& flag = "--output");

// Flushes standard output (stdio and iostreams) and throws model::InputError when it did not take
// everything written to it (a full disk, a closed pipe): what a command printed must reach its
// reader.
void flush_standard_output();

// The checks write_output makes before it writes (not a directory, its folder exists), for
// every output of a command at once: run before the first file is written, so one bad path
// leaves no other file behind. Each pair is (path, the flag that gave it); "" and "-" pass.
void check_output_path(const std::string& path, const std::string& flag = "--output");
void check_output_paths(const std::vector<std::pair<std::string, std::string>>& paths_and_flags);

// Whether `path` reaches what this process's standard output is: "" or "-", or another name of it
// (/dev/stdout, /dev/fd/1, the file stdout is redirected into), where two outputs would run
// together as with "-". Not a device other than a terminal (/dev/null): it takes any number of
// outputs unmixed.
[[nodiscard]] bool reaches_standard_output(const std::string& path);

// Whether `path` reaches standard output or error (by any name) or a terminal: where binary
// output (layout --format npy) would land in front of a reader instead of in a file.
[[nodiscard]] bool reaches_a_reader(const std::string& path);

// Whether two paths name one file (after resolving '.', '..' and links; the file need not exist).
[[nodiscard]] bool same_file(const std::string& a, const std::string& b);


}  // namespace stripesim::cli
