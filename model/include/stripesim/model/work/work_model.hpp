#pragma once
// The exact work model: for every round r and device d (which holds the K/V block that started
// on device (d - r) mod N), the allowed (q, k) pairs, and the active and partial tiles a
// tile-skipping kernel with tiles TQxTK sees. Never sampled.
#include "stripesim/model/work/layout.hpp"
#include "stripesim/model/work/mask.hpp"
#include "stripesim/model/work/tile_shape.hpp"
#include "stripesim/model/work/work_matrix.hpp"

namespace stripesim::model {

// The device whose K/V block device `device` holds at `round` (Algorithm 1: K/V move to d + 1).
// Device and round inside [0, devices), as the ring's loops give them, wrap with one compare: a
// 64-bit division costs tens of cycles in the balancer's inner loop.
[[nodiscard]] constexpr DeviceId kv_source(DeviceId device, Count round, Count devices) {
  if (0 <= device && device < devices && 0 <= round && round < devices) {
    return device >= round ? device - round : device - round + devices;
  }
  return ((device - round) % devices + devices) % devices;
}

// The other way round: the device that holds the K/V block of `source` at `round`.
[[nodiscard]] constexpr DeviceId kv_holder(DeviceId source, Count round, Count devices) {
  if (0 <= source && source < devices && 0 <= round && round < devices) {
    return source + round < devices ? source + round : source + round - devices;
  }
  return ((source + round) % devices + devices) % devices;
}

// Its inverse: the round at which device `query_device` holds the K/V block of `key_device`.
[[nodiscard]] constexpr Count round_of(DeviceId query_device, DeviceId key_device, Count devices) {
  return ((query_device - key_device) % devices + devices) % devices;
}

enum class WorkDetail {
  totals,       // the four matrices
  query_tiles,  // also every (round, device)'s per-query-tile profile (what a kernel time model schedules)
  // The profiles and active tiles only: what the simulator prices, without the pair and partial
  // tile totals it never reads (two N x N matrices of 64-bit counts: 270 MB at 4096 devices).
  calls,
};

// `threads` = 0 uses the machine's hardware concurrency; results never depend on it. `tiling`
// says how the kernel cuts tiles and `slicing` what each call holds (tile_shape.hpp); the allowed
// pairs depend on neither. Slicing applies to fixed tiles (a varlen kernel under a documents
// mask already tiles each document's share on its own) and blocks of at most kMaxSlicedRuns runs.
inline constexpr size_t kMaxSlicedRuns = 8;
[[nodiscard]] Work count_work(const Layout& layout, const Mask& mask, TileShape tile, unsigned threads = 0,
                              WorkDetail detail = WorkDetail::totals, Tiling tiling = Tiling::fixed,
                              CallSlicing slicing = CallSlicing::whole);

// Whether `tiling` counts other tiles than fixed tiling under a mask of kind `mask`: varlen under
// a documents mask (any other mask is one document). Outputs for people name the tiling only then.
[[nodiscard]] bool tiling_matters(Tiling tiling, MaskKind mask);

}  // namespace stripesim::model
