// Tests of the matmul family: the Highway GEMM against its scalar reference
// (sizes below, at and above the vector width and the K block), XNNPACK
// fully-connected and convolution against the portable kernels on random odd
// shapes, MatMul/Gemm/Conv/pool semantics and symbolic shape inference.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "ir/error.h"
#include "kernels/common.h"
#include "kernels/op_registry.h"
#include "kernels/xnnpack.h"
#include "test_util.h"

namespace onnxfold {
namespace kernels {
// Defined in matmul.cpp.
void gemmF32Scalar(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
                   int64_t ldb, float* c, int64_t ldc);
void gemmF32(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
             int64_t ldb, float* c, int64_t ldc);
bool convF32ForTest(const float* x, const float* w, const float* bias, float* y, int64_t batch,
                    int64_t channels, int64_t out_channels, int64_t group,
                    const std::vector<int64_t>& in, const std::vector<int64_t>& kernel,
                    const std::vector<int64_t>& strides, const std::vector<int64_t>& dilations,
                    const std::vector<int64_t>& pad_b, const std::vector<int64_t>& pad_e,
                    bool use_xnnpack);
}  // namespace kernels

namespace {

std::vector<float> randomFloats(std::mt19937& rng, size_t n) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& f : v)
    f = dist(rng);
  return v;
}

void expectClose(const std::vector<float>& got, const std::vector<float>& want, float tol,
                 const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], tol * (1.0f + std::fabs(want[i]))) << what << " at " << i;
  }
}

std::vector<Tensor> run(const std::string& op, std::vector<Tensor> ins,
                        std::vector<Attribute> attrs = {}, int64_t opset = 21,
                        size_t num_outputs = 1) {
  return test::runOp(op, std::move(ins), std::move(attrs), opset, num_outputs);
}

constexpr auto floats = &test::floatValues;

// A bias shorter than the output channels would be read past its end; a kernel_shape that
// disagrees with W would compute another conv. Both are refused by the rule.
TEST(Matmul, ConvRefusesAShortBiasAndAWrongKernelShape) {
  const Tensor x = test::floatTensor({1, 1, 3, 3}, std::vector<float>(9, 1.0f));
  const Tensor w = test::floatTensor({2, 1, 2, 2}, std::vector<float>(8, 1.0f));
  EXPECT_NO_THROW(run("Conv", {x, w, test::floatTensor({2}, {1, 2})}));
  EXPECT_THROW(run("Conv", {x, w, test::floatTensor({1}, {1})}), Error);
  EXPECT_THROW(run("Conv", {x, w}, test::attrs(Attribute::makeInts("kernel_shape", {3, 3}))),
               Error);
}

// ConvTranspose reads W by kernel_shape too: a larger one would read past W's end.
TEST(Matmul, ConvTransposeRefusesAKernelShapeThatDisagreesWithW) {
  const Tensor x = test::floatTensor({1, 1, 3, 3}, std::vector<float>(9, 1.0f));
  const Tensor w = test::floatTensor({1, 2, 2, 2}, std::vector<float>(8, 1.0f));
  EXPECT_NO_THROW(
      run("ConvTranspose", {x, w}, test::attrs(Attribute::makeInts("kernel_shape", {2, 2}))));
  EXPECT_THROW(
      run("ConvTranspose", {x, w}, test::attrs(Attribute::makeInts("kernel_shape", {3, 3}))),
      Error);
}

TEST(Matmul, HighwayGemmMatchesScalar) {
  std::mt19937 rng(1);
  // Below, at and above the vector width (4/8/16 lanes), the 3-vector tile,
  // the 4-row tile and the 256 K block.
  const int64_t sizes[] = {1, 2, 3, 4, 5, 7, 8, 9, 12, 15, 16, 17, 24, 25, 33, 49};
  for (int64_t m : {1, 3, 4, 5, 9}) {
    for (int64_t n : sizes) {
      for (int64_t k : {1, 2, 7, 16, 31, 257, 600}) {
        const auto a = randomFloats(rng, static_cast<size_t>(m * k));
        const auto b = randomFloats(rng, static_cast<size_t>(k * n));
        std::vector<float> c1(static_cast<size_t>(m * n), 7.0f), c2(c1);
        kernels::gemmF32Scalar(m, n, k, a.data(), k, b.data(), n, c1.data(), n);
        kernels::gemmF32(m, n, k, a.data(), k, b.data(), n, c2.data(), n);
        expectClose(c2, c1, 1e-4f,
                    std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k));
      }
    }
  }
}

TEST(Matmul, HighwayGemmHonoursLeadingDimensions) {
  std::mt19937 rng(2);
  const int64_t m = 5, n = 11, k = 9, lda = 13, ldb = 17, ldc = 19;
  const auto a = randomFloats(rng, static_cast<size_t>(m * lda));
  const auto b = randomFloats(rng, static_cast<size_t>(k * ldb));
  std::vector<float> c1(static_cast<size_t>(m * ldc), 3.0f), c2(c1);
  kernels::gemmF32Scalar(m, n, k, a.data(), lda, b.data(), ldb, c1.data(), ldc);
  kernels::gemmF32(m, n, k, a.data(), lda, b.data(), ldb, c2.data(), ldc);
  expectClose(c2, c1, 1e-4f, "strided");
  // Columns past N are untouched.
  EXPECT_EQ(c2[n], 3.0f);
}

TEST(Matmul, XnnpackFullyConnectedMatchesPortable) {
  if (!xnn::available()) GTEST_SKIP() << "XNNPACK is not compiled in (wasm) or not initialized";
  std::mt19937 rng(3);
  std::uniform_int_distribution<int64_t> dim(1, 70);
  for (int iter = 0; iter < 60; ++iter) {
    const int64_t m = dim(rng), n = dim(rng), k = dim(rng);
    const auto a = randomFloats(rng, static_cast<size_t>(m * k));
    const auto w = randomFloats(rng, static_cast<size_t>(k * n));
    const auto bias = randomFloats(rng, static_cast<size_t>(n));
    std::vector<float> ref(static_cast<size_t>(m * n)), got(ref.size());
    kernels::gemmF32(m, n, k, a.data(), k, w.data(), n, ref.data(), n);
    // Weights [K, N] (MatMul).
    ASSERT_TRUE(xnn::fullyConnectedF32(m, k, n, a.data(), w.data(), true, nullptr, got.data()));
    expectClose(got, ref, 1e-4f, "kn " + std::to_string(m) + "x" + std::to_string(n));
    // Weights [N, K] (Gemm transB) plus bias.
    std::vector<float> wt(w.size());
    for (int64_t p = 0; p < k; ++p)
      for (int64_t j = 0; j < n; ++j)
        wt[j * k + p] = w[p * n + j];
    ASSERT_TRUE(
        xnn::fullyConnectedF32(m, k, n, a.data(), wt.data(), false, bias.data(), got.data()));
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j)
        ref[i * n + j] += bias[j];
    expectClose(got, ref, 1e-4f, "nk+bias " + std::to_string(m) + "x" + std::to_string(n));
  }
}

TEST(Matmul, XnnpackConvMatchesPortable) {
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
    const auto x = randomFloats(rng, static_cast<size_t>(batch * c * isize));
    const auto w = randomFloats(rng, static_cast<size_t>(m * cg * ksize));
    const auto bias = randomFloats(rng, static_cast<size_t>(m));
    std::vector<float> ref(static_cast<size_t>(batch * m * osize)), got(ref.size());
    ASSERT_TRUE(kernels::convF32ForTest(x.data(), w.data(), bias.data(), ref.data(), batch, c, m,
                                        group, in, kernel, strides, dil, pb, pe, false));
    ASSERT_TRUE(kernels::convF32ForTest(x.data(), w.data(), bias.data(), got.data(), batch, c, m,
                                        group, in, kernel, strides, dil, pb, pe, true));
    expectClose(got, ref, 1e-4f, "conv iter " + std::to_string(iter));
  }
}

TEST(Matmul, MatMulBroadcastsAndPromotes) {
  // [2,1,2,3] x [3,2] -> [2,1,2,2]; 1-D x 1-D -> scalar; 1-D x 3-D.
  std::vector<float> av(12), bv(6);
  for (size_t i = 0; i < av.size(); ++i)
    av[i] = static_cast<float>(i);
  for (size_t i = 0; i < bv.size(); ++i)
    bv[i] = static_cast<float>(i) - 2;
  const Tensor a = test::floatTensor({2, 1, 2, 3}, av);
  const Tensor b = test::floatTensor({3, 2}, bv);
  const Tensor y = run("MatMul", {a, b}, {}, 13)[0];
  EXPECT_EQ(y.dims(), (std::vector<int64_t>{2, 1, 2, 2}));
  // Row [0,1,2] x [[-2,-1],[0,1],[2,3]] = [4, 7].
  EXPECT_EQ(floats(y)[0], 4.0f);
  EXPECT_EQ(floats(y)[1], 7.0f);
  const Tensor v = test::floatTensor({3}, {1, 2, 3});
  const Tensor s = run("MatMul", {v, v}, {}, 13)[0];
  EXPECT_TRUE(s.dims().empty());
  EXPECT_EQ(s.at<float>(0), 14.0f);
  const Tensor b3 = test::floatTensor({2, 3, 1}, {1, 0, 0, 0, 0, 1});
  const Tensor vy = run("MatMul", {v, b3}, {}, 13)[0];
  EXPECT_EQ(vy.dims(), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(floats(vy), (std::vector<float>{1, 3}));
  // Integer MatMul and an inner-dimension mismatch.
  const Tensor ia = test::int64Tensor({2, 2}, {1, 2, 3, 4});
  const Tensor iy = run("MatMul", {ia, ia}, {}, 13)[0];
  EXPECT_EQ(iy.at<int64_t>(0), 7);
  EXPECT_EQ(iy.at<int64_t>(3), 22);
  EXPECT_THROW(run("MatMul", {a, a}, {}, 13), Error);
}

TEST(Matmul, GemmAttributesAndBias) {
  const Tensor a = test::floatTensor({3, 2}, {1, 2, 3, 4, 5, 6});  // A^T is [2,3]
  const Tensor b = test::floatTensor({4, 3}, std::vector<float>(12, 1.0f));
  const Tensor c = test::floatTensor({4}, {1, 2, 3, 4});
  const Tensor y =
      run("Gemm", {a, b, c},
          test::attrs(Attribute::makeInt("transA", 1), Attribute::makeInt("transB", 1),
                      Attribute::makeFloat("alpha", 2.0f), Attribute::makeFloat("beta", 0.5f)),
          13)[0];
  EXPECT_EQ(y.dims(), (std::vector<int64_t>{2, 4}));
  // Row 0 of A^T is [1,3,5]: 2*9 + 0.5*c.
  EXPECT_EQ(floats(y), (std::vector<float>{18.5f, 19, 19.5f, 20, 24.5f, 25, 25.5f, 26}));
  // No C.
  const Tensor y2 = run("Gemm", {a, test::floatTensor({2, 1}, {1, 1})}, {}, 13)[0];
  EXPECT_EQ(floats(y2), (std::vector<float>{3, 7, 11}));
}

TEST(Matmul, ConvPaddingModesAndGroups) {
  // 1x1x3x3 ones conv with a 1x1x2x2 ones kernel.
  const Tensor x = test::floatTensor({1, 2, 3, 3}, std::vector<float>(18, 1.0f));
  const Tensor w = test::floatTensor({2, 1, 2, 2}, std::vector<float>(8, 1.0f));
  const Tensor same = run(
      "Conv", {x, w},
      test::attrs(Attribute::makeString("auto_pad", "SAME_UPPER"), Attribute::makeInt("group", 2)),
      11)[0];
  EXPECT_EQ(same.dims(), (std::vector<int64_t>{1, 2, 3, 3}));
  // SAME_UPPER puts the extra padding at the end: corners [4,2;2,1] pattern.
  EXPECT_EQ(floats(same)[0], 4.0f);
  EXPECT_EQ(floats(same)[8], 1.0f);
  const Tensor lower = run(
      "Conv", {x, w},
      test::attrs(Attribute::makeString("auto_pad", "SAME_LOWER"), Attribute::makeInt("group", 2)),
      11)[0];
  EXPECT_EQ(floats(lower)[0], 1.0f);
  EXPECT_EQ(floats(lower)[8], 4.0f);
  // 3-D conv through im2col, double type.
  Tensor xd(DataType::kDouble, {1, 1, 2, 2, 2});
  Tensor wd(DataType::kDouble, {1, 1, 2, 2, 2});
  for (int i = 0; i < 8; ++i) {
    kernels::mutableDataAs<double>(xd)[i] = i;
    kernels::mutableDataAs<double>(wd)[i] = 1;
  }
  const Tensor yd = run("Conv", {xd, wd}, {}, 11)[0];
  EXPECT_EQ(yd.dims(), (std::vector<int64_t>{1, 1, 1, 1, 1}));
  EXPECT_EQ(yd.at<double>(0), 28.0);
}

TEST(Matmul, MaxPoolIndicesAndAveragePoolPadding) {
  const Tensor x = test::floatTensor({1, 1, 2, 3}, {1, 6, 3, 4, 5, 2});
  const auto r = run("MaxPool", {x},
                     test::attrs(Attribute::makeInts("kernel_shape", {2, 2}),
                                 Attribute::makeInt("storage_order", 1)),
                     12, 2);
  EXPECT_EQ(floats(r[0]), (std::vector<float>{6, 6}));
  // 6 is at (0,1): column-major index 1*2 + 0 = 2.
  EXPECT_EQ(r[1].at<int64_t>(0), 2);
  const auto avg = [&](int include) {
    return floats(run("AveragePool", {x},
                      test::attrs(Attribute::makeInts("kernel_shape", {2, 2}),
                                  Attribute::makeInts("pads", {1, 1, 0, 0}),
                                  Attribute::makeInt("count_include_pad", include)),
                      19)[0]);
  };
  EXPECT_EQ(avg(0)[0], 1.0f);
  EXPECT_EQ(avg(1)[0], 0.25f);
}

TEST(Matmul, EinsumGeneral) {
  const Tensor a = test::floatTensor({2, 3}, {1, 2, 3, 4, 5, 6});
  // Transpose (implicit output), trace-like diagonal, ellipsis batch matmul.
  const Tensor t = run("Einsum", {a}, test::attrs(Attribute::makeString("equation", "ji")), 12)[0];
  // Implicit output "ij": a is indexed [j][i], so the result is a^T.
  EXPECT_EQ(t.dims(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(floats(t), (std::vector<float>{1, 4, 2, 5, 3, 6}));
  const Tensor s =
      run("Einsum", {a, a}, test::attrs(Attribute::makeString("equation", "ij,ij->")), 12)[0];
  EXPECT_EQ(s.at<float>(0), 91.0f);
  const Tensor sq = test::floatTensor({2, 2}, {1, 2, 3, 4});
  const Tensor d =
      run("Einsum", {sq}, test::attrs(Attribute::makeString("equation", "ii->i")), 12)[0];
  EXPECT_EQ(floats(d), (std::vector<float>{1, 4}));
  const Tensor bm = run("Einsum", {a, test::floatTensor({3, 1}, {1, 1, 1})},
                        test::attrs(Attribute::makeString("equation", "...ij,jk->...ik")), 12)[0];
  EXPECT_EQ(floats(bm), (std::vector<float>{6, 15}));
}

TEST(Matmul, SymbolicShapeInference) {
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

  Value* a = b.input("a", DataType::kFloat, {-1, 5, 7});
  Value* m = b.input("m", DataType::kFloat, {7, 4});
  Node* mm = b.node("MatMul", {a, m});
  InferContext im(*mm, 17, 2, 1);
  im.input_types = {&a->type, &m->type};
  OpRegistry::instance().find("", "MatMul", 17)->infer(im);
  const Shape& ms = *im.output_types[0].shape;
  ASSERT_EQ(ms.rank(), 3u);
  EXPECT_EQ(ms.dims[0].param, a->type.shape->dims[0].param);
  EXPECT_EQ(ms.dims[2].value, 4);
}

}  // namespace
}  // namespace onnxfold
