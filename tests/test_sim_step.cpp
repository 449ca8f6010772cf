// The training step around the ring (simulate --scope layer|step) and its calibration on the
// Striped Attention paper's measured speedups.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "stripesim/model/io/input_error.hpp"
#include "stripesim/model/io/json_file.hpp"
#include "stripesim/sim/golden_section.hpp"
#include "stripesim/sim/simulation.hpp"
#include "stripesim/model/workflows/experiment_files.hpp"
#include "stripesim/sim/step_sweep.hpp"
#include "temp_path.hpp"

namespace stripesim::sim {
namespace {

const model::ConfigCatalog& catalog() {
  static const model::ConfigCatalog shipped(std::string(STRIPESIM_SOURCE_DIR) + "/configs");
  return shipped;
}

const std::string kPaperExperiment = std::string(STRIPESIM_SOURCE_DIR) + "/configs/experiments/paper-measured.json";

StepSweepSpec paper_spec() {
  return step_sweep_spec_from_json(model::with_files_beside(model::read_json_file(kPaperExperiment, "paper"), kPaperExperiment),
                                   "paper");
}

// The paper's 1B model on A100s, 2048x4096 blockwise tiles, the ring in lockstep.
SimulateConfig paper_step(Count model_parallel, Count devices, Count seq_len) {
  SimulateConfig c;
  c.model = "1b";
  c.hardware = "a100";
  c.kernel = "blockwise";
  c.sync = SyncMode::lockstep;
  c.scope = Scope::step;
  c.pass = PassSelection::forward_backward;
  c.model_parallel = model_parallel;
  c.devices = devices;
  c.seq_len = seq_len;
  c.layouts = {"contiguous", "striped"};
  return c;
}

// The 1B model's matmul FLOPs, written out from its shape (configs/models/1b.json): Q, K, V, O of
// 2048 x 2048, SwiGLU's three 2048 x 5504 matrices, an LM head of 2048 x 32000.
constexpr double kD = 2048, kFf = 5504, kVocab = 32000, kLayers = 22;
constexpr double kLayerFlopsPerToken = 2 * (4 * kD * kD + 3 * kD * kFf);
constexpr double kHeadFlopsPerToken = 2 * kD * kVocab;

TEST(StepModel, TheGivenPaperRowsAreWithinTheFloor) {
  const std::vector<nlohmann::ordered_json> rows = run_step_sweep(plan_step_sweep(paper_spec(), catalog()));
  int measured = 0;
  double step_error = 0, tms_error = 0, tms_tiles_error = 0;
  for (const auto& row : rows) {
    if (row.at("measured").is_null()) continue;
    ++measured;
    const double m = row.at("measured");
    step_error += std::abs(static_cast<double>(row.at("step_speedup")) - m);
    tms_error += std::abs(static_cast<double>(row.at("tms")) - m);
    tms_tiles_error += std::abs(static_cast<double>(row.at("tms_tiles")) - m);
  }
  ASSERT_EQ(measured, 17);
  EXPECT_LE(step_error / measured, 0.05);
  // The paper's bounds miss by far more (the issue quotes 0.39 and 0.15): the step earns its keep.
  EXPECT_GT(tms_error / measured, 0.3);
  EXPECT_GT(tms_tiles_error / measured, 0.1);
  EXPECT_EQ(rows.size(), 137u);
}

TEST(StepModel, ShippedA100ProfilesAreWhatCalibrateStepFits) {
  const StepFit fit = fit_step(plan_step_fit(paper_spec(), catalog()), catalog());
  const model::HardwareProfile shipped = catalog().hardware("a100");
  const KernelProfile kernel = load_kernel_profile("blockwise", catalog(), shipped);
  EXPECT_DOUBLE_EQ(fit.hardware.elementwise_bytes_per_dmodel, shipped.elementwise_bytes_per_dmodel);
  EXPECT_DOUBLE_EQ(*fit.hardware.matmul_efficiency, *shipped.matmul_efficiency);  // given, not fitted
  EXPECT_DOUBLE_EQ(fit.kernel.forward.partial_tile_us, kernel.forward.partial_tile_us);
  EXPECT_DOUBLE_EQ(fit.kernel.backward.partial_tile_us, kernel.backward.partial_tile_us);
  EXPECT_LE(fit.mean_abs_error, 0.05);
  // Fitted without one sequence-parallel degree, the others still predict it.
  ASSERT_TRUE(fit.held_out_mean_abs_error.has_value());
  EXPECT_LE(*fit.held_out_mean_abs_error, 0.05);
  for (const StepFitRow& row : fit.rows) EXPECT_TRUE(row.held_out.has_value());
  EXPECT_GT(fit.partial_ratio, 1.0);  // the mask evaluated per element costs more than a full tile
}

// Rows of one sequence-parallel degree leave nothing to fit on once it is held out: no held-out
// figure at all (it read 0.000 predicted, an error equal to the measured speedup), the fit itself
// still made.
TEST(StepModel, OneSequenceParallelDegreeHoldsNothingOut) {
  const std::filesystem::path csv = temp_path("stripesim_one_degree.csv");
  std::ofstream(csv) << "hardware,model,model_parallel,sequence_parallel,seq_len,measured_speedup_striped_over_contiguous\n"
                        "A100,1B,1,2,8192,0.94\nA100,1B,1,2,16384,1.02\nA100,1B,1,2,32768,1.1\n";
  StepSweepSpec spec = paper_spec();
  spec.measured = csv.string();
  const StepFit fit = fit_step(plan_step_fit(spec, catalog()), catalog());
  EXPECT_FALSE(fit.held_out_mean_abs_error.has_value());
  EXPECT_FALSE(fit.held_out_worst_abs_error.has_value());
  ASSERT_EQ(fit.rows.size(), 3u);
  for (const StepFitRow& row : fit.rows) EXPECT_FALSE(row.held_out.has_value());
  EXPECT_LT(fit.mean_abs_error, 0.1);
  std::filesystem::remove(csv);
}

TEST(StepModel, MatmulAndElementwiseTimesFollowTheHardwareProfile) {
  SimulateConfig c = paper_step(1, 4, 65536);
  c.scope = Scope::layer;
  c.pass = PassSelection::forward;
  const Simulation sim = run_simulation(c, catalog());
  const double rate = 312e6 * *sim.hardware.matmul_efficiency;  // FLOP per microsecond
  for (const auto& r : sim.results) {
    EXPECT_NEAR(r.step->breakdown.matmul_us, kLayerFlopsPerToken * 16384 / rate, 1e-6);
    // Bytes per token per d_model, at 2039 GB/s = 2.039e6 bytes per microsecond.
    EXPECT_NEAR(r.step->breakdown.elementwise_us, sim.hardware.elementwise_bytes_per_dmodel * kD * 16384 / 2.039e6, 1e-6);
    EXPECT_NEAR(r.step->breakdown.attention_compute_us + r.step->breakdown.attention_comm_us +
                    r.step->breakdown.attention_idle_us,
                r.passes.at(0).makespan_us(), 1e-6);
    EXPECT_DOUBLE_EQ(r.step->breakdown.total_us(), r.time_us);
  }
}

TEST(StepModel, AStepIsEveryLayerForwardAndBackwardPlusTheHead) {
  SimulateConfig layer = paper_step(1, 4, 65536);
  layer.scope = Scope::layer;
  const Simulation one = run_simulation(layer, catalog());
  const Simulation step = run_simulation(paper_step(1, 4, 65536), catalog());
  const double rate = 312e6 * *step.hardware.matmul_efficiency;
  const double head_us = 3 * kHeadFlopsPerToken * 16384 / rate;
  for (size_t i = 0; i < step.results.size(); ++i) {
    EXPECT_NEAR(step.results[i].time_us, kLayers * one.results[i].time_us + head_us, 1e-6 * step.results[i].time_us);
    EXPECT_DOUBLE_EQ(step.results[i].step->breakdown.gradient_comm_us, 0);  // hidden behind the backward
  }
}

TEST(StepModel, RecomputationAddsOneForwardPerLayer) {
  SimulateConfig c = paper_step(1, 4, 32768);
  const Simulation plain = run_simulation(c, catalog());
  c.recompute = true;
  const Simulation recomputed = run_simulation(c, catalog());
  SimulateConfig forward = c;
  forward.scope = Scope::layer;
  forward.pass = PassSelection::forward;
  forward.recompute = false;
  const Simulation layer_forward = run_simulation(forward, catalog());
  for (size_t i = 0; i < plain.results.size(); ++i) {
    EXPECT_NEAR(recomputed.results[i].time_us - plain.results[i].time_us, kLayers * layer_forward.results[i].time_us,
                1e-6 * plain.results[i].time_us);
  }
}

TEST(StepModel, ModelFlopsMemoryAndMfuFollowTheirDefinitions) {
  const Simulation sim = run_simulation(paper_step(2, 4, 65536), catalog());
  const double n = 65536, pairs = n * (n + 1) / 2;  // causal
  const double model_flops = 3 * (kLayers * (kLayerFlopsPerToken * n + 4 * kD * pairs) + kHeadFlopsPerToken * n);
  const double parameters = (kLayers * (4 * kD * kD + 3 * kD * kFf) + 2 * kVocab * kD) / 2;  // per device, M = 2
  for (const auto& r : sim.results) {
    EXPECT_NEAR(r.step->model_flops, model_flops, 1e-9 * model_flops);
    // The paper's attention runs in tf32 (156 TFLOP/s), its matmuls in bf16 (312): each at its peak.
    const double attention_flops = 3 * kLayers * 4 * kD * pairs;
    EXPECT_NEAR(r.step->mfu, ((model_flops - attention_flops) / 312e6 + attention_flops / 156e6) / (8 * r.time_us), 1e-12);
    EXPECT_DOUBLE_EQ(r.step->memory.weights, 2 * parameters);
    EXPECT_DOUBLE_EQ(r.step->memory.gradients_and_optimizer, 14 * parameters);
    EXPECT_DOUBLE_EQ(r.step->memory.logits, 4.0 * 16384 * kVocab / 2);
    // 34 bytes per d_model a token keeps in each layer, split over M = 2 with the sequence.
    EXPECT_NEAR(r.step->memory.activations, kLayers * 34 * kD * 16384 / 2, 1e-9 * r.step->memory.activations);
    EXPECT_FALSE(r.step->exceeds_memory);
    EXPECT_NEAR(r.step->tokens_per_second, n / (r.time_us * 1e-6), 1e-9 * n);
  }
  // Recomputing, a layer keeps only its bf16 input (split likewise) and one layer is rebuilt at a
  // time, its input among its 34: a one-layer scope keeps what it keeps without recomputing.
  SimulateConfig recomputed = paper_step(2, 4, 65536);
  recomputed.recompute = true;
  for (const auto& r : run_simulation(recomputed, catalog()).results) {
    EXPECT_NEAR(r.step->memory.activations, ((kLayers - 1) * 2 + 34) * kD * 16384 / 2, 1e-9 * r.step->memory.activations);
  }
  for (const bool recompute : {false, true}) {
    SimulateConfig layer = paper_step(2, 4, 65536);
    layer.scope = Scope::layer;
    layer.recompute = recompute;
    for (const auto& r : run_simulation(layer, catalog()).results) {
      EXPECT_NEAR(r.step->memory.activations, 34.0 * kD * 16384 / 2, 1e-9 * r.step->memory.activations) << recompute;
    }
  }
  // The same step on a device with 1 GiB is flagged.
  SimulateConfig small = paper_step(2, 4, 65536);
  small.hardware_profile = catalog().hardware("a100");
  small.hardware_profile->memory_gib = 1;
  EXPECT_TRUE(run_simulation(small, catalog()).results[0].step->exceeds_memory);
}

// Attention in fp8 beside bf16 matmuls: MFU counts an attention FLOP at fp8's peak, half bf16's
// on an H100 (989.4 against 1978.9 TFLOP/s). Against the bf16 peak alone a long sequence's step,
// mostly fp8 attention, passed 100 %.
TEST(StepModel, MfuCountsAttentionFlopsAtTheirPrecisionsPeak) {
  SimulateConfig c = paper_step(1, 8, 1 << 21);
  c.hardware = "h100";
  c.kernel = "fa3";
  c.layouts = {"zigzag"};
  c.topology = "ideal";
  c.dtype = "fp8";
  const Simulation fp8 = run_simulation(c, catalog());
  const double n = 1 << 21, pairs = n * (n + 1) / 2;
  const double attention_flops = 3 * kLayers * 4 * kD * pairs;
  const double other_flops = 3 * (kLayers * kLayerFlopsPerToken * n + kHeadFlopsPerToken * n);
  const StepEstimate& e = *fp8.results.front().step;
  EXPECT_NEAR(e.model_flops, attention_flops + other_flops, 1e-9 * e.model_flops);
  const double peak_time_us = other_flops / 989.4e6 + attention_flops / 1978.9e6;
  EXPECT_NEAR(e.mfu, peak_time_us / (8 * fp8.results.front().time_us), 1e-9);
  EXPECT_GT(e.model_flops / (8 * fp8.results.front().time_us * 989.4e6), 1.0);  // what it printed before
  EXPECT_LT(e.mfu, 1.0);
  c.dtype = "bf16";  // one precision: model FLOPs over the bf16 peak, as always
  const Simulation bf16 = run_simulation(c, catalog());
  const StepEstimate& b = *bf16.results.front().step;
  EXPECT_DOUBLE_EQ(b.mfu, b.model_flops / (8 * bf16.results.front().time_us * 989.4e6));
}

// The paper's step on -M 2 x -N 4 x -D 2 (16 GPUs on two nodes of 8; each replica a node of its
// own, so a rank's 8 copies of its weights span both), the training state sharded by stage.
Simulation sharded_step(ZeroStage zero, const std::string& topology = "cluster:2x8") {
  SimulateConfig c = paper_step(2, 4, 65536);
  c.data_parallel = 2;
  c.topology = topology;
  c.zero = zero;
  return run_simulation(c, catalog());
}

TEST(StepModel, ZeroStagesShardTheTrainingStateOverTheCopiesOfTheWeights) {
  const double parameters = (kLayers * (4 * kD * kD + 3 * kD * kFf) + 2 * kVocab * kD) / 2;  // per device, M = 2
  const double copies = 4 * 2;                                                                 // N x D
  const double lm_head = kD * kVocab / 2;  // the largest unit stage 3 gathers (a layer holds 4 d^2 + 3 d ff / 2)
  ASSERT_GT(lm_head, (4 * kD * kD + 3 * kD * kFf) / 2);
  const struct {
    ZeroStage zero;
    double weights, gradients_and_optimizer;
  } expected[] = {
      {ZeroStage::none, 2 * parameters, 14 * parameters},
      {ZeroStage::optimizer, 2 * parameters, 2 * parameters + 12 * parameters / copies},
      {ZeroStage::gradients, 2 * parameters, 14 * parameters / copies},
      {ZeroStage::weights, 2 * parameters / copies + 2 * 2 * lm_head, 14 * parameters / copies},
  };
  const Simulation plain = sharded_step(ZeroStage::none);
  for (const auto& e : expected) {
    const Simulation sim = sharded_step(e.zero);
    for (size_t i = 0; i < sim.results.size(); ++i) {
      const StepEstimate& step = *sim.results[i].step;
      EXPECT_NEAR(step.memory.weights, e.weights, 1e-9 * e.weights) << to_int(e.zero);
      EXPECT_NEAR(step.memory.gradients_and_optimizer, e.gradients_and_optimizer, 1e-9 * e.gradients_and_optimizer);
      // What is not the training state does not move.
      EXPECT_DOUBLE_EQ(step.memory.activations, plain.results[i].step->memory.activations);
      EXPECT_DOUBLE_EQ(step.memory.kv_buffers, plain.results[i].step->memory.kv_buffers);
    }
  }
}

// The weights a step moves and keeps (gradient all-reduce, ZeRO shards, memory) are counted from
// a model's shape; each shipped model's count against the total its publisher's checkpoint holds
// (the safetensors' parameter count), which also has the norms and, for Qwen, the Q/K/V biases
// the count leaves out: within 0.1 %.
TEST(StepModel, ShippedModelsHoldTheirCheckpointsParameterCounts) {
  const std::vector<std::pair<std::string, double>> published{
      {"llama3-8b", 8030261248.0},     {"llama3-70b", 70553706496.0}, {"llama3-405b", 405853388800.0},
      {"qwen2.5-7b", 7615616512.0},    {"qwen2.5-72b", 72706203648.0}, {"mistral-7b", 7248023552.0}};
  for (const auto& [name, parameters] : published) {
    const double counted = parameters_per_device(catalog().model(name), 1);
    EXPECT_NEAR(counted / parameters, 1.0, 1e-3) << name << ": " << counted;
    EXPECT_LE(counted, parameters) << name << ": the norms and biases are left out, never added";
  }
}

TEST(StepModel, ShardedStateMovesTheAllReducesBytesAsAReduceScatterAndAnAllGather) {
  // A 1 Gb/s NIC: the traffic between copies outlasts the compute, so what is exposed shows.
  const std::string slow = "cluster:2x8:nic=1gbps";
  const Simulation plain = sharded_step(ZeroStage::none, slow);
  const StepShape& shape = *plain.step_shape;
  const Groups copies = gradient_groups(plain.mesh);
  ASSERT_EQ(copies.front().size(), 8u);
  const Bytes weight_bytes = static_cast<Bytes>(parameters_per_device(shape.model, 2)) * 2;
  const Groups others(copies.begin() + 1, copies.end());
  EXPECT_DOUBLE_EQ(shape.gradient_allreduce_us, allreduce_us(plain.topology, copies.front(), weight_bytes, others));
  EXPECT_DOUBLE_EQ(shape.weight_allgather_us, 0);  // not sharded: no all-gather
  for (const ZeroStage zero : {ZeroStage::optimizer, ZeroStage::gradients, ZeroStage::weights}) {
    const Simulation sim = sharded_step(zero, slow);
    const Microseconds gather = sim.step_shape->weight_allgather_us;
    EXPECT_DOUBLE_EQ(gather, allgather_us(sim.topology, copies.front(), (weight_bytes + 7) / 8, others));
    // A ring all-reduce is a reduce-scatter then an all-gather of the same shards.
    EXPECT_NEAR(2 * gather, shape.gradient_allreduce_us, 1e-6 * gather);
  }

  // The compute windows, from one layer's forward and its forward + backward.
  SimulateConfig layer = paper_step(2, 4, 65536);
  layer.data_parallel = 2;
  layer.topology = slow;
  layer.scope = Scope::layer;
  const Simulation layer_step = run_simulation(layer, catalog());
  layer.pass = PassSelection::forward;
  const Simulation layer_forward = run_simulation(layer, catalog());
  const Microseconds gather = shape.gradient_allreduce_us / 2;
  for (size_t i = 0; i < plain.results.size(); ++i) {
    const Microseconds forward = kLayers * layer_forward.results[i].time_us;
    const Microseconds backward = kLayers * layer_step.results[i].time_us - forward;
    const auto beyond = [](Microseconds comm, Microseconds window) { return std::max(0.0, comm - window); };
    ASSERT_GT(shape.gradient_allreduce_us, backward);  // exposed indeed
    EXPECT_NEAR(plain.results[i].step->breakdown.gradient_comm_us, beyond(shape.gradient_allreduce_us, backward), 1e-6 * gather);
    // Stages 1 and 2: the reduce-scatter under the backward, the all-gather under the next forward.
    for (const ZeroStage zero : {ZeroStage::optimizer, ZeroStage::gradients}) {
      const Simulation sharded = sharded_step(zero, slow);  // held: the estimate lives in it
      const StepEstimate& step = *sharded.results[i].step;
      EXPECT_NEAR(step.breakdown.gradient_comm_us, beyond(gather, backward) + beyond(gather, forward), 1e-6 * gather);
    }
    // Stage 3 gathers the weights in the forward and again, beside the reduce-scatter, in the backward.
    const Simulation weights_sharded = sharded_step(ZeroStage::weights, slow);
    const StepEstimate& full = *weights_sharded.results[i].step;
    EXPECT_NEAR(full.breakdown.gradient_comm_us, beyond(2 * gather, backward) + beyond(gather, forward), 1e-6 * gather);
    // Only the exposed traffic differs between the stages.
    EXPECT_NEAR(full.time_us - full.breakdown.gradient_comm_us,
                plain.results[i].time_us - plain.results[i].step->breakdown.gradient_comm_us, 1e-9 * full.time_us);
  }
}

// A step priced with the A100's element-wise cost, which calibrate-step fitted to the paper's JAX
// code, says so; one on a profile whose cost is an estimate (the H100's), or the attention ring
// alone (no element-wise work), says nothing of it.
TEST(StepModel, NotesAnElementwiseCostFittedToOneCodeBase) {
  const auto has_note = [](const Simulation& sim) {
    const std::vector<std::string> notes = simulation_notes(sim);
    return std::ranges::any_of(notes, [](const std::string& n) { return n.find("element-wise cost, 4016 bytes") != std::string::npos; });
  };
  EXPECT_TRUE(has_note(run_simulation(paper_step(1, 4, 65536), catalog())));
  SimulateConfig h100 = paper_step(1, 4, 65536);
  h100.hardware = "h100";
  h100.kernel.clear();
  EXPECT_FALSE(has_note(run_simulation(h100, catalog())));
  SimulateConfig ring = paper_step(1, 4, 65536);
  ring.scope = Scope::attention;
  ring.pass = PassSelection::forward;
  EXPECT_FALSE(has_note(run_simulation(ring, catalog())));
  EXPECT_FALSE(elementwise_cost_note(catalog().hardware("h100")).has_value());
  ASSERT_TRUE(elementwise_cost_note(catalog().hardware("a100")).has_value());
  EXPECT_NE(elementwise_cost_note(catalog().hardware("a100"))->find("configs/experiments/paper-measured.json"), std::string::npos);
}

TEST(StepModel, TheMeshPutsModelParallelGroupsOnNeighbouringGpus) {
  SimulateConfig c = paper_step(2, 4, 65536);
  c.topology = "cluster:2x4";
  const Simulation sim = run_simulation(c, catalog());
  EXPECT_EQ(sim.ring_order, (std::vector<Count>{0, 2, 4, 6}));
  // The model-parallel pair shares a node; the ring's hop 2 -> 4 leaves it.
  EXPECT_EQ(sim.step_shape->mesh.gpus(), 8);
  EXPECT_GT(sim.step_shape->activation_allreduce_us, 0);
  EXPECT_GT(sim.hops[1].transfer_us(sim.kv_bytes), sim.hops[0].transfer_us(sim.kv_bytes));
  // Two replicas need 16 GPUs.
  c.data_parallel = 2;
  EXPECT_THROW((void)plan_simulation(c, catalog()), model::InputError);
}

TEST(StepModel, ScopesBeyondTheRingRefuseWhatTheyCannotPrice) {
  SimulateConfig no_model = paper_step(1, 4, 65536);
  no_model.model.clear();
  EXPECT_THROW((void)plan_simulation(no_model, catalog()), model::InputError);
  SimulateConfig forward_step = paper_step(1, 4, 65536);
  forward_step.pass = PassSelection::forward;
  EXPECT_THROW((void)plan_simulation(forward_step, catalog()), model::InputError);
  SimulateConfig no_efficiency = paper_step(1, 4, 65536);
  no_efficiency.hardware_profile = catalog().hardware("a100");
  no_efficiency.hardware_profile->matmul_efficiency.reset();
  EXPECT_THROW((void)plan_simulation(no_efficiency, catalog()), model::InputError);
  SimulateConfig attention = paper_step(1, 4, 65536);
  attention.scope = Scope::attention;
  attention.recompute = true;
  EXPECT_THROW((void)plan_simulation(attention, catalog()), model::InputError);
  attention.recompute = false;
  attention.zero = ZeroStage::optimizer;  // no training state in one attention ring
  EXPECT_THROW((void)plan_simulation(attention, catalog()), model::InputError);
  SimulateConfig forward_layer = paper_step(1, 4, 65536);
  forward_layer.scope = Scope::layer;
  forward_layer.pass = PassSelection::forward;
  forward_layer.zero = ZeroStage::weights;  // no optimizer or gradients without a backward
  EXPECT_THROW((void)plan_simulation(forward_layer, catalog()), model::InputError);
  for (const char* bad : {"4", "-1", "one", "", "01"}) EXPECT_THROW((void)parse_zero_stage(bad), model::InputError) << bad;
  EXPECT_EQ(parse_zero_stage("2"), ZeroStage::gradients);
  // An experiment file's "zero": an integer 0 to 3.
  EXPECT_EQ(simulate_config_from_json(nlohmann::json{{"zero", 3}}, "e.json").zero, ZeroStage::weights);
  for (const nlohmann::json& bad : {nlohmann::json(4), nlohmann::json("1"), nlohmann::json(1.5), nlohmann::json(-1)}) {
    EXPECT_THROW((void)simulate_config_from_json(nlohmann::json{{"zero", bad}}, "e.json"), model::InputError) << bad.dump();
  }
}

TEST(StepModel, MeasuredSpeedupFilesAreCheckedLineByLine) {
  const std::string dir = std::string(STRIPESIM_SOURCE_DIR) + "/tests/data/";
  try {
    (void)read_measured_speedups(dir + "bad_measured_speedups.csv");
    FAIL() << "expected an InputError";
  } catch (const model::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("line 3 speedup 'fast': expected a number"), std::string::npos) << e.what();
  }
  const auto rows = read_measured_speedups(std::string(STRIPESIM_SOURCE_DIR) + "/configs/measurements/paper/a100-1b-mesh-1xN-measured.csv");
  ASSERT_EQ(rows.size(), 17u);
  EXPECT_EQ(rows.front().devices, 2);
  EXPECT_EQ(rows.back().seq_len, 196608);
}

// The fits' line search: the bracket closes on the minimum at 0.618 a step, one evaluation a step.
TEST(GoldenSection, NarrowsTheBracketOntoTheMinimumWithOneEvaluationAStep) {
  int evaluations = 0;
  const auto f = [&](double x) {
    ++evaluations;
    return (x - 3.7) * (x - 3.7) + std::abs(x - 3.7);  // a kink at the minimum, as mean errors have
  };
  const auto [lo, hi] = golden_section(f, 0.0, 10.0, 30);
  EXPECT_EQ(evaluations, 32);
  EXPECT_LE(lo, 3.7);
  EXPECT_GE(hi, 3.7);
  EXPECT_NEAR(hi - lo, 10.0 * std::pow((std::sqrt(5.0) - 1) / 2, 30), 1e-9);
  // A minimum at the bracket's end is approached, not passed.
  const auto [edge_lo, edge_hi] = golden_section([](double x) { return x; }, 2.0, 5.0, 20);
  EXPECT_EQ(edge_lo, 2.0);
  EXPECT_LT(edge_hi - 2.0, 3.0 * std::pow(0.62, 20));
}

}  // namespace
}  // namespace stripesim::sim
