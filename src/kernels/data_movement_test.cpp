// Tests of the data_movement family: the blocked transpose against its scalar
// reference, symbolic Reshape/Concat/Squeeze propagation, Pad modes, uneven
// Split, and validation errors.
#include "kernels/data_movement.h"

#include <gtest/gtest.h>

#include <numeric>

#include "ir/error.h"
#include "kernels/common.h"
#include "kernels/op_registry.h"
#include "test_util.h"

namespace onnxfold {
namespace {

std::vector<Tensor> run(const std::string& op, std::vector<Tensor> ins,
                        std::vector<Attribute> attrs = {}, int64_t opset = 21,
                        size_t num_outputs = 1) {
  return test::runOp(op, std::move(ins), std::move(attrs), opset, num_outputs);
}

constexpr auto floats = &test::floatValues;

Tensor iota(std::vector<int64_t> dims) {
  std::vector<float> v(static_cast<size_t>(kernels::product(dims, 0, dims.size())));
  std::iota(v.begin(), v.end(), 0.0f);
  return test::floatTensor(std::move(dims), v);
}

TEST(DataMovement, BlockedTransposeMatchesScalar) {
  const int64_t shapes[][3] = {{1, 1, 1},  {1, 3, 5},   {1, 32, 32}, {1, 33, 65},
                               {3, 7, 40}, {2, 64, 31}, {1, 1, 100}};
  for (const auto& s : shapes) {
    const int64_t n = s[0] * s[1] * s[2];
    std::vector<uint32_t> in(static_cast<size_t>(n)), a(in.size()), b(in.size());
    std::iota(in.begin(), in.end(), 1u);
    kernels::transpose2DScalar(in.data(), a.data(), s[0], s[1], s[2]);
    kernels::transpose2DBlocked(in.data(), b.data(), s[0], s[1], s[2]);
    EXPECT_EQ(a, b) << s[0] << "x" << s[1] << "x" << s[2];
  }
}

TEST(DataMovement, TransposeGeneralAndFastPathsAgree) {
  const Tensor x = iota({2, 3, 4});
  // [0,2,1] takes the batched 2-D path, [1,0,2] the general one.
  const Tensor a = run("Transpose", {x}, test::attrs(Attribute::makeInts("perm", {0, 2, 1})))[0];
  const Tensor b = run("Transpose", {x}, test::attrs(Attribute::makeInts("perm", {1, 0, 2})))[0];
  EXPECT_EQ(a.dims(), (std::vector<int64_t>{2, 4, 3}));
  EXPECT_EQ(a.at<float>(1), 4.0f);
  EXPECT_EQ(a.at<float>(3), 1.0f);
  EXPECT_EQ(b.dims(), (std::vector<int64_t>{3, 2, 4}));
  EXPECT_EQ(b.at<float>(4), 12.0f);
  EXPECT_THROW(run("Transpose", {x}, test::attrs(Attribute::makeInts("perm", {0, 0, 1}))), Error);
}

InferContext inferWith(test::ModelBuilder& b, const std::string& op, std::vector<Value*> ins,
                       std::vector<const Type*> types, std::vector<const SymbolicValue*> syms,
                       std::vector<Attribute> attrs = {}, int64_t opset = 17) {
  Node* n = b.node(op, ins, 1, std::move(attrs));
  InferContext ic(*n, opset, ins.size(), 1);
  ic.input_types = std::move(types);
  ic.input_symbolic = std::move(syms);
  OpRegistry::instance().find("", op, opset)->infer(ic);
  return ic;
}

TEST(DataMovement, ReshapeInfersMinusOneFromSymbolicCounts) {
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

TEST(DataMovement, ConcatAndUnsqueezeCarryShapeValues) {
  test::ModelBuilder b(17);
  Value* a = b.input("a", DataType::kInt64, {1});
  Value* c = b.input("c", DataType::kInt64, {1});
  const SymbolicValue va = {Dim::symbol("batch")};
  Dim minus_one;
  const SymbolicValue vc = {minus_one};
  InferContext ic = inferWith(b, "Concat", {a, c}, {&a->type, &c->type}, {&va, &vc},
                              test::attrs(Attribute::makeInt("axis", 0)));
  ASSERT_TRUE(ic.output_symbolic[0].has_value());
  const SymbolicValue& v = *ic.output_symbolic[0];
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0].param, "batch");
  EXPECT_EQ(v[1].value, -1);
  EXPECT_EQ(ic.output_types[0].shape->dims[0].value, 2);
  // Scalar -> [1] keeps the value.
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

TEST(DataMovement, PadModes) {
  const Tensor x = test::floatTensor({3}, {1, 2, 3});
  const Tensor pads = test::int64Tensor({2}, {2, 2});
  auto pad = [&](const char* mode) {
    return floats(run("Pad", {x, pads}, test::attrs(Attribute::makeString("mode", mode)))[0]);
  };
  EXPECT_EQ(pad("constant"), (std::vector<float>{0, 0, 1, 2, 3, 0, 0}));
  EXPECT_EQ(pad("reflect"), (std::vector<float>{3, 2, 1, 2, 3, 2, 1}));
  EXPECT_EQ(pad("edge"), (std::vector<float>{1, 1, 1, 2, 3, 3, 3}));
  EXPECT_EQ(pad("wrap"), (std::vector<float>{2, 3, 1, 2, 3, 1, 2}));
  // Negative pads crop.
  EXPECT_EQ(floats(run("Pad", {x, test::int64Tensor({2}, {-1, 0})})[0]),
            (std::vector<float>{2, 3}));
}

TEST(DataMovement, SplitUnevenAtOpset18) {
  const Tensor x = iota({5});
  const std::vector<Tensor> out =
      run("Split", {x}, test::attrs(Attribute::makeInt("num_outputs", 2)), 18, 2);
  EXPECT_EQ(floats(out[0]), (std::vector<float>{0, 1, 2}));
  EXPECT_EQ(floats(out[1]), (std::vector<float>{3, 4}));
  EXPECT_THROW(run("Split", {x}, {}, 13, 2), Error);  // 5 does not divide in 2 before 18
}

TEST(DataMovement, ExpandTileFlattenSqueeze) {
  const Tensor x = test::floatTensor({2, 1}, {1, 2});
  EXPECT_EQ(floats(run("Expand", {x, test::int64Tensor({2}, {2, 3})})[0]),
            (std::vector<float>{1, 1, 1, 2, 2, 2}));
  EXPECT_EQ(floats(run("Tile", {x, test::int64Tensor({2}, {2, 2})})[0]),
            (std::vector<float>{1, 1, 2, 2, 1, 1, 2, 2}));
  EXPECT_EQ(run("Flatten", {iota({2, 3, 4})}, test::attrs(Attribute::makeInt("axis", 2)))[0].dims(),
            (std::vector<int64_t>{6, 4}));
  EXPECT_EQ(run("Squeeze", {x, test::int64Tensor({1}, {-1})})[0].dims(), (std::vector<int64_t>{2}));
  EXPECT_THROW(run("Squeeze", {x, test::int64Tensor({1}, {0})}), Error);
  // Repeats that wrap the output size, or are negative: refused, never a wrong constant.
  EXPECT_THROW(run("Tile", {x, test::int64Tensor({2}, {int64_t{1} << 62, 4})}), Error);
  EXPECT_THROW(run("Tile", {x, test::int64Tensor({2}, {-1, 2})}), Error);
}

// Sizes that wrap int64 are errors, not wrong shapes (or a division by zero).
TEST(DataMovement, HostileSizesAreRefused) {
  const Tensor x = iota({1, 4, 2, 2});
  try {
    run("DepthToSpace", {x}, test::attrs(Attribute::makeInt("blocksize", int64_t{1} << 32)));
    ADD_FAILURE() << "blocksize^2 wrapped to 0 and was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("overflows int64"), std::string::npos) << e.what();
  }
  EXPECT_THROW(run("SpaceToDepth", {x}, test::attrs(Attribute::makeInt("blocksize", 3037000500))),
               Error);
  // -1 next to dims whose product passes int64.
  EXPECT_THROW(run("Reshape", {iota({2, 3}), test::int64Tensor({3}, {-1, int64_t{1} << 62, 4})}),
               Error);
}

}  // namespace
}  // namespace onnxfold
