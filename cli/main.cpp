// stripesim: predict how causal Ring Attention balances across devices before renting them.
// Exit codes: 0 success, 2 bad input (one line on stderr naming the input), 1 internal error.
#include "cli_app.hpp"

int main(int argc, char** argv) { return stripesim::cli::run_cli(argc, argv); }
