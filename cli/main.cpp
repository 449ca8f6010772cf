// stripesim: predict how causal Ring Attention balances across devices before renting them.
// Exit codes: 0 success, 2 bad input (one line on stderr naming the input), 1 internal error.
#include <csignal>

#include "cli_app.hpp"

int main(int argc, char** argv) {
  // A reader that closes the pipe early (`stripesim ... | head`) is output that could not be
  // written: with SIGPIPE ignored the write fails with EPIPE and the command says so and exits 2,
  // where the signal would kill it silently (exit 141 in the shell).
  std::signal(SIGPIPE, SIG_IGN);
  return stripesim::cli::run_cli(argc, argv);
}
