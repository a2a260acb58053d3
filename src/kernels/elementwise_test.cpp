// Tests of the elementwise family: the Highway kernels against their scalar
// references (sizes below, at and above the vector width, in place), integer
// semantics (division, modulo, overflow), broadcasting shapes, strings,
// Clip/Dropout versions and shape arithmetic on symbolic values.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "ir/error.h"
#include "kernels/common.h"
#include "kernels/elementwise_hwy.h"
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
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> u(-20.0f, 20.0f);
  std::vector<float> v(n);
  for (float& x : v)
    x = u(g);
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

Tensor tensorOf(DataType dt, std::vector<int64_t> dims, const std::vector<double>& values) {
  Tensor t(dt, std::move(dims));
  kernels::dispatchNumeric(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = kernels::mutableDataAs<T>(t);
    for (size_t i = 0; i < values.size(); ++i)
      p[i] = kernels::fromDouble<T>(values[i]);
  });
  return t;
}

std::vector<double> valuesOf(const Tensor& t) {
  std::vector<double> v;
  kernels::dispatchNumeric(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (int64_t i = 0; i < t.numElements(); ++i)
      v.push_back(kernels::toDouble(t.at<T>(static_cast<size_t>(i))));
  });
  return v;
}

std::vector<Tensor> run(const std::string& op, std::vector<Tensor> ins,
                        std::vector<Attribute> attrs = {}, int64_t opset = 17,
                        size_t num_outputs = 1) {
  return test::runOp(op, std::move(ins), std::move(attrs), opset, num_outputs);
}

TEST(Elementwise, IntegerDivTruncatesAndModFollowsDivisor) {
  const Tensor a = tensorOf(DataType::kInt32, {4}, {7, -7, 7, -7});
  const Tensor b = tensorOf(DataType::kInt32, {4}, {2, 2, -2, -2});
  EXPECT_EQ(valuesOf(run("Div", {a, b})[0]), (std::vector<double>{3, -3, -3, 3}));
  EXPECT_EQ(valuesOf(run("Mod", {a, b})[0]), (std::vector<double>{1, 1, -1, -1}));
  EXPECT_EQ(valuesOf(run("Mod", {a, b}, test::attrs(Attribute::makeInt("fmod", 1)))[0]),
            (std::vector<double>{1, -1, 1, -1}));
  const Tensor z = tensorOf(DataType::kInt32, {4}, {1, 0, 1, 1});
  EXPECT_THROW(run("Div", {a, z}), Error);
}

TEST(Elementwise, IntegerOverflowWraps) {
  const Tensor a = tensorOf(DataType::kInt8, {2}, {127, -128});
  const Tensor b = tensorOf(DataType::kInt8, {2}, {1, -1});
  EXPECT_EQ(valuesOf(run("Add", {a, b})[0]), (std::vector<double>{-128, 127}));
  EXPECT_EQ(valuesOf(run("Div", {a, b})[0]), (std::vector<double>{127, -128}));
  const Tensor u = tensorOf(DataType::kUint16, {1}, {65535});
  EXPECT_EQ(valuesOf(run("Mul", {u, u})[0]), (std::vector<double>{1}));
}

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
}

TEST(Elementwise, WhereStringsAndVariadic) {
  Tensor c = tensorOf(DataType::kBool, {2}, {1, 0});
  Tensor x(DataType::kString, {2});
  x.mutableStrings() = {"a", "b"};
  Tensor y(DataType::kString, {1});
  y.mutableStrings() = {"z"};
  const Tensor w = run("Where", {c, x, y})[0];
  EXPECT_EQ(w.strings(), (std::vector<std::string>{"a", "z"}));
  EXPECT_EQ(valuesOf(run("Equal", {x, y}, {}, 19)[0]), (std::vector<double>{0, 0}));

  const Tensor p = tensorOf(DataType::kFloat, {3}, {1, 5, std::nan("")});
  const Tensor q = tensorOf(DataType::kFloat, {1}, {3});
  const std::vector<double> mx = valuesOf(run("Max", {p, q})[0]);
  EXPECT_EQ(mx[0], 3);
  EXPECT_EQ(mx[1], 5);
  EXPECT_TRUE(std::isnan(mx[2]));
  EXPECT_EQ(valuesOf(run("Mean", {q, tensorOf(DataType::kFloat, {2}, {1, 5})})[0]),
            (std::vector<double>{2, 4}));
  EXPECT_EQ(valuesOf(run("Sum", {q, q, q})[0]), (std::vector<double>{9}));
}

TEST(Elementwise, ClipVersionsAndDropout) {
  const Tensor x = tensorOf(DataType::kInt8, {4}, {-100, -1, 5, 100});
  const Tensor lo = tensorOf(DataType::kInt8, {}, {-5});
  EXPECT_EQ(valuesOf(run("Clip", {x, lo})[0]), (std::vector<double>{-5, -1, 5, 100}));
  const Tensor xf = tensorOf(DataType::kFloat, {3}, {-2, 0.5, 2});
  EXPECT_EQ(
      valuesOf(run("Clip", {xf},
                   test::attrs(Attribute::makeFloat("min", -1), Attribute::makeFloat("max", 1)),
                   6)[0]),
      (std::vector<double>{-1, 0.5, 1}));

  const std::vector<Tensor> d = run("Dropout", {xf}, {}, 13, 2);
  EXPECT_EQ(valuesOf(d[0]), valuesOf(xf));
  EXPECT_EQ(d[1].dtype(), DataType::kBool);
  EXPECT_EQ(valuesOf(d[1]), (std::vector<double>{1, 1, 1}));
  const Tensor ratio = tensorOf(DataType::kFloat, {}, {0.5});
  const Tensor yes = tensorOf(DataType::kBool, {}, {1});
  EXPECT_THROW(run("Dropout", {xf, ratio, yes}, {}, 13), Error);
}

TEST(Elementwise, PowMixedTypesAndRound) {
  const Tensor b = tensorOf(DataType::kInt64, {3}, {2, -3, 5});
  const Tensor e = tensorOf(DataType::kFloat, {3}, {3, 2, 0.5});
  EXPECT_EQ(valuesOf(run("Pow", {b, e})[0]), (std::vector<double>{8, 9, 2}));
  // Integer powers are exact (3^39 is not representable as a double).
  const Tensor ei = tensorOf(DataType::kInt32, {1}, {39});
  const Tensor p = run("Pow", {tensorOf(DataType::kInt64, {1}, {3}), ei})[0];
  EXPECT_EQ(p.at<int64_t>(0), int64_t{4052555153018976267});
  const Tensor r = tensorOf(DataType::kFloat, {6}, {0.5, 1.5, 2.5, -0.5, -1.5, 2.4});
  EXPECT_EQ(valuesOf(run("Round", {r})[0]), (std::vector<double>{0, 2, 2, -0, -2, 2}));
}

TEST(Elementwise, SymbolicShapeArithmetic) {
  test::ModelBuilder b(17);
  Value* s = b.input("s", DataType::kInt64, {2});
  Value* one = b.initializer(test::int64Tensor({1}, {1}, "one"));
  Value* two = b.initializer(test::int64Tensor({2}, {2, 4}, "two"));
  auto infer = [&](const std::string& op, Value* rhs, const Tensor& rhs_value) {
    Node* n = b.node(op, {s, rhs});
    InferContext ic(*n, 17, 2, 1);
    const Type ts = Type::tensor(DataType::kInt64, kernels::shapeOf({2}));
    const Type tr = Type::tensor(DataType::kInt64, kernels::shapeOf(rhs_value.dims()));
    const SymbolicValue sym = {Dim::symbol("batch"), Dim::known(3)};
    ic.input_types = {&ts, &tr};
    ic.input_values = {nullptr, &rhs_value};
    ic.input_symbolic = {&sym, nullptr};
    OpRegistry::instance().find("", op, 17)->infer(ic);
    return ic;
  };
  const Tensor v1 = test::int64Tensor({1}, {1});
  const Tensor v24 = test::int64Tensor({2}, {2, 4});
  InferContext mul = infer("Mul", one, v1);
  ASSERT_TRUE(mul.output_symbolic[0].has_value());
  EXPECT_EQ((*mul.output_symbolic[0])[0].param, "batch");
  EXPECT_EQ((*mul.output_symbolic[0])[1].value, 3);
  InferContext add = infer("Add", two, v24);
  ASSERT_TRUE(add.output_symbolic[0].has_value());
  EXPECT_FALSE((*add.output_symbolic[0])[0].isKnown());
  EXPECT_EQ((*add.output_symbolic[0])[0].param, "");
  EXPECT_EQ((*add.output_symbolic[0])[1].value, 7);
  ASSERT_TRUE(add.output_types[0].shape.has_value());
  EXPECT_EQ(add.output_types[0].shape->dims[0].value, 2);
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

TEST(Elementwise, Float8IsNanIsInf) {
  Tensor x(DataType::kFloat8E5M2, {4});
  const uint8_t bits[4] = {0x7c, 0xfc, 0x7e, 0x3c};  // +inf, -inf, NaN, 1.0
  std::memcpy(x.mutableBytes(), bits, 4);
  EXPECT_EQ(valuesOf(run("IsInf", {x}, {}, 20)[0]), (std::vector<double>{1, 1, 0, 0}));
  EXPECT_EQ(valuesOf(run("IsNaN", {x}, {}, 20)[0]), (std::vector<double>{0, 0, 1, 0}));
  EXPECT_EQ(
      valuesOf(run("IsInf", {x}, test::attrs(Attribute::makeInt("detect_negative", 0)), 20)[0]),
      (std::vector<double>{1, 0, 0, 0}));
}

}  // namespace
}  // namespace onnxfold
