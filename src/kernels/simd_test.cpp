// Tests of the shared Highway helpers (simd.cpp): each against its scalar
// reference on sizes below, at and above the vector width of its type (with odd
// tails), and on empty input.
#include "kernels/simd.h"

#include <gtest/gtest.h>
#include <hwy/highway.h>

#include <cstdint>
#include <random>
#include <set>
#include <vector>

#include "kernels/kernel_test_util.h"

namespace onnxfold {
namespace {

namespace hn = hwy::HWY_NAMESPACE;

// Sizes around one and two vectors of float and of double (half as many lanes), 0 and some
// long ones.
std::vector<int64_t> sizesAroundVectors() {
  const auto f32 = static_cast<int64_t>(hn::Lanes(hn::ScalableTag<float>()));
  std::set<int64_t> sizes = {0, 1, 2, 3, 4 * f32 + 3, 100, 257};
  for (int64_t lanes : {f32 / 2, f32}) {
    for (int64_t k : {lanes, 2 * lanes}) {
      for (int64_t d : {-1, 0, 1})
        if (k + d >= 0) sizes.insert(k + d);
    }
  }
  return {sizes.begin(), sizes.end()};
}

std::vector<float> randomFloats(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  return test::randomFloats(rng, n);
}

std::vector<double> randomDoubles(size_t n, unsigned seed) {
  const std::vector<float> f = randomFloats(n, seed);
  return {f.begin(), f.end()};
}

TEST(Simd, DotF32MatchesScalar) {
  for (int64_t n : sizesAroundVectors()) {
    const auto a = randomFloats(static_cast<size_t>(n), 1), b = randomFloats(a.size(), 2);
    EXPECT_NEAR(kernels::simd::dotHwy(a.data(), b.data(), n),
                kernels::simd::dotScalar(a.data(), b.data(), n), 1e-5f * (n + 1))
        << "n=" << n;
  }
}

TEST(Simd, DotF64MatchesScalar) {
  for (int64_t n : sizesAroundVectors()) {
    const auto a = randomDoubles(static_cast<size_t>(n), 3), b = randomDoubles(a.size(), 4);
    EXPECT_NEAR(kernels::simd::dotHwy(a.data(), b.data(), n),
                kernels::simd::dotScalar(a.data(), b.data(), n), 1e-12)
        << "n=" << n;
  }
}

TEST(Simd, AxpyF32MatchesScalar) {
  for (int64_t n : sizesAroundVectors()) {
    const auto x = randomFloats(static_cast<size_t>(n), 5);
    std::vector<float> y1 = randomFloats(x.size(), 6), y2 = y1;
    kernels::simd::axpyHwy(0.75f, x.data(), y1.data(), n);
    kernels::simd::axpyScalar(0.75f, x.data(), y2.data(), n);
    for (size_t i = 0; i < y1.size(); ++i)
      EXPECT_NEAR(y1[i], y2[i], 1e-6f) << "n=" << n << " at " << i;
  }
}

}  // namespace
}  // namespace onnxfold
