// The `balanced` layout: pieces of the sequence dealt so that the ring's slowest device and its
// lockstep time (the per-round maximum summed over rounds) are as small as the tiles allow.
//
// Why it can price work exactly: cut the sequence into blocks of B = lcm(TQ, TK) tokens aligned
// where the kernel's tiling starts (the sequence's first token under fixed tiling, every
// document's first token under varlen). When every device holds whole blocks in sequence order,
// each of its local tiles is a tile of the sequence's own tiling, so a piece's work over all
// rounds (its query tiles times the key tiles they reach) does not depend on where the other
// pieces go, and no layout of whole blocks computes more tiles than the sequence has. The busiest
// device is then a number-partitioning problem over pieces, and the lockstep time depends only
// on which pieces that read each other's keys sit on different devices. When B does not divide
// n/N, the sequence's last N x (n/N mod B) tokens are one run per device, last in its local
// order: each run starts its own local tile, so that stays exact.
//
// The search. Documents heavier than a fraction of a device's share (none, any, 1/4, 1/2 or 1:
// each is a candidate; "any" spreads every document with a block per chunk, doc-zigzag on the
// tile grid) are spread zigzag over every device, which balances their cross-device work round
// by round. The rest is cut into pieces of at most S blocks (S from a device's share down to one
// block, halving: each a candidate) at every free boundary (where no tile crosses) and, in longer
// runs, where the fewest tiles cross; the pieces are dealt longest-processing-time first with
// every device holding n/N tokens, then pieces or end blocks of equal length are swapped off the
// busiest device while that lowers it. Each candidate is also tried with its devices renumbered
// in sequence order (neighbouring pieces on neighbouring devices), and where the tiling is the
// sequence's block grid (fixed tiling, or varlen with every document starting on it) PyTorch's
// round robin of the same blocks (ptrr_layout.hpp; packed documents and windows) and contiguous
// itself are candidates as well. A single sequence (causal, window) tries piece sizes down to a
// quarter share only.
// Scored exactly (busiest device, lockstep, and the ring without a barrier with free links,
// metrics.hpp), the candidates within kBusiestSlack of the least busy are kept, the best few with
// a lockstep to gain polished by swaps that lower the lockstep without raising the busiest device
// (where their graph of pieces is small enough) and then by renumbering their devices (which
// device meets which in each round) for the lockstep, and the lowest lockstep is the pick; the
// lowest lockstep among all candidates no slower than the pick without a barrier then wins (a
// little busier, it is faster however the ring runs). What users have already is the bar: the
// pick is within kBusiestSlack of PyTorch's round robin's busiest device and below its lockstep
// where that can be (the round robin polished, if nothing else is), and under varlen no busier
// and no slower in lockstep than doc-zigzag, both counted exactly (doc-zigzag itself otherwise).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>

#include "balance_assignment.hpp"
#include "balance_pricing.hpp"
#include "balance_ring_cost.hpp"
#include "balance_ring_graph.hpp"
#include "stripesim/model/io/input_error.hpp"
#include "stripesim/model/work/document_layouts.hpp"
#include "stripesim/model/work/metrics.hpp"
#include "stripesim/model/work/parallel_for.hpp"
#include "stripesim/model/work/ptrr_layout.hpp"
#include "stripesim/model/work/work_model.hpp"

namespace stripesim::model {
namespace {

// The pieces, their pricing, their placement and what the ring pays for it: balance_*.hpp.
using balance::Assignment;
using balance::block_starts;
using balance::cost_of;
using balance::cut_pieces;
using balance::deal;
using balance::doc_zigzag_is_the_bar;
using balance::exact_tiles;
using balance::lockstep_numbering;
using balance::most_pieces_of_a_document;
using balance::numbered_cost;
using balance::pair_work;
using balance::PairWork;
using balance::Piece;
using balance::Pricing;
using balance::refine;
using balance::renumbered;
using balance::ring_cost;
using balance::ring_order;
using balance::RingCost;
using balance::RingGraph;
using balance::spread_zigzag;

// How much busier than the least busy candidate's busiest device a candidate may be and still
// win on lockstep: below what a kernel's timing resolves, far below what lockstep gains.
constexpr double kBusiestSlack = 0.005;
// How many candidates are polished for lockstep, and how many pieces each polish tries to move.
constexpr size_t kPolished = 2;
constexpr Count kMovesTried = 4096;
// The most reads a candidate's graph may hold to be polished by swaps (numbering its devices needs
// no graph). Packed documents' candidates hold up to about 300k; the round robin of blocks under a
// wide window holds millions (1M tokens in 128-token blocks, a 100k window: 4.7M), whose graph
// alone takes a second to build and whose polish takes seconds for under 0.1 % of lockstep.
constexpr Count kMostReadsPolished = Count{1} << 20;

// Candidates built side by side each hold a few N x N arrays of pair work at their peak (priced:
// pair_work's and numbered_cost's; polished: the work, lockstep_numbering's two copies of it in
// number order): as many run at once as fit in kScratchBytes, so that a many-core machine does not
// multiply a large ring's arrays by its cores (4096 devices: 128 MiB an array, 4 priced at once).
constexpr double kScratchBytes = 1024.0 * 1024.0 * 1024.0;
// At most `threads` (0: one per core).
unsigned threads_within_scratch(Count devices, int arrays, unsigned threads) {
  const double per_job = arrays * static_cast<double>(sizeof(Count)) * static_cast<double>(devices) * static_cast<double>(devices);
  return static_cast<unsigned>(std::clamp(std::floor(kScratchBytes / per_job), 1.0, static_cast<double>(threads_or_cores(threads))));
}

}  // namespace

void check_balanced_layout(const Mask& mask, Count devices, Count chunk) {
  if (devices < 1) throw InputError(Input::devices, std::to_string(devices), "must be at least 1");
  // It prices every pair of devices (N x N work, several copies): 4096 devices take 1.1 GB and
  // 86 s on 16M tokens; 65536 would need tens of GB before its first swap.
  constexpr Count kMostBalancedDevices = 4096;
  if (devices > kMostBalancedDevices) {
    throw InputError(Input::devices, std::to_string(devices),
                     fmt::format("layout balanced takes at most {} devices (it prices every pair of devices)", kMostBalancedDevices));
  }
  require_seq_len_divisible(mask.seq_len(), devices, "balanced", "N");
  if (chunk < 0) throw InputError(Input::layouts, fmt::format("balanced:{}", chunk), "the chunk must be at least 1 token");
  // A piece is dealt whole to one device: one longer than a device's share would be cut to it.
  if (chunk > mask.seq_len() / devices) {
    throw InputError(Input::layouts, fmt::format("balanced:{}", chunk),
                     fmt::format("the chunk must be at most a device's share, n / N = {} tokens", mask.seq_len() / devices));
  }
}

BalanceResult balanced_layout(const Mask& mask, Count devices, TileShape tile, Count chunk, Tiling tiling, unsigned threads) {
  check_balanced_layout(mask, devices, chunk);
  const Count n = mask.seq_len();
  const Count c = n / devices;
  Pricing pricing(mask, tile, tiling);
  // Blocks of lcm(TQ, TK) keep query and key tiles whole; a block longer than a device's share
  // cannot be dealt, so the query tile serves then.
  const Count lcm = std::lcm(tile.query, tile.key);
  const Count block = lcm <= c ? lcm : std::min(tile.query, c);
  // When B does not divide n / N, the sequence's last N x (n / N mod B) tokens are cut into one
  // run per device, pinned there: last in every device's local order, each starts a local tile
  // (under varlen, each document's part of it does) and shifts no other tile. The rest (the body)
  // is dealt in whole blocks. Under varlen that needs the body to end on its document's block
  // grid (it does when every document is padded to a multiple of B, as --pad-documents does for
  // 2N >= B); otherwise there is no tail and a device's share may end inside a block. (A longer
  // tail that would end the body on the grid, tried, cut long documents into runs whose reads
  // crowd a few rounds: worse than the inexact cut.)
  const Position body = [&] {
    const Position cut = n - devices * (c % block);
    if (cut == n) return n;
    return (cut - pricing.origin(cut)) % block == 0 ? cut : n;
  }();
  const Count fragment = (n - body) / devices;
  pricing.set_tail(body, fragment);
  const std::vector<Position> blocks = block_starts(pricing, block, body);
  Assignment tail(devices);
  for (Count d = 0; fragment > 0 && d < devices; ++d) {
    const Piece run{body + d * fragment, fragment, pricing.cost(body + d * fragment, fragment)};
    tail.pinned[static_cast<size_t>(d)].push_back(run);
    tail.load[static_cast<size_t>(d)] += run.cost;
  }

  // Every document's blocks (those starting in it; a causal or window mask is one document) and
  // the tiles its queries compute.
  const std::vector<Position> whole{0, n};
  const auto& documents = mask.kind() == MaskKind::documents ? mask.document_starts() : whole;
  std::vector<size_t> first_block;
  for (const Position start : documents) {
    first_block.push_back(static_cast<size_t>(std::lower_bound(blocks.begin(), blocks.end(), start) - blocks.begin()));
  }
  std::vector<Count> cost_before{0};  // prefix sums of block costs
  for (size_t b = 0; b < blocks.size(); ++b) {
    const Position end = b + 1 < blocks.size() ? blocks[b + 1] : body;
    cost_before.push_back(cost_before.back() + pricing.cost(blocks[b], end - blocks[b]));
  }
  const double bound = static_cast<double>(cost_before.back()) / static_cast<double>(devices);

  // Piece sizes tried, in blocks: the one asked for, or halvings of a device's share down to one
  // block (a few large pieces keep documents whole; small ones balance finer). Documents heavier
  // than a fraction of a device's bound are spread zigzag over every device instead (when they
  // have a block for each of the 2N chunks): kept whole they would not fit, and cut into a few
  // pieces their cross-device work would fall on a few rounds of a few devices.
  std::vector<Count> sizes;
  if (chunk > 0) {
    sizes.push_back(std::max<Count>(1, chunk / block));
  } else {
    // One sequence (causal, window): every boundary is crossed alike, so small pieces only add
    // cross-device work; a device's share down to a quarter of it is enough.
    const Count whole_share = std::max<Count>(1, c / block);
    const Count smallest = mask.kind() == MaskKind::documents ? 1 : std::max<Count>(1, whole_share / 4);
    for (Count s = whole_share; s >= smallest; s /= 2) sizes.push_back(s);
  }
  struct Candidate {
    Assignment assignment;
    Count chunk_tokens;
    RingCost cost;
    Count reads = 0;  // pieces its query tiles' keys span: at least the size of its RingGraph
  };
  std::vector<Candidate> candidates;
  // A varlen kernel takes one cu_seqlens entry per piece of a document: candidates that cut a
  // document into more pieces than doc-zigzag's 2N (plus the tail's N runs where there is a tail)
  // are not proposed (unless nothing else is).
  const bool bounded_pieces = tiling_matters(tiling, mask.kind());
  const Count most_pieces = (fragment > 0 ? 3 : 2) * devices;
  std::vector<Candidate> unbounded;
  // a priced, and a with its devices renumbered in sequence order where that is another
  // numbering; nothing when it cuts a document into more pieces than a varlen call takes (then
  // `too_many_pieces` holds a). Independent of every other candidate: built side by side.
  struct Priced {
    std::vector<Candidate> candidates;
    std::optional<Assignment> too_many_pieces;
  };
  const auto price = [&](Assignment a, Count chunk_tokens) {
    Priced out;
    if (bounded_pieces && most_pieces_of_a_document(pricing, a) > most_pieces) {
      out.too_many_pieces = std::move(a);
      return out;
    }
    const std::vector<size_t> order = ring_order(a);
    std::optional<Assignment> ordered;
    if (!std::ranges::is_sorted(order)) ordered = renumbered(a, order);
    for (Assignment* each : {&a, ordered ? &*ordered : nullptr}) {
      if (each == nullptr) continue;
      const PairWork pair = pair_work(pricing, *each);
      out.candidates.push_back({std::move(*each), chunk_tokens, cost_of(pair, devices), pair.reads});
    }
    return out;
  };
  // Proposes what price() made of a candidate; returns where it is among the candidates, if it is
  // proposed. One that cuts documents too finely is kept only if nothing was proposed before it.
  const auto propose = [&](Priced priced, Count chunk_tokens) -> std::optional<size_t> {
    if (priced.too_many_pieces) {
      if (candidates.empty() && unbounded.empty()) {
        unbounded.push_back({std::move(*priced.too_many_pieces), chunk_tokens, {}});
      }
      return std::nullopt;
    }
    const size_t first = candidates.size();
    for (Candidate& each : priced.candidates) candidates.push_back(std::move(each));
    return first;
  };
  const auto consider = [&](Assignment a, Count chunk_tokens) { return propose(price(std::move(a), chunk_tokens), chunk_tokens); };
  std::optional<RingCost> round_robin;  // PyTorch's balancer of the same blocks, where priced
  std::optional<size_t> round_robin_at;  // and where it is among the candidates, where proposed
  std::vector<std::vector<bool>> spreads_tried;  // which blocks each spread spreads
  std::vector<Assignment> spread_assignments;      // and its spread documents' chunks, dealt
  struct Cut {
    size_t spread;  // into spreads_tried
    Count size;     // blocks a piece holds at most
  };
  std::vector<Cut> cuts;  // the candidates cut from the blocks left, in the order tried
  // Which documents are spread: those costing more than `heavy` of a device's share (0: none;
  // 1e-9: every one that can be), with or without `head`: where a document may be cut into any
  // number of pieces, the blocks 2N chunks cannot share evenly, its first (the cheapest), can be
  // left to the pieces, so that the chunks are of one length and every device's pair of them
  // costs the same (the uneven chunks of one long document cost its devices up to a block of its
  // far end). Which is better depends on how the other pieces fill the rounds: both are tried.
  struct Spread {
    double heavy;
    bool head;
  };
  std::vector<Spread> spreads{{0.0, false}, {1e-9, false}, {0.25, false}, {0.5, false}, {1.0, false}};
  if (!bounded_pieces) {
    for (const double heavy : {1e-9, 0.25, 0.5, 1.0}) spreads.push_back({heavy, true});
  }
  for (const auto [heavy, leave_head] : spreads) {
    Assignment spread_only = tail;
    std::vector<bool> spread(blocks.size(), false);
    for (size_t j = 0; heavy > 0 && j + 1 < documents.size(); ++j) {
      const size_t from = first_block[j];
      const size_t to = first_block[j + 1];
      const double cost = static_cast<double>(cost_before[to] - cost_before[from]);
      if (cost <= heavy * bound || static_cast<Count>(to - from) < 2 * devices) continue;
      const size_t head = leave_head ? (to - from) % static_cast<size_t>(2 * devices) : 0;
      if (!spread_zigzag(pricing, blocks, from + head, to, body, c, spread_only)) continue;
      std::fill(spread.begin() + static_cast<std::ptrdiff_t>(from + head), spread.begin() + static_cast<std::ptrdiff_t>(to), true);
    }
    if (std::find(spreads_tried.begin(), spreads_tried.end(), spread) != spreads_tried.end()) continue;
    const bool all_spread = std::find(spread.begin(), spread.end(), false) == spread.end();
    for (const Count size : sizes) {
      if (all_spread && size != sizes.front()) break;  // nothing left to cut
      cuts.push_back({spreads_tried.size(), size});
    }
    spreads_tried.push_back(spread);
    spread_assignments.push_back(std::move(spread_only));
  }
  // Each (spread, piece size) dealt, refined and priced on a thread of its own, then proposed in
  // the order tried: the same candidates whatever the threads.
  std::vector<Priced> cut_candidates(cuts.size());
  parallel_for(cuts.size(), threads_within_scratch(devices, 2, threads), [&](size_t i) {
    const auto [spread, size] = cuts[i];
    Assignment a = spread_assignments[spread];
    deal(pricing, cut_pieces(pricing, blocks, spreads_tried[spread], body, size), c, block, a);
    refine(pricing, a, block);
    cut_candidates[i] = price(std::move(a), size * block);
  });
  for (size_t i = 0; i < cuts.size(); ++i) propose(std::move(cut_candidates[i]), cuts[i].size * block);
  // Layouts cut on the sequence's block grid are priced exactly where that grid is the tiling's:
  // under fixed tiling, and under varlen when every document starts on it (documents padded to a
  // multiple of B). Two of them are candidates then.
  bool on_grid = true;
  for (size_t s = 0; s + 1 < pricing.segments().size(); ++s) on_grid = on_grid && pricing.segments()[s] % block == 0;
  // PyTorch's round robin of the same blocks (per document, or of the whole sequence under a
  // window): where it is the better start, the polish starts from it. Under a window it is often
  // the best there is (every device reads its neighbours' blocks alike, round after round). Under
  // a causal mask it is the zigzag of blocks the spread candidates already are.
  if (on_grid && (mask.kind() == MaskKind::documents || mask.kind() == MaskKind::window)) {
    const PtrrDeal ptrr = ptrr_deal(mask, devices, block);
    Assignment a(devices);
    for (Count d = 0; d < devices; ++d) {
      // Its runs of consecutive positions (its blocks, then its part of the tail), cut where the
      // tail starts.
      const auto add = [&](Position begin, Position end) {
        const bool in_tail = begin >= body;
        const Piece piece{begin, end - begin, pricing.cost(begin, end - begin)};
        (in_tail ? a.pinned : a.owned)[static_cast<size_t>(d)].push_back(piece);
        a.load[static_cast<size_t>(d)] += piece.cost;
      };
      std::optional<std::pair<Position, Position>> run;
      const auto extend = [&](Position begin, Position end) {
        if (run && begin == run->second && begin != body) {
          run->second = end;
          return;
        }
        if (run) add(run->first, run->second);
        run = {begin, end};
      };
      ptrr.for_each_run(d, block, extend);
      if (run) add(run->first, run->second);
    }
    round_robin = cost_of(pricing, a);  // the bar, whether or not it is proposed
    round_robin_at = consider(std::move(a), block);
  }

  // Contiguous itself (every device one run of the body, in sequence order): under a window, or
  // short documents, it keeps each block's readers on the next devices, round after round.
  if (on_grid) {
    Assignment a = tail;
    const Count share = body / devices;
    for (Count d = 0; d < devices; ++d) {
      const Piece run{d * share, share, pricing.cost(d * share, share)};
      a.owned[static_cast<size_t>(d)].push_back(run);
      a.load[static_cast<size_t>(d)] += run.cost;
    }
    consider(std::move(a), share);
  }

  if (candidates.empty()) {
    unbounded.front().cost = cost_of(pricing, unbounded.front().assignment);
    candidates.push_back(std::move(unbounded.front()));
  }
  // The busiest device first (a ring without a barrier waits for it): among the candidates within
  // kBusiestSlack of the least busiest, the lowest lockstep (then the first tried). The few best,
  // and the round robin (the bar, below), then trade pieces of equal length for a lower lockstep
  // and have their devices numbered for it.
  const auto within = [](Count x, Count reference) {
    return x <= reference + static_cast<Count>(static_cast<double>(reference) * kBusiestSlack);
  };
  Count least_busiest = candidates.front().cost.busiest;
  for (const Candidate& each : candidates) least_busiest = std::min(least_busiest, each.cost.busiest);
  std::vector<Candidate*> feasible;
  for (Candidate& each : candidates) {
    if (within(each.cost.busiest, least_busiest)) feasible.push_back(&each);
  }
  const auto lower_lockstep = [](const Candidate* x, const Candidate* y) { return x->cost.lockstep < y->cost.lockstep; };
  std::stable_sort(feasible.begin(), feasible.end(), lower_lockstep);
  // A candidate and its renumbering often cost the same: polishing both would polish one.
  const auto same_cost = [](const Candidate* x, const Candidate* y) {
    return x->cost.busiest == y->cost.busiest && x->cost.lockstep == y->cost.lockstep && x->cost.ring == y->cost.ring;
  };
  feasible.erase(std::unique(feasible.begin(), feasible.end(), same_cost), feasible.end());
  feasible.resize(std::min<size_t>(feasible.size(), kPolished));
  std::vector<size_t> identity(static_cast<size_t>(devices));
  std::iota(identity.begin(), identity.end(), size_t{0});
  std::vector<const Candidate*> polished;
  // Polishes a candidate no other polish touches (the feasible ones are distinct: side by side).
  const auto polish_alone = [&](Candidate* each) {
    // The lockstep is at least the busiest device's work: a candidate there has nothing to gain.
    if (each->cost.lockstep <= each->cost.busiest) return;
    std::vector<Count> work;
    if (each->reads <= kMostReadsPolished) {
      RingGraph graph(pricing, each->assignment);
      graph.improve(kMovesTried);
      // The graph holds the candidate's work either way (it keeps a move only when the lockstep drops).
      work = graph.pair_work();
      if (graph.lockstep() < each->cost.lockstep) {
        each->assignment = graph.assignment();
        each->cost = numbered_cost(work, identity);
      }
    } else {
      work = pair_work(pricing, each->assignment).work;
    }
    // Then the devices are numbered for the lockstep: the same loads, other rounds.
    const std::vector<size_t> order = lockstep_numbering(work, identity.size());
    if (const RingCost numbered = numbered_cost(work, order); numbered.lockstep < each->cost.lockstep) {
      each->assignment = renumbered(each->assignment, order);
      each->cost = numbered;
    }
  };
  const auto polish = [&](Candidate* each) {
    if (std::ranges::find(polished, each) != polished.end()) return;
    polished.push_back(each);
    polish_alone(each);
  };
  polished.assign(feasible.begin(), feasible.end());
  parallel_for(feasible.size(), threads_within_scratch(devices, 3, threads), [&](size_t i) { polish_alone(feasible[i]); });
  Candidate* best = *std::min_element(feasible.begin(), feasible.end(), lower_lockstep);
  // Then the lowest lockstep among the candidates no slower than that pick without a barrier
  // (free links; within kBusiestSlack) wins, a little busier or not: faster however the ring runs
  // (a window read by the next device only: contiguous is 0.8 % busier than the least busy
  // layouts, whose lockstep is 1.6x its own).
  const RingCost pick = best->cost;
  const auto no_busier_than_the_bar = [&](const Candidate& each) {
    return !round_robin || within(each.cost.busiest, round_robin->busiest);
  };
  const auto lower_lockstep_as_fast = [&](bool capped) {
    for (Candidate& each : candidates) {
      if ((!capped || no_busier_than_the_bar(each)) && within(each.cost.ring, pick.ring) &&
          each.cost.lockstep < best->cost.lockstep) {
        best = &each;
      }
    }
  };
  lower_lockstep_as_fast(true);
  // What users have already is the bar: PyTorch's round robin. Where it is a candidate (fixed
  // tiling, windows), the pick is never busier by more than kBusiestSlack, nor slower in lockstep
  // where that can be helped: a pick that misses either takes the lowest lockstep among the
  // candidates no busier than the bar, the round robin polished among them (only then: its many
  // small pieces make it the dearest to polish). A pick 1-2 % busier with a third less lockstep
  // (documents of 2000 tokens on 32-40 devices) gives way. Where it is not (varlen, whose calls
  // could not take its pieces), beating its lockstep comes first.
  if (round_robin_at && (!no_busier_than_the_bar(*best) || best->cost.lockstep >= round_robin->lockstep)) {
    polish(&candidates[*round_robin_at]);
    for (Candidate& each : candidates) {
      if (no_busier_than_the_bar(each) && (!no_busier_than_the_bar(*best) || each.cost.lockstep < best->cost.lockstep)) {
        best = &each;
      }
    }
  } else if (round_robin && !round_robin_at && best->cost.lockstep >= round_robin->lockstep) {
    lower_lockstep_as_fast(false);
  }

  // Each device holds its pieces in sequence order (long runs keep the work model fast).
  std::vector<std::vector<Position>> positions(static_cast<size_t>(devices));
  Count total = 0;
  for (Count d = 0; d < devices; ++d) {
    auto& mine = best->assignment.owned[static_cast<size_t>(d)];
    const auto& pinned = best->assignment.pinned[static_cast<size_t>(d)];
    mine.insert(mine.end(), pinned.begin(), pinned.end());
    std::sort(mine.begin(), mine.end(), [](const Piece& x, const Piece& y) { return x.begin < y.begin; });
    auto& out = positions[static_cast<size_t>(d)];
    out.reserve(static_cast<size_t>(c));
    for (const Piece& piece : mine) {
      for (Position p = piece.begin; p < piece.end(); ++p) out.push_back(p);
      total += piece.cost;
    }
  }
  const std::string name = chunk > 0 ? fmt::format("balanced:{}", chunk) : "balanced";
  BalanceResult result{Layout::from_blocks(positions, n, name, LayoutKind::balanced), best->chunk_tokens,
                       best->cost.busiest, static_cast<double>(total) / static_cast<double>(devices), best->cost.lockstep};
  // Under varlen doc-zigzag is the bar, both layouts counted exactly (the pick's pieces may be off
  // the grid where the tiling is the documents'): a pick busier or slower in lockstep gives way
  // to it (two long documents on 8 devices whose shares end inside a block: every candidate cut a
  // document into more pieces than a varlen call takes but the first, 1.9x doc-zigzag's busiest).
  if (doc_zigzag_is_the_bar(mask, devices, tiling)) {
    const Layout bar = doc_zigzag_layout(mask, devices);
    const WorkMatrix bar_tiles = exact_tiles(bar, mask, tile, tiling);
    const RingCost bar_cost = ring_cost(bar_tiles);
    const RingCost pick_cost = ring_cost(exact_tiles(result.layout, mask, tile, tiling));
    if (pick_cost.busiest > bar_cost.busiest || pick_cost.lockstep > bar_cost.lockstep) {
      for (Count d = 0; d < devices; ++d) {
        auto& out = positions[static_cast<size_t>(d)];
        for (Count l = 0; l < c; ++l) out[static_cast<size_t>(l)] = bar.position(d, l);
      }
      Count longest = 0;
      for (size_t j = 0; j + 1 < mask.document_starts().size(); ++j) {
        longest = std::max(longest, (mask.document_starts()[j + 1] - mask.document_starts()[j]) / (2 * devices));
      }
      result = BalanceResult{Layout::from_blocks(positions, n, name, LayoutKind::balanced), longest, bar_cost.busiest,
                             static_cast<double>(bar_tiles.total()) / static_cast<double>(devices), bar_cost.lockstep};
    }
  }
  return result;
}

}  // namespace stripesim::model
