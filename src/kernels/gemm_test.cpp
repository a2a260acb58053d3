// Tests of the portable GEMM (gemm.cpp): the Highway kernel against its scalar
// reference (sizes below, at and above the vector width and the K block, and
// leading dimensions), and XNNPACK's fully-connected operator against it on
// random odd shapes.
#include "kernels/gemm.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "kernels/kernel_test_util.h"
#include "kernels/xnnpack.h"

namespace onnxfold {
namespace {

TEST(PortableGemm, HighwayMatchesScalar) {
  std::mt19937 rng(1);
  // Below, at and above the vector width (4/8/16 lanes), the 3-vector tile,
  // the 4-row tile and the 256 K block.
  const int64_t sizes[] = {1, 2, 3, 4, 5, 7, 8, 9, 12, 15, 16, 17, 24, 25, 33, 49};
  for (int64_t m : {1, 3, 4, 5, 9}) {
    for (int64_t n : sizes) {
      for (int64_t k : {1, 2, 7, 16, 31, 257, 600}) {
        const auto a = test::randomFloats(rng, static_cast<size_t>(m * k));
        const auto b = test::randomFloats(rng, static_cast<size_t>(k * n));
        std::vector<float> c1(static_cast<size_t>(m * n), 7.0f), c2(c1);
        kernels::gemmF32Scalar(m, n, k, a.data(), k, b.data(), n, c1.data(), n);
        kernels::gemmF32(m, n, k, a.data(), k, b.data(), n, c2.data(), n);
        test::expectClose(c2, c1, 1e-4f,
                          std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k));
      }
    }
  }
}

TEST(PortableGemm, HighwayHonoursLeadingDimensions) {
  std::mt19937 rng(2);
  const int64_t m = 5, n = 11, k = 9, lda = 13, ldb = 17, ldc = 19;
  const auto a = test::randomFloats(rng, static_cast<size_t>(m * lda));
  const auto b = test::randomFloats(rng, static_cast<size_t>(k * ldb));
  std::vector<float> c1(static_cast<size_t>(m * ldc), 3.0f), c2(c1);
  kernels::gemmF32Scalar(m, n, k, a.data(), lda, b.data(), ldb, c1.data(), ldc);
  kernels::gemmF32(m, n, k, a.data(), lda, b.data(), ldb, c2.data(), ldc);
  test::expectClose(c2, c1, 1e-4f, "strided");
  // Columns past N are untouched.
  EXPECT_EQ(c2[n], 3.0f);
}

TEST(PortableGemm, XnnpackFullyConnectedMatchesPortable) {
  if (!xnn::available()) GTEST_SKIP() << "XNNPACK is not compiled in (wasm) or not initialized";
  std::mt19937 rng(3);
  std::uniform_int_distribution<int64_t> dim(1, 70);
  for (int iter = 0; iter < 60; ++iter) {
    const int64_t m = dim(rng), n = dim(rng), k = dim(rng);
    const auto a = test::randomFloats(rng, static_cast<size_t>(m * k));
    const auto w = test::randomFloats(rng, static_cast<size_t>(k * n));
    const auto bias = test::randomFloats(rng, static_cast<size_t>(n));
    std::vector<float> ref(static_cast<size_t>(m * n)), got(ref.size());
    kernels::gemmF32(m, n, k, a.data(), k, w.data(), n, ref.data(), n);
    // Weights [K, N] (MatMul).
    ASSERT_TRUE(xnn::fullyConnectedF32(m, k, n, a.data(), w.data(), true, nullptr, got.data()));
    test::expectClose(got, ref, 1e-4f, "kn " + std::to_string(m) + "x" + std::to_string(n));
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
    test::expectClose(got, ref, 1e-4f, "nk+bias " + std::to_string(m) + "x" + std::to_string(n));
  }
}

}  // namespace
}  // namespace onnxfold
