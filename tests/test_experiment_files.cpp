// Files an experiment names are read from the experiment's folder: every kind of field that can
// name one is rewritten, nothing else is.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "stripesim/model/workflows/experiment_files.hpp"

namespace stripesim::model {
namespace {

TEST(ExperimentFiles, FolderOfABareNameIsTheWorkingFolder) {
  EXPECT_EQ(folder_of("e.json"), ".");
  EXPECT_EQ(folder_of("a/b/e.json"), "a/b");
  EXPECT_EQ(folder_of("/abs/e.json"), "/abs");
}

TEST(ExperimentFiles, RelativePathsMoveAbsoluteOnesStay) {
  EXPECT_EQ(from_base("x.txt", "exp"), "exp/x.txt");
  // Kept as joined: were exp/sub a link, '..' leads out of its target, not back to exp.
  EXPECT_EQ(from_base("../x.txt", "exp/sub"), "exp/sub/../x.txt");
  EXPECT_EQ(from_base("/data/x.txt", "exp"), "/data/x.txt");
  EXPECT_EQ(from_base("x.txt", ""), "x.txt");
  EXPECT_EQ(from_base("x.txt", "."), "x.txt");
  EXPECT_EQ(from_base("x.txt", "./exp"), "exp/x.txt");
  // The same for a folder that climbs (an experiment given as link/../e.json).
  EXPECT_EQ(from_base("x.txt", "exp/link/.."), "exp/link/../x.txt");
}

// A '..' after a link, in the folder or in the path, climbs out of the link's target as the file
// system reads it: exp/link -> real/sub, so link/../d.txt is exp/real/d.txt, not exp/d.txt.
TEST(ExperimentFiles, AClimbAfterALinkLeavesItsTarget) {
  const auto dir = std::filesystem::temp_directory_path() / ("stripesim_climb_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir / "exp" / "real" / "sub");
  std::filesystem::create_directories(dir / "ci");
  std::filesystem::create_symlink("real/sub", dir / "exp" / "link");
  std::ofstream(dir / "exp" / "real" / "d.txt") << "4096\n";
  const std::string from_link = from_base("d.txt", (dir / "exp" / "link" / "..").string());
  EXPECT_TRUE(std::filesystem::exists(from_link)) << from_link;
  EXPECT_TRUE(std::filesystem::equivalent(from_link, dir / "exp" / "real" / "d.txt")) << from_link;
  const nlohmann::json moved = with_files_moved({{"mask", "documents:link/../d.txt"}}, (dir / "exp").string(), (dir / "ci").string());
  EXPECT_EQ(moved.at("mask"), "documents:../exp/real/d.txt");
  std::filesystem::remove_all(dir);
}

// A configuration copied into another folder (a baseline written away from its experiment) names
// the same files from there; into the same folder, however spelled, it stays as written.
TEST(ExperimentFiles, MovedConfigurationsNameTheSameFiles) {
  const nlohmann::json config = {{"mask", "documents:d.txt:window=64"},
                                 {"layouts", {"zigzag", "permutation:./p.json"}},
                                 {"topology", "hostfile:hosts"},
                                 {"kernel", "/abs/k.json"}};
  const nlohmann::json moved = with_files_moved(config, "/nonexistent/stripesim/exp", "/nonexistent/stripesim/ci/deep");
  EXPECT_EQ(moved.at("mask"), "documents:../../exp/d.txt:window=64");
  EXPECT_EQ(moved.at("layouts")[1], "permutation:../../exp/p.json");
  EXPECT_EQ(moved.at("topology"), "hostfile:../../exp/hosts");
  EXPECT_EQ(moved.at("kernel"), "/abs/k.json");
  EXPECT_EQ(with_files_moved(config, "/nonexistent/stripesim/exp", "/nonexistent/stripesim/./exp/"), config);
  // A loop of links is left for the reader to name (resolving it threw, an internal error).
  const auto dir = std::filesystem::temp_directory_path() / ("stripesim_moved_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir / "exp");
  std::filesystem::create_symlink("loop", dir / "exp" / "loop");
  const nlohmann::json looped = with_files_moved({{"mask", "documents:loop/d.txt"}}, (dir / "exp").string(), (dir / "ci").string());
  EXPECT_EQ(looped.at("mask"), "documents:../exp/loop/d.txt");
  std::filesystem::remove_all(dir);
}

TEST(ExperimentFiles, HostfileSpecNamesItsFile) {
  EXPECT_EQ(hostfile_of("hostfile:hosts"), "hosts");
  EXPECT_EQ(hostfile_of("HostFile:a/hosts"), "a/hosts");
  EXPECT_EQ(hostfile_of("hostfile:"), "");
  EXPECT_EQ(hostfile_of("cluster:2x8"), "");
}

TEST(ExperimentFiles, EveryFileFieldOfAConfigurationIsReadFromTheFolder) {
  const nlohmann::json config = {
      {"mask", "documents:lengths.txt:window=64"},
      {"layouts", {"zigzag", "permutation:perm.json", "block-striped:4"}},
      {"model", "models/m.json"},
      {"hardware", "h100"},
      {"kernel", "/abs/k.json"},
      {"topology", "hostfile:hosts"},
      {"description", "see docs/x.json"},
      {"seq_len", 4096}};
  const nlohmann::json read = with_files_from(config, "exp");
  EXPECT_EQ(read.at("mask"), "documents:exp/lengths.txt:window=64");
  EXPECT_EQ(read.at("layouts"), nlohmann::json({"zigzag", "permutation:exp/perm.json", "block-striped:4"}));
  EXPECT_EQ(read.at("model"), "exp/models/m.json");
  EXPECT_EQ(read.at("hardware"), "h100");         // a preset's name, not a file
  EXPECT_EQ(read.at("kernel"), "/abs/k.json");    // absolute
  EXPECT_EQ(read.at("topology"), "hostfile:exp/hosts");
  EXPECT_EQ(read.at("description"), "see docs/x.json");  // not a field that names a file
  EXPECT_EQ(read.at("seq_len"), 4096);
}

TEST(ExperimentFiles, SpecsThatNameNoFileStayAsGiven) {
  const nlohmann::json config = {{"masks", {"causal", "window:512", "documents:lognormal:512:1.0", "documents:100,200",
                                            "documents:16k,48k"}},
                                 {"topology", "cluster:2x8"},
                                 {"models", {"1b", "llama3-8b"}}};
  EXPECT_EQ(with_files_from(config, "exp"), config);
}

TEST(ExperimentFiles, GroupsAndTheStepObjectAreWalked) {
  const nlohmann::json experiment = {
      {"kind", "balance"},
      {"groups", {{{"masks", {"documents:a.txt", "causal"}}, {"layouts", {"permutation:p.json"}}}}},
      {"step", {{"model", "m.json"}}},
      {"measured", "speedups.json"}};
  const nlohmann::json read = with_files_beside(experiment, "configs/exp/e.json");
  EXPECT_EQ(read.at("groups")[0].at("masks"), nlohmann::json({"documents:configs/exp/a.txt", "causal"}));
  EXPECT_EQ(read.at("groups")[0].at("layouts")[0], "permutation:configs/exp/p.json");
  EXPECT_EQ(read.at("step").at("model"), "configs/exp/m.json");
  EXPECT_EQ(read.at("measured"), "configs/exp/speedups.json");
  EXPECT_EQ(read.at("kind"), "balance");
}

TEST(ExperimentFiles, ValuesOfTheWrongTypeAreLeftForTheirParserToRefuse) {
  const nlohmann::json config = {{"mask", 3}, {"layouts", {1, "permutation:p.json"}}, {"model", nullptr}};
  const nlohmann::json read = with_files_from(config, "exp");
  EXPECT_EQ(read.at("mask"), 3);
  EXPECT_EQ(read.at("layouts"), nlohmann::json({1, "permutation:exp/p.json"}));
  EXPECT_TRUE(read.at("model").is_null());
}

}  // namespace
}  // namespace stripesim::model
