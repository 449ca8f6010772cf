#pragma once
// `check` results as JUnit XML, the test report format CI systems (GitLab, Jenkins, GitHub
// actions' test reporters) display: a test suite per configuration, a test case per metric,
// a <failure> for each number that moved the bad way, went missing or broke its limit.
#include <string>
#include <vector>

#include "stripesim/model/workflows/baseline.hpp"

namespace stripesim::report {

// `name`: the top-level suite's name (the baseline file).
[[nodiscard]] std::string junit_xml(const std::vector<model::CheckedMetric>& checked, const std::string& name);

}  // namespace stripesim::report
