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

double text_width(std::string_view content, double size, bool bold) {
  return static_cast<double>(content.size()) * size * (bold ? 0.68 : 0.62);
}

std::string count_of(std::size_t count, std::string_view singular) {
  return fmt::format("{} {}{}", count, singular, count == 1 ? "" : "s");
}

bool natural_less(std::string_view a, std::string_view b) {
  const auto digit = [](char c) { return c >= '0' && c <= '9'; };
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (digit(a[i]) && digit(b[j])) {
      size_t ie = i, je = j;
      while (ie < a.size() && digit(a[ie])) ++ie;
      while (je < b.size() && digit(b[je])) ++je;
      // Compare values by length first (no leading zeros in these labels), then digit by digit.
      const std::string_view x = a.substr(i, ie - i), y = b.substr(j, je - j);
      if (x.size() != y.size()) return x.size() < y.size();
      if (x != y) return x < y;
      i = ie;
      j = je;
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i;
      ++j;
    }
  }
  return a.size() - i < b.size() - j;
}

SvgCanvas::SvgCanvas(double width, double height) : width_(width), height_(height), max_x_(width), max_y_(height) {}

void SvgCanvas::cover(double x, double y) {
  min_x_ = std::min(min_x_, x);
  min_y_ = std::min(min_y_, y);
  max_x_ = std::max(max_x_, x);
  max_y_ = std::max(max_y_, y);
}

void SvgCanvas::rect(double x, double y, double w, double h, std::string_view fill, std::string_view stroke,
                     std::string_view title) {
  cover(x, y);
  cover(x + std::max(w, 0.0), y + std::max(h, 0.0));
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
  cover(x1, y1);
  cover(x2, y2);
  body_ += fmt::format(R"(<line x1="{:.2f}" y1="{:.2f}" x2="{:.2f}" y2="{:.2f}" stroke="{}" stroke-width="{:.2f}")", x1,
                       y1, x2, y2, stroke, width);
  if (!dash.empty()) body_ += fmt::format(R"( stroke-dasharray="{}")", dash);
  body_ += "/>\n";
}

void SvgCanvas::polyline(const std::vector<std::pair<double, double>>& points, std::string_view stroke, double width,
                         std::string_view dash) {
  std::string coords;
  for (const auto& [x, y] : points) {
    cover(x, y);
    coords += fmt::format("{:.2f},{:.2f} ", x, y);
  }
  body_ += fmt::format(R"(<polyline points="{}" fill="none" stroke="{}" stroke-width="{:.2f}")", coords, stroke, width);
  if (!dash.empty()) body_ += fmt::format(R"( stroke-dasharray="{}")", dash);
  body_ += "/>\n";
}

void SvgCanvas::circle(double x, double y, double r, std::string_view fill) {
  cover(x - r, y - r);
  cover(x + r, y + r);
  body_ += fmt::format(R"(<circle cx="{:.2f}" cy="{:.2f}" r="{:.2f}" fill="{}"/>)", x, y, r, fill) + "\n";
}

void SvgCanvas::text(double x, double y, std::string_view content, double size, std::string_view anchor,
                     std::string_view fill, bool bold) {
  const double w = text_width(content, size, bold);
  const double left = anchor == "middle" ? x - w / 2 : anchor == "end" ? x - w : x;
  cover(left, y - size);       // ascenders
  cover(left + w, y + size / 3);  // descenders
  body_ += fmt::format(R"(<text x="{:.2f}" y="{:.2f}" font-size="{:.1f}" text-anchor="{}" fill="{}"{}>{}</text>)", x, y,
                       size, anchor, fill, bold ? R"( font-weight="bold")" : "", xml_escape(content)) +
           "\n";
}

void SvgCanvas::marker(double x, double y, double r, std::string_view fill, int shape) {
  if (shape % 3 == 0) return circle(x, y, r, fill);
  if (shape % 3 == 1) return rect(x - r, y - r, 2 * r, 2 * r, fill);
  polyline({{x, y - r * 1.3}, {x + r * 1.3, y}, {x, y + r * 1.3}, {x - r * 1.3, y}, {x, y - r * 1.3}}, fill, 2.0);
}

std::string SvgCanvas::finish() const {
  // The view box holds all that was drawn, with a small margin where it spills past the canvas.
  constexpr double kPad = 6;
  const double x0 = min_x_ < 0 ? std::floor(min_x_ - kPad) : 0;
  const double y0 = min_y_ < 0 ? std::floor(min_y_ - kPad) : 0;
  const double x1 = max_x_ > width_ ? std::ceil(max_x_ + kPad) : width_;
  const double y1 = max_y_ > height_ ? std::ceil(max_y_ + kPad) : height_;
  return fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"{:.0f}\" height=\"{:.0f}\" "
      "viewBox=\"{:.0f} {:.0f} {:.0f} {:.0f}\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n"
      "<rect x=\"{:.0f}\" y=\"{:.0f}\" width=\"{:.0f}\" height=\"{:.0f}\" fill=\"#ffffff\"/>\n{}</svg>\n",
      x1 - x0, y1 - y0, x0, y0, x1 - x0, y1 - y0, x0, y0, x1 - x0, y1 - y0, body_);
}

}  // namespace stripesim::report
