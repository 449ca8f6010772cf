#include "stripesim/sim/ring_simulator.hpp"

#include <algorithm>
#include <array>
#include <stdexcept>

#include "stripesim/model/work/work_model.hpp"

namespace stripesim::sim {
namespace {

enum class EventKind : std::uint8_t { compute_done, kv_sent, grad_sent };

// An event's kind, device and round in 32 bits, so that the queue's entries stay 16 bytes.
struct Payload {
  static constexpr int kIndexBits = 15;  // a device's or a round's
  static constexpr Count kMaxDevices = Count{1} << kIndexBits;
  std::uint32_t kind : 2;
  std::uint32_t device : kIndexBits;
  std::uint32_t round : kIndexBits;
};
static_assert(sizeof(Payload) == sizeof(std::uint32_t));

class RingRun {
 public:
  RingRun(const RingSetup& setup, std::vector<FifoServer>& links)
      : s_(setup), links_(links), n_(setup.devices), backward_(setup.pass == RingPass::backward) {
    const auto devices = static_cast<size_t>(n_);
    out_.devices = n_;
    out_.pass = setup.pass;
    out_.start_us = setup.start_us;
    if (setup.keep_rounds) out_.rounds.assign(devices * devices, RoundRecord{});
    out_.device_summary.assign(devices, DeviceSummary{.finish_us = setup.start_us, .gradients_home_us = setup.start_us});
    previous_end_.assign(devices, setup.start_us);
    tail_.assign(devices, Tail{});
    computes_.assign(devices, 0);
    slots_ = std::min(setup.kv_buffers, n_);
    waiting_.assign(devices * static_cast<size_t>(slots_), Arrival{});
    arrived_.assign(devices, 1);
    next_compute_.assign(devices, 0);
    computed_.assign(devices, 0);
    computing_.assign(devices, false);
    next_send_.assign(devices, 0);
    sent_.assign(devices, 0);
    send_issued_.assign(devices, kNever);
    grad_issued_.assign(devices, kNever);
    relay_issued_.assign(devices, kNever);
    sending_.assign(devices, false);
    next_grad_.assign(devices, 0);
    grad_arrived_.assign(devices, 0);
    grad_sending_.assign(devices, false);
    barrier_us_.assign(devices, kNever);
    round_compute_end_.assign(devices, setup.start_us);
    pending_.assign(devices, 0);
    for (Count r = 0; r < n_; ++r) {
      pending_[static_cast<size_t>(r)] = n_ * (1 + (r <= n_ - 2 ? 1 : 0) + (backward_ ? 1 : 0));
    }
    for (Count d = 0; d < n_; ++d) {
      if (keep()) record(0, d).arrival_us = setup.start_us;
    }
  }

  RingTimeline run() {
    if (s_.sync == SyncMode::serial) return run_serial();
    now_ = s_.start_us;
    for (Count d = 0; d < n_; ++d) try_everything(d);
    while (!queue_.empty()) {
      const auto event = queue_.pop();
      now_ = event.time_us;
      const auto d = static_cast<Count>(event.payload.device);
      const auto r = static_cast<Count>(event.payload.round);
      switch (static_cast<EventKind>(event.payload.kind)) {
        case EventKind::compute_done: on_compute_done(d, r); break;
        case EventKind::kv_sent: on_kv_sent(d, r); break;
        case EventKind::grad_sent: on_grad_sent(d, r); break;
      }
    }
    out_.events = queue_.pushed();
    summarise();
    return std::move(out_);
  }

 private:
  RingTimeline run_serial() {
    now_ = s_.start_us;
    std::uint64_t items = 0;
    for (Count r = 0; r < n_; ++r) {
      for (Count d = 0; d < n_; ++d) {
        const Microseconds start = now_;
        now_ += s_.compute_us[static_cast<size_t>(r * n_ + d)];
        computed(r, d, start, now_);
        ++items;
      }
      for (Count d = 0; d < n_ && r <= n_ - 2; ++d) {
        const Microseconds issued = now_;
        now_ = transmit(kv_route(r, d), s_.kv_bytes);
        kv_scheduled(r, d, issued, transmit_start_, now_);
        arrived(r + 1, next(d), now_, issued);
        ++items;
      }
      for (Count d = 0; d < n_ && backward_; ++d) {
        const Microseconds issued = now_;
        now_ = transmit(grad_route(r, d), grad_bytes());
        grad_scheduled(r, d, issued, transmit_start_, now_);
        ++items;
      }
    }
    out_.events = items;
    summarise();
    return std::move(out_);
  }

  RoundRecord& record(Count round, Count device) { return out_.rounds[static_cast<size_t>(round * n_ + device)]; }
  [[nodiscard]] bool keep() const { return s_.keep_rounds; }

  // What each device's summary needs, added up as the ring runs (summarise() finishes it), and
  // the records when kept. Device d computes its rounds in order, so at compute(r, d) the block's
  // arrival, the send that brought it, d's previous round and the barrier before r are all known.
  void computed(Count r, Count d, Microseconds start, Microseconds end) {
    const auto i = static_cast<size_t>(d);
    DeviceSummary& sum = out_.device_summary[i];
    sum.busy_us += end - start;
    if (r > 0) {
      Microseconds ready = previous_end_[i];
      if (s_.sync == SyncMode::lockstep) {
        // The barrier waits for every device's round r - 1 and for the round's transfers: the
        // wait up to the last of those computes is imbalance (idle), past it communication.
        const Microseconds barrier = barrier_us_[static_cast<size_t>(r - 1)];
        sum.exposed_comm_us += std::max(0.0, barrier - std::max(ready, round_compute_end_[static_cast<size_t>(r - 1)]));
        ready = std::max(ready, barrier);
      }
      // Waiting counts as exposed communication only while the block is on the wire: before
      // the upstream device could send it, the wait is imbalance (idle), not communication.
      const Arrival& block = waiting(r, d);
      sum.exposed_comm_us += std::max(0.0, block.arrival_us - std::max(ready, block.sent_us));
    }
    round_compute_end_[static_cast<size_t>(r)] = std::max(round_compute_end_[static_cast<size_t>(r)], end);
    previous_end_[i] = end;
    if (r == n_ - 1) start_tail(d, end);
    sum.finish_us = std::max(sum.finish_us, end);
    ++computes_[i];
    if (keep()) {
      RoundRecord& rec = record(r, d);
      rec.compute_start_us = start;
      rec.compute_end_us = end;
    }
  }
  // A device's transfers after its last compute: the time from its last compute's end to its
  // finish that some transfer of its covers, from when it was issued (queued behind others on a
  // link included) to its arrival, is exposed communication. Before the last compute starts,
  // only the latest transfer of each kind can still be running (each kind goes one at a time),
  // so those are kept to be counted once the last compute's end is known.
  struct Interval {
    Microseconds from = kNever;
    Microseconds to = kNever;
  };
  struct Tail {
    bool started = false;
    Microseconds from = kNever;  // the last compute's end
    std::vector<Interval> spans;
    Interval last_kv, last_grad;  // before it is known, the latest transfer of each kind
  };
  void start_tail(Count d, Microseconds last_compute_end) {
    Tail& tail = tail_[static_cast<size_t>(d)];
    tail.started = true;
    tail.from = last_compute_end;
    for (const Interval& t : {tail.last_kv, tail.last_grad}) {
      if (t.to > last_compute_end) tail.spans.push_back(t);
    }
  }
  // The measure of the tail's spans past its start, overlaps counted once.
  static Microseconds tail_measure(Tail& tail) {
    std::sort(tail.spans.begin(), tail.spans.end(), [](const Interval& a, const Interval& b) { return a.from < b.from; });
    Microseconds covered = tail.from, total = 0;
    for (const Interval& t : tail.spans) {
      const Microseconds from = std::max(t.from, covered);
      if (t.to > from) total += t.to - from;
      covered = std::max(covered, t.to);
    }
    return total;
  }
  // A transfer of d issued at `issued`, on the wire from `start` to `end`; a hop that crosses no
  // link (skipped, or free links) takes no time and counts for nothing.
  void transferred(Count d, Interval& latest, Microseconds issued, Microseconds start, Microseconds end) {
    if (end <= start) return;
    const auto i = static_cast<size_t>(d);
    out_.device_summary[i].finish_us = std::max(out_.device_summary[i].finish_us, end);
    if (tail_[i].started) {
      tail_[i].spans.push_back({issued, end});
    } else {
      latest = {issued, end};
    }
  }
  void kv_scheduled(Count r, Count d, Microseconds issued, Microseconds start, Microseconds end) {
    transferred(d, tail_[static_cast<size_t>(d)].last_kv, issued, start, end);
    if (keep()) {
      RoundRecord& rec = record(r, d);
      rec.send_issued_us = issued;
      rec.send_start_us = start;
      rec.send_end_us = end;
    }
  }
  void grad_scheduled(Count r, Count d, Microseconds issued, Microseconds start, Microseconds end) {
    transferred(d, tail_[static_cast<size_t>(d)].last_grad, issued, start, end);
    // The hop home (or the ring's last, into the owner) completes the owner's gradients.
    if (end > start && (grad_hop(r, d) == GradHop::home || r == n_ - 1)) {
      Microseconds& home = out_.device_summary[static_cast<size_t>(model::kv_source(d, r, n_))].gradients_home_us;
      home = std::max(home, end);
    }
    if (keep()) {
      RoundRecord& rec = record(r, d);
      rec.grad_send_issued_us = issued;
      rec.grad_send_start_us = start;
      rec.grad_send_end_us = end;
    }
  }
  // Block r is on d at `arrival`, its send issued at `sent` (when d - 1 had it and a free buffer
  // here; a queue on the links after that is communication). At most min(B, N) blocks wait on a device before
  // their compute starts (a send waits for a free buffer), so round r % min(B, N) is their slot.
  void arrived(Count r, Count d, Microseconds arrival, Microseconds sent) {
    waiting(r, d) = Arrival{arrival, sent};
    if (keep()) record(r, d).arrival_us = arrival;
  }
  struct Arrival {
    Microseconds arrival_us = kNever;
    Microseconds sent_us = kNever;
  };
  Arrival& waiting(Count r, Count d) { return waiting_[static_cast<size_t>(d * slots_ + r % slots_)]; }
  [[nodiscard]] Count next(Count d) const { return (d + 1) % n_; }
  [[nodiscard]] Count previous(Count d) const { return (d + n_ - 1) % n_; }
  [[nodiscard]] bool barrier_passed(Count round) const { return s_.sync == SyncMode::async || barriers_done_ >= round; }

  // Rounds whose K/V buffer device d has released: computed and forwarded (the last round is
  // never forwarded).
  [[nodiscard]] Count freed(Count d) const {
    const auto i = static_cast<size_t>(d);
    return sent_[i] >= n_ - 1 ? computed_[i] : std::min(computed_[i], sent_[i]);
  }

  // A block nobody further down reads is not sent: its hop crosses no link and takes no time.
  [[nodiscard]] const Route& kv_route(Count round, Count d) const {
    static const Route kStays;
    const bool needed = s_.send_needed.empty() || s_.send_needed[static_cast<size_t>(round * n_ + d)];
    return needed ? s_.hops[static_cast<size_t>(d)] : kStays;
  }

  [[nodiscard]] GradHop grad_hop(Count round, Count d) const {
    return s_.grad_hops.empty() ? GradHop::ring : s_.grad_hops[static_cast<size_t>(round * n_ + d)];
  }

  // The dK/dV accumulator's route after round `round` on d (none: crosses no link, takes no time).
  [[nodiscard]] const Route& grad_route(Count round, Count d) const {
    static const Route kStays;
    switch (grad_hop(round, d)) {
      case GradHop::ring: return s_.hops[static_cast<size_t>(d)];
      case GradHop::home: return s_.grad_home[static_cast<size_t>(model::kv_source(d, round, n_))];
      case GradHop::none: return kStays;
    }
    return kStays;
  }

  // Occupies the route's links and returns when the message arrives.
  Microseconds transmit(const Route& route, Bytes bytes) {
    transmit_start_ = now_;
    if (route.links.empty()) return now_;
    Microseconds start = now_;
    for (const auto link : route.links) start = std::max(start, links_[link].free_at_us());
    const Microseconds serialise = transfer_time_us(bytes, route.bandwidth);
    for (const auto link : route.links) links_[link].reserve(start, serialise);
    transmit_start_ = start;
    return start + route.latency_us + serialise;
  }

  static Payload event(EventKind kind, Count d, Count r) {
    return Payload{static_cast<std::uint32_t>(kind), static_cast<std::uint32_t>(d), static_cast<std::uint32_t>(r)};
  }

  void try_compute(Count d) {
    const auto i = static_cast<size_t>(d);
    const Count r = next_compute_[i];
    if (computing_[i] || r >= n_ || arrived_[i] <= r || !barrier_passed(r)) return;
    const Microseconds end = now_ + s_.compute_us[static_cast<size_t>(r * n_ + d)];
    computed(r, d, now_, end);
    computing_[i] = true;
    ++next_compute_[i];
    queue_.push(end, event(EventKind::compute_done, d, r));
  }

  void try_send(Count d) {
    const auto i = static_cast<size_t>(d);
    const Count r = next_send_[i];
    if (sending_[i] || r > n_ - 2 || arrived_[i] <= r || !barrier_passed(r)) return;
    if (freed(next(d)) < r + 2 - s_.kv_buffers) return;  // no free buffer on the receiver yet
    const Microseconds end = transmit(kv_route(r, d), s_.kv_bytes);
    kv_scheduled(r, d, now_, transmit_start_, end);
    send_issued_[i] = now_;
    sending_[i] = true;
    ++next_send_[i];
    queue_.push(end, event(EventKind::kv_sent, d, r));
  }

  [[nodiscard]] Bytes grad_bytes() const { return s_.grad_bytes > 0 ? s_.grad_bytes : s_.kv_bytes; }

  void try_grad_send(Count d) {
    if (!backward_) return;
    const auto i = static_cast<size_t>(d);
    const Count r = next_grad_[i];
    if (grad_sending_[i] || r > n_ - 1 || computed_[i] <= r || !barrier_passed(r)) return;
    // The accumulator must first arrive, if the previous position sent it here.
    const bool relayed = r > 0 && grad_hop(r - 1, previous(d)) == GradHop::ring;
    if (relayed && grad_arrived_[i] < r) return;
    const Microseconds end = transmit(grad_route(r, d), grad_bytes());
    // Waiting for the accumulator while it was on the wire to here is communication too: the
    // hop in counts from when the upstream device issued it.
    const Microseconds issued = relayed ? std::min(now_, relay_issued_[static_cast<size_t>(d)]) : now_;
    grad_scheduled(r, d, issued, transmit_start_, end);
    grad_issued_[i] = now_;
    grad_sending_[i] = true;
    ++next_grad_[i];
    queue_.push(end, event(EventKind::grad_sent, d, r));
  }

  void try_everything(Count d) {
    try_compute(d);
    try_send(d);
    try_grad_send(d);
  }

  void on_compute_done(Count d, Count r) {
    const auto i = static_cast<size_t>(d);
    computing_[i] = false;
    ++computed_[i];
    try_compute(d);
    try_grad_send(d);
    try_send(previous(d));  // d may have released a buffer
    round_item_done(r);
  }

  void on_kv_sent(Count d, Count r) {
    const auto i = static_cast<size_t>(d);
    const Count receiver = next(d);
    sending_[i] = false;
    ++sent_[i];
    ++arrived_[static_cast<size_t>(receiver)];
    arrived(r + 1, receiver, now_, send_issued_[i]);
    try_compute(receiver);
    try_send(receiver);
    try_send(d);
    try_send(previous(d));
    round_item_done(r);
  }

  void on_grad_sent(Count d, Count r) {
    const Count receiver = next(d);
    grad_sending_[static_cast<size_t>(d)] = false;
    if (r < n_ - 1 && grad_hop(r, d) == GradHop::ring) {
      grad_arrived_[static_cast<size_t>(receiver)] = r + 1;
      relay_issued_[static_cast<size_t>(receiver)] = grad_issued_[static_cast<size_t>(d)];
      try_grad_send(receiver);
    }
    try_grad_send(d);
    round_item_done(r);
  }

  void round_item_done(Count r) {
    if (s_.sync != SyncMode::lockstep) return;
    --pending_[static_cast<size_t>(r)];
    bool passed = false;
    while (barriers_done_ < n_ && pending_[static_cast<size_t>(barriers_done_)] == 0) {
      barrier_us_[static_cast<size_t>(barriers_done_)] = now_;
      ++barriers_done_;
      passed = true;
    }
    if (passed) {
      for (Count d = 0; d < n_; ++d) try_everything(d);
    }
  }

  // The pass's end, and each device's transfers after its last compute.
  void summarise() {
    out_.end_us = out_.start_us;
    for (Count d = 0; d < n_; ++d) {
      const auto i = static_cast<size_t>(d);
      if (computes_[i] != n_) throw std::logic_error("ring simulation ended with a round not computed");
      DeviceSummary& sum = out_.device_summary[i];
      sum.exposed_comm_us += tail_measure(tail_[i]);
      out_.end_us = std::max(out_.end_us, sum.finish_us);
    }
    out_.settle_idle();
  }

  const RingSetup& s_;
  std::vector<FifoServer>& links_;
  Count n_;
  bool backward_;
  EventQueue<Payload> queue_;
  RingTimeline out_;
  Microseconds now_ = 0;
  Microseconds transmit_start_ = 0;
  std::vector<Count> arrived_, next_compute_, computed_, next_send_, sent_, next_grad_, grad_arrived_;
  std::vector<bool> computing_, sending_, grad_sending_;
  std::vector<Microseconds> barrier_us_;
  std::vector<Microseconds> round_compute_end_;  // the last device's compute of each round ends
  std::vector<Count> pending_;
  // The summary's running state (computed() and friends).
  // When d's latest K/V and dK/dV sends were issued, and when the accumulator d last received was.
  std::vector<Microseconds> previous_end_, send_issued_, grad_issued_, relay_issued_;
  std::vector<Tail> tail_;
  std::vector<Count> computes_;
  Count slots_ = 1;
  std::vector<Arrival> waiting_;
  Count barriers_done_ = 0;
};

}  // namespace

std::vector<bool> hops_read_downstream(const model::WorkMatrix& active_tiles) {
  const Count devices = active_tiles.devices();
  std::vector<bool> needed(static_cast<size_t>(devices * devices), false);
  // The block on d at round r came from source d - r; it is read later if any round r' > r finds
  // active tiles on the device then holding it, d + (r' - r). Walk each block's path backwards.
  for (Count source = 0; source < devices; ++source) {
    bool read_later = false;
    for (Count r = devices - 1; r >= 0; --r) {
      const Count d = model::kv_holder(source, r, devices);
      needed[static_cast<size_t>(r * devices + d)] = read_later;
      if (active_tiles.at(r, d) > 0) read_later = true;
    }
  }
  return needed;
}

std::vector<GradHop> grad_hops_needed(const model::WorkMatrix& active_tiles) {
  const Count devices = active_tiles.devices();
  std::vector<GradHop> hops(static_cast<size_t>(devices * devices), GradHop::none);
  for (Count source = 0; source < devices; ++source) {
    // The rounds of the block's first and last readers after its owner: the owner's own
    // contribution (round 0) is home already, so an accumulator starts at the next reader. Sent
    // from the owner, it would carry nothing that has to move, and come back.
    Count first = devices, last = -1;
    for (Count r = 1; r < devices; ++r) {
      if (active_tiles.at(r, model::kv_holder(source, r, devices)) == 0) continue;
      first = std::min(first, r);
      last = r;
    }
    if (last < 0) continue;  // no reader but the owner: its gradient never leaves home
    for (Count r = first; r < last; ++r) hops[static_cast<size_t>(r * devices + model::kv_holder(source, r, devices))] = GradHop::ring;
    // The last reader sends it home (by the ring when the owner is next anyway).
    hops[static_cast<size_t>(last * devices + model::kv_holder(source, last, devices))] =
        last == devices - 1 ? GradHop::ring : GradHop::home;
  }
  return hops;
}

RingTimeline simulate_ring(const RingSetup& setup, std::vector<FifoServer>& links) {
  if (setup.devices < 1) throw std::invalid_argument("simulate_ring: no devices");
  if (setup.devices > Payload::kMaxDevices) throw std::invalid_argument("simulate_ring: more than 32768 devices");
  if (setup.kv_buffers < 2) throw std::invalid_argument("simulate_ring: at least 2 K/V buffers");
  if (static_cast<Count>(setup.compute_us.size()) != setup.devices * setup.devices ||
      static_cast<Count>(setup.hops.size()) != setup.devices ||
      (!setup.send_needed.empty() && static_cast<Count>(setup.send_needed.size()) != setup.devices * setup.devices) ||
      (!setup.grad_hops.empty() && (static_cast<Count>(setup.grad_hops.size()) != setup.devices * setup.devices ||
                                    static_cast<Count>(setup.grad_home.size()) != setup.devices))) {
    throw std::invalid_argument("simulate_ring: compute or hops do not match the devices");
  }
  return RingRun(setup, links).run();
}

}  // namespace stripesim::sim
