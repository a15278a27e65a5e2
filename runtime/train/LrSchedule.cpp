// Learning-rate schedules (see LrSchedule.h).
#include "runtime/train/LrSchedule.h"

#include "runtime/support/Error.h"

#include <algorithm>
#include <cmath>

namespace dtcrt {

namespace {

constexpr double kPi = 3.14159265358979323846;

bool known(const std::string& kind) {
  for (const char* k : {"constant", "step", "multistep", "exponential", "cosine", "linear", "onecycle"})
    if (kind == k) return true;
  return false;
}

// torch's OneCycleLR._annealing_cos.
double annealCos(double start, double end, double pct) {
  return end + (start - end) / 2.0 * (std::cos(kPi * pct) + 1);
}

} // namespace

const char* lrScheduleNames() {
  return "constant, step, multistep, exponential, cosine, linear or onecycle";
}

void LrSchedule::check(int64_t runTotal) const {
  if (!known(kind)) fail("--lr-schedule: unknown schedule '", kind, "' (expected ", lrScheduleNames(), ")");
  const int64_t T = total > 0 ? total : runTotal;
  const char* unit = perEpoch ? "epochs" : "steps";
  if (warmupStart < 0 || warmupStart > 1)
    fail("--lr-warmup-start: expected a factor in [0, 1], got ", warmupStart);
  if (kind == "step" && stepSize <= 0) fail("--lr-schedule=step: needs --lr-step-size=N");
  if (kind == "multistep" && milestones.empty())
    fail("--lr-schedule=multistep: needs --lr-milestones=A,B,...");
  if (kind == "exponential" && !gammaSet) fail("--lr-schedule=exponential: needs --lr-gamma=G");
  if ((kind == "step" || kind == "multistep" || kind == "exponential") && gamma <= 0)
    fail("--lr-gamma: expected a positive factor, got ", gamma);
  if (minLr < 0) fail("--lr-min: expected a non-negative lr, got ", minLr);
  if (kind == "onecycle") {
    if (warmup > 0) fail("--lr-warmup: onecycle warms up by itself (see --lr-pct-start)");
    if (!(pctStart > 0 && pctStart < 1)) fail("--lr-pct-start: expected a number in (0, 1), got ", pctStart);
    if (divFactor <= 0 || finalDivFactor <= 0)
      fail("--lr-div-factor and --lr-final-div-factor must be positive");
    // torch: phase 1 ends at pct_start * T - 1, which must lie after step 0.
    if (T < 2 || pctStart * static_cast<double>(T) - 1 <= 0)
      fail("--lr-schedule=onecycle: ", T, " total ", unit, " leave no warm-up phase (raise --lr-total or --lr-pct-start)");
  }
  if ((kind == "cosine" || kind == "linear") && T - warmup <= 0)
    fail("--lr-schedule=", kind, ": the warm-up (", warmup, " ", unit, ") leaves none of the ", T,
         " total ", unit, " to decay over (see --lr-total)");
}

double LrSchedule::at(double baseLr, int64_t t, int64_t runTotal) const {
  const int64_t T = total > 0 ? total : runTotal;
  if (t < warmup) {
    const double frac = static_cast<double>(t) / static_cast<double>(warmup);
    return baseLr * (warmupStart + (1.0 - warmupStart) * frac);
  }
  const int64_t u = t - warmup;
  const double ud = static_cast<double>(u);
  if (kind == "step") return baseLr * std::pow(gamma, static_cast<double>(u / stepSize));
  if (kind == "multistep") {
    int64_t passed = 0;
    for (int64_t m : milestones) passed += m <= u ? 1 : 0;
    return baseLr * std::pow(gamma, static_cast<double>(passed));
  }
  if (kind == "exponential") return baseLr * std::pow(gamma, ud);
  if (kind == "cosine") {
    const int64_t span = T - warmup;
    if (u >= span) return minLr;
    return minLr + (baseLr - minLr) * (1 + std::cos(kPi * ud / static_cast<double>(span))) / 2;
  }
  if (kind == "linear") {
    const double span = static_cast<double>(T - warmup);
    return baseLr * std::max(0.0, 1.0 - ud / span);
  }
  if (kind == "onecycle") {
    const double initial = baseLr / divFactor;
    const double last = initial / finalDivFactor;
    const double end1 = pctStart * static_cast<double>(T) - 1;
    const double end2 = static_cast<double>(T) - 1;
    if (ud >= end2) return last;  // torch raises past T; the lr stays at its end
    if (ud <= end1) return annealCos(initial, baseLr, ud / end1);
    return annealCos(baseLr, last, (ud - end1) / (end2 - end1));
  }
  return baseLr;
}

std::string LrSchedule::describe(int64_t runTotal) const {
  if (isConstant()) return "constant";
  const int64_t T = total > 0 ? total : runTotal;
  std::string d = str(kind, " (per ", perEpoch ? "epoch" : "step");
  if (warmup > 0) d += str(", ", warmup, " warm-up from ", warmupStart);
  if (kind == "step") d += str(", every ", stepSize, " x ", gamma);
  if (kind == "multistep") {
    d += ", at";
    for (int64_t m : milestones) d += str(" ", m);
    d += str(" x ", gamma);
  }
  if (kind == "exponential") d += str(", x ", gamma);
  if (kind == "cosine" || kind == "linear" || kind == "onecycle") d += str(", total ", T);
  if (kind == "cosine") d += str(", min ", minLr);
  if (kind == "onecycle")
    d += str(", pct_start ", pctStart, ", div ", divFactor, ", final div ", finalDivFactor);
  return d + ")";
}

} // namespace dtcrt
