#include "stripesim/report/svg.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>

namespace stripesim::report {

std::string xml_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char ch : text) {
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += ch;
    }
  }
  return out;
}

std::string device_colour(long long device) {
  // Tableau 10: distinct in print and for most colour-blind readers.
  static constexpr std::array<const char*, 10> kPalette{"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                                        "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
  return kPalette[static_cast<size_t>(device % 10)];
}

std::string heat_colour(double fraction) {
  const double f = std::clamp(fraction, 0.0, 1.0);
  const auto mix = [f](int from, int to) { return static_cast<int>(std::lround(from + (to - from) * f)); };
  return fmt::format("#{:02x}{:02x}{:02x}", mix(0xf7, 0x08), mix(0xfb, 0x30), mix(0xff, 0x6b));
}

SvgCanvas::SvgCanvas(double width, double height) : width_(width), height_(height) {}

void SvgCanvas::rect(double x, double y, double w, double h, std::string_view fill, std::string_view stroke,
                     std::string_view title) {
  body_ += fmt::format(R"(<rect x="{:.2f}" y="{:.2f}" width="{:.2f}" height="{:.2f}" fill="{}" stroke="{}")", x, y,
                       std::max(w, 0.0), std::max(h, 0.0), fill, stroke);
  if (title.empty()) {
    body_ += "/>\n";
  } else {
    body_ += fmt::format("><title>{}</title></rect>\n", xml_escape(title));
  }
}

void SvgCanvas::line(double x1, double y1, double x2, double y2, std::string_view stroke, double width,
                     std::string_view dash) {
  body_ += fmt::format(R"(<line x1="{:.2f}" y1="{:.2f}" x2="{:.2f}" y2="{:.2f}" stroke="{}" stroke-width="{:.2f}")", x1,
                       y1, x2, y2, stroke, width);
  if (!dash.empty()) body_ += fmt::format(R"( stroke-dasharray="{}")", dash);
  body_ += "/>\n";
}

void SvgCanvas::polyline(const std::vector<std::pair<double, double>>& points, std::string_view stroke, double width,
                         std::string_view dash) {
  std::string coords;
  for (const auto& [x, y] : points) coords += fmt::format("{:.2f},{:.2f} ", x, y);
  body_ += fmt::format(R"(<polyline points="{}" fill="none" stroke="{}" stroke-width="{:.2f}")", coords, stroke, width);
  if (!dash.empty()) body_ += fmt::format(R"( stroke-dasharray="{}")", dash);
  body_ += "/>\n";
}

void SvgCanvas::circle(double x, double y, double r, std::string_view fill) {
  body_ += fmt::format(R"(<circle cx="{:.2f}" cy="{:.2f}" r="{:.2f}" fill="{}"/>)", x, y, r, fill) + "\n";
}

void SvgCanvas::text(double x, double y, std::string_view content, double size, std::string_view anchor,
                     std::string_view fill, bool bold) {
  body_ += fmt::format(R"(<text x="{:.2f}" y="{:.2f}" font-size="{:.1f}" text-anchor="{}" fill="{}"{}>{}</text>)", x, y,
                       size, anchor, fill, bold ? R"( font-weight="bold")" : "", xml_escape(content)) +
           "\n";
}

std::string SvgCanvas::finish() const {
  return fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"{:.0f}\" height=\"{:.0f}\" "
      "viewBox=\"0 0 {:.0f} {:.0f}\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n"
      "<rect x=\"0\" y=\"0\" width=\"{:.0f}\" height=\"{:.0f}\" fill=\"#ffffff\"/>\n{}</svg>\n",
      width_, height_, width_, height_, width_, height_, body_);
}

}  // namespace stripesim::report
