// The GPU collectives' data movement, replayed on the host: the row copies Ulysses launches on
// the cuda backend (straight between a shard and a whole sequence) and on the nccl backend
// (packed per peer, exchanged, unpacked) run here with memcpy over host buffers laid out as the
// device buffers are. Every element must land where the cpu backend's Ulysses puts it: device
// e's heads of every token at the token's original position, and each device's output heads back
// in every shard. Runs without a GPU: the plans are host code.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "ring_memory.hpp"
#include "stripesim/validate/ring_problem.hpp"
#include "stripesim/validate/ulysses_split.hpp"
#include "ulysses_slices.hpp"

namespace stripesim::validate::gpu {
namespace {

// One device's buffers in host memory, laid out as RingMemory lays them out on the GPU: the
// queries, one K/V slot [K | V | positions] and the fp32 output.
struct HostSlots {
  std::vector<std::byte> q, slot, out;
  DeviceSlots slots;
  explicit HostSlots(const BlockGeometry& g)
      : q(static_cast<std::size_t>(g.q_bytes())),
        slot(static_cast<std::size_t>(g.slot_bytes())),
        out(static_cast<std::size_t>(g.rows() * g.head_dim * 4)) {
    slots.geometry = g;
    slots.q = q.data();
    slots.slot[0] = slot.data();
    slots.out = reinterpret_cast<float*>(out.data());
  }
};

void replay(const RowCopy& c) {
  for (std::int64_t i = 0; i < c.rows; ++i) {
    const std::int64_t src_row = c.src_rows != nullptr ? c.src_rows[i] : i;
    const std::int64_t dst_row = c.dst_rows != nullptr ? c.dst_rows[i] : i;
    std::memcpy(static_cast<std::byte*>(c.dst) + dst_row * c.dst_pitch + c.dst_offset,
                static_cast<const std::byte*>(c.src) + src_row * c.src_pitch + c.src_offset,
                static_cast<std::size_t>(c.row_bytes));
  }
}

// A distinct 16-bit code for element (position, head, i) of Q (tensor 0), K (1) or V (2).
std::uint16_t code(Count position, Count head, Count i, int tensor) {
  const auto x = static_cast<std::uint64_t>(((position * 64 + head) * 256 + i) * 3 + tensor);
  return static_cast<std::uint16_t>((x * 0x9e3779b97f4a7c15ull) >> 48);
}

std::uint16_t* elements(void* base) { return static_cast<std::uint16_t*>(base); }

class UlyssesDataMovement : public ::testing::TestWithParam<RingCase> {
 protected:
  void SetUp() override {
    problem_ = std::make_unique<RingProblem>(GetParam());
    split_ = ulysses_split(*problem_, 2);
    const RingCase& c = problem_->ring_case();
    for (Count d = 0; d < c.devices; ++d) {
      shards_.emplace_back(BlockGeometry::of(*problem_));
      wholes_.emplace_back(BlockGeometry{c.seq_len, split_.per_device.heads, split_.per_device.kv_heads, c.head_dim});
      DeviceSlots& s = shards_.back().slots;
      const std::vector<Position>& positions = problem_->shard(d).positions;
      for (std::size_t l = 0; l < positions.size(); ++l) {
        const auto p = static_cast<Count>(positions[l]);
        for (Count i = 0; i < c.head_dim; ++i) {
          for (Count h = 0; h < c.heads; ++h) {
            elements(s.q)[(static_cast<Count>(l) * c.heads + h) * c.head_dim + i] = code(p, h, i, 0);
          }
          for (Count h = 0; h < c.kv_heads; ++h) {
            const Count at = (static_cast<Count>(l) * c.kv_heads + h) * c.head_dim + i;
            elements(s.k(0))[at] = code(p, h, i, 1);
            elements(s.v(0))[at] = code(p, h, i, 2);
          }
        }
        s.positions(0)[l] = positions[l];
      }
    }
  }

  // Device e's whole sequence holds its heads of every token at the token's original position.
  void expect_whole_sequences() const {
    const RingCase& c = problem_->ring_case();
    const Count heads = split_.per_device.heads, kv_heads = split_.per_device.kv_heads;
    for (Count e = 0; e < c.devices; ++e) {
      const DeviceSlots& w = wholes_[static_cast<std::size_t>(e)].slots;
      Count wrong = 0;
      for (Count p = 0; p < c.seq_len; ++p) {
        for (Count i = 0; i < c.head_dim; ++i) {
          for (Count h = 0; h < heads; ++h) {
            wrong += elements(w.q)[(p * heads + h) * c.head_dim + i] != code(p, split_.first_head(e) + h, i, 0);
          }
          for (Count h = 0; h < kv_heads; ++h) {
            const Count at = (p * kv_heads + h) * c.head_dim + i;
            wrong += elements(w.k(0))[at] != code(p, split_.first_kv_head(e) + h, i, 1);
            wrong += elements(w.v(0))[at] != code(p, split_.first_kv_head(e) + h, i, 2);
          }
        }
      }
      EXPECT_EQ(wrong, 0) << "device " << e;
    }
  }

  // Each device's output of the whole sequence: a value naming the token, the global head and i.
  void fill_whole_outputs() {
    const RingCase& c = problem_->ring_case();
    for (Count e = 0; e < c.devices; ++e) {
      DeviceSlots& w = wholes_[static_cast<std::size_t>(e)].slots;
      for (Count p = 0; p < c.seq_len; ++p) {
        for (Count h = 0; h < split_.per_device.heads; ++h) {
          for (Count i = 0; i < c.head_dim; ++i) {
            w.out[(p * split_.per_device.heads + h) * c.head_dim + i] =
                static_cast<float>(code(p, split_.first_head(e) + h, i, 0));
          }
        }
      }
    }
  }

  // Every shard's output holds every head of its tokens.
  void expect_shard_outputs() const {
    const RingCase& c = problem_->ring_case();
    for (Count d = 0; d < c.devices; ++d) {
      const DeviceSlots& s = shards_[static_cast<std::size_t>(d)].slots;
      const std::vector<Position>& positions = problem_->shard(d).positions;
      Count wrong = 0;
      for (std::size_t l = 0; l < positions.size(); ++l) {
        for (Count h = 0; h < c.heads; ++h) {
          for (Count i = 0; i < c.head_dim; ++i) {
            wrong += s.out[(static_cast<Count>(l) * c.heads + h) * c.head_dim + i] !=
                     static_cast<float>(code(static_cast<Count>(positions[l]), h, i, 0));
          }
        }
      }
      EXPECT_EQ(wrong, 0) << "device " << d;
    }
  }

  std::unique_ptr<RingProblem> problem_;
  UlyssesSplit split_;
  std::vector<HostSlots> shards_, wholes_;
};

TEST_P(UlyssesDataMovement, OnOneGpuCopiesLandWhereTheCpuBackendPutsThem) {
  const Count devices = problem_->ring_case().devices;
  for (Count e = 0; e < devices; ++e) {
    for (Count d = 0; d < devices; ++d) {
      for (const RowCopy& c : ulysses_gather(shards_[static_cast<std::size_t>(d)].slots,
                                             wholes_[static_cast<std::size_t>(e)].slots, split_, e)) {
        replay(c);
      }
    }
  }
  expect_whole_sequences();
  fill_whole_outputs();
  for (Count e = 0; e < devices; ++e) {
    for (Count d = 0; d < devices; ++d) {
      replay(ulysses_return(wholes_[static_cast<std::size_t>(e)].slots, shards_[static_cast<std::size_t>(d)].slots,
                            split_, e));
    }
  }
  expect_shard_outputs();
}

TEST_P(UlyssesDataMovement, BetweenGpusPackExchangeAndUnpackLandThereToo) {
  const Count devices = problem_->ring_case().devices;
  const Count tokens = problem_->block_size();
  const auto n = static_cast<std::size_t>(devices);
  // send[d][e]: what d packs for e; the exchange delivers it as e's receive buffer from d.
  const auto pack_bytes = static_cast<std::size_t>(ulysses_pack_bytes(shards_.front().slots, split_));
  EXPECT_EQ(static_cast<std::int64_t>(pack_bytes), split_.pair_bytes) << "the bytes the simulator prices";
  std::vector<std::vector<std::vector<std::byte>>> buffers(
      n, std::vector<std::vector<std::byte>>(n, std::vector<std::byte>(pack_bytes)));
  for (Count d = 0; d < devices; ++d) {
    for (Count e = 0; e < devices; ++e) {
      for (const RowCopy& c : ulysses_pack(shards_[static_cast<std::size_t>(d)].slots, split_, e,
                                           buffers[static_cast<std::size_t>(d)][static_cast<std::size_t>(e)].data())) {
        replay(c);
      }
    }
  }
  for (Count e = 0; e < devices; ++e) {
    for (Count s = 0; s < devices; ++s) {
      const std::vector<Position>& rows = problem_->shard(s).positions;
      for (const RowCopy& c : ulysses_unpack(buffers[static_cast<std::size_t>(s)][static_cast<std::size_t>(e)].data(),
                                             wholes_[static_cast<std::size_t>(e)].slots, rows.data(), tokens)) {
        replay(c);
      }
    }
  }
  expect_whole_sequences();
  fill_whole_outputs();
  const auto out_bytes = static_cast<std::size_t>(ulysses_output_pack_bytes(wholes_.front().slots, tokens));
  std::vector<std::vector<std::vector<std::byte>>> out(
      n, std::vector<std::vector<std::byte>>(n, std::vector<std::byte>(out_bytes)));
  for (Count e = 0; e < devices; ++e) {
    for (Count d = 0; d < devices; ++d) {
      replay(ulysses_output_pack(wholes_[static_cast<std::size_t>(e)].slots, problem_->shard(d).positions.data(),
                                 tokens, out[static_cast<std::size_t>(e)][static_cast<std::size_t>(d)].data()));
    }
  }
  for (Count d = 0; d < devices; ++d) {
    for (Count e = 0; e < devices; ++e) {
      replay(ulysses_output_unpack(out[static_cast<std::size_t>(e)][static_cast<std::size_t>(d)].data(),
                                   shards_[static_cast<std::size_t>(d)].slots, split_, e));
    }
  }
  expect_shard_outputs();
}

RingCase ulysses_case(const char* layout, Count devices, Count heads, Count kv_heads) {
  RingCase c;
  c.seq_len = 512;
  c.devices = devices;
  c.layout = layout;
  c.mask = "causal";
  c.tile = {64, 64};
  c.heads = heads;
  c.kv_heads = kv_heads;
  c.head_dim = 64;
  c.precision = Precision::bf16;
  c.cp = "ulysses";
  return c;
}

// K/V heads replicated (2 over 4 devices), one each (4 over 4), and grouped (8 heads, 4 K/V
// heads over 2 devices), on layouts whose tokens are scattered (striped, zigzag) and not.
INSTANTIATE_TEST_SUITE_P(Splits, UlyssesDataMovement,
                         ::testing::Values(ulysses_case("zigzag", 4, 4, 2), ulysses_case("striped", 4, 4, 4),
                                           ulysses_case("contiguous", 2, 8, 4), ulysses_case("zigzag", 2, 8, 4)),
                         [](const ::testing::TestParamInfo<RingCase>& info) {
                           const RingCase& c = info.param;
                           return c.layout + "_N" + std::to_string(c.devices) + "_heads" + std::to_string(c.heads) +
                                  "_kv" + std::to_string(c.kv_heads);
                         });

// The all-gather's copies on one GPU: every device's block, in rank order, in the gathered K/V;
// its keys' positions are the ones the kernel's tile schedule is built from
// (positions_in_rank_order).
TEST(AllGatherDataMovement, BlocksLandInRankOrderWithTheirPositions) {
  RingCase c = ulysses_case("zigzag", 4, 4, 2);
  c.cp = "allgather";
  const RingProblem problem(c);
  std::vector<HostSlots> shards;
  for (Count d = 0; d < c.devices; ++d) {
    shards.emplace_back(BlockGeometry::of(problem));
    DeviceSlots& s = shards.back().slots;
    const std::vector<Position>& positions = problem.shard(d).positions;
    for (std::size_t l = 0; l < positions.size(); ++l) {
      for (Count i = 0; i < c.kv_heads * c.head_dim; ++i) {
        elements(s.k(0))[static_cast<Count>(l) * c.kv_heads * c.head_dim + i] = code(positions[l], 0, i, 1);
        elements(s.v(0))[static_cast<Count>(l) * c.kv_heads * c.head_dim + i] = code(positions[l], 0, i, 2);
      }
      s.positions(0)[l] = positions[l];
    }
  }
  const BlockGeometry whole = GatheredKv::of(problem);
  EXPECT_EQ(whole.tokens, c.seq_len);
  std::vector<std::byte> memory(static_cast<std::size_t>(whole.slot_bytes()));
  const GatheredKv gathered{memory.data(), whole};
  for (Count d = 0; d < c.devices; ++d) {
    for (const BlockCopy& copy : gather_block(shards[static_cast<std::size_t>(d)].slots, d, gathered)) {
      std::memcpy(copy.to, copy.from, static_cast<std::size_t>(copy.bytes));
    }
  }
  const std::vector<Position> keys = positions_in_rank_order(problem);
  ASSERT_EQ(static_cast<Count>(keys.size()), c.seq_len);
  const auto* positions = reinterpret_cast<const std::int64_t*>(gathered.positions());
  Count wrong = 0;
  for (Count key = 0; key < c.seq_len; ++key) {
    wrong += positions[key] != keys[static_cast<std::size_t>(key)];
    for (Count i = 0; i < c.kv_heads * c.head_dim; ++i) {
      wrong += elements(gathered.k())[key * c.kv_heads * c.head_dim + i] != code(keys[static_cast<std::size_t>(key)], 0, i, 1);
      wrong += elements(gathered.v())[key * c.kv_heads * c.head_dim + i] != code(keys[static_cast<std::size_t>(key)], 0, i, 2);
    }
  }
  EXPECT_EQ(wrong, 0);
  // Rank order: device 0's block first, each block in its local order.
  EXPECT_EQ(std::vector<Position>(keys.begin(), keys.begin() + problem.block_size()), problem.shard(0).positions);
}

}  // namespace
}  // namespace stripesim::validate::gpu
