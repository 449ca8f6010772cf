#include "nccl_collectives.hpp"

#include <fmt/format.h>

#include <chrono>
#include <limits>
#include <span>

#include "fault_injection.hpp"
#include "gpu_devices.hpp"
#include "row_copy.hpp"
#include "ulysses_slices.hpp"
#include "stripesim/model/io/input_error.hpp"

namespace stripesim::validate::gpu {

// --- NcclCollective ---------------------------------------------------------------------------

NcclCollective::NcclCollective(const RingProblem& problem, double timeout_s)
    : problem_(problem), n_(problem.ring_case().devices), timeout_s_(timeout_s), shape_(gpu_kernel_shape(problem)) {
  InjectedFault fault = injected_fault();
  if (fault.skip_send_rank) {
    throw model::InputError("STRIPESIM_INJECT_FAULT=skip-send: injects into the ring's transfers (--cp ring) only");
  }
  const int gpus = visible_gpus();
  if (gpus < n_) {
    throw model::InputError(fmt::format(
        "--backend nccl --devices {}: the nccl backend needs {} GPUs, this machine has {} (--backend cuda runs the "
        "collectives on one GPU)",
        n_, n_, gpus));
  }
  ranks_.resize(static_cast<std::size_t>(n_));
  const Deadline deadline = Deadline::after(timeout_s_);
  for (Count d = 0; d < n_; ++d) {
    CollectiveRank& rank = ranks_[static_cast<std::size_t>(d)];
    rank.device = static_cast<int>(d);
    prepare_gpu(rank.device, shape_, d);
    rank.stream = Stream(d, "collective");
    rank.steps.emplace(d);
    rank.shard_memory.emplace(BlockGeometry::of(problem), 1, d, fault.oom, 1);
    rank.shard = rank.shard_memory->device(0);
    upload_shard(problem, d, rank.shard, rank.stream.get(), d, deadline);
  }
  name_ = gpu_name(0);
  init_communicators_in_process(comms_, n_, [this](Count d) { use(d); }, deadline);
}

NcclCollective::~NcclCollective() {
  if (!hung_) return;
  // The devices may still hold aborted or stuck work: freeing would wait on them.
  for (CollectiveRank& rank : ranks_) {
    if (rank.shard_memory) rank.shard_memory->abandon();
    if (rank.whole_memory) rank.whole_memory->abandon();
    rank.gathered.abandon();
    rank.exchange.abandon();
    rank.rank_positions.abandon();
    rank.schedule.abandon();
  }
}

CollectiveRank& NcclCollective::use(Count d) {
  CollectiveRank& rank = ranks_[static_cast<std::size_t>(d)];
  check_cuda(cudaSetDevice(rank.device), d, [&] { return fmt::format("cudaSetDevice({})", rank.device); });
  return rank;
}

void NcclCollective::check_nccl(ncclResult_t status, Count rank, const std::string& operation) {
  if (status == ncclSuccess || status == ncclInProgress) return;
  const std::string detail = nccl_detail(status, comms_[rank]);
  hung_ = true;
  comms_.abort_all();
  throw DeviceFailure(rank, operation, detail);
}

template <typename Calls>
void NcclCollective::group(const std::string& what, Calls&& calls) {
  {
    GroupScope scope(0, what);
    calls();
    const ncclResult_t end = scope.end();
    if (end != ncclSuccess && end != ncclInProgress) {
      const auto failing = comms_.async_error();
      hung_ = true;
      comms_.abort_all();
      throw DeviceFailure(failing ? failing->first : 0, fmt::format("ncclGroupEnd of the {}", what),
                          failing ? failing->second : ncclGetErrorString(end));
    }
  }
  comms_.wait_ready(Deadline::after(timeout_s_), [&](Count) { return fmt::format("enqueueing the {}", what); });
}

void NcclCollective::time_call(Count d, BlockAttentionArgs args, const char* what) {
  CollectiveRank& rank = use(d);
  rank.schedule.apply(0, args);
  const cudaStream_t stream = rank.stream.get();
  rank.steps->time(d, TimedSteps::Cell::kernel, what, stream, [&] {
    check_cuda(launch_block_attention(shape_, args, stream), d, [&] { return fmt::format("launch of the {}", what); });
  });
}

void NcclCollective::iterate_and_record(RingMeasurement* record) {
  const Deadline deadline = Deadline::after(timeout_s_);
  try {
    // Fresh state and a poisoned output on every device, all idle: then the clock starts.
    for (Count d = 0; d < n_; ++d) {
      CollectiveRank& rank = use(d);
      reset_softmax_state(rank.shard, rank.stream.get(), d);
      poison_output(rank.shard, rank.stream.get(), d);
      if (rank.whole_memory) reset_softmax_state(rank.whole, rank.stream.get(), d);
    }
    for (Count d = 0; d < n_; ++d) wait_stream(use(d).stream.get(), d, "softmax state init", deadline);
    const auto start = Clock::now();
    for (Count d = 0; d < n_; ++d) use(d).steps->begin(ranks_[static_cast<std::size_t>(d)].stream.get());
    enqueue_iteration();
    wait_all(deadline);
    const double wall_us = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
    if (record != nullptr) {
      const auto cells = static_cast<std::size_t>(n_ * n_);
      std::vector<double> kernel_us(cells, 0.0), handoff_us(cells, 0.0);
      for (const CollectiveRank& rank : ranks_) rank.steps->add_cells(kernel_us, handoff_us);
      record->kernel_us.push_back(std::move(kernel_us));
      record->handoff_us.push_back(std::move(handoff_us));
      record->wall_us.push_back(wall_us);
    }
  } catch (...) {
    // Whatever failed, peers may be left waiting: abort every communicator and leave the device
    // memory alone (freeing it could wait on that work).
    hung_ = true;
    comms_.abort_all();
    throw;
  }
}

void NcclCollective::wait_all(const Deadline& deadline) {
  for (Count d = 0; d < n_; ++d) {
    CollectiveRank& rank = use(d);
    rank.steps->mark_done(rank.stream.get());
  }
  const auto failed = "the collective's kernels, copies and transfers (an asynchronous error: set "
                      "CUDA_LAUNCH_BLOCKING=1 to locate the launch)";
  for (;;) {
    bool all_done = true;
    for (Count d = 0; d < n_ && all_done; ++d) all_done = ranks_[static_cast<std::size_t>(d)].steps->done(failed);
    if (all_done) return;
    const auto failing = comms_.async_error();
    if (failing || deadline.passed()) {
      // The lowest rank with a step not done, and its first such step: the others wait on it.
      std::pair<Count, std::string> stuck{0, "the collective"};
      for (const CollectiveRank& rank : ranks_) {
        if (auto pending = rank.steps->first_pending()) {
          stuck = std::move(*pending);
          break;
        }
      }
      hung_ = true;
      comms_.abort_all();
      if (failing) throw DeviceFailure(failing->first, stuck.second, failing->second + "; every communicator was aborted");
      throw DeviceFailure(stuck.first, stuck.second, timeout_detail(deadline) + "; every communicator was aborted");
    }
    poll_pause();
  }
}

std::vector<double> NcclCollective::download_output() {
  return gpu::download_outputs(problem_, timeout_s_, [this](Count d) {
    CollectiveRank& rank = use(d);
    return std::pair<const DeviceSlots*, cudaStream_t>{&rank.shard, rank.stream.get()};
  });
}

// --- all-gather -------------------------------------------------------------------------------

NcclAllGather::NcclAllGather(const RingProblem& problem, double timeout_s)
    : NcclCollective(problem, timeout_s), whole_(GatheredKv::of(problem)) {
  const std::vector<Position> keys = positions_in_rank_order(problem);
  const Deadline deadline = Deadline::after(timeout_s_);
  for (Count d = 0; d < n_; ++d) {
    CollectiveRank& rank = use(d);
    bool no_fault = false;  // an injected OOM hits the shard's allocation
    rank.gathered = DeviceMemory(whole_.slot_bytes(), d, "the gathered K/V", no_fault);
    rank.schedule = DeviceSchedules(problem.shard(d), std::vector<std::span<const Position>>{keys}, false, shape_,
                                    rank.stream.get(), d, fmt::format("device {}", d), deadline);
  }
}

void NcclAllGather::enqueue_iteration() {
  const BlockGeometry block = BlockGeometry::of(problem_);
  const auto scale = static_cast<float>(problem_.scale());
  std::vector<std::size_t> steps(static_cast<std::size_t>(n_));
  for (Count d = 0; d < n_; ++d) {
    CollectiveRank& rank = use(d);
    steps[static_cast<std::size_t>(d)] =
        rank.steps->start(d, TimedSteps::Cell::handoff, "ncclAllGather of the K/V blocks", rank.stream.get());
  }
  group("all-gather of the K/V blocks", [&] {
    for (Count d = 0; d < n_; ++d) {
      CollectiveRank& rank = use(d);
      const GatheredKv to{rank.gathered.get(), whole_};
      const auto gather = [&](const void* from, void* into, std::int64_t bytes, const char* what) {
        check_nccl(ncclAllGather(from, into, static_cast<std::size_t>(bytes), ncclUint8, comms_[d], rank.stream.get()), d,
                   fmt::format("ncclAllGather of the {} blocks", what));
      };
      // Rank r's block lands r-th from each start: where gather_block puts it on one GPU.
      gather(rank.shard.k(0), to.k(), block.kv_bytes(), "K");
      gather(rank.shard.v(0), to.v(), block.kv_bytes(), "V");
      gather(rank.shard.positions(0), to.positions(), block.tokens * 8, "key position");
    }
  });
  for (Count d = 0; d < n_; ++d) {
    CollectiveRank& rank = use(d);
    rank.steps->finish(steps[static_cast<std::size_t>(d)], rank.stream.get());
    BlockAttentionArgs args = rank.shard.kernel_args(0, scale);
    GatheredKv{rank.gathered.get(), whole_}.point(args);
    time_call(d, args, "kernel after the all-gather");
  }
  for (Count d = 0; d < n_; ++d) {
    CollectiveRank& rank = use(d);
    normalise_output(rank.shard, rank.stream.get(), d);
  }
}

// --- Ulysses ----------------------------------------------------------------------------------

NcclUlysses::NcclUlysses(const RingProblem& problem, double timeout_s)
    : NcclCollective(problem, timeout_s), split_(ulysses_split(problem, 2)) {  // bf16 / fp16: 2 bytes
  const RingCase& c = problem.ring_case();
  const BlockGeometry whole{c.seq_len, split_.per_device.heads, split_.per_device.kv_heads, c.head_dim};
  const std::vector<Position> by_rank = positions_in_rank_order(problem);
  const Deadline deadline = Deadline::after(timeout_s_);
  for (Count d = 0; d < n_; ++d) {
    CollectiveRank& rank = use(d);
    const cudaStream_t stream = rank.stream.get();
    bool no_fault = false;  // an injected OOM hits the shard's allocation
    rank.whole_memory.emplace(whole, 1, d, no_fault, 1);
    rank.whole = rank.whole_memory->device(0);
    // Send and receive buffers, in and out: [peer][pair].
    rank.exchange = DeviceMemory(2 * n_ * (align_up(pair_bytes()) + align_up(out_pair_bytes())), d,
                                 "the all-to-all buffers", no_fault);
    rank.rank_positions = DeviceMemory(c.seq_len * 8, d, "the key positions of every device", no_fault);
    // What never changes between iterations: positions and each query's interval, uploaded once.
    const auto upload = [&](void* to, const std::vector<Position>& from, const char* what) {
      check_cuda(cudaMemcpyAsync(to, from.data(), from.size() * sizeof(Position), cudaMemcpyHostToDevice, stream), d,
                 [&] { return fmt::format("cudaMemcpy of the {} to device {}", what, d); });
    };
    upload(rank.whole.positions(0), split_.whole.positions, "whole sequence's positions");
    upload(rank.whole.lowest, split_.whole.lowest_key, "whole sequence's lowest keys");
    upload(rank.whole.highest, split_.whole.highest_key, "whole sequence's highest keys");
    upload(rank.rank_positions.get(), by_rank, "key positions of every device");
    wait_stream(stream, d, "upload of the whole sequence's positions", deadline);
    rank.schedule = DeviceSchedules(split_.whole, std::vector<std::span<const Position>>{split_.whole.positions}, false,
                                    shape_, stream, d, fmt::format("device {}", d), deadline);
  }
}

std::int64_t NcclUlysses::pair_bytes() const { return ulysses_pack_bytes(ranks_.front().shard, split_); }

std::int64_t NcclUlysses::out_pair_bytes() const {
  return ulysses_output_pack_bytes(ranks_.front().whole, problem_.block_size());
}

void NcclUlysses::enqueue_iteration() {
  const auto scale = static_cast<float>(problem_.scale());
  const Count tokens = problem_.block_size();
  const std::int64_t pair = align_up(pair_bytes()), out_pair = align_up(out_pair_bytes());
  // Offsets in a rank's exchange memory: sends in, receives in, sends out, receives out.
  const auto send_in = [&](CollectiveRank& r, Count peer) { return r.exchange.get() + peer * pair; };
  const auto recv_in = [&](CollectiveRank& r, Count peer) { return r.exchange.get() + (n_ + peer) * pair; };
  const auto send_out = [&](CollectiveRank& r, Count peer) { return r.exchange.get() + 2 * n_ * pair + peer * out_pair; };
  const auto recv_out = [&](CollectiveRank& r, Count peer) {
    return r.exchange.get() + 2 * n_ * pair + (n_ + peer) * out_pair;
  };
  // Device `peer`'s tokens' original positions (rank_positions holds every device's, rank order).
  const auto rows_of = [&](CollectiveRank& r, Count peer) {
    return reinterpret_cast<const std::int64_t*>(r.rank_positions.get()) + peer * tokens;
  };
  // One all-to-all of `bytes` per pair, from `send` to `receive` buffers, as one NCCL group.
  const auto all_to_all = [&](const std::string& what, std::int64_t bytes, const auto& send, const auto& receive) {
    group(what, [&] {
      for (Count d = 0; d < n_; ++d) {
        CollectiveRank& rank = use(d);
        for (Count e = 0; e < n_; ++e) {
          check_nccl(ncclSend(send(rank, e), static_cast<std::size_t>(bytes), ncclUint8, static_cast<int>(e), comms_[d],
                              rank.stream.get()),
                     d, fmt::format("ncclSend to rank {} in the {}", e, what));
          check_nccl(ncclRecv(receive(rank, e), static_cast<std::size_t>(bytes), ncclUint8, static_cast<int>(e), comms_[d],
                              rank.stream.get()),
                     d, fmt::format("ncclRecv from rank {} in the {}", e, what));
        }
      }
    });
  };
  std::vector<std::size_t> steps(static_cast<std::size_t>(n_));

  // In: each device packs each peer's heads of its tokens, then unpacks what each peer sent onto
  // their original positions in its whole sequence.
  const std::string in = "all-to-all of the Q, K and V heads";
  for (Count d = 0; d < n_; ++d) {
    CollectiveRank& rank = use(d);
    const cudaStream_t stream = rank.stream.get();
    steps[static_cast<std::size_t>(d)] = rank.steps->start(d, TimedSteps::Cell::handoff, in, stream);
    for (Count e = 0; e < n_; ++e) {
      for (const RowCopy& rows : ulysses_pack(rank.shard, split_, e, send_in(rank, e))) enqueue_copy_rows(rows, stream, d, in);
    }
  }
  all_to_all(in, pair_bytes(), send_in, recv_in);
  for (Count e = 0; e < n_; ++e) {
    CollectiveRank& rank = use(e);
    const cudaStream_t stream = rank.stream.get();
    for (Count s = 0; s < n_; ++s) {
      for (const RowCopy& rows : ulysses_unpack(recv_in(rank, s), rank.whole, rows_of(rank, s), tokens)) {
        enqueue_copy_rows(rows, stream, e, in);
      }
    }
    rank.steps->finish(steps[static_cast<std::size_t>(e)], stream);
  }

  for (Count e = 0; e < n_; ++e) {
    time_call(e, ranks_[static_cast<std::size_t>(e)].whole.kernel_args(0, scale), "kernel of Ulysses");
  }

  // Out: each device's output heads of each peer's tokens, normalised, packed, exchanged and
  // written into the peer's output rows beside the other devices' heads.
  const std::string out = "all-to-all of the output heads back";
  for (Count e = 0; e < n_; ++e) {
    CollectiveRank& rank = use(e);
    const cudaStream_t stream = rank.stream.get();
    normalise_output(rank.whole, stream, e);
    steps[static_cast<std::size_t>(e)] = rank.steps->start(e, TimedSteps::Cell::handoff, out, stream);
    for (Count d = 0; d < n_; ++d) {
      enqueue_copy_rows(ulysses_output_pack(rank.whole, rows_of(rank, d), tokens, send_out(rank, d)), stream, e, out);
    }
  }
  all_to_all(out, out_pair_bytes(), send_out, recv_out);
  for (Count d = 0; d < n_; ++d) {
    CollectiveRank& rank = use(d);
    const cudaStream_t stream = rank.stream.get();
    for (Count e = 0; e < n_; ++e) enqueue_copy_rows(ulysses_output_unpack(recv_out(rank, e), rank.shard, split_, e), stream, d, out);
    rank.steps->finish(steps[static_cast<std::size_t>(d)], stream);
  }
}

}  // namespace stripesim::validate::gpu
