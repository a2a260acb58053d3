// Tests of SwiGLU: hand-computed values, the alpha default, float16 / bfloat16 / double,
// inference, and the errors for inputs that do not match.
#include <gtest/gtest.h>

#include <cmath>

#include "ir/error.h"
#include "kernels/kernel_test_util.h"

namespace onnxfold {
namespace {

const test::OpRunner run{28};

double swiglu(double a, double b, double alpha) {
  return a / (1.0 + std::exp(-alpha * a)) * b;
}

TEST(SwiGLU, HandComputedWithDefaultAlpha) {
  // a * sigmoid(a) * b: 0 -> 0; 1 * 0.7310586 * 2; -2 * 0.1192029 * 3; 20 -> ~20.
  const std::vector<Tensor> y = run("SwiGLU", {test::floatTensor({2, 2}, {0, 1, -2, 20}),
                                               test::floatTensor({2, 2}, {5, 2, 3, 1})});
  ASSERT_EQ(y[0].dims(), (std::vector<int64_t>{2, 2}));
  const std::vector<float> v = test::floatValues(y[0]);
  EXPECT_FLOAT_EQ(v[0], 0.0f);
  EXPECT_NEAR(v[1], 1.4621172f, 1e-6);
  EXPECT_NEAR(v[2], -0.7152175f, 1e-6);
  EXPECT_NEAR(v[3], 20.0f, 1e-5);
}

TEST(SwiGLU, AlphaScalesTheGate) {
  const std::vector<float> a = {1, -2, 3, 4, -1, 2, -3, 0.5f};
  const std::vector<float> b = {0.5f, 1, -1, 2, 2, -1, 0.5f, 1};
  const std::vector<Tensor> y =
      run("SwiGLU", {test::floatTensor({2, 4}, a), test::floatTensor({2, 4}, b)},
          test::attrs(Attribute::makeFloat("alpha", 0.5f)));
  const std::vector<float> v = test::floatValues(y[0]);
  for (size_t i = 0; i < a.size(); ++i)
    EXPECT_NEAR(v[i], swiglu(a[i], b[i], 0.5), 1e-6) << i;
  // Omitted alpha is 1, not 0.5.
  const std::vector<float> d = test::floatValues(
      run("SwiGLU", {test::floatTensor({2, 4}, a), test::floatTensor({2, 4}, b)})[0]);
  EXPECT_NEAR(d[0], swiglu(1, 0.5, 1.0), 1e-6);
}

TEST(SwiGLU, HalfBfloatAndDoubleKeepTheirType) {
  const std::vector<double> a = {1, -2, 3, 0.5}, b = {0.5, 1, -1, 2};
  for (DataType dt : {DataType::kFloat16, DataType::kBfloat16, DataType::kDouble}) {
    const std::vector<Tensor> y =
        run("SwiGLU", {test::tensorOf(dt, {4}, a), test::tensorOf(dt, {4}, b)});
    ASSERT_EQ(y[0].dtype(), dt);
    const std::vector<double> v = test::valuesOf(y[0]);
    const double tol = dt == DataType::kDouble ? 1e-12 : dt == DataType::kFloat16 ? 2e-3 : 1e-2;
    for (size_t i = 0; i < a.size(); ++i) {
      // The inputs as stored, the result within the type's precision.
      const double ai = test::valuesOf(test::tensorOf(dt, {1}, {a[i]}))[0];
      const double bi = test::valuesOf(test::tensorOf(dt, {1}, {b[i]}))[0];
      const double want = swiglu(ai, bi, 1.0);
      EXPECT_NEAR(v[i], want, tol * (1 + std::fabs(want))) << dataTypeName(dt) << " " << i;
    }
  }
}

TEST(SwiGLU, InfersTheSharedShape) {
  test::ModelBuilder b(28);
  Value* a = b.input("a", DataType::kFloat16, {-1, 8});
  Value* g = b.input("b", DataType::kFloat16, {4, -1});
  InferContext ic =
      test::inferWith(b, "SwiGLU", {a, g}, {&a->type, &g->type}, {nullptr, nullptr}, {}, 28);
  const Type& t = ic.output_types[0];
  EXPECT_EQ(t.elem_type, DataType::kFloat16);
  ASSERT_TRUE(t.shape);
  ASSERT_EQ(t.shape->rank(), 2u);
  EXPECT_EQ(t.shape->dims[0].value, 4);
  EXPECT_EQ(t.shape->dims[1].value, 8);
}

TEST(SwiGLU, RejectsMismatchedInputs) {
  try {
    run("SwiGLU", {test::floatTensor({2, 3}, std::vector<float>(6, 1.0f)),
                   test::floatTensor({3}, {1, 2, 3})});
    FAIL() << "broadcasting accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("SwiGLU"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("same shape"), std::string::npos) << e.what();
  }
  EXPECT_THROW(run("SwiGLU", {test::floatTensor({2}, {1, 2}), test::floatTensor({3}, {1, 2, 3})}),
               Error);
  EXPECT_THROW(run("SwiGLU", {test::floatTensor({2}, {1, 2}),
                              test::tensorOf(DataType::kDouble, {2}, {1, 2})}),
               Error);
  EXPECT_THROW(run("SwiGLU", {test::int64Tensor({2}, {1, 2}), test::int64Tensor({2}, {1, 2})}),
               Error);
}

TEST(SwiGLU, NotBeforeOpset28) {
  EXPECT_THROW(run("SwiGLU", {test::floatTensor({1}, {1}), test::floatTensor({1}, {1})}, {}, 27),
               Error);
}

}  // namespace
}  // namespace onnxfold
