// --lr-schedule: each schedule's closed form at chosen points (the values
// torch.optim.lr_scheduler gives; the e2e test test/e2e/lr_schedules.test
// trains with them against PyTorch), the warm-up, the flags, and the errors.
#include "runtime/train/LrSchedule.h"
#include "runtime/train/Options.h"

#include "TrainerTestUtil.h"

#include <cmath>
#include <initializer_list>

using namespace dtcrt;
using dtcrt_test::errorOf;

namespace {

LrSchedule parse(std::initializer_list<const char*> args) {
  std::vector<const char*> argv = {"train", "--data=synthetic"};
  argv.insert(argv.end(), args.begin(), args.end());
  return parseOptions(static_cast<int>(argv.size()), argv.data(), ProgramMode::Train).schedule;
}

constexpr double kPi = 3.14159265358979323846;

} // namespace

TEST(LrSchedule, ConstantByDefault) {
  LrSchedule s = parse({});
  EXPECT_TRUE(s.isConstant());
  EXPECT_EQ(s.describe(100), "constant");
  for (int64_t t : {0, 1, 99, 1000}) EXPECT_EQ(s.at(0.1, t, 100), 0.1);
}

TEST(LrSchedule, StepAndMultiStep) {
  LrSchedule s = parse({"--lr-schedule=step", "--lr-step-size=10", "--lr-gamma=0.5"});
  s.check(100);
  EXPECT_DOUBLE_EQ(s.at(1.0, 0, 100), 1.0);
  EXPECT_DOUBLE_EQ(s.at(1.0, 9, 100), 1.0);
  EXPECT_DOUBLE_EQ(s.at(1.0, 10, 100), 0.5);
  EXPECT_DOUBLE_EQ(s.at(1.0, 25, 100), 0.25);
  LrSchedule m = parse({"--lr-schedule=multistep", "--lr-milestones=3,7"});
  m.check(100);
  EXPECT_DOUBLE_EQ(m.at(1.0, 2, 100), 1.0);
  EXPECT_DOUBLE_EQ(m.at(1.0, 3, 100), 0.1);
  EXPECT_DOUBLE_EQ(m.at(1.0, 7, 100), 0.1 * 0.1);
}

TEST(LrSchedule, ExponentialCosineLinear) {
  LrSchedule e = parse({"--lr-schedule=exponential", "--lr-gamma=0.9"});
  e.check(10);
  EXPECT_DOUBLE_EQ(e.at(2.0, 3, 10), 2.0 * 0.9 * 0.9 * 0.9);
  LrSchedule c = parse({"--lr-schedule=cosine", "--lr-min=0.01"});
  c.check(20);
  EXPECT_DOUBLE_EQ(c.at(1.0, 0, 20), 1.0);
  EXPECT_DOUBLE_EQ(c.at(1.0, 5, 20), 0.01 + 0.99 * (1 + std::cos(kPi * 5 / 20)) / 2);
  EXPECT_DOUBLE_EQ(c.at(1.0, 20, 20), 0.01);
  EXPECT_DOUBLE_EQ(c.at(1.0, 30, 20), 0.01);  // held at the final lr past the total
  LrSchedule l = parse({"--lr-schedule=linear", "--lr-warmup=4", "--lr-total=12"});
  l.check(1000);
  EXPECT_DOUBLE_EQ(l.at(1.0, 0, 1000), 0.0);   // Hugging Face: the warm-up starts at 0
  EXPECT_DOUBLE_EQ(l.at(1.0, 2, 1000), 0.5);
  EXPECT_DOUBLE_EQ(l.at(1.0, 4, 1000), 1.0);
  EXPECT_DOUBLE_EQ(l.at(1.0, 6, 1000), 0.75);  // 1 - 2/8
  EXPECT_DOUBLE_EQ(l.at(1.0, 12, 1000), 0.0);
  EXPECT_DOUBLE_EQ(l.at(1.0, 20, 1000), 0.0);
}

TEST(LrSchedule, WarmupStartFactorAsLinearLR) {
  LrSchedule s = parse({"--lr-warmup=5", "--lr-warmup-start=0.2"});
  s.check(100);
  EXPECT_FALSE(s.isConstant());
  EXPECT_DOUBLE_EQ(s.at(1.0, 0, 100), 0.2);
  EXPECT_DOUBLE_EQ(s.at(1.0, 1, 100), 0.2 + 0.8 / 5);
  EXPECT_DOUBLE_EQ(s.at(1.0, 5, 100), 1.0);
}

TEST(LrSchedule, OneCycleAsTorch) {
  // OneCycleLR(max_lr=1, total_steps=10): phase 1 ends at step 0.3*10-1 = 2.
  LrSchedule s = parse({"--lr-schedule=onecycle"});
  s.check(10);
  // torch's cosine annealing formula rounds the ends by a few ulps.
  EXPECT_NEAR(s.at(1.0, 0, 10), 1.0 / 25, 1e-15);
  EXPECT_NEAR(s.at(1.0, 2, 10), 1.0, 1e-15);
  const double last = 1.0 / 25 / 1e4;
  EXPECT_DOUBLE_EQ(s.at(1.0, 9, 10), last);
  const double pct = (5 - 2.0) / (9 - 2.0);
  EXPECT_NEAR(s.at(1.0, 5, 10), last + (1.0 - last) / 2 * (std::cos(kPi * pct) + 1), 1e-15);
}

TEST(LrSchedule, Errors) {
  EXPECT_EQ(errorOf([] { parse({"--lr-schedule=poly"}).check(10); }),
            "--lr-schedule: unknown schedule 'poly' (expected constant, step, multistep, "
            "exponential, cosine, linear or onecycle)");
  EXPECT_EQ(errorOf([] { parse({"--lr-schedule=step"}).check(10); }),
            "--lr-schedule=step: needs --lr-step-size=N");
  EXPECT_EQ(errorOf([] { parse({"--lr-schedule=exponential"}).check(10); }),
            "--lr-schedule=exponential: needs --lr-gamma=G");
  EXPECT_EQ(errorOf([] { parse({"--lr-milestones=5,3"}); }),
            "--lr-milestones: expected increasing integers like 30,60,90, got '5,3'");
  EXPECT_EQ(errorOf([] { parse({"--lr-schedule-unit=batch"}); }),
            "--lr-schedule-unit: expected step or epoch, got 'batch'");
  EXPECT_EQ(errorOf([] { parse({"--lr-schedule=cosine", "--lr-warmup=10"}).check(10); }),
            "--lr-schedule=cosine: the warm-up (10 steps) leaves none of the 10 total steps to "
            "decay over (see --lr-total)");
  EXPECT_EQ(errorOf([] { parse({"--lr-warmup-start=2"}).check(10); }),
            "--lr-warmup-start: expected a factor in [0, 1], got 2");
}
