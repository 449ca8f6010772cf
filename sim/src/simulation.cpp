#include "stripesim/sim/simulation.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <tuple>

#include "stripesim/model/flops/attention_heads.hpp"
#include "stripesim/model/flops/precision.hpp"
#include "stripesim/model/io/input_error.hpp"
#include "stripesim/model/io/json_fields.hpp"
#include "stripesim/model/io/name_match.hpp"
#include "stripesim/model/work/document_layouts.hpp"
#include "stripesim/model/work/layout_spec.hpp"
#include "stripesim/model/work/mask.hpp"
#include "stripesim/model/work/pair_count.hpp"
#include "stripesim/model/work/parallel_for.hpp"
#include "stripesim/model/work/work_model.hpp"
#include "stripesim/sim/attention_passes.hpp"
#include "stripesim/sim/collectives.hpp"
#include "stripesim/sim/kernel_time.hpp"
#include "stripesim/sim/ring_order.hpp"

namespace stripesim::sim {

using model::InputError;

PassSelection parse_pass_selection(std::string_view text) {
  if (text == "fwd") return PassSelection::forward;
  if (text == "bwd") return PassSelection::backward;
  if (text == "fwdbwd") return PassSelection::forward_backward;
  throw InputError(model::Input::pass, std::string(text), "expected fwd, bwd or fwdbwd", model::Shown::quoted);
}

PassSelection default_pass(Scope scope) {
  return scope == Scope::step ? PassSelection::forward_backward : PassSelection::forward;
}

SyncMode parse_sync_mode(std::string_view text) {
  if (text == "async") return SyncMode::async;
  if (text == "lockstep") return SyncMode::lockstep;
  if (text == "serial") return SyncMode::serial;
  throw InputError(model::Input::sync, std::string(text), "expected async, lockstep or serial", model::Shown::quoted);
}

bool parse_auto_ring_order(std::string_view text) {
  if (text == "rank" || text == "auto") return text == "auto";
  throw InputError(model::Input::ring_order, std::string(text), "expected rank or auto", model::Shown::quoted);
}

const char* to_string(SyncMode mode) {
  switch (mode) {
    case SyncMode::async: return "async";
    case SyncMode::lockstep: return "lockstep";
    case SyncMode::serial: return "serial";
  }
  return "async";
}

std::string to_string(PassSelection pass) {
  switch (pass) {
    case PassSelection::forward: return "fwd";
    case PassSelection::backward: return "bwd";
    case PassSelection::forward_backward: return "fwdbwd";
  }
  return {};
}

std::string to_string(RingPass pass) { return pass == RingPass::forward ? "forward" : "backward"; }

Bytes dtype_bytes(const std::string& dtype) {
  const std::optional<int> bits = model::precision_bits(dtype);
  if (!bits || *bits % 8 != 0) {
    throw InputError(model::Input::dtype, dtype, "expected " + model::whole_byte_precisions_text(), model::Shown::quoted);
  }
  return *bits / 8;
}

namespace {

// Scopes beyond the ring need the model's matmul shapes and the hardware's matmul rate.
void check_scope(const SimulateConfig& config, const Simulation& sim) {
  if (config.scope == Scope::attention) {
    if (config.recompute) throw InputError(model::Input::recompute, "", "recomputation is part of a layer or a step (--scope layer|step)");
    if (config.zero != ZeroStage::none) {
      throw InputError(model::Input::zero, std::to_string(to_int(config.zero)),
                       "shards the training state of a layer or a step (--scope layer or step)");
    }
    return;
  }
  const char* scope = to_string(config.scope);
  if (!sim.transformer) {
    throw InputError(model::Input::scope, scope, "needs --model (the layer's matmul shapes; --heads etc. describe attention only)");
  }
  if (!sim.hardware.matmul_efficiency) {
    // Named as the hardware: plan (always a step) has no --scope to blame.
    throw InputError(model::Input::hardware, sim.hardware.file.empty() ? sim.hardware.name : sim.hardware.file,
                     "has no matmul_efficiency to price a layer's or a step's matmuls with");
  }
  if (config.sync == SyncMode::serial) {
    // The CPU validator's one processor runs the devices' attention in turn, but a layer's matmuls
    // and all-reduces are priced per device at once: the two would not add up to one machine.
    throw InputError(model::Input::sync, "serial",
                     fmt::format("one processor running every device in turn (the CPU validator) prices attention only; "
                                 "--scope {} needs --sync async or lockstep",
                                 scope));
  }
  if (config.scope == Scope::step && config.pass != PassSelection::forward_backward) {
    throw InputError(model::Input::pass, to_string(config.pass),
                     "a training step (--scope step) runs forward and backward; give fwdbwd or no --pass");
  }
  if (config.recompute && config.pass != PassSelection::forward_backward) {
    throw InputError(model::Input::recompute, "",
                     fmt::format("the backward recomputes the forward; needs --pass fwdbwd, not {}", to_string(config.pass)));
  }
  if (config.zero != ZeroStage::none && config.pass != PassSelection::forward_backward) {
    throw InputError(model::Input::zero, std::to_string(to_int(config.zero)),
                     fmt::format("shards what training keeps (optimizer states, gradients, weights); needs --pass fwdbwd, not {}",
                                 to_string(config.pass)));
  }
}

}  // namespace

Count padded_seq_len(const SimulateConfig& config, const model::Mask& mask) {
  if (!config.pad_seq) return config.seq_len;
  if (config.pad_documents) {
    throw InputError(model::Input::pad_seq, "", "pads the whole sequence, --pad-documents each document; give one or the other");
  }
  if (mask.kind() == model::MaskKind::documents) {
    throw InputError(model::Input::pad_seq, "",
                     "pads one sequence at its end; a documents mask is padded document by document (--pad-documents)");
  }
  // The sequence is one document, padded as --pad-documents pads each.
  const Count padded = model::pad_document_lengths({config.seq_len}, 2 * config.devices).front();
  if (padded > model::kMaxSeqLen) {
    throw InputError(model::Input::pad_seq, "", fmt::format("the padded sequence of {} tokens exceeds 2^31", padded));
  }
  return padded;
}

namespace {

// The ring's settings mean nothing to a collective; given with one, they are refused, not ignored.
void check_context_parallel(const SimulateConfig& config, const ContextParallel& cp) {
  const std::string name = to_string(cp, config.devices);
  const Count ring = ring_degree(cp, config.devices);
  const bool has_ring = ring > 1 || cp.algorithm == CpAlgorithm::ring;
  if (!has_ring) {
    if (config.sync == SyncMode::lockstep) {
      throw InputError(model::Input::sync, "lockstep", fmt::format("sets how a ring's rounds wait; --cp {} has no ring", name));
    }
    // By kind, so that a value from an --experiment file is named at its field.
    if (config.kv_buffers != 2) {
      throw InputError(model::Input::kv_buffers, std::to_string(config.kv_buffers),
                       fmt::format("a ring's K/V buffers; --cp {} has no ring", name));
    }
    if (config.skip_unread_hops) throw InputError(model::Input::skip_unread_hops, "", fmt::format("a ring's hops; --cp {} has no ring", name));
    if (!config.merges.empty()) {
      throw InputError(model::Input::merges, config.merges,
                       fmt::format("prices folding a ring's calls into one output; --cp {} has no ring (one call a head group)", name));
    }
  }
  if (cp.algorithm != CpAlgorithm::ring && config.auto_ring_order) {
    throw InputError(model::Input::ring_order, "auto", fmt::format("orders the GPUs of a plain ring, not --cp {}", name));
  }
  // Buffers beyond the ring's blocks hold nothing (every block is in by then), yet would be counted
  // as memory: at most one a block.
  const Count most_buffers = std::max<Count>(2, ring);
  if (has_ring && config.kv_buffers > most_buffers) {
    throw InputError(model::Input::kv_buffers, std::to_string(config.kv_buffers),
                     ring == 1 ? std::string("must be at most 2 (the default): a ring of 1 device holds its own K/V block only")
                               : fmt::format("must be at most {}: a ring of {} devices has that many K/V blocks", most_buffers, ring));
  }
  // One processor running every device in turn is the CPU validator, which runs no hybrid; a
  // hybrid's ring stands for U GPUs each, which a serial ring of R would not run.
  if (cp.algorithm == CpAlgorithm::hybrid && config.sync == SyncMode::serial) {
    throw InputError(model::Input::sync, "serial",
                     fmt::format("one processor running every device in turn (the CPU validator) runs no --cp {}; give ring, "
                                 "allgather or ulysses, or --sync {}",
                                 name, has_ring ? "async or lockstep" : "async (lockstep paces a ring, which it has not)"));
  }
  if (cp.algorithm != CpAlgorithm::ring && (config.hop_bytes || config.grad_hop_bytes)) {
    throw InputError(model::Input::cp, name, "the validator's hop size applies to the ring only");
  }
}

// Scope layer or step: all of the step but the attention passes, from the planned mesh.
StepShape plan_step(const Simulation& sim) {
  StepShape step;
  step.scope = sim.config.scope;
  step.forward = sim.config.pass != PassSelection::backward;
  step.backward = sim.config.pass != PassSelection::forward;
  step.recompute = sim.config.recompute;
  step.zero = sim.config.zero;
  step.model = *sim.transformer;
  step.hardware = sim.hardware;
  // The attention's rate at its precision against the matmuls': this hardware's peaks, or where it
  // lists none for the precision, those of the kernel's hardware, whose rates priced the calls.
  const model::HardwareProfile& rates = sim.hardware.peak_tflops.contains(sim.dtype) ? sim.hardware : sim.kernel_hardware;
  step.attention_flop_weight = rates.peak_tflops.at(rates.matmul_precision) / rates.peak_tflops.at(sim.dtype);
  step.mesh = sim.mesh;
  step.seq_len = sim.config.seq_len;
  step.padding_tokens = sim.padding_tokens;
  step.batch = sim.config.batch;
  step.unmasked_pairs = static_cast<double>(sim.useful_pairs);
  step.kv_memory_bytes = sim.cp_shape.memory_bytes;
  step.kv_backward_memory_bytes = sim.cp_shape.backward_memory_bytes;
  const Count local_tokens = sim.config.seq_len / sim.config.devices * sim.config.batch;
  // Every group of a kind runs its collective at once with the others (the first is the one timed).
  const auto first_beside_rest = [&](auto collective_us, const Groups& groups, Bytes bytes) {
    return collective_us(sim.topology, groups.front(), bytes, Groups(groups.begin() + 1, groups.end()));
  };
  step.activation_allreduce_bytes = local_tokens * sim.transformer->d_model * static_cast<Bytes>(kActivationBytesPerElement);
  step.activation_allreduce_us = first_beside_rest(allreduce_us, model_parallel_groups(sim.mesh), step.activation_allreduce_bytes);
  const Groups copies = gradient_groups(sim.mesh);
  // The gradients reduced and, sharded (ZeRO), the updated weights gathered: the memory model's bytes.
  const auto parameters = static_cast<Bytes>(parameters_per_device(*sim.transformer, sim.mesh.model_parallel));
  const Bytes gradient_bytes = parameters * static_cast<Bytes>(kGradientBytesPerParameter);
  const Bytes weight_bytes = parameters * static_cast<Bytes>(kWeightBytesPerParameter);
  step.gradient_allreduce_us = first_beside_rest(allreduce_us, copies, gradient_bytes);
  if (step.zero != ZeroStage::none) {
    const auto members = static_cast<Bytes>(copies.front().size());
    step.weight_allgather_us = first_beside_rest(allgather_us, copies, (weight_bytes + members - 1) / members);
  }
  return step;
}

}  // namespace

SimulateConfig simulate_config_from_json(const nlohmann::json& doc, const std::string& label, SimulateConfig base) {
  const model::JsonFields f(doc, label);
  f.allow_only({"description", "model", "heads", "kv_heads", "head_dim", "batch", "model_parallel", "seq_len",
                "devices", "layouts", "tile", "tiling", "kernel", "mask", "pad_documents", "pad_seq", "pass", "dtype", "hardware",
                "topology", "sync", "kv_buffers", "ring_order", "scope", "recompute", "zero", "data_parallel", "cp",
                "skip_unread_hops", "merges"});
  // As with the flags, an empty name would mean the default (or, for the model, none).
  for (const char* field : {"model", "kernel", "mask", "dtype", "hardware", "topology", "cp", "merges"}) {
    if (f.has(field) && f.string(field).empty()) {
      throw InputError(fmt::format("{}: an empty value; give one or leave the field out", f.where(field)));
    }
  }
  base.model = f.string_or("model", base.model);
  for (const char* field : {"heads", "kv_heads", "head_dim"}) {
    if (f.has("model") && f.has(field)) {
      throw InputError(fmt::format("{}: \"model\" sets the heads and head size; give one or the other", f.where(field)));
    }
  }
  base.heads = f.positive_count_or("heads", base.heads);
  // As with the flags, K/V heads default to the heads (multi-head attention): a file giving
  // "heads": 32 alone meant 32 K/V heads, not the default config's 16.
  base.kv_heads = f.positive_count_or("kv_heads", f.has("heads") ? base.heads : base.kv_heads);
  base.head_dim = f.positive_count_or("head_dim", base.head_dim);
  base.batch = f.positive_count_or("batch", base.batch);
  base.model_parallel = f.positive_count_or("model_parallel", base.model_parallel);
  base.data_parallel = f.positive_count_or("data_parallel", base.data_parallel);
  if (f.has("scope")) {
    base.scope = f.parsed("scope", parse_scope);
    if (!f.has("pass")) base.pass = default_pass(base.scope);
  }
  base.recompute = f.boolean_or("recompute", base.recompute);
  if (f.has("zero")) {
    const nlohmann::json& zero = f.raw("zero");
    const std::string text = zero.is_number_unsigned() ? std::to_string(zero.get<std::uint64_t>()) : zero.dump();
    base.zero = parse_zero_stage(text, f.where("zero"));
  }
  base.pad_documents = f.boolean_or("pad_documents", base.pad_documents);
  base.pad_seq = f.boolean_or("pad_seq", base.pad_seq);
  base.seq_len = f.positive_count_or("seq_len", base.seq_len);
  base.devices = f.positive_count_or("devices", base.devices);
  base.layouts = f.distinct_string_list_or("layouts", base.layouts, model::layout_identity);
  if (f.has("tile")) base.tile = f.parsed("tile", model::parse_tile_shape);
  if (f.has("tiling")) base.tiling = model::parse_tiling(f.string("tiling"), f.where("tiling"));
  base.kernel = f.string_or("kernel", base.kernel);
  if (f.has("merges")) {
    base.merges = f.string("merges");
    (void)merge_style(base.merges, f.where("merges"));  // refused here, naming the field
  }
  base.mask = f.string_or("mask", base.mask);
  if (f.has("pass")) base.pass = f.parsed("pass", parse_pass_selection);
  base.dtype = f.string_or("dtype", base.dtype);
  base.hardware = f.string_or("hardware", base.hardware);
  base.topology = f.string_or("topology", base.topology);
  if (f.has("sync")) base.sync = f.parsed("sync", parse_sync_mode);
  base.kv_buffers = f.positive_count_or("kv_buffers", base.kv_buffers);
  base.cp = f.string_or("cp", base.cp);
  base.skip_unread_hops = f.boolean_or("skip_unread_hops", base.skip_unread_hops);
  if (f.has("ring_order")) base.auto_ring_order = f.parsed("ring_order", parse_auto_ring_order);
  return base;
}

Topology simulation_topology(const SimulateConfig& config, const model::ConfigCatalog& catalog,
                             const model::HardwareProfile& hardware, Count gpus) {
  if (config.topology_graph) return *config.topology_graph;
  return load_topology(config.topology.empty() ? fmt::format("nvswitch:{}", gpus) : config.topology, catalog.root(),
                       hardware.link_bandwidth, hardware.link_latency_us, gpus);
}

void check_attention_shape(Count heads, Count kv_heads, Count head_dim, Count batch) {
  using model::Input;
  using model::kMaxBatch, model::kMaxHeadDim, model::kMaxHeads;
  for (const auto& [input, value, most] : {std::tuple{Input::heads, heads, kMaxHeads}, {Input::kv_heads, kv_heads, kMaxHeads},
                                           {Input::head_dim, head_dim, kMaxHeadDim}, {Input::batch, batch, kMaxBatch}}) {
    if (value < 1) throw InputError(input, std::to_string(value), "must be at least 1");
    if (value > most) throw InputError(input, std::to_string(value), fmt::format("must be between 1 and {}", most));
  }
}

namespace {

// The kernel time model places every thread block of a call on the SMs, about 60 ns and 13 bytes
// a block (8 s and 1.7 GB at the bound, measured): bounded so that a simulation stays within
// seconds and a gigabyte or two. A million tokens a call over 128 heads and a batch of 16 is 16.8M
// blocks. The forward launches streams x query tiles; a backward over key tiles launches each key
// tile backward_blocks_per_key_tile() times (and the dQ pass its query tiles beside them).
void check_blocks_per_call(const Simulation& sim, Count blocks_of_sequence) {
  constexpr Count kMostBlocksPerCall = Count{1} << 27;
  const Count queries = sim.config.seq_len / blocks_of_sequence;
  // An all-gathered call reads the whole sequence's keys; the others read as many keys as queries.
  const Count keys = sim.cp.algorithm == CpAlgorithm::allgather ? sim.config.seq_len : queries;
  const Count query_tiles = (queries + sim.tile.query - 1) / sim.tile.query;
  const Count key_tiles = (keys + sim.tile.key - 1) / sim.tile.key;
  const Count streams = sim.cp_shape.streams;
  const auto refuse = [&](std::string_view pass, Count blocks) {
    throw InputError(fmt::format("-n {} over {} block{} of {} queries, {} stream{} (heads x batch) a call in {}x{} tiles: one {} call "
                                 "launches {} thread blocks, more than the {} the kernel time model places; spread the sequence over "
                                 "more devices, or use fewer heads or a smaller batch",
                                 sim.config.seq_len, blocks_of_sequence, blocks_of_sequence == 1 ? "" : "s", queries, streams,
                                 streams == 1 ? "" : "s", sim.tile.query, sim.tile.key, pass, blocks, kMostBlocksPerCall));
  };
  if (query_tiles > kMostBlocksPerCall / streams) refuse("forward", query_tiles * streams);
  if (sim.config.pass == PassSelection::forward) return;
  const Count split = KernelTimeModel(sim.kernel, sim.kernel_sms, sim.call_shape).backward_blocks_per_key_tile();
  const Count per_stream = sim.kernel.backward_blocks == BackwardBlocks::query_tiles ? query_tiles * split
                           : sim.kernel.backward_blocks == BackwardBlocks::key_tiles ? key_tiles * split
                                                                                      : key_tiles * split + query_tiles;
  if (per_stream > kMostBlocksPerCall / streams) refuse("backward", per_stream * streams);
}

}  // namespace

double precision_slowdown(const model::HardwareProfile& hardware, const KernelProfile& kernel, const std::string& dtype) {
  if (dtype == kernel.dtype) return 1.0;  // timed in it: no rate to convert by
  if (!hardware.peak_tflops.contains(dtype)) {
    throw InputError(model::Input::dtype, dtype, fmt::format("{} lists no peak rate for it", hardware.label()));
  }
  if (!hardware.peak_tflops.contains(kernel.dtype)) {
    throw InputError(model::Input::kernel, kernel.name,
                     fmt::format("timed in {}, for which hardware {} lists no peak rate to convert its times by", kernel.dtype,
                                 hardware.name),
                     model::Shown::quoted);
  }
  return hardware.peak_tflops.at(kernel.dtype) / hardware.peak_tflops.at(dtype);
}

SimulationPlan plan_simulation(const SimulateConfig& config, const model::ConfigCatalog& catalog, LayoutCache* shared_layouts) {
  if (config.layouts.empty()) throw InputError(model::Input::layouts, "", "needs at least one layout");
  using model::Input;
  if (config.model_parallel < 1) throw InputError(Input::model_parallel, std::to_string(config.model_parallel), "must be at least 1");
  check_attention_shape(config.heads, config.kv_heads, config.head_dim, config.batch);
  if (config.kv_buffers < 2) {
    throw InputError(Input::kv_buffers, std::to_string(config.kv_buffers),
                     "must be at least 2 (the block in use and the one arriving)");
  }
  constexpr Count kMaxSimulatedDevices = 4096;
  if (config.devices < 1 || config.devices > kMaxSimulatedDevices) {
    throw InputError(model::Input::devices, std::to_string(config.devices),
                     fmt::format("must be between 1 and {}", kMaxSimulatedDevices));
  }
  Simulation sim;
  sim.config = config;
  sim.hardware = config.hardware_profile ? *config.hardware_profile : catalog.hardware(config.hardware);
  const std::vector<std::string> homes = kernel_homes(sim.hardware, catalog);  // once, for the lookup and the note
  sim.kernel = config.kernel_profile ? *config.kernel_profile
                                     : load_kernel_profile(config.kernel, catalog, sim.hardware, homes);
  sim.kernel_note = kernel_hardware_note(sim.kernel, sim.hardware, homes);
  sim.kernel_sms = sim.hardware.sms;
  sim.kernel_hardware = sim.hardware;
  if (sim.kernel_note) {
    std::optional<model::HardwareProfile> measured_on =
        hardware_named_by(catalog, sim.kernel.hardware, fmt::format("kernel {} field \"hardware\"", sim.kernel.name));
    if (measured_on) {
      sim.kernel_hardware = std::move(*measured_on);
      sim.kernel_sms = sim.kernel_hardware.sms;
    } else {
      *sim.kernel_note += fmt::format(" (no hardware profile {} is known to give its SMs: its blocks are placed on this device's {})",
                                      sim.kernel.hardware, sim.hardware.sms);
    }
  }
  if (!config.merges.empty()) {
    sim.kernel.merge = merge_style(config.merges, "--merges");
    sim.merges = config.merges;
  }
  Count heads = config.heads, kv_heads = config.kv_heads, head_dim = config.head_dim;
  if (!config.model.empty()) {
    sim.transformer = catalog.model(config.model);
    heads = sim.transformer->heads;
    kv_heads = sim.transformer->kv_heads;
    head_dim = sim.transformer->head_dim;
  }
  check_scope(config, sim);
  model::require_kv_heads_divide(heads, kv_heads);
  sim.heads_per_device = model::model_parallel_heads(heads, config.model_parallel, "heads", false);
  sim.kv_heads_per_device = model::model_parallel_heads(kv_heads, config.model_parallel, "K/V heads", true);
  sim.head_dim = head_dim;
  sim.tile = config.tile.value_or(sim.kernel.tile);
  // The tiling is how the kernel works, not a setting of it: a different one would price tiles the
  // kernel never computes.
  sim.tiling = sim.kernel.tiling;
  if (config.tiling && *config.tiling != sim.kernel.tiling) {
    throw InputError(model::Input::tiling, model::tiling_name(*config.tiling),
                     fmt::format("kernel {} ({}) uses {} tiling; give --tiling {} or a kernel with {} tiling", sim.kernel.name, sim.kernel.hardware,
                                 model::tiling_name(sim.kernel.tiling), model::tiling_name(sim.kernel.tiling),
                                 model::tiling_name(*config.tiling)));
  }
  sim.dtype = config.dtype.empty() ? sim.kernel.dtype : config.dtype;
  (void)dtype_bytes(sim.dtype);  // rejects an unknown dtype before the hardware's rates are asked
  const double slowdown = [&] {
    try {
      return precision_slowdown(sim.kernel_hardware, sim.kernel, sim.dtype);
    } catch (const InputError& e) {
      // No --kernel given: the kernel is the hardware profile's default, named as that field.
      if (!config.kernel.empty() || config.kernel_profile || e.input() != model::Input::kernel) throw;
      throw e.renamed(fmt::format("{} field \"default_kernel\"", sim.hardware.label()));
    }
  }();
  sim.cp = parse_context_parallel(config.cp, config.devices);
  check_context_parallel(config, sim.cp);
  // Validate every layout and the mask before simulating anything.
  model::Mask mask = model::parse_mask(config.mask, config.seq_len);
  sim.mask_kind = mask.kind();
  if (config.scope != Scope::attention) {
    const model::Run sequence{0, 1, config.seq_len, 0};
    sim.useful_pairs = model::count_run_pairs(sequence, sequence, mask);  // before the padding below
  }
  if (config.pad_documents) {
    model::PaddedDocuments padded = model::pad_documents(mask, config.devices);
    mask = std::move(padded.mask);
    sim.config.seq_len = padded.seq_len;
    sim.padding_tokens = padded.padding_tokens;
  }
  if (config.pad_seq) {
    const Count padded = padded_seq_len(config, mask);
    mask = model::parse_mask(config.mask, padded);
    sim.config.seq_len = padded;
    sim.padding_tokens = padded - config.seq_len;
  }
  sim.cp_shape = cp_shape(sim.cp,
                          AttentionShape{sim.config.seq_len, config.devices, config.batch, sim.heads_per_device,
                                         sim.kv_heads_per_device, head_dim, dtype_bytes(sim.dtype)},
                          config.kv_buffers);
  // A hybrid's layout cuts the sequence into the ring's R blocks, and its all-to-all each block
  // over the U devices of a group: the length must divide by U x R, as any other N-way split's.
  const Count layout_devices = layout_degree(sim.cp, config.devices);
  // A call's queries and keys are one block of the layout's (Ulysses: the whole sequence).
  const Count block_tokens = sim.config.seq_len / (sim.cp.algorithm == CpAlgorithm::ulysses ? 1 : layout_devices);
  sim.call_shape = {sim.cp_shape.streams, head_dim, sim.tile, slowdown, block_tokens};
  if (sim.cp.algorithm == CpAlgorithm::hybrid) {
    for (const auto& spec : config.layouts) model::require_seq_len_divisible(sim.config.seq_len, config.devices, spec, "N");
  }
  check_blocks_per_call(sim, sim.cp.algorithm == CpAlgorithm::ulysses ? 1 : layout_devices);
  std::vector<std::shared_ptr<const LazyLayout>> layouts;
  for (const auto& spec : config.layouts) {
    model::LayoutPlan planned = [&] {
      try {
        return model::plan_layout(spec, sim.config.seq_len, layout_devices, model::LayoutContext{&mask, sim.tile, sim.tiling});
      } catch (const model::IndivisibleLength& e) {
        throw model::for_every_layout(e, config.layouts, layout_devices);
      }
    }();
    if (shared_layouts == nullptr) {
      layouts.push_back(std::make_shared<const LazyLayout>(std::move(planned)));
      continue;
    }
    // What the layout depends on: the mask as padded here follows from the spec, the length and
    // the devices it was padded for; the length run (padded by --pad-seq for all N devices, where
    // a hybrid's layout has only its ring's R).
    const std::string key = fmt::format("{}|{}|{}|{}|{}|{}|{}|{}", spec, config.mask, config.seq_len, sim.config.seq_len,
                                        config.pad_documents ? config.devices : 0, layout_devices, sim.tile.to_string(),
                                        model::tiling_name(sim.tiling));
    layouts.push_back(shared_layouts->get(key, std::move(planned)));
  }

  if (config.data_parallel < 1) throw InputError(fmt::format("--data-parallel {}: must be at least 1", config.data_parallel));
  // Checked factor by factor so the product cannot overflow.
  if (config.model_parallel > kMaxMeshGpus || config.data_parallel > kMaxMeshGpus ||
      config.model_parallel * config.devices * config.data_parallel > kMaxMeshGpus) {
    throw InputError(fmt::format("-M {} x -N {} x -D {}: the mesh may hold at most {} GPUs", config.model_parallel,
                                 config.devices, config.data_parallel, kMaxMeshGpus));
  }
  sim.mesh = model::Mesh{config.model_parallel, config.devices, config.data_parallel};
  const bool one_ring = sim.mesh.gpus() == config.devices;
  if (config.auto_ring_order && !one_ring) {
    throw InputError(model::Input::ring_order, "auto", "orders the GPUs of a single ring; the mesh places rings of -M or -D above 1");
  }
  sim.topology = simulation_topology(config, catalog, sim.hardware, sim.mesh.gpus());
  if (config.auto_ring_order && (sim.topology.is_ideal() || config.devices == 1)) {
    throw InputError(model::Input::ring_order, "auto",
                     sim.topology.is_ideal() ? "orders the ring's GPUs by their links; --topology ideal has none to order by"
                                             : "orders the ring's GPUs by their links; a ring of one device sends nothing");
  }
  if (sim.topology.is_ideal() && !config.merges.empty()) {
    throw InputError(model::Input::merges, config.merges, "prices the merges between a ring's calls; --topology ideal prices the calls alone");
  }
  if (sim.topology.gpu_count() < sim.mesh.gpus()) {
    // Named as given: a file's "name" may be a shipped topology's (dgx-h100), not what was passed.
    throw InputError(model::Input::topology, config.topology.empty() ? sim.topology.name() : config.topology,
                     one_ring ? fmt::format("has {} GPUs, fewer than the ring's N = {}", sim.topology.gpu_count(), config.devices)
                              : fmt::format("has {} GPUs, fewer than the mesh's M x N x D = {} x {} x {} = {}",
                                            sim.topology.gpu_count(), config.model_parallel, config.devices,
                                            config.data_parallel, sim.mesh.gpus()));
  }
  return SimulationPlan{std::move(sim), std::move(mask), std::move(layouts)};
}

namespace {

// Where the plan's layouts are dealt: its tile, its padded length, the devices of its ring.
model::LayoutPoint layout_point(const SimulationPlan& plan) {
  const Simulation& sim = plan.simulation;
  return {sim.tile, plan.mask.seq_len(), layout_degree(sim.cp, sim.config.devices)};
}

}  // namespace

void require_layouts_apart(const SimulationPlan& plan) { model::require_layouts_apart_at(plan.simulation.config.layouts, layout_point(plan)); }

std::vector<std::string> layouts_apart(const SimulationPlan& plan) {
  std::vector<std::string> apart;
  std::set<std::string> identities;
  for (const std::string& spec : plan.simulation.config.layouts) {
    if (identities.insert(model::layout_identity_at(spec, layout_point(plan))).second) apart.push_back(spec);
  }
  return apart;
}

// Every context-parallel group's copy of the first group's members at `positions`, moved by each
// of `shifts`, but the first group's unmoved copy (the one simulated).
Groups copies_beside(const Groups& cp_groups, const std::vector<size_t>& positions, const std::vector<size_t>& shifts) {
  Groups beside;
  for (size_t g = 0; g < cp_groups.size(); ++g) {
    for (const size_t shift : shifts) {
      if (g == 0 && shift == 0) continue;
      std::vector<Count> copy;
      for (const size_t p : positions) copy.push_back(cp_groups[g][p + shift]);
      beside.push_back(std::move(copy));
    }
  }
  return beside;
}

// The rings that run beside the simulated one, on GPUs of their own: the other model-parallel
// ranks' and replicas' context-parallel groups and, in a hybrid, the other Ulysses ranks' rings,
// each through its group's positions in the order the simulated ring takes its own.
Groups concurrent_rings(const Simulation& sim, const Groups& cp_groups) {
  if (sim.cp.algorithm == CpAlgorithm::ulysses || sim.topology.is_ideal()) return {};  // no ring, or free links
  const Count u = sim.cp.algorithm == CpAlgorithm::hybrid ? ulysses_degree(sim.cp, sim.config.devices) : 1;
  // The simulated ring's positions in its group (a hybrid's ring takes every U-th).
  std::vector<size_t> positions;
  for (const Count gpu : sim.ring_order) {
    const auto at = std::find(sim.cp_group.begin(), sim.cp_group.end(), gpu);
    if (at == sim.cp_group.end()) return {};  // an order that is not the group's (cannot be mirrored)
    positions.push_back(static_cast<size_t>(at - sim.cp_group.begin()));
  }
  std::vector<size_t> shifts(static_cast<size_t>(u));
  std::iota(shifts.begin(), shifts.end(), size_t{0});
  return copies_beside(cp_groups, positions, shifts);
}

// The all-to-all groups beside the first (Ulysses: every context-parallel group; a hybrid: each
// group's U consecutive positions).
Groups alltoall_groups_beside(const Simulation& sim, const Groups& cp_groups) {
  const auto u = static_cast<size_t>(ulysses_degree(sim.cp, sim.config.devices));
  std::vector<size_t> positions(u);
  std::iota(positions.begin(), positions.end(), size_t{0});
  std::vector<size_t> shifts;
  for (size_t q = 0; q + u <= sim.cp_group.size(); q += u) shifts.push_back(q);
  return copies_beside(cp_groups, positions, shifts);
}

// What one hop of the algorithm's transfers carries: a ring's K/V block (as --hop-bytes sets it),
// a hybrid ring's, one step of an all-gather (a member's K/V of one head group), Ulysses' Q, K
// and V for one pair of devices.
Bytes hop_bytes(const Simulation& sim) {
  switch (sim.cp.algorithm) {
    case CpAlgorithm::ring:
      return sim.config.hop_bytes.value_or(sim.cp_shape.ring_hop_bytes);
    case CpAlgorithm::hybrid:
      return sim.cp_shape.ring_hop_bytes;
    case CpAlgorithm::allgather:
      return sim.cp_shape.gather_bytes;
    case CpAlgorithm::ulysses:
      return sim.cp_shape.qkv_pair_bytes;
  }
  return 0;
}

// The context-parallel group the simulation follows, moved to the front: the one whose transfers
// are slowest. Every group does the same work, so its transfers decide which finishes last, and
// the step waits for that one; the collectives are priced on their slowest group alike
// (collectives.hpp). Rings (a ring's, an all-gather's steps; a hybrid's U rings, every U-th GPU
// from each of its first U) are compared by their slowest hop of what they send, every ring's
// hops at once (two on one link share it). One processor (--sync serial) copies one part at a
// time: a ring's hops one after another, so by their sum; an all-gather's or Ulysses' parts each
// over the group's slowest hop (one_processor_collective_us). Ulysses at once is priced on its
// slowest group whichever leads (alltoall_us). Where the groups are alike (a regular placement)
// the first stays.
void follow_the_slowest_group(const Simulation& sim, Groups& cp_groups) {
  const bool one_processor = sim.config.sync == SyncMode::serial;
  const bool ulysses = sim.cp.algorithm == CpAlgorithm::ulysses;
  if (cp_groups.size() < 2 || sim.topology.is_ideal() || (ulysses && !one_processor)) return;
  const auto u = static_cast<size_t>(sim.cp.algorithm == CpAlgorithm::hybrid ? ulysses_degree(sim.cp, sim.config.devices) : 1);
  const Bytes bytes = std::max<Bytes>(1, hop_bytes(sim));
  std::vector<size_t> positions;  // a ring's: every U-th of its group
  for (size_t p = 0; p < cp_groups.front().size(); p += u) positions.push_back(p);
  if (positions.size() < 2) return;  // rings of one: nothing sent
  std::vector<size_t> shifts(u);
  std::iota(shifts.begin(), shifts.end(), size_t{0});
  Groups rings{{}};  // u a group, in group order: the first group's first, then copies_beside's
  for (const size_t p : positions) rings.front().push_back(cp_groups.front()[p]);
  for (auto& ring : copies_beside(cp_groups, positions, shifts)) rings.push_back(std::move(ring));
  size_t slowest = 0;
  if (one_processor) {  // no hybrid (refused): a ring a group
    Microseconds slowest_us = -1;
    for (size_t g = 0; g < rings.size(); ++g) {
      Microseconds us = 0;
      if (sim.cp.algorithm == CpAlgorithm::ring) {
        for (const Route& hop : ring_routes(sim.topology, rings[g])) us += hop.transfer_us(bytes);
      } else {
        us = one_processor_collective_us(sim.topology, rings[g], 1, bytes);
      }
      if (us > slowest_us) {
        slowest = g;
        slowest_us = us;
      }
    }
  } else {
    slowest = slowest_ring_group(sim.topology, rings, bytes) / u;
  }
  std::swap(cp_groups.front(), cp_groups[slowest]);
}

void place_on_topology(SimulationPlan& plan) {
  Simulation& sim = plan.simulation;
  if (sim.placed) return;
  Groups cp_groups = mesh_ring_orders(sim.mesh);
  follow_the_slowest_group(sim, cp_groups);
  sim.cp_group = cp_groups.front();
  sim.cp_groups_beside.assign(cp_groups.begin() + 1, cp_groups.end());
  const Count u = ulysses_degree(sim.cp, sim.config.devices);
  sim.alltoall_group.assign(sim.cp_group.begin(), sim.cp_group.begin() + u);
  sim.alltoall_groups_beside = alltoall_groups_beside(sim, cp_groups);
  switch (sim.cp.algorithm) {
    case CpAlgorithm::ring:
      sim.kv_bytes = hop_bytes(sim);
      sim.grad_bytes = sim.config.grad_hop_bytes.value_or(0);
      sim.ring_order = sim.config.auto_ring_order ? auto_ring_order(sim.topology, sim.config.devices, sim.kv_bytes) : sim.cp_group;
      break;
    case CpAlgorithm::hybrid:
      // The ring joins the first GPU of every all-to-all group (the others run rings alike).
      sim.kv_bytes = hop_bytes(sim);
      for (size_t p = 0; p < sim.cp_group.size(); p += static_cast<size_t>(u)) sim.ring_order.push_back(sim.cp_group[p]);
      break;
    case CpAlgorithm::allgather:
      sim.kv_bytes = hop_bytes(sim);  // one step of the all-gather's ring
      sim.ring_order = sim.cp_group;
      break;
    case CpAlgorithm::ulysses:
      sim.ring_order = sim.cp_group;
      break;
  }
  sim.rings_beside = concurrent_rings(sim, cp_groups);
  SharedRoutes routes = shared_ring_routes(sim.topology, sim.ring_order, sim.rings_beside);
  // An all-gather's hops are its steps' transfers, which move at once (collectives.hpp), not a
  // ring's, whose own hops on a link queue in the simulator (nor one processor's copies, one at
  // a time: --sync serial).
  if (sim.cp.algorithm == CpAlgorithm::allgather && sim.config.sync != SyncMode::serial) {
    for (size_t p = 0; p < routes.hops.size(); ++p) routes.hops[p].bandwidth = routes.at_once_bandwidth[p];
  }
  sim.hops = std::move(routes.hops);
  sim.hops_shared_by = std::move(routes.shared_by);
  if (sim.config.scope != Scope::attention) sim.step_shape = plan_step(sim);
  sim.placed = true;
}

Simulation run_simulation(const SimulateConfig& config, const model::ConfigCatalog& catalog) {
  return run_simulation(plan_simulation(config, catalog));
}

Simulation run_simulation(SimulationPlan plan) {
  place_on_topology(plan);
  Simulation& sim = plan.simulation;
  const SimulateConfig& config = sim.config;
  const model::Mask& mask = plan.mask;
  std::vector<const model::Layout*> layouts;
  for (const auto& lazy : plan.layouts) layouts.push_back(&lazy->get());
  const KernelTimeModel kernel(sim.kernel, sim.kernel_sms, sim.call_shape);

  auto simulate_layout = [&](const model::Layout& layout, std::uint64_t& events) {
    LayoutSimulation result;
    result.layout = layout.name();
    result.passes = simulate_attention_passes(sim, layout, mask, kernel, events, PassDetail::simulated, &result.most_partial_tiles);
    result.time_us = result.passes.empty() ? 0.0 : result.passes.back().end_us;
    result.kv_memory_bytes = config.pass == PassSelection::forward ? sim.cp_shape.memory_bytes : sim.cp_shape.backward_memory_bytes;
    if (sim.step_shape) {
      result.step = estimate_step(*sim.step_shape, result.passes);
      result.time_us = result.step->time_us;
    }
    return result;
  };

  // Speedups are over contiguous: simulated too when not asked for.
  std::vector<const model::Layout*> jobs = layouts;
  const auto asked = std::ranges::find_if(layouts, [](const model::Layout* l) { return l->kind() == model::LayoutKind::contiguous; });
  const model::Layout contiguous = model::Layout::contiguous(config.seq_len, layouts.front()->devices());
  if (asked == layouts.end()) jobs.push_back(&contiguous);
  // Layouts are independent: simulated side by side, each into its own slot.
  std::vector<LayoutSimulation> results(jobs.size());
  std::vector<std::uint64_t> events(jobs.size(), 0);
  // One thread each (their counting shares the cores inside), so no layout waits for a free one.
  model::parallel_for(jobs.size(), static_cast<unsigned>(jobs.size()), [&](size_t i) { results[i] = simulate_layout(*jobs[i], events[i]); });
  for (const std::uint64_t e : events) sim.events += e;
  const Microseconds contiguous_time = results[asked == layouts.end() ? layouts.size() : static_cast<size_t>(asked - layouts.begin())].time_us;
  results.resize(layouts.size());
  sim.results = std::move(results);
  for (auto& result : sim.results) result.speedup_vs_contiguous = contiguous_time / result.time_us;
  return std::move(plan.simulation);
}

std::optional<std::string> partial_tiles_note(const KernelProfile& kernel, Count most_partial_tiles) {
  if (most_partial_tiles < 2 || partial_tile_cost_identified(kernel)) return std::nullopt;
  return fmt::format(
      "kernel {}: its fit timed no query tile with more than one partial tile (fit.partial_tiles), and calls here "
      "hold up to {} in one; their time rests on how that fit split a masked block's cost between its partial "
      "tiles and the block, not on a measurement (README, \"What causal timings cannot tell\")",
      kernel.name, most_partial_tiles);
}

std::optional<std::string> elementwise_cost_note(const model::HardwareProfile& hardware) {
  const std::string source = hardware.sources.is_object() ? hardware.sources.value("elementwise_bytes_per_dmodel", "") : "";
  if (!source.starts_with(kElementwiseFitSource)) return std::nullopt;
  return fmt::format(
      "hardware {}: its element-wise cost, {:g} bytes per token per d_model, was fitted to one code base's measured "
      "step speedups ({}); other code is priced as that one (a PyTorch layer with fused kernels moves about 50): give "
      "your own in a copy of the profile (README, \"The A100's element-wise cost is the paper's JAX code's\")",
      hardware.name, hardware.elementwise_bytes_per_dmodel, source);
}

std::optional<std::string> kernel_hardware_note(const KernelProfile& kernel, const model::HardwareProfile& hardware,
                                                const model::ConfigCatalog& catalog) {
  return kernel_hardware_note(kernel, hardware, kernel_homes(hardware, catalog));
}

std::optional<std::string> kernel_hardware_note(const KernelProfile& kernel, const model::HardwareProfile& hardware,
                                                const std::vector<std::string>& homes) {
  // A kernel measured on this hardware, or on one whose kernels it runs as they are (kernels_from,
  // e.g. the H800's H100 profiles), carries one of their names.
  if (std::ranges::any_of(homes, [&](const std::string& n) { return model::same_name(n, kernel.hardware); })) return std::nullopt;
  return fmt::format(
      "kernel {}: measured on {} (its field \"hardware\"), priced here on {}: every call costs what it cost on {}, "
      "whatever this device's rates; give a kernel profile of {} or fit one (README, \"Kernels, and how accurate is it\")",
      kernel.name, kernel.hardware, hardware.name, kernel.hardware, hardware.name);
}

std::optional<std::string> head_size_note(const KernelProfile& kernel, Count head_dim) {
  if (!kernel.max_head_dim || head_dim <= *kernel.max_head_dim) return std::nullopt;
  return fmt::format("kernel {} is built for head sizes up to {} (its field \"max_head_dim\"): no call of it runs at head size {}, "
                     "its tiles are priced by extrapolating from the head size {} it was timed at, as if one ran; give a kernel built for it",
                     kernel.name, *kernel.max_head_dim, head_dim, kernel.head_dim);
}

std::vector<std::string> simulation_notes(const Simulation& sim) {
  Count most = 0;
  for (const LayoutSimulation& r : sim.results) most = std::max(most, r.most_partial_tiles);
  std::vector<std::string> notes;
  if (sim.kernel_note) notes.push_back(*sim.kernel_note);
  if (std::optional<std::string> note = head_size_note(sim.kernel, sim.head_dim)) notes.push_back(std::move(*note));
  if (std::optional<std::string> note = partial_tiles_note(sim.kernel, most)) notes.push_back(std::move(*note));
  // A topology named for its size (dgx-h100-x2, cluster:4x8) beside the default -N 8 would
  // otherwise price a ring on one of its nodes while the user pictures all of them.
  if (const Count gpus = sim.topology.gpu_count(); gpus > sim.mesh.gpus()) {
    notes.push_back(fmt::format("topology {}: the mesh (-M {} x -N {} x -D {}) uses {} of its {} GPUs, the others idle; "
                                "-N, -M and -D set how many (each device's \"gpu\" in the JSON names the ones used)",
                                sim.topology.name(), sim.mesh.model_parallel, sim.mesh.devices, sim.mesh.data_parallel,
                                sim.mesh.gpus(), gpus));
  }
  // Rows that agree to the byte would otherwise read as a finding about the layouts.
  // So would one layout asked for alone (plan refuses --layouts with Ulysses alone; simulate keeps
  // the row, to be set beside a ring's of the same flags).
  if (sim.cp.algorithm == CpAlgorithm::ulysses &&
      (sim.results.size() > 1 || (!sim.results.empty() && sim.results.front().layout != "contiguous"))) {
    notes.push_back("--cp ulysses: every device attends the whole sequence on its own heads, so every layout is one computation "
                    "(contiguous's, to the byte); a layout matters to a ring (--cp ring, or hybrid:UxR's)");
  }
  // USP and TransformerEngine place a hybrid's all-to-all on the GPUs of one node; one across
  // nodes is priced as it runs, over the network, and said to be so.
  if (sim.cp.algorithm == CpAlgorithm::hybrid && sim.alltoall_group.size() > 1 && !sim.topology.is_ideal()) {
    const NodePlacement placement = sim.topology.placement();
    std::vector<Count> nodes;
    for (const Count gpu : sim.alltoall_group) nodes.push_back(placement.node_of_gpu[static_cast<size_t>(gpu)]);
    std::sort(nodes.begin(), nodes.end());
    const auto spanned = std::unique(nodes.begin(), nodes.end()) - nodes.begin();
    if (spanned > 1) {
      notes.push_back(fmt::format("--cp {}: each all-to-all group of {} GPUs spans {} nodes of {}, so its all-to-all crosses the "
                                  "network (USP and TransformerEngine keep it inside a node); give U no larger than a node's GPUs",
                                  to_string(sim.cp, sim.config.devices), sim.alltoall_group.size(), spanned, sim.topology.name()));
    }
  }
  // A precision the kernel was not timed in is priced by the peaks' ratio: right for a kernel with a
  // path in it at the tensor cores' rate (cuDNN's fp8 forward runs 1.96x its bf16), not for one
  // without (FlashAttention-2 has no fp8 kernel).
  if (!sim.dtype.empty() && sim.dtype != sim.kernel.dtype) {
    const double ratio = precision_slowdown(sim.kernel_hardware, sim.kernel, sim.dtype);
    notes.push_back(fmt::format("kernel {} was timed in {}: in {} its tiles and blocks cost {:.2g}x, the ratio of {}'s peaks ({} "
                                "against {}), as if the kernel had a path in {} running at that rate; give a profile timed in "
                                "{} where it has one",
                                sim.kernel.name, sim.kernel.dtype, sim.dtype, ratio, sim.kernel_hardware.name, sim.kernel.dtype,
                                sim.dtype, sim.dtype,
                                sim.dtype));
  }
  // A ring of one device makes one call and sends nothing: what prices its merges and hops is kept
  // (a sweep or a plan sets it for every size) but said to change nothing.
  const bool lockstep = sim.config.sync == SyncMode::lockstep;
  if (sim.config.devices == 1 && (sim.config.skip_unread_hops || !sim.merges.empty() || lockstep)) {
    std::vector<std::string> given;
    if (!sim.merges.empty()) given.push_back("--merges " + sim.merges);
    if (sim.config.skip_unread_hops) given.push_back("--skip-unread-hops");
    if (lockstep) given.push_back("--sync lockstep");
    notes.push_back(fmt::format("{}: a ring of one device makes one call and sends nothing, so {} nothing here",
                                fmt::join(given, " and "), given.size() == 1 ? "it changes" : "they change"));
  }
  if (sim.step_shape) {
    if (std::optional<std::string> note = elementwise_cost_note(sim.hardware)) notes.push_back(std::move(*note));
  }
  return notes;
}

RingTotals ring_totals(const LayoutSimulation& layout) {
  RingTotals totals;
  std::vector<double> device_idle, device_exposed;
  for (const RingTimeline& t : layout.passes) {
    device_idle.resize(std::max(device_idle.size(), t.device_summary.size()));
    device_exposed.resize(device_idle.size());
    for (size_t d = 0; d < t.device_summary.size(); ++d) {
      totals.mean_busy_us += t.device_summary[d].busy_us / static_cast<double>(t.devices);
      device_idle[d] += t.device_summary[d].idle_us;
      device_exposed[d] += t.device_summary[d].exposed_comm_us;
    }
    totals.events += t.events;
  }
  if (!device_idle.empty()) {
    totals.max_idle_us = *std::max_element(device_idle.begin(), device_idle.end());
    totals.max_exposed_comm_us = *std::max_element(device_exposed.begin(), device_exposed.end());
  }
  return totals;
}

void append_ring_totals(nlohmann::ordered_json& row, const RingTotals& totals) {
  row["mean_busy_us"] = totals.mean_busy_us;
  row["max_idle_us"] = totals.max_idle_us;
  row["max_exposed_comm_us"] = totals.max_exposed_comm_us;
}

std::vector<nlohmann::ordered_json> simulation_rows(const Simulation& sim) {
  std::vector<nlohmann::ordered_json> rows;
  const SimulateConfig& c = sim.config;
  for (const LayoutSimulation& r : sim.results) {
    nlohmann::ordered_json row{{"layout", r.layout},          {"scope", to_string(c.scope)},
                               {"model", c.model},            {"hardware", sim.hardware.name},
                               {"model_parallel", c.model_parallel}, {"devices", c.devices},
                               {"data_parallel", c.data_parallel},   {"seq_len", c.seq_len},
                               {"pass", to_string(c.pass)},   {"cp", to_string(sim.cp, c.devices)},
                               {"mask", c.mask},              {"topology", sim.topology.name()},
                               {"time_us", r.time_us},        {"speedup_vs_contiguous", r.speedup_vs_contiguous},
                               {"kv_memory_bytes", r.kv_memory_bytes}};
    append_ring_totals(row, ring_totals(r));
    if (sim.step_shape) {
      const StepEstimate& e = *r.step;
      row["tokens_per_second"] = e.tokens_per_second;
      row["mfu"] = e.mfu;
      for (const StepPart& part : kStepParts) row[std::string(part.name) + "_us"] = e.breakdown.*part.us;
      row["memory_bytes"] = e.memory.total();
      row["exceeds_memory"] = e.exceeds_memory;
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace stripesim::sim
