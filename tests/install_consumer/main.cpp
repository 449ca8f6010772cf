// Counts, with the installed stripesim::model, the active tiles of contiguous and striped
// layouts on a small causal case, and prints them the way run_consumer_test.cmake compares them
// (with `stripesim analyze` on the same case, and with the golden values it pins). fmt comes
// through the package's own dependencies.
#include <fmt/format.h>

#include <algorithm>

#include "stripesim/model/work/layout.hpp"
#include "stripesim/model/work/mask.hpp"
#include "stripesim/model/work/tile_shape.hpp"
#include "stripesim/model/work/work_model.hpp"

int main() {
  namespace m = stripesim::model;
  constexpr m::Count seq_len = 4096, devices = 4;
  const m::TileShape tile{.query = 256, .key = 256};
  const m::Mask mask = m::Mask::causal(seq_len);
  for (const m::Layout& layout : {m::Layout::contiguous(seq_len, devices), m::Layout::striped(seq_len, devices)}) {
    const m::Work work = m::count_work(layout, mask, tile);
    const auto per_device = work.active_tiles.device_totals();
    fmt::print("{} active_tiles total={} busiest={}\n", layout.name(), work.active_tiles.total(),
               *std::max_element(per_device.begin(), per_device.end()));
  }
  return 0;
}
