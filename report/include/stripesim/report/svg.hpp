#pragma once
// A minimal SVG 1.1 writer: rectangles, lines, polylines and text with escaped content, so
// every figure is a standalone file that browsers and rsvg-convert render the same way. The
// canvas grows to hold everything drawn on it (text measured with a conservative glyph width),
// so a long title or legend is never clipped.
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
  // A marker of one of three shapes (0 circle, 1 square, 2 diamond), for series beyond the palette.
  void marker(double x, double y, double r, std::string_view fill, int shape);
  // anchor: start, middle, end
  void text(double x, double y, std::string_view content, double size = 12, std::string_view anchor = "start",
            std::string_view fill = "#222", bool bold = false);

  [[nodiscard]] std::string finish() const;

 private:
  void cover(double x, double y);  // grow the drawn extent to include (x, y)

  double width_;
  double height_;
  double min_x_ = 0;
  double min_y_ = 0;
  double max_x_ = 0;
  double max_y_ = 0;
  std::string body_;
};

// The width text takes at `size` px: an upper estimate (DejaVu Sans averages about 0.55 em per
// character; 0.62 em, 0.68 bold, leaves room).
[[nodiscard]] double text_width(std::string_view content, double size, bool bold = false);
// "1 figure", "2 figures".
[[nodiscard]] std::string count_of(std::size_t count, std::string_view singular);
// Orders labels as a reader expects: runs of digits by value ("1x3" before "1x16").
[[nodiscard]] bool natural_less(std::string_view a, std::string_view b);

[[nodiscard]] std::string xml_escape(std::string_view text);
// A categorical colour per device (cycles after ten).
[[nodiscard]] std::string device_colour(long long device);
// White (0) to dark blue (1).
[[nodiscard]] std::string heat_colour(double fraction);

}  // namespace stripesim::report
