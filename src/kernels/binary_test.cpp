// Tests of the binary ops: integer semantics (division, modulo, overflow),
// string Equal, the variadic ops (NaN propagation, Mean), Pow on mixed types,
// and shape arithmetic on symbolic values.
#include <gtest/gtest.h>

#include <cmath>

#include "ir/error.h"
#include "kernels/kernel_test_util.h"
#include "kernels/op_registry.h"
#include "test_util.h"

namespace onnxfold {
namespace {

const test::OpRunner run{17};

using test::tensorOf;
using test::valuesOf;

TEST(Binary, IntegerDivTruncatesAndModFollowsDivisor) {
  const Tensor a = tensorOf(DataType::kInt32, {4}, {7, -7, 7, -7});
  const Tensor b = tensorOf(DataType::kInt32, {4}, {2, 2, -2, -2});
  EXPECT_EQ(valuesOf(run("Div", {a, b})[0]), (std::vector<double>{3, -3, -3, 3}));
  EXPECT_EQ(valuesOf(run("Mod", {a, b})[0]), (std::vector<double>{1, 1, -1, -1}));
  EXPECT_EQ(valuesOf(run("Mod", {a, b}, test::attrs(Attribute::makeInt("fmod", 1)))[0]),
            (std::vector<double>{1, -1, 1, -1}));
  const Tensor z = tensorOf(DataType::kInt32, {4}, {1, 0, 1, 1});
  EXPECT_THROW(run("Div", {a, z}), Error);
}

TEST(Binary, IntegerOverflowWraps) {
  const Tensor a = tensorOf(DataType::kInt8, {2}, {127, -128});
  const Tensor b = tensorOf(DataType::kInt8, {2}, {1, -1});
  EXPECT_EQ(valuesOf(run("Add", {a, b})[0]), (std::vector<double>{-128, 127}));
  EXPECT_EQ(valuesOf(run("Div", {a, b})[0]), (std::vector<double>{127, -128}));
  const Tensor u = tensorOf(DataType::kUint16, {1}, {65535});
  EXPECT_EQ(valuesOf(run("Mul", {u, u})[0]), (std::vector<double>{1}));
}

TEST(Binary, EqualStringsAndVariadic) {
  Tensor x(DataType::kString, {2});
  x.mutableStrings() = {"a", "b"};
  Tensor y(DataType::kString, {1});
  y.mutableStrings() = {"z"};
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

TEST(Binary, PowMixedTypes) {
  const Tensor b = tensorOf(DataType::kInt64, {3}, {2, -3, 5});
  const Tensor e = tensorOf(DataType::kFloat, {3}, {3, 2, 0.5});
  EXPECT_EQ(valuesOf(run("Pow", {b, e})[0]), (std::vector<double>{8, 9, 2}));
  // Integer powers are exact (3^39 is not representable as a double).
  const Tensor ei = tensorOf(DataType::kInt32, {1}, {39});
  const Tensor p = run("Pow", {tensorOf(DataType::kInt64, {1}, {3}), ei})[0];
  EXPECT_EQ(p.at<int64_t>(0), int64_t{4052555153018976267});
}

TEST(Binary, SymbolicShapeArithmetic) {
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
  // batch + 2 is unknown, and gets a symbol of its own: unnamed it would read as the value -1.
  EXPECT_FALSE((*add.output_symbolic[0])[0].param.empty());
  EXPECT_NE((*add.output_symbolic[0])[0].param, "batch");
  EXPECT_EQ((*add.output_symbolic[0])[1].value, 7);
  ASSERT_TRUE(add.output_types[0].shape.has_value());
  EXPECT_EQ(add.output_types[0].shape->dims[0].value, 2);
}

}  // namespace
}  // namespace onnxfold
