#include "stripesim/report/junit.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <boost/property_tree/ptree.hpp>
#include <boost/property_tree/xml_parser.hpp>
#include <sstream>

namespace stripesim::report {
namespace {

using boost::property_tree::ptree;

std::string now_text(const model::CheckedMetric& m) { return m.now ? fmt::format("{:.10g}", *m.now) : "missing"; }

std::string message(const model::CheckedMetric& m) {
  return fmt::format("{}: baseline {:.10g}, now {} ({})", to_string(m.outcome), m.baseline, now_text(m), m.rule);
}

}  // namespace

std::string junit_xml(const std::vector<model::CheckedMetric>& checked, const std::string& name) {
  // Suites in the order their configurations first appear; property_tree escapes the text.
  std::vector<std::pair<std::string, ptree>> suites;
  std::size_t failures = 0;
  for (const auto& m : checked) {
    auto it = std::find_if(suites.begin(), suites.end(), [&](const auto& s) { return s.first == m.configuration; });
    if (it == suites.end()) {
      ptree suite;
      suite.put("<xmlattr>.name", m.configuration);
      suite.put("<xmlattr>.tests", 0);
      suite.put("<xmlattr>.failures", 0);
      suites.emplace_back(m.configuration, std::move(suite));
      it = std::prev(suites.end());
    }
    ptree& suite = it->second;
    ptree test;
    test.put("<xmlattr>.classname", m.configuration);
    test.put("<xmlattr>.name", m.metric);
    if (model::failed(m.outcome)) {
      ptree failure;
      failure.put("<xmlattr>.type", to_string(m.outcome));
      failure.put("<xmlattr>.message", message(m));
      test.add_child("failure", failure);
      suite.put("<xmlattr>.failures", suite.get<std::size_t>("<xmlattr>.failures") + 1);
      ++failures;
    } else {
      test.put("system-out", message(m));
    }
    suite.put("<xmlattr>.tests", suite.get<std::size_t>("<xmlattr>.tests") + 1);
    suite.add_child("testcase", test);
  }
  ptree root;
  root.put("<xmlattr>.name", name);
  root.put("<xmlattr>.tests", checked.size());
  root.put("<xmlattr>.failures", failures);
  for (auto& [configuration, suite] : suites) root.add_child("testsuite", suite);
  ptree doc;
  doc.add_child("testsuites", root);
  std::ostringstream out;
  boost::property_tree::write_xml(out, doc, boost::property_tree::xml_writer_make_settings<std::string>(' ', 2));
  return out.str();
}

}  // namespace stripesim::report
