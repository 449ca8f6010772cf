#include "stripesim/sim/context_parallel.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <optional>

#include "stripesim/model/flops/attention_heads.hpp"
#include "stripesim/model/io/input_error.hpp"
#include "stripesim/model/io/size_parse.hpp"

namespace stripesim::sim {

using model::InputError;

namespace {

std::optional<Count> parse_positive(std::string_view text) {
  Count value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc{} || end != text.data() + text.size() || value < 1) return std::nullopt;
  return value;
}

// K/V heads each member of an all-to-all of degree u reads: its share, or one replicated head
// when there are fewer heads than members.
Count kv_heads_after_alltoall(const ContextParallel& cp, const AttentionShape& s, Count u) {
  if (s.heads % u != 0) {
    throw InputError(model::Input::cp, to_string(cp, s.devices),
                     fmt::format("the all-to-all over {} devices needs the {} head{} of a device divisible by {}", u, s.heads,
                                 s.heads == 1 ? "" : "s", u));
  }
  if (const std::optional<Count> share = model::heads_per_member(s.kv_heads, u, /*replicate=*/true)) return *share;
  throw InputError(model::Input::cp, to_string(cp, s.devices),
                   fmt::format("the all-to-all over {} devices needs the {} K/V heads to divide it or be divisible by it", u,
                               s.kv_heads));
}

// Total length of the intervals (sorted, merged) minus their overlap with `busy` (disjoint).
Microseconds uncovered(std::vector<std::pair<Microseconds, Microseconds>> spans,
                       const std::vector<std::pair<Microseconds, Microseconds>>& busy) {
  std::sort(spans.begin(), spans.end());
  std::vector<std::pair<Microseconds, Microseconds>> merged;
  for (const auto& span : spans) {
    if (span.second <= span.first) continue;
    if (!merged.empty() && span.first <= merged.back().second) {
      merged.back().second = std::max(merged.back().second, span.second);
    } else {
      merged.push_back(span);
    }
  }
  Microseconds total = 0;
  for (const auto& [a, b] : merged) {
    total += b - a;
    for (const auto& [s, e] : busy) total -= std::max(0.0, std::min(b, e) - std::max(a, s));
  }
  return total;
}

// Busy, exposed communication (collectives the device is not computing under), finish, idle.
void summarise(RingTimeline& t) {
  t.device_summary.assign(static_cast<size_t>(t.devices), DeviceSummary{});
  t.end_us = t.start_us;
  for (Count d = 0; d < t.devices; ++d) {
    DeviceSummary& sum = t.device_summary[static_cast<size_t>(d)];
    std::vector<std::pair<Microseconds, Microseconds>> busy, comm;
    sum.finish_us = t.start_us;
    for (Count r = 0; r < t.round_count(); ++r) {
      const RoundRecord& rec = t.at(r, d);
      busy.emplace_back(rec.compute_start_us, rec.compute_end_us);
      sum.busy_us += rec.compute_end_us - rec.compute_start_us;
      sum.finish_us = std::max({sum.finish_us, rec.compute_end_us, rec.send_end_us, rec.grad_send_end_us});
    }
    for (const CollectiveInterval& c : t.collectives) {
      if (c.device >= 0 && c.device != d) continue;
      comm.emplace_back(c.start_us, c.end_us);
      sum.finish_us = std::max(sum.finish_us, c.end_us);
    }
    sum.exposed_comm_us = uncovered(std::move(comm), busy);
    t.end_us = std::max(t.end_us, sum.finish_us);
  }
  t.settle_idle();
}

}  // namespace

ContextParallel parse_context_parallel(std::string_view text, Count devices) {
  const auto refuse = [&](std::string detail) {
    return InputError(model::Input::cp, std::string(text), std::move(detail), model::Shown::quoted);
  };
  const auto colon = text.find(':');
  const std::string_view name = text.substr(0, colon);
  const std::string_view arg = colon == std::string_view::npos ? std::string_view{} : text.substr(colon + 1);
  ContextParallel cp;
  if (name == "ring" && colon == std::string_view::npos) return cp;
  if (name == "ulysses" && colon == std::string_view::npos) {
    cp.algorithm = CpAlgorithm::ulysses;
    cp.ulysses = devices;
    return cp;
  }
  if (name == "allgather") {
    cp.algorithm = CpAlgorithm::allgather;
    if (colon == std::string_view::npos) return cp;
    const auto groups = parse_positive(arg);
    if (!groups) throw refuse("allgather:G takes a positive number of head groups");
    cp.head_groups = *groups;
    return cp;
  }
  if (name == "hybrid") {
    const auto sides = model::split_product(arg);
    const auto u = sides ? parse_positive(sides->first) : std::nullopt;
    const auto r = sides ? parse_positive(sides->second) : std::nullopt;
    if (!u || !r) throw refuse("expected hybrid:UxR (Ulysses degree x ring degree)");
    // U and R up to 2^63 each: their product checked for overflow, or a wrapped one could equal N.
    Count product = 0;
    const bool overflows = __builtin_mul_overflow(*u, *r, &product);
    if (overflows || product != devices) {
      const std::string shown = overflows ? fmt::format("{} x {}", *u, *r) : std::to_string(product);
      throw refuse(fmt::format("U x R = {} must equal the {} devices of the context-parallel group (-N)", shown, devices));
    }
    cp.algorithm = CpAlgorithm::hybrid;
    cp.ulysses = *u;
    return cp;
  }
  throw refuse("expected ring, allgather[:G], ulysses or hybrid:UxR");
}

std::string to_string(const ContextParallel& cp, Count devices) {
  switch (cp.algorithm) {
    case CpAlgorithm::ring: return "ring";
    case CpAlgorithm::allgather: return cp.head_groups == 1 ? "allgather" : fmt::format("allgather:{}", cp.head_groups);
    case CpAlgorithm::ulysses: return "ulysses";
    case CpAlgorithm::hybrid: return fmt::format("hybrid:{}x{}", cp.ulysses, devices / cp.ulysses);
  }
  return "ring";
}

Count ulysses_degree(const ContextParallel& cp, Count devices) {
  if (cp.algorithm == CpAlgorithm::ulysses) return devices;
  return cp.algorithm == CpAlgorithm::hybrid ? cp.ulysses : 1;
}

Count ring_degree(const ContextParallel& cp, Count devices) {
  if (cp.algorithm == CpAlgorithm::ring) return devices;
  return cp.algorithm == CpAlgorithm::hybrid ? devices / cp.ulysses : 1;
}

Count layout_degree(const ContextParallel& cp, Count devices) {
  return cp.algorithm == CpAlgorithm::hybrid ? ring_degree(cp, devices) : devices;
}

CpShape cp_shape(const ContextParallel& cp, const AttentionShape& s, Count kv_buffers) {
  // Every hop, gather and all-to-all below moves at most the whole sequence's K/V, counted in 64
  // bits; the flags' ranges together reach 2^64, so a shape beyond 2^53 bytes (9 PB, exact in a
  // double too) is refused rather than wrapped.
  const double whole_kv = 2.0 * static_cast<double>(s.seq_len) * static_cast<double>(s.kv_heads) *
                          static_cast<double>(s.head_dim) * static_cast<double>(s.element) * static_cast<double>(s.batch);
  if (whole_kv > 0x1p53) {
    // Named by the sequence length (by kind, so a file's field is named where it came from).
    throw InputError(model::Input::seq_len, std::to_string(s.seq_len),
                     fmt::format("with batch {}, {} K/V heads of {} and {}-byte elements, the sequence's K/V would be {:.3g} "
                                 "bytes, beyond the 2^53 (9 PB) stripesim counts exactly",
                                 s.batch, s.kv_heads, s.head_dim, s.element, whole_kv));
  }
  const Count c = s.seq_len / s.devices;  // tokens per device before any all-to-all
  const Bytes row = s.head_dim * s.element * s.batch;  // one token of one head, every sequence
  // K and V of `tokens` tokens over `kv_heads` heads: what a ring hop or a gathered group carries.
  const auto kv_bytes = [row](Count tokens, Count kv_heads) { return 2 * tokens * kv_heads * row; };
  // A ring of `ring` devices holds at most its `ring` blocks: one device alone receives nothing and
  // holds its own K/V only (implementations post no receive buffer then), as the simulator's slots are.
  const auto ring_buffer_bytes = [kv_buffers](Count ring, Bytes hop) {
    return static_cast<double>(std::min(kv_buffers, ring)) * static_cast<double>(hop);
  };
  CpShape out;
  out.streams = s.heads * s.batch;
  out.kv_heads = s.kv_heads;
  switch (cp.algorithm) {
    case CpAlgorithm::ring:
      out.ring_hop_bytes = kv_bytes(c, s.kv_heads);
      out.memory_bytes = ring_buffer_bytes(s.devices, out.ring_hop_bytes);
      break;
    case CpAlgorithm::allgather: {
      const Count g = cp.head_groups;
      if (s.kv_heads % g != 0) {
        throw InputError(model::Input::cp, to_string(cp, s.devices), fmt::format("{} head groups must divide the {} K/V heads of a device",
                                     g, s.kv_heads));
      }
      out.streams = s.heads / g * s.batch;
      out.kv_heads = s.kv_heads / g;
      out.gather_bytes = kv_bytes(c, out.kv_heads);
      // One gathered group in use and, with more than one group, the next arriving.
      out.memory_bytes = static_cast<double>(std::min<Count>(g, 2) * s.devices * out.gather_bytes);
      break;
    }
    case CpAlgorithm::ulysses:
    case CpAlgorithm::hybrid: {
      const Count u = ulysses_degree(cp, s.devices);
      const Count h = s.heads / u;
      out.kv_heads = kv_heads_after_alltoall(cp, s, u);
      out.streams = h * s.batch;
      out.qkv_pair_bytes = c * (h + 2 * out.kv_heads) * row;
      out.out_pair_bytes = c * h * row;
      // K and V of the device's K/V heads over the U local blocks of its group (over one device,
      // its own K/V, as a ring of one holds). Q and O are not counted, as for the other
      // algorithms: every device holds c tokens of all its heads before the all-to-all and U c
      // tokens of H / U after, the same bytes (counting them here alone made Ulysses look 5x
      // heavier than a ring at 8 GPUs, 80 MiB against 16).
      out.memory_bytes = static_cast<double>(kv_bytes(u * c, out.kv_heads));
      if (cp.algorithm == CpAlgorithm::hybrid) {
        out.ring_hop_bytes = kv_bytes(u * c, out.kv_heads);
        const Count ring = s.devices / u;
        if (u == 1) {
          // No all-to-all: the ring's own buffers, as --cp ring holds them.
          out.memory_bytes = ring_buffer_bytes(ring, out.ring_hop_bytes);
        } else if (ring > 1) {
          // The all-to-all's K/V is the ring's first block; the other buffers come beside it.
          out.memory_bytes += static_cast<double>(kv_buffers - 1) * static_cast<double>(out.ring_hop_bytes);
        }
      }
      break;
    }
  }
  // The backward holds the gradients of all of it beside it (dK/dV accumulators, dQ, dO).
  out.backward_memory_bytes = 2 * out.memory_bytes;
  return out;
}

RingTimeline simulate_collective_pass(RingPass pass, Microseconds start_us, const std::vector<CollectiveStage>& stages,
                                      bool one_processor) {
  RingTimeline t;
  t.pass = pass;
  t.start_us = start_us;
  t.devices = stages.empty() ? 0 : static_cast<Count>(stages.front().compute_us.size());
  const auto n = static_cast<size_t>(t.devices);
  t.rounds.assign(stages.size() * n, RoundRecord{});
  std::vector<Microseconds> stage_done(stages.size(), start_us);  // every device has computed the stage
  std::vector<Microseconds> gathered(stages.size(), start_us);    // the stage's gather has arrived
  // One clock for the links: a gather and a reduce-scatter both send every device's share to the
  // others over the same links, so they run one after the other in the order they are issued
  // (run side by side, they would share the bandwidth and end no sooner).
  Microseconds link_free = start_us;
  // One processor does everything in turn, the collectives too: a stage's gather waits for the
  // stage before it to be computed and reduced, not only for the buffer two stages back.
  Microseconds processor_free = start_us;
  const auto gather = [&](size_t g) {
    Microseconds ready = g >= 2 ? stage_done[g - 2] : start_us;  // two buffers: this one's last stage computed
    if (one_processor) ready = std::max(ready, processor_free);
    const Microseconds begin = std::max(link_free, ready);
    link_free = gathered[g] = begin + stages[g].in_us;
    if (stages[g].in_us > 0) t.collectives.push_back({stages[g].in_name, begin, link_free, -1});
  };
  if (!stages.empty()) gather(0);
  for (size_t g = 0; g < stages.size(); ++g) {
    const CollectiveStage& stage = stages[g];
    // Issued as implementations issue it: the next stage's gather before this stage's attention,
    // to run under it, so after the reduce-scatter of the stage before (one processor: in turn).
    if (!one_processor && g + 1 < stages.size()) gather(g + 1);
    Microseconds done = gathered[g];
    for (size_t d = 0; d < n; ++d) {
      RoundRecord& rec = t.rounds[g * n + d];
      rec.arrival_us = gathered[g];
      rec.compute_start_us = std::max(gathered[g], g > 0 ? t.rounds[(g - 1) * n + d].compute_end_us : start_us);
      if (one_processor) rec.compute_start_us = std::max(rec.compute_start_us, done);
      rec.compute_end_us = rec.compute_start_us + stage.compute_us[d];
      done = std::max(done, rec.compute_end_us);
    }
    stage_done[g] = done;
    processor_free = done;
    if (stage.out_us > 0) {
      const Microseconds out_start = std::max(link_free, done);
      link_free = out_start + stage.out_us;
      t.collectives.push_back({stage.out_name, out_start, link_free, -1});
      processor_free = link_free;
    }
    if (one_processor && g + 1 < stages.size()) gather(g + 1);
  }
  t.events = stages.size() * (n + 2);
  summarise(t);
  return t;
}

RingTimeline wrap_ring_in_alltoalls(RingTimeline ring, Microseconds start_us, Microseconds in_us, Microseconds out_us,
                                    const std::string& in_name, const std::string& out_name) {
  ring.start_us = start_us;
  if (in_us > 0) ring.collectives.push_back({in_name, start_us, start_us + in_us, -1});
  if (out_us > 0) {
    for (Count d = 0; d < ring.devices; ++d) {
      const DeviceSummary& sum = ring.device_summary[static_cast<size_t>(d)];
      const Microseconds finish = std::max(sum.finish_us, sum.gradients_home_us);
      ring.collectives.push_back({out_name, finish, finish + out_us, d});
    }
  }
  // The ring's own exposed communication stays; the all-to-alls add theirs.
  std::vector<Microseconds> ring_exposed;
  for (const DeviceSummary& sum : ring.device_summary) ring_exposed.push_back(sum.exposed_comm_us);
  summarise(ring);
  for (size_t d = 0; d < ring_exposed.size(); ++d) ring.device_summary[d].exposed_comm_us += ring_exposed[d];
  return ring;
}

}  // namespace stripesim::sim
