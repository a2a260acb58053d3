// Tests of the reduce family: Highway row kernels against their scalar
// references (sizes below, at and above the vector width), axes as attribute
// vs input across opsets, noop_with_empty_axes, empty reductions, permuted
// (non-trailing) axes against a naive reference, and softmax axis semantics.
#include "kernels/reduce.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "ir/error.h"
#include "kernels/common.h"
#include "kernels/kernel_test_util.h"
#include "kernels/op_registry.h"
#include "test_util.h"

namespace onnxfold {
namespace {

namespace simd = kernels::reduce_simd;

const test::OpRunner run{18};

constexpr auto floats = &test::floatValues;

std::vector<float> randomFloats(size_t n, unsigned seed) {
  return test::randomFloats(n, seed, -4.0f, 4.0f);
}

void expectNear(float got, float want, size_t n, const char* what) {
  EXPECT_NEAR(got, want, 1e-5f * (1.0f + std::fabs(want)) * static_cast<float>(1 + n / 16))
      << what << " n=" << n;
}

// Sizes below, at and above every vector width we build for (4, 8, 16 lanes).
const size_t kSizes[] = {0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 1000};

TEST(ReduceSimd, RowReductionsMatchScalarReference) {
  for (size_t n : kSizes) {
    const std::vector<float> x = randomFloats(n, static_cast<unsigned>(n));
    expectNear(simd::sum(x.data(), n), simd::sumScalar(x.data(), n), n, "sum");
    expectNear(simd::sumAbs(x.data(), n), simd::sumAbsScalar(x.data(), n), n, "sumAbs");
    expectNear(simd::sumSquares(x.data(), n), simd::sumSquaresScalar(x.data(), n), n, "sumSquares");
    EXPECT_EQ(simd::max(x.data(), n), simd::maxScalar(x.data(), n)) << n;
    EXPECT_EQ(simd::min(x.data(), n), simd::minScalar(x.data(), n)) << n;
    if (n > 0) {
      const float m = simd::maxScalar(x.data(), n);
      expectNear(simd::sumExpShifted(x.data(), n, m), simd::sumExpShiftedScalar(x.data(), n, m), n,
                 "sumExpShifted");
    }
  }
}

TEST(ReduceSimd, SoftmaxRowsMatchScalarReference) {
  for (size_t n : kSizes) {
    if (n == 0) continue;
    std::vector<float> x = randomFloats(n, static_cast<unsigned>(n) + 7);
    x[n / 2] = 60.0f;  // a dominant value: other exps are far below it
    std::vector<float> a(n), b(n), c(n), d(n);
    simd::softmax(x.data(), a.data(), n);
    simd::softmaxScalar(x.data(), b.data(), n);
    simd::logSoftmax(x.data(), c.data(), n);
    simd::logSoftmaxScalar(x.data(), d.data(), n);
    for (size_t i = 0; i < n; ++i) {
      EXPECT_NEAR(a[i], b[i], 1e-6f + 1e-5f * b[i]) << "softmax n=" << n << " i=" << i;
      EXPECT_NEAR(c[i], d[i], 1e-4f * (1.0f + std::fabs(d[i]))) << "logSoftmax n=" << n;
    }
  }
}

TEST(ReduceOps, AxesAttributeBeforeInputAfter) {
  const Tensor x = test::floatTensor({2, 3}, {1, 2, 3, 4, 5, 6});
  // ReduceSum: attribute until 12, input from 13.
  EXPECT_EQ(floats(run("ReduceSum", {x}, test::attrs(Attribute::makeInts("axes", {1})), 11)[0]),
            (std::vector<float>{6, 15}));
  EXPECT_EQ(floats(run("ReduceSum", {x, test::int64Tensor({1}, {0})}, {}, 13)[0]),
            (std::vector<float>{5, 7, 9}));
  // ReduceMean: attribute until 17, input from 18.
  EXPECT_EQ(floats(run("ReduceMean", {x}, test::attrs(Attribute::makeInts("axes", {-1})), 13)[0]),
            (std::vector<float>{2, 5}));
  const Tensor m = run("ReduceMean", {x, test::int64Tensor({1}, {0})},
                       test::attrs(Attribute::makeInt("keepdims", 0)), 18)[0];
  EXPECT_EQ(m.dims(), (std::vector<int64_t>{3}));
  EXPECT_EQ(floats(m), (std::vector<float>{2.5f, 3.5f, 4.5f}));
  EXPECT_THROW(run("ReduceSum", {x, test::int64Tensor({2}, {1, -1})}, {}, 13), Error);
}

TEST(ReduceOps, EmptyAxesNoopOrAll) {
  const Tensor x = test::floatTensor({2, 2}, {1, 2, 3, 4});
  const Tensor empty = test::int64Tensor({0}, {});
  const Tensor noop = run("ReduceSum", {x, empty},
                          test::attrs(Attribute::makeInt("noop_with_empty_axes", 1)), 13)[0];
  EXPECT_EQ(noop.dims(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(floats(noop), (std::vector<float>{1, 2, 3, 4}));
  const Tensor all = run("ReduceProd", {x, empty}, {}, 18)[0];
  EXPECT_EQ(all.dims(), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(floats(all), (std::vector<float>{24}));
}

TEST(ReduceOps, EmptyReductionsGiveIdentity) {
  const Tensor x(DataType::kFloat, {2, 0, 3});
  const Tensor axes = test::int64Tensor({1}, {1});
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(floats(run("ReduceMin", {x, axes}, {}, 18)[0]), std::vector<float>(6, inf));
  EXPECT_EQ(floats(run("ReduceMax", {x, axes}, {}, 18)[0]), std::vector<float>(6, -inf));
  EXPECT_EQ(floats(run("ReduceSum", {x, axes}, {}, 18)[0]), std::vector<float>(6, 0));
  EXPECT_EQ(floats(run("ReduceProd", {x, axes}, {}, 18)[0]), std::vector<float>(6, 1));
  EXPECT_EQ(floats(run("ReduceLogSumExp", {x, axes}, {}, 18)[0]), std::vector<float>(6, -inf));
}

TEST(ReduceOps, NonTrailingAxesMatchNaiveReference) {
  const std::vector<int64_t> dims = {3, 4, 5, 6};
  const std::vector<float> v = randomFloats(3 * 4 * 5 * 6, 11);
  const Tensor x = test::floatTensor(dims, v);
  // Reduce axes 0 and 2: out[j][l] over i, k.
  const Tensor out = run("ReduceSum", {x, test::int64Tensor({2}, {0, 2})},
                         test::attrs(Attribute::makeInt("keepdims", 0)), 18)[0];
  ASSERT_EQ(out.dims(), (std::vector<int64_t>{4, 6}));
  const Tensor mx = run("ReduceMax", {x, test::int64Tensor({2}, {2, 0})}, {}, 18)[0];
  ASSERT_EQ(mx.dims(), (std::vector<int64_t>{1, 4, 1, 6}));
  for (int j = 0; j < 4; ++j) {
    for (int l = 0; l < 6; ++l) {
      float s = 0, m = -1e30f;
      for (int i = 0; i < 3; ++i) {
        for (int k = 0; k < 5; ++k) {
          const float e = v[static_cast<size_t>(((i * 4 + j) * 5 + k) * 6 + l)];
          s += e;
          m = std::max(m, e);
        }
      }
      EXPECT_NEAR(out.at<float>(static_cast<size_t>(j * 6 + l)), s, 1e-4f);
      EXPECT_EQ(mx.at<float>(static_cast<size_t>(j * 6 + l)), m);
    }
  }
}

TEST(ReduceOps, IntegerAndBoolReductions) {
  const Tensor x = test::int64Tensor({2, 2}, {int64_t{1} << 60, 3, -5, 7});
  const Tensor s = run("ReduceSum", {x, test::int64Tensor({1}, {1})}, {}, 13)[0];
  EXPECT_EQ(s.at<int64_t>(0), (int64_t{1} << 60) + 3);  // exact, not through float
  EXPECT_EQ(s.at<int64_t>(1), 2);
  Tensor b(DataType::kBool, {3});
  b.mutableBytes()[1] = 1;
  const Tensor bm = run("ReduceMax", {b}, test::attrs(Attribute::makeInt("keepdims", 0)), 20)[0];
  EXPECT_EQ(bm.dtype(), DataType::kBool);
  EXPECT_EQ(bm.at<bool>(0), true);
}

TEST(ReduceOps, UnknownAxesKeepRankWithKeepdims) {
  test::ModelBuilder b(18);
  Value* x = b.input("x", DataType::kFloat, {-1, 1, 4});
  Value* axes = b.input("axes", DataType::kInt64, {1});
  Node* n = b.node("ReduceSum", {x, axes});
  InferContext ic(*n, 18, 2, 1);
  ic.input_types = {&x->type, &axes->type};
  OpRegistry::instance().find("", "ReduceSum", 18)->infer(ic);
  const Shape& s = *ic.output_types[0].shape;
  ASSERT_EQ(s.rank(), 3u);
  EXPECT_EQ(s.dims[1].value, 1);
  EXPECT_FALSE(s.dims[2].isKnown());
}

TEST(SoftmaxOps, AxisSemanticsChangeAtOpset13) {
  const std::vector<float> v = {0, 1, 2, 3, 4, 5};
  const Tensor x = test::floatTensor({1, 2, 3}, v);
  // Opset 11, axis 1: coerced to [1, 6], one softmax over all six values.
  const std::vector<float> old =
      floats(run("Softmax", {x}, test::attrs(Attribute::makeInt("axis", 1)), 11)[0]);
  // Opset 13, axis 1: along the dim of size 2.
  const std::vector<float> now =
      floats(run("Softmax", {x}, test::attrs(Attribute::makeInt("axis", 1)), 13)[0]);
  float total = 0;
  for (float f : v)
    total += std::exp(f);
  for (size_t i = 0; i < 6; ++i)
    EXPECT_NEAR(old[i], std::exp(v[i]) / total, 1e-6f);
  for (size_t j = 0; j < 3; ++j) {
    const float a = std::exp(v[j]), b = std::exp(v[3 + j]);
    EXPECT_NEAR(now[j], a / (a + b), 1e-6f);
    EXPECT_NEAR(now[3 + j], b / (a + b), 1e-6f);
  }
  const std::vector<float> hard =
      floats(run("Hardmax", {x}, test::attrs(Attribute::makeInt("axis", 1)), 13)[0]);
  EXPECT_EQ(hard, (std::vector<float>{0, 0, 0, 1, 1, 1}));
  const std::vector<float> ls = floats(run("LogSoftmax", {x}, {}, 13)[0]);
  EXPECT_NEAR(ls[2], 2 - std::log(std::exp(0.f) + std::exp(1.f) + std::exp(2.f)), 1e-5f);
}

TEST(SoftmaxOps, HalfInputComputesInFloat) {
  Tensor x(DataType::kFloat16, {4});
  auto* p = kernels::mutableDataAs<uint16_t>(x);
  for (int i = 0; i < 4; ++i)
    p[i] = kernels::floatToHalf(static_cast<float>(i));
  const Tensor y = run("Softmax", {x}, {}, 13)[0];
  float total = 0;
  for (int i = 0; i < 4; ++i)
    total += std::exp(static_cast<float>(i));
  for (int i = 0; i < 4; ++i) {
    EXPECT_NEAR(kernels::halfToFloat(y.at<uint16_t>(static_cast<size_t>(i))),
                std::exp(static_cast<float>(i)) / total, 1e-3f);
  }
}

}  // namespace
}  // namespace onnxfold
