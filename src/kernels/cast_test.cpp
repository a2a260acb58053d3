// Tests of the cast family: the Highway float16 kernels against their scalar
// references (sizes below, at and above the vector width, special values),
// float8/int4 encodings, strings, type checks and symbolic shape values.
#include "kernels/cast.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "ir/error.h"
#include "kernels/common.h"
#include "kernels/kernel_test_util.h"
#include "kernels/op_registry.h"
#include "test_util.h"

namespace onnxfold {
namespace {

using test::sizesAroundVector;

float bitsToFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

std::vector<float> interestingFloats(size_t n, uint32_t seed) {
  std::mt19937 g(seed);
  std::vector<float> v(n);
  const float specials[] = {0.0f,
                            -0.0f,
                            1.0f,
                            65504.0f,
                            65520.0f,
                            65519.99f,
                            1e-8f,
                            5.960464e-8f,
                            2.9802322e-8f,
                            6.1035156e-5f,
                            6.097555e-5f,
                            INFINITY,
                            -INFINITY,
                            std::nanf(""),
                            1e30f,
                            -3.0f,
                            1.00048828125f /* tie */,
                            1.00146484375f /* tie, odd */};
  for (size_t i = 0; i < n; ++i) {
    if (i < sizeof(specials) / sizeof(float) && i % 2 == 0) {
      v[i] = specials[i];
    } else {
      v[i] = bitsToFloat(static_cast<uint32_t>(g()));  // any bit pattern
    }
  }
  return v;
}

TEST(Cast, FloatToHalfHwyMatchesScalar) {
  for (size_t n : sizesAroundVector()) {
    const std::vector<float> in = interestingFloats(n, static_cast<uint32_t>(n));
    std::vector<uint16_t> a(n), b(n);
    kernels::floatToHalfScalar(in.data(), a.data(), n);
    kernels::floatToHalfHwy(in.data(), b.data(), n);
    for (size_t i = 0; i < n; ++i)
      ASSERT_EQ(a[i], b[i]) << "n=" << n << " i=" << i << " x=" << in[i];
  }
  // Every rounding boundary region: a dense sweep of float bit patterns.
  std::vector<float> sweep;
  for (uint32_t u = 0x33000000; u < 0x47800000; u += 0x1001)
    sweep.push_back(bitsToFloat(u));
  std::vector<uint16_t> a(sweep.size()), b(sweep.size());
  kernels::floatToHalfScalar(sweep.data(), a.data(), sweep.size());
  kernels::floatToHalfHwy(sweep.data(), b.data(), sweep.size());
  EXPECT_EQ(a, b);
}

TEST(Cast, FloatToHalfSaturatedHwyMatchesScalar) {
  for (size_t n : sizesAroundVector()) {
    std::vector<float> in = interestingFloats(n, static_cast<uint32_t>(n) + 7);
    for (size_t i = 0; i < n; i += 5)  // past float16's range, both signs
      in[i] = (i % 2 ? -1.0f : 1.0f) * (65504.0f + static_cast<float>(i) * 16.5f);
    std::vector<uint16_t> a(n), b(n);
    kernels::floatToHalfSaturatedScalar(in.data(), a.data(), n);
    kernels::floatToHalfSaturatedHwy(in.data(), b.data(), n);
    for (size_t i = 0; i < n; ++i)
      ASSERT_EQ(a[i], b[i]) << "n=" << n << " i=" << i << " x=" << in[i];
  }
  const float edge[] = {65504.0f,
                        65519.0f,
                        65520.0f,
                        1e30f,
                        -1e30f,
                        -65520.0f,
                        std::numeric_limits<float>::infinity(),
                        -std::numeric_limits<float>::infinity(),
                        std::numeric_limits<float>::quiet_NaN(),
                        3.0f,
                        -0.0f,
                        1e-8f,
                        65504.0f,
                        7e4f,
                        -7e4f,
                        1.0f};
  constexpr size_t n = sizeof(edge) / sizeof(edge[0]);
  uint16_t h[n];
  kernels::floatToHalfSaturatedHwy(edge, h, n);
  EXPECT_EQ(h[0], 0x7bff);
  EXPECT_EQ(h[1], 0x7bff);  // rounds to 65504, below the tie
  EXPECT_EQ(h[2], 0x7bff);  // would round to Inf: saturated
  EXPECT_EQ(h[3], 0x7bff);
  EXPECT_EQ(h[4], 0xfbff);
  EXPECT_EQ(h[5], 0xfbff);
  EXPECT_EQ(h[6], 0x7c00);
  EXPECT_EQ(h[7], 0xfc00);
  EXPECT_EQ(h[8] & 0x7c00, 0x7c00);
  EXPECT_NE(h[8] & 0x3ff, 0);
  EXPECT_EQ(h[13], 0x7bff);
  EXPECT_EQ(h[14], 0xfbff);
}

TEST(Cast, HalfToFloatHwyMatchesScalarForAllBitPatterns) {
  std::vector<uint16_t> in(65536);
  for (size_t i = 0; i < in.size(); ++i)
    in[i] = static_cast<uint16_t>(i);
  for (size_t n : sizesAroundVector()) {
    std::vector<float> a(n), b(n);
    kernels::halfToFloatScalar(in.data() + 1000, a.data(), n);
    kernels::halfToFloatHwy(in.data() + 1000, b.data(), n);
    EXPECT_TRUE(n == 0 || std::memcmp(a.data(), b.data(), n * 4) == 0) << "n=" << n;
  }
  std::vector<float> a(in.size()), b(in.size());
  kernels::halfToFloatScalar(in.data(), a.data(), in.size());
  kernels::halfToFloatHwy(in.data(), b.data(), in.size());
  for (size_t i = 0; i < in.size(); ++i)
    ASSERT_EQ(std::memcmp(&a[i], &b[i], 4), 0) << "bits " << i;
}

// ------------------------------------------------------------ through the registry

const test::OpRunner run{21};
using test::bytesOf;

TEST(Cast, Float8EncodingsFollowTheSaturationTables) {
  const Tensor x = test::floatTensor({6}, {0.4789f, 1e6f, -1e-7f, INFINITY, std::nanf(""), 448.0f});
  auto cast = [&](DataType to, int sat) {
    return bytesOf(run("Cast", {x},
                       test::attrs(Attribute::makeInt("to", static_cast<int64_t>(to)),
                                   Attribute::makeInt("saturate", sat)))[0]);
  };
  EXPECT_EQ(cast(DataType::kFloat8E4M3FN, 1),
            (std::vector<uint8_t>{0x2f, 0x7e, 0x80, 0x7e, 0x7f, 0x7e}));
  EXPECT_EQ(cast(DataType::kFloat8E4M3FN, 0),
            (std::vector<uint8_t>{0x2f, 0x7f, 0x80, 0x7f, 0x7f, 0x7e}));
  EXPECT_EQ(cast(DataType::kFloat8E4M3FNUZ, 1),
            (std::vector<uint8_t>{0x37, 0x7f, 0x00, 0x7f, 0x80, 0x7f}));
  EXPECT_EQ(cast(DataType::kFloat8E5M2, 0),
            (std::vector<uint8_t>{0x38, 0x7c, 0x80, 0x7c, 0x7e, 0x5f}));
}

TEST(Cast, Int4PacksLowNibbleFirstAndWraps) {
  const Tensor x = test::floatTensor({3}, {-9.0f, -8.0f, 7.0f});
  const Tensor y = run("Cast", {x}, test::attrs(Attribute::makeInt("to", 22)))[0];
  EXPECT_EQ(bytesOf(y), (std::vector<uint8_t>{0x87, 0x07}));
  const Tensor back = run("Cast", {y}, test::attrs(Attribute::makeInt("to", 1)))[0];
  EXPECT_EQ(back.at<float>(0), 7.0f);
  EXPECT_EQ(back.at<float>(1), -8.0f);
  EXPECT_EQ(back.at<float>(2), 7.0f);
}

TEST(Cast, StringsParseSpecialValuesAndFormatShortest) {
  Tensor s(DataType::kString, {5});
  s.mutableStrings() = {"INF", "-inf", "NaN", "1.5", "+INF"};
  const Tensor f = run("Cast", {s}, test::attrs(Attribute::makeInt("to", 1)))[0];
  EXPECT_TRUE(std::isinf(f.at<float>(0)) && f.at<float>(0) > 0);
  EXPECT_TRUE(std::isinf(f.at<float>(1)) && f.at<float>(1) < 0);
  EXPECT_TRUE(std::isnan(f.at<float>(2)));
  EXPECT_EQ(f.at<float>(3), 1.5f);
  EXPECT_TRUE(std::isinf(f.at<float>(4)));
  const Tensor x = test::floatTensor({3}, {0.1f, 314.15926f, -2.0f});
  const Tensor t = run("Cast", {x}, test::attrs(Attribute::makeInt("to", 8)))[0];
  EXPECT_EQ(t.strings(), (std::vector<std::string>{"0.1", "314.15927", "-2"}));
  Tensor big(DataType::kString, {1});
  big.mutableStrings() = {"9007199254740993"};
  const Tensor i = run("Cast", {big}, test::attrs(Attribute::makeInt("to", 7)))[0];
  EXPECT_EQ(i.at<int64_t>(0), int64_t{9007199254740993});
}

// Strings are read as ONNX Runtime reads them for the target (std::stod / stoll / stoull);
// each expectation is what onnxruntime-node computes, and what it refuses fails here too, so
// that a refusal never becomes a constant.
TEST(Cast, StringsReadAsOnnxRuntimeReadsThem) {
  auto cast = [&](const std::string& v, int64_t to) {
    Tensor s(DataType::kString, {1});
    s.mutableStrings() = {v};
    return run("Cast", {s}, test::attrs(Attribute::makeInt("to", to)))[0];
  };
  constexpr int64_t kF32 = 1, kU8 = 2, kI32 = 6, kI64 = 7, kF64 = 11;
  EXPECT_EQ(cast("1e400", kI64).at<int64_t>(0), 1);   // the integer prefix
  EXPECT_EQ(cast("0x10", kF32).at<float>(0), 16.0f);  // strtod reads hex
  EXPECT_EQ(cast("0x10", kI64).at<int64_t>(0), 0);    // base 10
  EXPECT_EQ(cast(" 12", kI32).at<int32_t>(0), 12);    // leading blanks
  EXPECT_EQ(cast("3.5", kI64).at<int64_t>(0), 3);
  EXPECT_EQ(cast("300", kU8).at<uint8_t>(0), 44);  // wraps like a static_cast
  EXPECT_EQ(cast("-1e-50", kU8).at<uint8_t>(0), 255);
  EXPECT_EQ(cast("-1e-50", kF64).at<double>(0), -1e-50);
  EXPECT_EQ(cast("99999999999999999999", kF64).at<double>(0), 1e20);
  for (const auto& [text, to] :
       std::vector<std::pair<std::string, int64_t>>{{"xxxx", kF32},
                                                    {"", kF64},
                                                    {"1e400", kF32},
                                                    {"99999999999999999999", kI64},
                                                    {"inf", kI64},
                                                    {"NaN", kU8},
                                                    {"xxxx", kI32}}) {
    EXPECT_THROW(cast(text, to), Error) << "'" << text << "' to " << to;
  }
}

TEST(Cast, RejectsTypesNewerThanTheOpset) {
  const Tensor x = test::floatTensor({1}, {1.0f});
  EXPECT_THROW(run("Cast", {x}, test::attrs(Attribute::makeInt("to", 17)), 17), Error);
  EXPECT_THROW(run("Cast", {x}, test::attrs(Attribute::makeInt("to", 99)), 21), Error);
}

TEST(Cast, CastKeepsSymbolicShapeValues) {
  test::ModelBuilder b(17);
  Value* s = b.input("s", DataType::kInt64, {2});
  Node* n = b.node("Cast", {s}, 1, test::attrs(Attribute::makeInt("to", 7)));
  InferContext ic(*n, 17, 1, 1);
  const Type ts = Type::tensor(DataType::kInt64, kernels::shapeOf({2}));
  const SymbolicValue sym = {Dim::symbol("batch"), Dim::known(3)};
  ic.input_types = {&ts};
  ic.input_symbolic = {&sym};
  OpRegistry::instance().find("", "Cast", 17)->infer(ic);
  ASSERT_TRUE(ic.output_symbolic[0].has_value());
  EXPECT_EQ((*ic.output_symbolic[0])[0].param, "batch");
}

}  // namespace
}  // namespace onnxfold
