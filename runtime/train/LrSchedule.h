// Learning-rate schedules of the training loop (--lr-schedule and friends):
// the lr of each optimizer step as torch.optim.lr_scheduler computes it, in
// closed form from the number of scheduler steps taken. The trainer passes
// the result to every step (GPU programs: through the device's step scalars,
// so a captured CUDA graph replays with the current lr).
//
// Time t counts scheduler steps: optimizer steps (unit "step") or completed
// epochs (unit "epoch"), from 0, as if scheduler.step() were called after
// every optimizer step or every epoch. With a warm-up of W units,
//   factor(t) = start + (1 - start) * t / W           for t < W
// (torch's LinearLR(start_factor=start, total_iters=W); start = 0 is the
// Hugging Face warm-up), and the main schedule runs on t - W afterwards, as
// torch's SequentialLR([LinearLR, main], milestones=[W]). Main schedules
// (base = --lr, u = t - W, T = total - W):
//   constant     base
//   step         base * gamma^floor(u / step_size)           (StepLR)
//   multistep    base * gamma^(milestones <= u)              (MultiStepLR)
//   exponential  base * gamma^u                              (ExponentialLR)
//   cosine       min + (base - min) * (1 + cos(pi u / T)) / 2, min after T
//                                                            (CosineAnnealingLR)
//   linear       base * max(0, 1 - u / T)  (LinearLR(1, 0, T); Hugging Face's
//                get_linear_schedule_with_warmup with the warm-up)
//   onecycle     OneCycleLR(max_lr=base, total_steps=T, pct_start,
//                div_factor, final_div_factor, anneal_strategy='cos',
//                cycle_momentum=False); no separate warm-up
// Milestones and step sizes count from the end of the warm-up.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dtcrt {

struct LrSchedule {
  std::string kind = "constant";  // --lr-schedule
  bool perEpoch = false;          // --lr-schedule-unit=epoch
  int64_t warmup = 0;             // --lr-warmup=N (units)
  double warmupStart = 0;         // --lr-warmup-start=F in [0, 1]
  int64_t stepSize = 0;           // --lr-step-size=N (step)
  std::vector<int64_t> milestones;  // --lr-milestones=A,B,... (multistep)
  double gamma = 0.1;             // --lr-gamma=G (step, multistep, exponential)
  bool gammaSet = false;
  double minLr = 0;               // --lr-min=X (cosine's final lr)
  int64_t total = 0;              // --lr-total=N units (cosine, linear, onecycle);
                                  // 0 = the run's whole length
  double pctStart = 0.3;          // --lr-pct-start (onecycle)
  double divFactor = 25;          // --lr-div-factor (onecycle)
  double finalDivFactor = 1e4;    // --lr-final-div-factor (onecycle)

  // Throws Error naming the flag when the settings do not make a schedule
  // (a step schedule without --lr-step-size, a warm-up longer than the total...).
  // `runTotal` is the run's length in units, used when `total` is 0.
  void check(int64_t runTotal) const;
  // The lr after `t` scheduler steps (see above). `runTotal` as for check().
  double at(double baseLr, int64_t t, int64_t runTotal) const;
  // One line for the banner and the ranks' agreement: "cosine (per step,
  // 100 warm-up, total 1000, min 0)"; "constant" when nothing is scheduled.
  std::string describe(int64_t runTotal) const;
  bool isConstant() const { return kind == "constant" && warmup == 0; }
};

// The known --lr-schedule names, for errors and --help.
const char* lrScheduleNames();

} // namespace dtcrt
