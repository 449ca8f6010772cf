#pragma once
// `simulate` entries of a regression baseline (model/workflows/baseline.hpp): a simulate experiment's
// fields; metrics per layout from the CSV row (the scope's time, speedup over contiguous, K/V
// memory and, for a layer or a step, its breakdown, throughput, MFU and memory), named
// "<layout>.<column>".
#include "stripesim/model/workflows/baseline.hpp"

namespace stripesim::sim {

[[nodiscard]] model::BaselineEntryKind simulate_baseline_kind(const model::ConfigCatalog& catalog);

}  // namespace stripesim::sim
