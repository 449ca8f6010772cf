// The presets looked up by name: every preset of a folder is read, once per catalog, so that a
// name two presets answer to and a preset that does not read are refused whichever name is
// asked for (before, name order decided: the first file won, and a broken file failed only the
// names that sorted after it).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "stripesim/model/io/config_catalog.hpp"
#include "stripesim/model/io/input_error.hpp"
#include "temp_path.hpp"

namespace stripesim::model {
namespace {

namespace fs = std::filesystem;

// A copy of the shipped presets (models and hardware) to break.
fs::path copied_presets(const std::string& name) {
  const fs::path root = fresh_temp_dir(name);
  for (const char* kind : {"models", "hardware"}) {
    fs::copy(fs::path(STRIPESIM_SOURCE_DIR) / "configs" / kind, root / kind, fs::copy_options::recursive);
  }
  return root;
}

void write(const fs::path& file, const std::string& text) { std::ofstream(file) << text; }

// The H100's profile under another name: its aliases ("h100", ...) still its.
std::string h100_renamed(const std::string& name) {
  std::ifstream in(fs::path(STRIPESIM_SOURCE_DIR) / "configs" / "hardware" / "h100-sxm.json");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string old_name = "\"name\": \"h100-sxm\"";
  const size_t at = text.find(old_name);
  EXPECT_NE(at, std::string::npos);
  return text.replace(at, old_name.size(), fmt::format("\"name\": \"{}\"", name));
}

std::string error_of(const auto& lookup) {
  try {
    lookup();
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

TEST(ConfigCatalog, ANameTwoPresetsAnswerToIsRefused) {
  const fs::path root = copied_presets("stripesim_catalog_twice_");
  // Sorts after h100-sxm.json: name order gave "h100" to h100-sxm.json and said nothing.
  write(root / "hardware" / "zz-h100-copy.json", h100_renamed("zz-h100-copy"));
  const ConfigCatalog catalog(root.string());
  const std::string refused =
      fmt::format("--hardware 'h100': two presets answer to it, {} and {}; rename one or give a path to a JSON file",
                  (root / "hardware" / "h100-sxm.json").string(), (root / "hardware" / "zz-h100-copy.json").string());
  EXPECT_EQ(error_of([&] { (void)catalog.hardware("H100"); }), "--hardware 'H100'" + refused.substr(17));
  EXPECT_EQ(error_of([&] { (void)catalog.hardware("h100"); }), refused);
  EXPECT_EQ(error_of([&] { (void)catalog.find_hardware("h100"); }), refused);
  // The names only one answers to still find it, the copy by its own names too.
  EXPECT_EQ(catalog.hardware("h100-sxm").name, "h100-sxm");
  EXPECT_EQ(catalog.hardware("ZZ-H100-COPY").name, "zz-h100-copy");
  EXPECT_EQ(catalog.hardware("a100").name, "a100-80gb");
  // A name and a file's stem are names alike: a model file whose stem another model's name is.
  std::ifstream in(root / "models" / "1b.json");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  write(root / "models" / "3b-copy.json", text.replace(text.find("\"1b\""), 4, "\"3b\""));
  EXPECT_EQ(error_of([&] { (void)ConfigCatalog(root.string()).model("3b"); }),
            fmt::format("--model '3b': two presets answer to it, {} and {}; rename one or give a path to a JSON file",
                        (root / "models" / "3b-copy.json").string(), (root / "models" / "3b.json").string()));
  fs::remove_all(root);
}

TEST(ConfigCatalog, APresetThatDoesNotReadRefusesEveryNameOfItsFolder) {
  const fs::path root = copied_presets("stripesim_catalog_broken_");
  for (const char* broken : {"aa-broken.json", "zz-broken.json"}) {  // before and after every name
    const fs::path file = root / "hardware" / broken;
    write(file, "{\"name\": ");
    const ConfigCatalog catalog(root.string());
    // The file's own error, then why a lookup of another name read it.
    const auto refused = [&](const std::string& wanted, const std::string& error) {
      EXPECT_TRUE(error.starts_with(file.string() + ": ")) << error;
      EXPECT_TRUE(error.ends_with(fmt::format("; every preset of {} must read (a lookup of '{}' reads them all)",
                                              (root / "hardware").string(), wanted)))
          << error;
    };
    refused("a100", error_of([&] { (void)catalog.hardware("a100"); }));
    refused("h100", error_of([&] { (void)catalog.hardware("h100"); }));
    refused("h200", error_of([&] { (void)catalog.find_hardware("h200"); }));
    refused("NVIDIA H100 80GB HBM3", error_of([&] { (void)catalog.hardware_for_device("NVIDIA H100 80GB HBM3"); }));
    // Another folder, and a path, do not read it.
    EXPECT_EQ(catalog.model("1b").name, "1b");
    EXPECT_EQ(catalog.hardware((root / "hardware" / "h200.json").string()).name, "h200");
    fs::remove(file);
  }
  // A folder named like a preset is one that does not read.
  fs::create_directory(root / "hardware" / "zz-folder.json");
  EXPECT_EQ(error_of([&] { (void)ConfigCatalog(root.string()).hardware("h100"); }),
            fmt::format("{0}: '{0}' is a directory, expected a file; every preset of {1} must read (a lookup of 'h100' reads them all)",
                        (root / "hardware" / "zz-folder.json").string(), (root / "hardware").string()));
  fs::remove_all(root);
}

TEST(ConfigCatalog, AnUnknownNameIsNoneForFindAndRefusedForALookup) {
  const fs::path root = copied_presets("stripesim_catalog_unknown_");
  const ConfigCatalog catalog(root.string());
  EXPECT_FALSE(catalog.find_hardware("h900").has_value());
  EXPECT_EQ(catalog.find_hardware("H200")->name, "h200");
  const std::string error = error_of([&] { (void)catalog.hardware("h900"); });
  EXPECT_TRUE(error.starts_with("--hardware 'h900': unknown (did you mean ")) << error;
  // No root: no folders, every name unknown (a comparison whose profiles are all in memory).
  EXPECT_FALSE(ConfigCatalog("").find_hardware("h100").has_value());
  // No folder: none to find, and a lookup says which folder is missing.
  const ConfigCatalog empty((root / "nothing").string());
  EXPECT_FALSE(empty.find_hardware("h100").has_value());
  EXPECT_EQ(error_of([&] { (void)empty.hardware("h100"); }),
            fmt::format("--hardware 'h100': configuration folder '{}' does not exist (set STRIPESIM_CONFIG_DIR)",
                        (root / "nothing" / "hardware").string()));
  fs::remove_all(root);
}

// The driver's name for a GPU finds the preset claiming the longest part of it; two presets that
// claim as long a part are refused as a name two presets answer to is (file order picked one).
TEST(ConfigCatalog, TwoPresetsClaimingADeviceAlikeAreRefused) {
  const fs::path root = copied_presets("stripesim_catalog_device_");
  write(root / "hardware" / "zz-h100-copy.json", h100_renamed("zz-h100-copy"));  // its device_names too
  const ConfigCatalog catalog(root.string());
  EXPECT_EQ(error_of([&] { (void)catalog.hardware_for_device("NVIDIA H100 80GB HBM3"); }),
            fmt::format("device 'NVIDIA H100 80GB HBM3': two hardware presets claim it, {} and {}; rename the device_names of one "
                        "or give --hardware",
                        (root / "hardware" / "h100-sxm.json").string(), (root / "hardware" / "zz-h100-copy.json").string()));
  // A longer name one of them claims alone still decides: the PCIe card's.
  EXPECT_EQ(catalog.hardware_for_device("NVIDIA H100 PCIe")->name, "h100-pcie");
  EXPECT_EQ(catalog.hardware_for_device("NVIDIA H200")->name, "h200");
  fs::remove_all(root);
}

TEST(ConfigCatalog, AFolderIsReadOncePerCatalogAndItsCopies) {
  const fs::path root = copied_presets("stripesim_catalog_once_");
  const ConfigCatalog catalog(root.string());
  const ConfigCatalog copy = catalog;
  EXPECT_EQ(catalog.hardware("h100").sms, 132);
  // What a lookup read stays what this catalog answers, through any copy: the files are not
  // read again. A new catalog (a new command) reads them afresh.
  write(root / "hardware" / "zz-broken.json", "[");
  EXPECT_EQ(copy.hardware("h100").sms, 132);
  EXPECT_EQ(catalog.hardware("a100").name, "a100-80gb");
  EXPECT_TRUE(error_of([&] { (void)ConfigCatalog(root.string()).hardware("h100"); }).starts_with((root / "hardware" / "zz-broken.json").string()));
  // The models are their own folder: read at their first lookup, after the file above.
  write(root / "models" / "zz-broken.json", "[");
  EXPECT_TRUE(error_of([&] { (void)catalog.model("1b"); }).starts_with((root / "models" / "zz-broken.json").string()));
  fs::remove_all(root);
}

TEST(ConfigCatalog, ThreadsShareOneCatalog) {
  const fs::path root = copied_presets("stripesim_catalog_threads_");
  const ConfigCatalog catalog(root.string());
  const std::vector<std::string> names{"h100", "a100", "h200", "mi300x", "b200", "tpu-v4", "cpu", "h800"};
  std::vector<std::string> found(names.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < names.size(); ++i) {
    threads.emplace_back([&, i] { found[i] = catalog.hardware(names[i]).name + "/" + catalog.model("7b").name; });
  }
  for (auto& thread : threads) thread.join();
  const std::vector<std::string> expected{"h100-sxm/7b", "a100-80gb/7b", "h200/7b", "mi300x/7b",
                                          "b200/7b",     "tpu-v4/7b",    "cpu/7b",  "h800-sxm/7b"};
  EXPECT_EQ(found, expected);
  fs::remove_all(root);
}

}  // namespace
}  // namespace stripesim::model
