// Tests of the reshape family: -1 inferred from symbolic element counts,
// shape values carried through Unsqueeze, Flatten/Squeeze shapes, and sizes
// that wrap int64.
#include <gtest/gtest.h>

#include "ir/error.h"
#include "kernels/kernel_test_util.h"
#include "kernels/op_registry.h"
#include "test_util.h"

namespace onnxfold {
namespace {

const test::OpRunner run{21};

using test::inferWith;
using test::iota;

TEST(Reshape, InfersMinusOneFromSymbolicCounts) {
  test::ModelBuilder b(17);
  Value* x = b.input("x", DataType::kFloat, {-1, 256});
  Value* s = b.input("s", DataType::kInt64, {3});
  const std::string batch = x->type.shape->dims[0].param;
  Dim minus_one;  // a literal -1 entry of a shape value
  const SymbolicValue target = {Dim::symbol(batch), minus_one, Dim::known(64)};
  InferContext ic = inferWith(b, "Reshape", {x, s}, {&x->type, &s->type}, {nullptr, &target});
  const Shape& out = *ic.output_types[0].shape;
  ASSERT_EQ(out.rank(), 3u);
  EXPECT_EQ(out.dims[0].param, batch);
  EXPECT_EQ(out.dims[1].value, 4);
  EXPECT_EQ(out.dims[2].value, 64);
  // Static: 0 copies, -1 infers; a mismatch is an error.
  const Tensor t = iota({2, 3, 4});
  EXPECT_EQ(run("Reshape", {t, test::int64Tensor({2}, {0, -1})})[0].dims(),
            (std::vector<int64_t>{2, 12}));
  EXPECT_EQ(run("Reshape", {iota({0, 3}), test::int64Tensor({2}, {3, 0})},
                test::attrs(Attribute::makeInt("allowzero", 1)))[0]
                .dims(),
            (std::vector<int64_t>{3, 0}));
  EXPECT_THROW(run("Reshape", {t, test::int64Tensor({2}, {5, -1})}), Error);
  EXPECT_THROW(run("Reshape", {t, test::int64Tensor({2}, {-1, -1})}), Error);
}

TEST(Reshape, UnsqueezeCarriesShapeValues) {
  test::ModelBuilder b(17);
  const SymbolicValue va = {Dim::symbol("batch")};
  Value* sc = b.input("sc", DataType::kInt64, {});
  Value* axes = b.input("axes", DataType::kInt64, {1});
  const Tensor axes_v = test::int64Tensor({1}, {0});
  Node* n = b.node("Unsqueeze", {sc, axes});
  InferContext u(*n, 17, 2, 1);
  u.input_types = {&sc->type, &axes->type};
  u.input_values = {nullptr, &axes_v};
  u.input_symbolic = {&va, nullptr};
  OpRegistry::instance().find("", "Unsqueeze", 17)->infer(u);
  ASSERT_TRUE(u.output_symbolic[0].has_value());
  EXPECT_EQ((*u.output_symbolic[0])[0].param, "batch");
  EXPECT_EQ(u.output_types[0].shape->dims[0].value, 1);
}

TEST(Reshape, FlattenSqueeze) {
  const Tensor x = test::floatTensor({2, 1}, {1, 2});
  EXPECT_EQ(run("Flatten", {iota({2, 3, 4})}, test::attrs(Attribute::makeInt("axis", 2)))[0].dims(),
            (std::vector<int64_t>{6, 4}));
  EXPECT_EQ(run("Squeeze", {x, test::int64Tensor({1}, {-1})})[0].dims(), (std::vector<int64_t>{2}));
  EXPECT_THROW(run("Squeeze", {x, test::int64Tensor({1}, {0})}), Error);
}

// Sizes that wrap int64 are errors, not wrong shapes.
TEST(Reshape, HostileSizesAreRefused) {
  // -1 next to dims whose product passes int64.
  EXPECT_THROW(run("Reshape", {iota({2, 3}), test::int64Tensor({3}, {-1, int64_t{1} << 62, 4})}),
               Error);
}

}  // namespace
}  // namespace onnxfold
