// Tests of the conv family: XNNPACK convolution against the portable
// im2col + GEMM path on random odd shapes, padding modes and groups, 3-D
// convolution, the checks of bias and kernel_shape, and symbolic shape
// inference.
#include "kernels/conv.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "ir/error.h"
#include "kernels/common.h"
#include "kernels/kernel_test_util.h"
#include "kernels/op_registry.h"
#include "kernels/xnnpack.h"
#include "test_util.h"

namespace onnxfold {
namespace {

constexpr auto floats = &test::floatValues;

// A bias shorter than the output channels would be read past its end; a kernel_shape that
// disagrees with W would compute another conv. Both are refused by the rule.
TEST(Conv, RefusesAShortBiasAndAWrongKernelShape) {
  const Tensor x = test::floatTensor({1, 1, 3, 3}, std::vector<float>(9, 1.0f));
  const Tensor w = test::floatTensor({2, 1, 2, 2}, std::vector<float>(8, 1.0f));
  EXPECT_NO_THROW(test::runOp("Conv", {x, w, test::floatTensor({2}, {1, 2})}, {}, 21, 1));
  EXPECT_THROW(test::runOp("Conv", {x, w, test::floatTensor({1}, {1})}, {}, 21, 1), Error);
  EXPECT_THROW(
      test::runOp("Conv", {x, w}, test::attrs(Attribute::makeInts("kernel_shape", {3, 3})), 21, 1),
      Error);
}

TEST(Conv, XnnpackMatchesPortable) {
  if (!xnn::available()) GTEST_SKIP() << "XNNPACK is not compiled in (wasm) or not initialized";
  std::mt19937 rng(4);
  std::uniform_int_distribution<int64_t> small(1, 3), size(1, 13), chans(1, 5);
  for (int iter = 0; iter < 80; ++iter) {
    const bool one_d = iter % 5 == 0;
    const size_t nd = one_d ? 1 : 2;
    const int64_t group = small(rng);
    const int64_t cg = chans(rng), mg = chans(rng);
    const int64_t batch = small(rng);
    std::vector<int64_t> in, kernel, strides, dil, pb, pe;
    bool ok = true;
    for (size_t d = 0; d < nd; ++d) {
      kernel.push_back(small(rng));
      strides.push_back(small(rng));
      dil.push_back(small(rng));
      pb.push_back(small(rng) - 1);
      pe.push_back(small(rng) - 1);
      in.push_back(size(rng));
      if (in[d] + pb[d] + pe[d] < (kernel[d] - 1) * dil[d] + 1) ok = false;
    }
    if (!ok) continue;
    int64_t osize = 1, isize = 1, ksize = 1;
    for (size_t d = 0; d < nd; ++d) {
      osize *= (in[d] + pb[d] + pe[d] - (kernel[d] - 1) * dil[d] - 1) / strides[d] + 1;
      isize *= in[d];
      ksize *= kernel[d];
    }
    const int64_t c = cg * group, m = mg * group;
    const auto x = test::randomFloats(rng, static_cast<size_t>(batch * c * isize));
    const auto w = test::randomFloats(rng, static_cast<size_t>(m * cg * ksize));
    const auto bias = test::randomFloats(rng, static_cast<size_t>(m));
    std::vector<float> ref(static_cast<size_t>(batch * m * osize)), got(ref.size());
    ASSERT_TRUE(kernels::convF32ForTest(x.data(), w.data(), bias.data(), ref.data(), batch, c, m,
                                        group, in, kernel, strides, dil, pb, pe, false));
    ASSERT_TRUE(kernels::convF32ForTest(x.data(), w.data(), bias.data(), got.data(), batch, c, m,
                                        group, in, kernel, strides, dil, pb, pe, true));
    test::expectClose(got, ref, 1e-4f, "conv iter " + std::to_string(iter));
  }
}

TEST(Conv, PaddingModesAndGroups) {
  // 1x1x3x3 ones conv with a 1x1x2x2 ones kernel.
  const Tensor x = test::floatTensor({1, 2, 3, 3}, std::vector<float>(18, 1.0f));
  const Tensor w = test::floatTensor({2, 1, 2, 2}, std::vector<float>(8, 1.0f));
  const Tensor same = test::runOp(
      "Conv", {x, w},
      test::attrs(Attribute::makeString("auto_pad", "SAME_UPPER"), Attribute::makeInt("group", 2)),
      11, 1)[0];
  EXPECT_EQ(same.dims(), (std::vector<int64_t>{1, 2, 3, 3}));
  // SAME_UPPER puts the extra padding at the end: corners [4,2;2,1] pattern.
  EXPECT_EQ(floats(same)[0], 4.0f);
  EXPECT_EQ(floats(same)[8], 1.0f);
  const Tensor lower = test::runOp(
      "Conv", {x, w},
      test::attrs(Attribute::makeString("auto_pad", "SAME_LOWER"), Attribute::makeInt("group", 2)),
      11, 1)[0];
  EXPECT_EQ(floats(lower)[0], 1.0f);
  EXPECT_EQ(floats(lower)[8], 4.0f);
  // 3-D conv through im2col, double type.
  Tensor xd(DataType::kDouble, {1, 1, 2, 2, 2});
  Tensor wd(DataType::kDouble, {1, 1, 2, 2, 2});
  for (int i = 0; i < 8; ++i) {
    kernels::mutableDataAs<double>(xd)[i] = i;
    kernels::mutableDataAs<double>(wd)[i] = 1;
  }
  const Tensor yd = test::runOp("Conv", {xd, wd}, {}, 11, 1)[0];
  EXPECT_EQ(yd.dims(), (std::vector<int64_t>{1, 1, 1, 1, 1}));
  EXPECT_EQ(yd.at<double>(0), 28.0);
}

TEST(Conv, SymbolicShapeInference) {
  test::ModelBuilder b(17);
  Value* x = b.input("x", DataType::kFloat, {-1, 3, 224, 224});
  Value* w = b.input("w", DataType::kFloat, {8, 3, 3, 3});
  const std::string batch = x->type.shape->dims[0].param;
  Node* conv = b.node("Conv", {x, w}, 1,
                      test::attrs(Attribute::makeInts("strides", {2, 2}),
                                  Attribute::makeInts("pads", {1, 1, 1, 1})));
  InferContext ic(*conv, 17, 2, 1);
  ic.input_types = {&x->type, &w->type};
  OpRegistry::instance().find("", "Conv", 17)->infer(ic);
  const Shape& s = *ic.output_types[0].shape;
  ASSERT_EQ(s.rank(), 4u);
  EXPECT_EQ(s.dims[0].param, batch);
  EXPECT_EQ(s.dims[1].value, 8);
  EXPECT_EQ(s.dims[2].value, 112);
}

}  // namespace
}  // namespace onnxfold
