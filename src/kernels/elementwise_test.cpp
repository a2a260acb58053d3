// Tests of the elementwise machinery (elementwise.h, elementwise_hwy.h): the
// Highway kernels against their scalar references (sizes below, at and above
// the vector width, in place), broadcasting shapes (legacy axis broadcasting
// included) and the reading of partly symbolic shape values by Equal, Where
// and Neg.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "ir/error.h"
#include "kernels/common.h"
#include "kernels/elementwise_hwy.h"
#include "kernels/kernel_test_util.h"
#include "kernels/op_registry.h"
#include "test_util.h"

namespace onnxfold {
namespace {

namespace ew = kernels::ew;
namespace hn = hwy::HWY_NAMESPACE;

size_t lanes() {
  return hn::Lanes(hn::ScalableTag<float>());
}

std::vector<float> randomFloats(size_t n, uint32_t seed) {
  std::vector<float> v = test::randomFloats(n, seed, -20.0f, 20.0f);
  if (n > 3) {
    v[0] = 0.0f;
    v[1] = -0.0f;
    v[2] = std::nanf("");
    v[3] = 200.0f;  // exp overflow territory for sigmoid
  }
  return v;
}

bool sameOrBothNan(float a, float b) {
  return (std::isnan(a) && std::isnan(b)) || std::memcmp(&a, &b, 4) == 0;
}

template <ew::BinaryF32 op>
void checkBinary() {
  for (size_t n = 0; n <= 4 * lanes() + 3; ++n) {
    const std::vector<float> a = randomFloats(n + 1, 1), b = randomFloats(n + 1, 2);
    for (const auto& [sa, sb] : {std::pair<size_t, size_t>{1, 1}, {1, 0}, {0, 1}}) {
      std::vector<float> want(n), got(n);
      ew::binaryRef<op>(a.data(), sa, b.data(), sb, want.data(), n);
      ew::binaryHwy<op>(a.data(), sa, b.data(), sb, got.data(), n);
      for (size_t i = 0; i < n; ++i)
        ASSERT_TRUE(sameOrBothNan(got[i], want[i])) << "n=" << n << " i=" << i;
      // In place: out aliases a.
      if (sa == 1) {
        std::vector<float> io(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(n));
        ew::binaryHwy<op>(io.data(), 1, b.data(), sb, io.data(), n);
        for (size_t i = 0; i < n; ++i)
          ASSERT_TRUE(sameOrBothNan(io[i], want[i])) << "in place n=" << n << " i=" << i;
      }
    }
  }
}

TEST(ElementwiseHwy, BinaryMatchesReference) {
  checkBinary<ew::BinaryF32::kAdd>();
  checkBinary<ew::BinaryF32::kSub>();
  checkBinary<ew::BinaryF32::kMul>();
  checkBinary<ew::BinaryF32::kDiv>();
}

template <ew::UnaryF32 op>
void checkUnary(float rel_tol) {
  for (size_t n = 0; n <= 4 * lanes() + 3; ++n) {
    const std::vector<float> x = randomFloats(n, 3);
    std::vector<float> want(n), got(n);
    ew::unaryRef<op>(x.data(), want.data(), n);
    ew::unaryHwy<op>(x.data(), got.data(), n);
    for (size_t i = 0; i < n; ++i) {
      if (rel_tol == 0) {
        ASSERT_TRUE(sameOrBothNan(got[i], want[i])) << "n=" << n << " i=" << i;
      } else if (std::isnan(want[i])) {
        ASSERT_TRUE(std::isnan(got[i])) << "n=" << n << " i=" << i;
      } else {
        ASSERT_NEAR(got[i], want[i], rel_tol * std::fabs(want[i]) + 1e-30f)
            << "n=" << n << " i=" << i << " x=" << x[i];
      }
    }
    std::vector<float> io = x;  // in place
    ew::unaryHwy<op>(io.data(), io.data(), n);
    for (size_t i = 0; i < n; ++i)
      ASSERT_TRUE(sameOrBothNan(io[i], got[i]));
  }
}

TEST(ElementwiseHwy, UnaryMatchesReference) {
  checkUnary<ew::UnaryF32::kRelu>(0);
  checkUnary<ew::UnaryF32::kNeg>(0);
  checkUnary<ew::UnaryF32::kAbs>(0);
  checkUnary<ew::UnaryF32::kSqrt>(0);
  checkUnary<ew::UnaryF32::kSigmoid>(1e-6f);
}

// ------------------------------------------------------------ through the registry

const test::OpRunner run{17};

using test::tensorOf;
using test::valuesOf;

TEST(Elementwise, BroadcastShapes) {
  // [2,1,3] + [4,1] -> [2,4,3]; column, row and scalar broadcasting in one.
  std::vector<double> av(6), bv(4);
  for (size_t i = 0; i < 6; ++i)
    av[i] = static_cast<double>(i);
  for (size_t i = 0; i < 4; ++i)
    bv[i] = 10.0 * static_cast<double>(i);
  for (DataType dt : {DataType::kFloat, DataType::kInt64, DataType::kFloat16}) {
    const Tensor a = tensorOf(dt, {2, 1, 3}, av);
    const Tensor b = tensorOf(dt, {4, 1}, bv);
    const Tensor out = run("Add", {a, b})[0];
    ASSERT_EQ(out.dims(), (std::vector<int64_t>{2, 4, 3}));
    const std::vector<double> v = valuesOf(out);
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < 4; ++j)
        for (int64_t k = 0; k < 3; ++k)
          EXPECT_EQ(v[static_cast<size_t>((i * 4 + j) * 3 + k)],
                    av[static_cast<size_t>(i * 3 + k)] + bv[static_cast<size_t>(j)]);
  }
  const Tensor s = tensorOf(DataType::kFloat, {}, {2});
  const Tensor m = tensorOf(DataType::kFloat, {2, 2}, {1, 2, 3, 4});
  EXPECT_EQ(valuesOf(run("Sub", {s, m})[0]), (std::vector<double>{1, 0, -1, -2}));
  EXPECT_EQ(valuesOf(run("Mul", {m, s})[0]), (std::vector<double>{2, 4, 6, 8}));
  EXPECT_THROW(run("Add", {m, tensorOf(DataType::kFloat, {3}, {1, 2, 3})}), Error);
}

TEST(Elementwise, LegacyAxisBroadcast) {
  // Opset 6: B [3] aligned with axis 1 of A [2,3,2].
  std::vector<double> av(12, 1.0);
  const Tensor a = tensorOf(DataType::kFloat, {2, 3, 2}, av);
  const Tensor b = tensorOf(DataType::kFloat, {3}, {1, 2, 3});
  const Tensor out =
      run("Add", {a, b},
          test::attrs(Attribute::makeInt("broadcast", 1), Attribute::makeInt("axis", 1)), 6)[0];
  EXPECT_EQ(valuesOf(out), (std::vector<double>{2, 2, 3, 3, 4, 4, 2, 2, 3, 3, 4, 4}));
  // An axis of INT64_MAX fails without overflowing axis + rank(B).
  EXPECT_THROW(run("Add", {a, b},
                   test::attrs(Attribute::makeInt("broadcast", 1),
                               Attribute::makeInt("axis", std::numeric_limits<int64_t>::max())),
                   6),
               Error);
}

TEST(Elementwise, SymbolicEqualWhereNeg) {
  test::ModelBuilder b(17);
  Value* s = b.input("s", DataType::kInt64, {2});
  Value* k = b.initializer(test::int64Tensor({2}, {-1, 3}, "k"));
  const SymbolicValue sym = {Dim::symbol("batch"), Dim::known(3)};
  const Type t2 = Type::tensor(DataType::kInt64, kernels::shapeOf({2}));
  const Type tb = Type::tensor(DataType::kBool, kernels::shapeOf({2}));
  const Tensor kv = test::int64Tensor({2}, {-1, 3});

  Node* eq = b.node("Equal", {s, k});
  InferContext ie(*eq, 17, 2, 1);
  ie.input_types = {&t2, &t2};
  ie.input_values = {nullptr, &kv};
  ie.input_symbolic = {&sym, nullptr};
  OpRegistry::instance().find("", "Equal", 17)->infer(ie);
  ASSERT_TRUE(ie.output_values[0].has_value());
  EXPECT_FALSE(ie.output_values[0]->at<bool>(0));
  EXPECT_TRUE(ie.output_values[0]->at<bool>(1));

  Tensor cond(DataType::kBool, {2});
  kernels::mutableDataAs<bool>(cond)[0] = true;
  Value* c = b.initializer([&] {
    Tensor t = cond;
    t.name = "c";
    return t;
  }());
  Node* wh = b.node("Where", {c, s, k});
  InferContext iw(*wh, 17, 3, 1);
  iw.input_types = {&tb, &t2, &t2};
  iw.input_values = {&cond, nullptr, &kv};
  iw.input_symbolic = {nullptr, &sym, nullptr};
  OpRegistry::instance().find("", "Where", 17)->infer(iw);
  ASSERT_TRUE(iw.output_symbolic[0].has_value());
  EXPECT_EQ((*iw.output_symbolic[0])[0].param, "batch");
  EXPECT_EQ((*iw.output_symbolic[0])[1].value, 3);

  Node* ng = b.node("Neg", {s});
  InferContext in(*ng, 17, 1, 1);
  in.input_types = {&t2};
  in.input_values = {nullptr};
  in.input_symbolic = {&sym};
  OpRegistry::instance().find("", "Neg", 17)->infer(in);
  ASSERT_TRUE(in.output_symbolic[0].has_value());
  EXPECT_EQ((*in.output_symbolic[0])[1].value, -3);
}

}  // namespace
}  // namespace onnxfold
