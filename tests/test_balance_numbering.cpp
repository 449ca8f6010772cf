// The balanced layout's numbering of the devices for the lockstep (internal to the work model,
// model/src/work/balance_ring_cost.hpp): its incremental bookkeeping of each round's largest cells
// checked against numbered_cost, which prices a numbering from scratch.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>

#include "balance_ring_cost.hpp"

namespace stripesim::model::balance {
namespace {

// Random pair work, values drawn from a small range so that rounds have ties.
std::vector<Count> random_work(size_t devices, Count most, std::mt19937_64& rng) {
  std::uniform_int_distribution<Count> value(0, most);
  std::vector<Count> work(devices * devices);
  for (Count& w : work) w = value(rng);
  return work;
}

// The devices as numbered: order[number] = number.
std::vector<size_t> as_numbered(size_t devices) {
  std::vector<size_t> order(devices);
  std::iota(order.begin(), order.end(), size_t{0});
  return order;
}

// Small rings end in a local optimum (their swap budget is far from spent): a permutation that no
// swap of two numbers improves, priced from scratch, and no worse than the devices as numbered.
// Rings larger than the 8 cells a round lists exercise the list's refills.
TEST(BalanceNumbering, EndsWhereNoSwapLowersTheLockstepPricedFromScratch) {
  std::mt19937_64 rng(2024);
  for (const size_t devices : {3, 4, 5, 7, 9, 12, 16, 23}) {
    for (const Count most : {3, 1000}) {
      for (int trial = 0; trial < 4; ++trial) {
        const std::vector<Count> work = random_work(devices, most, rng);
        const std::vector<size_t> order = lockstep_numbering(work, devices);
        std::vector<size_t> sorted = order;
        std::ranges::sort(sorted);
        const std::vector<size_t> identity = as_numbered(devices);
        ASSERT_EQ(sorted, identity) << "not a permutation, N " << devices;
        const Count found = numbered_cost(work, order).lockstep;
        EXPECT_LE(found, numbered_cost(work, identity).lockstep) << "N " << devices;
        for (size_t x = 0; x < devices; ++x) {
          for (size_t y = x + 1; y < devices; ++y) {
            std::vector<size_t> swapped = order;
            std::swap(swapped[x], swapped[y]);
            ASSERT_GE(numbered_cost(work, swapped).lockstep, found)
                << "swapping numbers " << x << " and " << y << " lowers the lockstep, N " << devices << ", values to "
                << most << ", trial " << trial;
          }
        }
      }
    }
  }
}

// Renumbering moves work between rounds, never between devices: the busiest device's load stays.
TEST(BalanceNumbering, KeepsEveryDevicesLoad) {
  std::mt19937_64 rng(7);
  const size_t devices = 40;
  const std::vector<Count> work = random_work(devices, 500, rng);
  const std::vector<size_t> identity = as_numbered(devices);
  const std::vector<size_t> order = lockstep_numbering(work, devices);
  EXPECT_EQ(numbered_cost(work, order).busiest, numbered_cost(work, identity).busiest);
  EXPECT_LT(numbered_cost(work, order).lockstep, numbered_cost(work, identity).lockstep);
}

}  // namespace
}  // namespace stripesim::model::balance
