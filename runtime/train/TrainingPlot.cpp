// The --plot page: hand-drawn SVG line charts (see TrainingPlot.h).
#include "runtime/train/TrainingPlot.h"

#include "runtime/support/Error.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace dtcrt {

namespace {

constexpr double kWidth = 760, kHeight = 320;
constexpr double kLeft = 80, kRight = 24, kTop = 36, kBottom = 56;

struct Series {
  std::string name;
  std::string color;
  bool markers;  // eval series: a circle per point
  std::vector<double> x, y;
  std::vector<int64_t> epochs;  // eval series: each point's epoch
};

std::string escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
    case '&': out += "&amp;"; break;
    case '<': out += "&lt;"; break;
    case '>': out += "&gt;"; break;
    case '"': out += "&quot;"; break;
    default: out += c;
    }
  }
  return out;
}

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

std::string coord(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

// About `target` round tick values (1, 2 or 5 times a power of ten apart)
// covering [lo, hi].
std::vector<double> ticks(double lo, double hi, int target = 6) {
  const double raw = (hi - lo) / target;
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  double step = power;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (power * m >= raw) {
      step = power * m;
      break;
    }
  std::vector<double> out;
  for (double t = std::ceil(lo / step) * step; t <= hi + step * 1e-9; t += step)
    out.push_back(std::fabs(t) < step * 1e-9 ? 0.0 : t);
  return out;
}

// [lo, hi] of the values, widened when empty or flat.
void range(const std::vector<Series>& all, bool xAxis, double& lo, double& hi) {
  lo = INFINITY;
  hi = -INFINITY;
  for (const Series& s : all)
    for (double v : xAxis ? s.x : s.y) {
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
  if (hi - lo < 1e-12 * std::max(1.0, std::fabs(hi))) {
    const double pad = std::max(1.0, std::fabs(hi) * 0.1);
    lo -= pad;
    hi += pad;
  }
}

std::string chart(const std::string& title, const std::string& yLabel,
                  const std::vector<Series>& series) {
  double x0, x1, y0, y1;
  range(series, true, x0, x1);
  range(series, false, y0, y1);
  const double pad = (y1 - y0) * 0.05;
  y0 -= pad;
  y1 += pad;
  const double plotW = kWidth - kLeft - kRight, plotH = kHeight - kTop - kBottom;
  auto px = [&](double x) { return kLeft + (x - x0) / (x1 - x0) * plotW; };
  auto py = [&](double y) { return kTop + (y1 - y) / (y1 - y0) * plotH; };

  std::string svg = str("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"", kWidth,
                        "\" height=\"", kHeight, "\" viewBox=\"0 0 ", kWidth, " ", kHeight,
                        "\" role=\"img\">\n<title>", escape(title), "</title>\n");
  svg += str("<text x=\"", kLeft, "\" y=\"22\" class=\"chart-title\">", escape(title), "</text>\n");
  // Axes, grid and ticks.
  svg += str("<rect x=\"", kLeft, "\" y=\"", kTop, "\" width=\"", plotW, "\" height=\"", plotH,
             "\" class=\"frame\"/>\n");
  for (double t : ticks(x0, x1)) {
    if (t < x0 || t > x1) continue;
    const std::string x = coord(px(t));
    svg += str("<line x1=\"", x, "\" y1=\"", kTop, "\" x2=\"", x, "\" y2=\"", kTop + plotH,
               "\" class=\"grid\"/><line x1=\"", x, "\" y1=\"", kTop + plotH, "\" x2=\"", x,
               "\" y2=\"", kTop + plotH + 5, "\" class=\"tick\"/><text x=\"", x, "\" y=\"",
               kTop + plotH + 18, "\" class=\"xtick\">", number(t), "</text>\n");
  }
  for (double t : ticks(y0, y1, 5)) {
    if (t < y0 || t > y1) continue;
    const std::string y = coord(py(t));
    svg += str("<line x1=\"", kLeft, "\" y1=\"", y, "\" x2=\"", kLeft + plotW, "\" y2=\"", y,
               "\" class=\"grid\"/><line x1=\"", kLeft - 5, "\" y1=\"", y, "\" x2=\"", kLeft,
               "\" y2=\"", y, "\" class=\"tick\"/><text x=\"", kLeft - 8, "\" y=\"", y,
               "\" class=\"ytick\">", number(t), "</text>\n");
  }
  svg += str("<text x=\"", kLeft + plotW / 2, "\" y=\"", kHeight - 12,
             "\" class=\"xlabel\">optimizer step</text>\n");
  svg += str("<text x=\"18\" y=\"", kTop + plotH / 2, "\" class=\"ylabel\" transform=\"rotate(-90 18 ",
             kTop + plotH / 2, ")\">", escape(yLabel), "</text>\n");
  // The series and the legend.
  double legendY = kTop + 14;
  for (const Series& s : series) {
    std::string points;
    for (size_t i = 0; i < s.x.size(); ++i)
      points += str(i ? " " : "", coord(px(s.x[i])), ",", coord(py(s.y[i])));
    svg += str("<polyline class=\"series\" data-name=\"", escape(s.name), "\" stroke=\"", s.color,
               "\" points=\"", points, "\"/>\n");
    if (s.markers)
      for (size_t i = 0; i < s.x.size(); ++i)
        svg += str("<circle cx=\"", coord(px(s.x[i])), "\" cy=\"", coord(py(s.y[i])),
                   "\" r=\"3.5\" fill=\"", s.color, "\" data-name=\"", escape(s.name),
                   "\"><title>", escape(s.name), " ", number(s.y[i]), " (epoch ", s.epochs[i],
                   ", step ", static_cast<long long>(s.x[i]), ")</title></circle>\n");
    svg += str("<line x1=\"", kLeft + plotW - 150, "\" y1=\"", legendY - 4, "\" x2=\"",
               kLeft + plotW - 130, "\" y2=\"", legendY - 4, "\" stroke=\"", s.color,
               "\" stroke-width=\"2\"/><text x=\"", kLeft + plotW - 124, "\" y=\"", legendY,
               "\" class=\"legend\">", escape(s.name), "</text>\n");
    legendY += 16;
  }
  return svg + "</svg>\n";
}

} // namespace

std::string TrainingPlot::html(const std::string& title) const {
  Series train{"train loss", "#1f77b4", false, {}, {}, {}};
  for (const Point& p : steps_) {
    train.x.push_back(static_cast<double>(p.step));
    train.y.push_back(p.loss);
  }
  Series evalLoss{"eval loss", "#d62728", true, {}, {}, {}};
  Series accuracy{"eval accuracy", "#2ca02c", true, {}, {}, {}};
  Series top5{"eval top-5 accuracy", "#9467bd", true, {}, {}, {}};
  Series perplexity{"eval perplexity", "#ff7f0e", true, {}, {}, {}};
  auto add = [](Series& s, const PlotEval& e, double v) {
    if (v < 0 || !std::isfinite(v)) return;
    s.x.push_back(static_cast<double>(e.step));
    s.y.push_back(v);
    s.epochs.push_back(e.epoch);
  };
  for (const PlotEval& e : evals_) {
    add(evalLoss, e, std::isfinite(e.loss) ? e.loss : -1);
    add(accuracy, e, e.accuracy < 0 ? -1 : e.accuracy * 100);
    add(top5, e, e.top5 < 0 ? -1 : e.top5 * 100);
    add(perplexity, e, e.perplexity);
  }
  auto nonEmpty = [](std::vector<Series> all) {
    all.erase(std::remove_if(all.begin(), all.end(), [](const Series& s) { return s.x.empty(); }),
              all.end());
    return all;
  };
  std::string body;
  const std::vector<Series> losses = nonEmpty({train, evalLoss});
  const std::vector<Series> accuracies = nonEmpty({accuracy, top5});
  const std::vector<Series> perplexities = nonEmpty({perplexity});
  if (!losses.empty()) body += chart("loss", "loss", losses);
  if (!accuracies.empty()) body += chart("accuracy", "accuracy (%)", accuracies);
  if (!perplexities.empty()) body += chart("perplexity", "perplexity", perplexities);
  if (body.empty()) body = "<p>No step was logged.</p>\n";
  if (!evals_.empty()) {
    body += "<table>\n<tr><th>epoch</th><th>step</th><th>eval loss</th>";
    if (!accuracy.x.empty()) body += "<th>accuracy</th>";
    if (!top5.x.empty()) body += "<th>top-5</th>";
    if (!perplexity.x.empty()) body += "<th>perplexity</th>";
    body += "</tr>\n";
    for (const PlotEval& e : evals_) {
      body += str("<tr><td>", e.epoch, "</td><td>", e.step, "</td><td>", number(e.loss), "</td>");
      if (!accuracy.x.empty()) body += str("<td>", number(e.accuracy * 100), "%</td>");
      if (!top5.x.empty()) body += str("<td>", number(e.top5 * 100), "%</td>");
      if (!perplexity.x.empty()) body += str("<td>", number(e.perplexity), "</td>");
      body += "</tr>\n";
    }
    body += "</table>\n";
  }
  return str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n<title>",
             escape(title), "</title>\n<style>\n",
             "body { font-family: sans-serif; margin: 24px; color: #222; }\n",
             "svg { display: block; margin-bottom: 16px; }\n",
             ".frame { fill: none; stroke: #444; }\n",
             ".grid { stroke: #e4e4e4; }\n",
             ".tick { stroke: #444; }\n",
             ".xtick, .xlabel { font-size: 12px; text-anchor: middle; }\n",
             ".ytick { font-size: 12px; text-anchor: end; dominant-baseline: middle; }\n",
             ".ylabel { font-size: 12px; text-anchor: middle; }\n",
             ".chart-title { font-size: 15px; font-weight: bold; }\n",
             ".legend { font-size: 12px; }\n",
             ".series { fill: none; stroke-width: 1.6; }\n",
             "table { border-collapse: collapse; font-size: 13px; }\n",
             "td, th { border: 1px solid #ccc; padding: 2px 8px; text-align: right; }\n",
             "</style>\n</head>\n<body>\n<h1>", escape(title), "</h1>\n", body,
             "</body>\n</html>\n");
}

} // namespace dtcrt
