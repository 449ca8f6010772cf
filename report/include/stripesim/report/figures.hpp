#pragma once
// The report's figures, each a standalone SVG built from the JSON the commands write.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "stripesim/model/work/types.hpp"

namespace stripesim::report {

// Work per (round, device) of every layout of an analyze document, side by side, one colour
// scale for all (`matrix`: unmasked_elements, active_tiles or partial_tiles).
[[nodiscard]] std::string work_heatmap_svg(const nlohmann::json& analyze, const std::string& matrix);

// The attention matrix of a small example (the paper's figure 4): cell (q, k) in original
// positions coloured by the device that computes it, its round written in it, masked cells blank.
[[nodiscard]] std::string attention_matrix_svg(const std::vector<std::string>& layouts, model::Count seq_len,
                                               model::Count devices, const std::string& mask);

// TMS (solid) and tile-aware TMS (dashed) against sequence length, one curve per mesh, for the
// rows of a sweep document with this hardware and model (the paper's figure 5; "" where the
// sweep's columns leave the field out).
[[nodiscard]] std::string tms_curves_svg(const nlohmann::json& sweep, const std::string& hardware,
                                         const std::string& model);

// The simulator's timeline: per layout a Gantt chart with a row per device, compute bars and the
// transfers each device sends; the gaps are idle time.
[[nodiscard]] std::string timeline_svg(const nlohmann::json& simulate);

// Predicted against measured latency from a validator document, with the line of equality.
[[nodiscard]] std::string predicted_vs_measured_svg(const nlohmann::json& validate);

}  // namespace stripesim::report
