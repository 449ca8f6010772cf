#pragma once
// The shared shape of every bad-input test: a named command line, the piece of the one-line
// message it must print, and the contract every row checks (exit 2, nothing on stdout, exactly
// one line on stderr naming the input).
#include <gtest/gtest.h>

#include <ostream>
#include <string>

#include "cli_runner.hpp"

namespace stripesim::testing {

struct BadInput {
  const char* name;  // the test's name
  std::string args;  // after `stripesim`
  const char* message;
};

inline void PrintTo(const BadInput& input, std::ostream* os) { *os << input.args; }

// A quoted path to a fixture under tests/data.
inline std::string data(const char* file) {
  return std::string("'") + STRIPESIM_SOURCE_DIR + "/tests/data/" + file + "'";
}

inline void expect_rejected(const CliResult& r, const BadInput& input) {
  EXPECT_EQ(r.exit_code, 2) << input.args << "\n" << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  ASSERT_FALSE(r.err.empty());
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "exactly one line: " << r.err;
  EXPECT_NE(r.err.find(input.message), std::string::npos) << "message '" << r.err << "' lacks '" << input.message << "'";
}

inline std::string bad_input_name(const ::testing::TestParamInfo<BadInput>& info) { return info.param.name; }

}  // namespace stripesim::testing
