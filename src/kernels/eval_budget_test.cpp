#include "kernels/eval_budget.h"

#include <gtest/gtest.h>

#include "ir/error.h"

namespace onnxfold {
namespace {

TEST(EvalBudget, OutsideARunNothingIsCounted) {
  EXPECT_NO_THROW(EvalBudget::chargeSteps(kEvalSteps + 1, "x"));
  EXPECT_NO_THROW(EvalBudget::chargeBytes(kEvalBytes + 1, "x"));
}

TEST(EvalBudget, ARunSharesOneBudgetAndRefusesWhatDoesNotFit) {
  const EvalBudget::Scope run(3, 100);
  EvalBudget::chargeSteps(2, "a");
  EXPECT_THROW(EvalBudget::chargeSteps(2, "b"), UnsupportedError);
  EvalBudget::chargeSteps(1, "c");  // a refused charge takes nothing
  EXPECT_THROW(EvalBudget::chargeSteps(1, "d"), UnsupportedError);
  EXPECT_THROW(EvalBudget::chargeBytes(101, "e"), UnsupportedError);
  EvalBudget::chargeBytes(100, "f");
  try {
    EvalBudget::chargeBytes(1, "Concat");
    FAIL();
  } catch (const UnsupportedError& e) {
    EXPECT_NE(std::string(e.what()).find("Concat: over the run's evaluation budget"),
              std::string::npos)
        << e.what();
  }
}

TEST(EvalBudget, AnInnerRunEndsAndTheOuterOneGoesOn) {
  const EvalBudget::Scope outer(1, 0);
  {
    const EvalBudget::Scope inner(5, 0);
    EvalBudget::chargeSteps(5, "inner");
  }
  EvalBudget::chargeSteps(1, "outer");
  EXPECT_THROW(EvalBudget::chargeSteps(1, "outer"), UnsupportedError);
}

}  // namespace
}  // namespace onnxfold
