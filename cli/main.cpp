// stripesim: predict how causal Ring Attention balances across devices before renting them.
// Exit codes: 0 success, 2 bad input (one line on stderr naming the input), 1 internal error.
#include <csignal>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "cli_app.hpp"

int main(int argc, char** argv) {
  // A reader that closes the pipe early (`stripesim ... | head`) is output that could not be
  // written: with SIGPIPE ignored the write fails with EPIPE and the command says so and exits 2,
  // where the signal would kill it silently (exit 141 in the shell).
  std::signal(SIGPIPE, SIG_IGN);
#if defined(__GLIBC__)
  // The searches (plan, balanced, simulate over packed documents) allocate and free buffers of
  // megabytes on many threads, one candidate after another. A glibc thread arena grows its heap
  // 128 KiB past each request (an mprotect call each time) and gives its freed top back to the
  // kernel, to fault it in again page by page: a 1024-GPU packed-documents plan made 100k-180k
  // mprotect calls and spent 11-14 s of its 30-45 in the kernel. Grown 64 MiB at a time and
  // trimmed only past 1 GiB: no mprotect call, 6 s in the kernel, peak memory within a tenth.
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  mallopt(M_TOP_PAD, 64 << 20);
#endif
  return stripesim::cli::run_cli(argc, argv);
}
