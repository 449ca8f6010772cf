// libFuzzer target: every parser of a one-line spec (sizes, tiles, masks and document-length
// distributions, layouts, meshes), and for what parses, a small work count. Any exception other
// than InputError, any crash or sanitizer report is a bug.
#include <cstddef>
#include <cstdint>
#include <string>

#include "stripesim/model/io/input_error.hpp"
#include "stripesim/model/io/size_parse.hpp"
#include "stripesim/model/work/layout_spec.hpp"
#include "stripesim/model/work/mask.hpp"
#include "stripesim/model/work/tile_shape.hpp"
#include "stripesim/model/work/work_model.hpp"
#include "stripesim/model/workflows/sweep.hpp"

using namespace stripesim::model;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const std::string spec(reinterpret_cast<const char*>(data) + 1, size - 1);
  // Paths would let the fuzzer read devices such as /dev/zero: file specs are tested elsewhere.
  if (spec.find('/') != std::string::npos) return 0;
  constexpr Count kSeqLen = 1536;
  constexpr Count kDevices = 4;
  try {
    switch (data[0] % 5) {
      case 0: (void)parse_count(spec, "fuzz"); break;
      case 1: (void)parse_tile_shape(spec); break;
      case 2: {
        const Mask mask = parse_mask(spec, kSeqLen);
        (void)count_work(Layout::striped(kSeqLen, kDevices), mask, {64, 32}, 1);
        break;
      }
      case 3: {
        const Mask mask = Mask::documents(kSeqLen, {512, 1024});
        const Layout layout = parse_layout(spec, kSeqLen, kDevices, LayoutContext{&mask, {64, 64}});
        (void)count_work(layout, mask, {64, 64}, 1);
        break;
      }
      case 4: (void)parse_mesh(spec, "fuzz"); break;
    }
  } catch (const InputError&) {
  }
  return 0;
}
