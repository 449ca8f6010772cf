#pragma once
// A minimal SVG 1.1 writer: rectangles, lines, polylines and text with escaped content, so
// every figure is a standalone file that browsers and rsvg-convert render the same way.
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace stripesim::report {

class SvgCanvas {
 public:
  SvgCanvas(double width, double height);

  void rect(double x, double y, double w, double h, std::string_view fill, std::string_view stroke = "none",
            std::string_view title = "");
  void line(double x1, double y1, double x2, double y2, std::string_view stroke, double width = 1.0,
            std::string_view dash = "");
  void polyline(const std::vector<std::pair<double, double>>& points, std::string_view stroke, double width = 1.5,
                std::string_view dash = "");
  void circle(double x, double y, double r, std::string_view fill);
  // anchor: start, middle, end
  void text(double x, double y, std::string_view content, double size = 12, std::string_view anchor = "start",
            std::string_view fill = "#222", bool bold = false);

  [[nodiscard]] std::string finish() const;

 private:
  double width_;
  double height_;
  std::string body_;
};

[[nodiscard]] std::string xml_escape(std::string_view text);
// A categorical colour per device (cycles after ten).
[[nodiscard]] std::string device_colour(long long device);
// White (0) to dark blue (1).
[[nodiscard]] std::string heat_colour(double fraction);

}  // namespace stripesim::report
