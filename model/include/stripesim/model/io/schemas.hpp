#pragma once
// The "schema" ids of every JSON document stripesim writes or reads, in one place: the commands
// that write them, the readers that check them and `report`, which picks a section by them.
// reports/schema holds a JSON Schema for each; a change of shape bumps the /N.
namespace stripesim::model {

inline constexpr const char* kAnalyzeSchema = "stripesim.analyze/1";
inline constexpr const char* kTmsSchema = "stripesim.tms/1";
inline constexpr const char* kSweepSchema = "stripesim.sweep/1";
inline constexpr const char* kBalanceSchema = "stripesim.balance/1";
inline constexpr const char* kBaselineSchema = "stripesim.baseline/1";
inline constexpr const char* kLayoutSchema = "stripesim.layout/1";
inline constexpr const char* kSimulateSchema = "stripesim.simulate/1";
inline constexpr const char* kStepFitSchema = "stripesim.step-fit/1";
inline constexpr const char* kPlanSchema = "stripesim.plan/1";
inline constexpr const char* kValidateSchema = "stripesim.validate/1";
inline constexpr const char* kKernelAccuracySchema = "stripesim.kernel-accuracy/1";
inline constexpr const char* kKernelProfileSchema = "stripesim.kernel/1";
inline constexpr const char* kMeasurementsSchema = "stripesim.measurements/1";
inline constexpr const char* kBlockCostsSchema = "stripesim.block-costs/1";

inline constexpr const char* kSchemas[] = {kAnalyzeSchema,  kTmsSchema,      kSweepSchema,          kBalanceSchema,
                                           kBaselineSchema, kLayoutSchema,   kSimulateSchema,       kStepFitSchema,
                                           kPlanSchema,     kValidateSchema, kKernelAccuracySchema, kKernelProfileSchema,
                                           kMeasurementsSchema, kBlockCostsSchema};

}  // namespace stripesim::model
