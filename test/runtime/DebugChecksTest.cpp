// Tests of check_finite (dtc --debug-checks): finite data passes (including
// the extremes of float), and a NaN or an infinity anywhere — first, last,
// several — throws a message naming the producer, the first bad element and
// how many there are. check_all_equal (a compiled program's precondition on
// a run-time value) passes when every element is the value and otherwise
// names the first one that is not.
#include "TestUtil.h"

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace k = dtcrt::cpu;

namespace {

std::string failure(const std::vector<float>& x, const char* what) {
  try {
    k::check_finite(x.data(), static_cast<int64_t>(x.size()), what);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

TEST(DebugChecks, FiniteValuesPass) {
  std::vector<float> x = {0.f, -0.f, 1.f, std::numeric_limits<float>::max(),
                          -std::numeric_limits<float>::max(),
                          std::numeric_limits<float>::denorm_min()};
  EXPECT_EQ(failure(x, "dtc.relu (/Relu)"), "");
  EXPECT_EQ(failure({}, "empty"), "");
}

TEST(DebugChecks, NaNNamesTheProducerAndTheFirstElement) {
  std::vector<float> x(10, 1.f);
  x[3] = std::nanf("");
  x[7] = std::nanf("");
  EXPECT_EQ(failure(x, "dtc.sqrt (/Sqrt)"),
            "--debug-checks: NaN first written by dtc.sqrt (/Sqrt) (element 3 of 10 is nan; "
            "2 non-finite)");
}

TEST(DebugChecks, InfinityAtEitherEnd) {
  std::vector<float> x(5, 2.f);
  x[4] = std::numeric_limits<float>::infinity();
  EXPECT_EQ(failure(x, "dtc.exp (/Exp)"),
            "--debug-checks: infinity first written by dtc.exp (/Exp) (element 4 of 5 is inf; "
            "1 non-finite)");
  x[4] = 2.f;
  x[0] = -std::numeric_limits<float>::infinity();
  EXPECT_NE(failure(x, "dtc.exp (/Exp)").find("element 0 of 5 is -inf"), std::string::npos);
}

TEST(DebugChecks, AllEqualNamesTheFirstDifferentElement) {
  const std::vector<int64_t> same = {12, 12, 12};
  EXPECT_NO_THROW(k::check_all_equal(same.data(), 3, 12, "sequence_lens"));
  EXPECT_NO_THROW(k::check_all_equal(nullptr, 0, 12, "sequence_lens"));
  const std::vector<int64_t> x = {12, 7, 12, 3};
  try {
    k::check_all_equal(x.data(), 4, 12, "LSTM node \"L\": sequence_lens must be 12");
    ADD_FAILURE() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()),
              "LSTM node \"L\": sequence_lens must be 12 (element 1 of 4 is 7; 2 differ)");
  }
}

}  // namespace
