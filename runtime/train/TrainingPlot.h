// TrainingPlot: --plot=FILE.html, the curves of a run as one self-contained
// HTML page (inline SVG; no script, no external font or style sheet).
//
// Charts, each against the global optimizer step (x axis, with ticks; eval
// points carry their epoch in a tooltip and in the legend's table):
//   * loss: the training loss of every logged step (a line) and the eval
//     loss of every evaluation (a line with markers);
//   * accuracy (classifiers): eval accuracy and, with more than 5 classes,
//     top-5 accuracy, in percent;
//   * perplexity (language models): eval perplexity.
// Every series is an SVG <polyline> with class "series", its name in
// data-name and one point per value, plus (eval series) one <circle> per
// point; a chart with no values is left out.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dtcrt {

struct PlotEval {
  int64_t epoch = 0;   // the 1-based epoch it followed (or was cut short in)
  int64_t step = 0;    // the global step it evaluated
  double loss = 0;
  double accuracy = -1;    // < 0: none
  double top5 = -1;        // < 0: none
  double perplexity = -1;  // < 0: none
};

class TrainingPlot {
public:
  void addStep(int64_t step, double loss) { steps_.push_back({step, loss}); }
  void addEval(const PlotEval& e) { evals_.push_back(e); }
  // The page, titled `title`.
  std::string html(const std::string& title) const;

private:
  struct Point {
    int64_t step;
    double loss;
  };
  std::vector<Point> steps_;
  std::vector<PlotEval> evals_;
};

} // namespace dtcrt
