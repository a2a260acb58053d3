// Tests of the attention family: Attention against a direct softmax(QK^T)V,
// GQA head mapping, causal masking with a past cache, fully masked rows,
// RotaryEmbedding and LinearAttention.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "ir/error.h"
#include "kernels/common.h"
#include "kernels/kernel_test_util.h"
#include "kernels/op_registry.h"
#include "test_util.h"

namespace onnxfold {
namespace {

const test::OpRunner run{23};

constexpr auto floats = &test::floatValues;

std::vector<float> randoms(size_t n, unsigned seed) {
  return test::randomFloats(n, seed);
}

// Direct reference: y[b,h,i,:] = softmax_j(q.k_j * scale + bias) v_j.
std::vector<float> naiveAttention(const std::vector<float>& q, const std::vector<float>& k,
                                  const std::vector<float>& v, int64_t B, int64_t Hq, int64_t Hkv,
                                  int64_t S, int64_t T, int64_t D, bool causal, int64_t past) {
  std::vector<float> y(static_cast<size_t>(B * Hq * S * D), 0.0f);
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < Hq; ++h) {
      const int64_t hk = h / (Hq / Hkv);
      for (int64_t i = 0; i < S; ++i) {
        std::vector<double> s(static_cast<size_t>(T));
        double mx = -INFINITY;
        for (int64_t j = 0; j < T; ++j) {
          double d = 0;
          for (int64_t e = 0; e < D; ++e)
            d += q[static_cast<size_t>(((b * Hq + h) * S + i) * D + e)] *
                 k[static_cast<size_t>(((b * Hkv + hk) * T + j) * D + e)];
          s[static_cast<size_t>(j)] = causal && j > i + past ? -INFINITY : d * scale;
          mx = std::max(mx, s[static_cast<size_t>(j)]);
        }
        double sum = 0;
        for (double& x : s)
          sum += (x = std::exp(x - mx));
        for (int64_t j = 0; j < T; ++j)
          for (int64_t e = 0; e < D; ++e)
            y[static_cast<size_t>(((b * Hq + h) * S + i) * D + e)] +=
                static_cast<float>(s[static_cast<size_t>(j)] / sum *
                                   v[static_cast<size_t>(((b * Hkv + hk) * T + j) * D + e)]);
      }
    }
  return y;
}

TEST(Attention, MatchesNaiveWithGqaCausalAndPast) {
  const int64_t B = 2, Hq = 4, Hkv = 2, S = 3, P = 2, D = 17;  // D above and below the vector width
  const int64_t T = P + S;
  const auto q = randoms(static_cast<size_t>(B * Hq * S * D), 4);
  const auto k = randoms(static_cast<size_t>(B * Hkv * S * D), 5);
  const auto v = randoms(static_cast<size_t>(B * Hkv * S * D), 6);
  const auto pk = randoms(static_cast<size_t>(B * Hkv * P * D), 7);
  const auto pv = randoms(static_cast<size_t>(B * Hkv * P * D), 8);
  Tensor none;
  const auto out =
      run("Attention",
          {test::floatTensor({B, Hq, S, D}, q), test::floatTensor({B, Hkv, S, D}, k),
           test::floatTensor({B, Hkv, S, D}, v), none, test::floatTensor({B, Hkv, P, D}, pk),
           test::floatTensor({B, Hkv, P, D}, pv)},
          test::attrs(Attribute::makeInt("is_causal", 1)), 23, 3);
  ASSERT_EQ(out[0].dims(), (std::vector<int64_t>{B, Hq, S, D}));
  ASSERT_EQ(out[1].dims(), (std::vector<int64_t>{B, Hkv, T, D}));
  // present = concat(past, new) on the sequence axis.
  std::vector<float> kk, vv;
  for (int64_t bh = 0; bh < B * Hkv; ++bh) {
    kk.insert(kk.end(), pk.begin() + bh * P * D, pk.begin() + (bh + 1) * P * D);
    kk.insert(kk.end(), k.begin() + bh * S * D, k.begin() + (bh + 1) * S * D);
    vv.insert(vv.end(), pv.begin() + bh * P * D, pv.begin() + (bh + 1) * P * D);
    vv.insert(vv.end(), v.begin() + bh * S * D, v.begin() + (bh + 1) * S * D);
  }
  EXPECT_EQ(floats(out[1]), kk);
  EXPECT_EQ(floats(out[2]), vv);
  const auto want = naiveAttention(q, kk, vv, B, Hq, Hkv, S, T, D, true, P);
  const auto got = floats(out[0]);
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(got[i], want[i], 1e-5f) << i;
}

TEST(Attention, FullyMaskedRowIsZero) {
  const auto q = randoms(8, 1), k = randoms(16, 2), v = randoms(16, 3);
  Tensor mask(DataType::kBool, {1, 2});
  mask.mutableBytes()[1] = 1;  // only key 1 allowed for... every query
  Tensor allfalse(DataType::kBool, {1, 2});
  const auto out =
      run("Attention", {test::floatTensor({1, 1, 1, 8}, q), test::floatTensor({1, 1, 2, 8}, k),
                        test::floatTensor({1, 1, 2, 8}, v), allfalse});
  for (float x : floats(out[0]))
    EXPECT_EQ(x, 0.0f);
  const auto one =
      run("Attention", {test::floatTensor({1, 1, 1, 8}, q), test::floatTensor({1, 1, 2, 8}, k),
                        test::floatTensor({1, 1, 2, 8}, v), mask});
  const auto y = floats(one[0]);
  for (size_t i = 0; i < 8; ++i)
    EXPECT_NEAR(y[i], v[8 + i], 1e-6f);  // all weight on key 1
}

TEST(Attention, ThreeDInputsNeedHeadCounts) {
  const auto q = randoms(24, 1);
  EXPECT_THROW(run("Attention", {test::floatTensor({1, 1, 24}, q), test::floatTensor({1, 1, 24}, q),
                                 test::floatTensor({1, 1, 24}, q)}),
               Error);
  const auto out =
      run("Attention",
          {test::floatTensor({1, 1, 24}, q), test::floatTensor({1, 1, 24}, q),
           test::floatTensor({1, 1, 24}, q)},
          test::attrs(Attribute::makeInt("q_num_heads", 3), Attribute::makeInt("kv_num_heads", 3)));
  // One key: the output is V itself.
  EXPECT_EQ(floats(out[0]), q);
}

TEST(RotaryEmbedding, RotatesHalves) {
  // One token, one head, head size 4: pairs (x0, x2) and (x1, x3) rotate.
  const Tensor x = test::floatTensor({1, 1, 1, 4}, {1, 2, 3, 4});
  const Tensor c = test::floatTensor({1, 1, 2}, {0, 1});
  const Tensor s = test::floatTensor({1, 1, 2}, {1, 0});
  const auto out = run("RotaryEmbedding", {x, c, s});
  EXPECT_EQ(floats(out[0]), (std::vector<float>{-3, 2, 1, 4}));
  const auto il =
      run("RotaryEmbedding", {x, c, s}, test::attrs(Attribute::makeInt("interleaved", 1)));
  EXPECT_EQ(floats(il[0]), (std::vector<float>{-2, 1, 3, 4}));
}

TEST(LinearAttention, LinearRuleAccumulatesOuterProducts) {
  // One head, d_k = d_v = 1: S_t = sum k v, o_t = q S_t (scale 1).
  const Tensor q = test::floatTensor({1, 2, 1}, {1, 2});
  const Tensor k = test::floatTensor({1, 2, 1}, {3, 4});
  const Tensor v = test::floatTensor({1, 2, 1}, {5, 6});
  const auto out =
      run("LinearAttention", {q, k, v},
          test::attrs(Attribute::makeInt("q_num_heads", 1), Attribute::makeInt("kv_num_heads", 1),
                      Attribute::makeString("update_rule", "linear"),
                      Attribute::makeFloat("scale", 1.0f)),
          27, 2);
  EXPECT_EQ(floats(out[0]), (std::vector<float>{15, 2 * (15 + 24)}));
  EXPECT_EQ(floats(out[1]), (std::vector<float>{39}));
}

TEST(Attention, InferSymbolicShapes) {
  test::ModelBuilder b(23);
  Value* q = b.input("q", DataType::kFloat, {-1, 5, 48});
  Value* k = b.input("k", DataType::kFloat, {-1, -1, 16});
  Value* v = b.input("v", DataType::kFloat, {-1, -1, 20});
  Value* pk = b.input("pk", DataType::kFloat, {-1, 2, 7, 8});
  Value* pv = b.input("pv", DataType::kFloat, {-1, 2, 7, 10});
  Node* n = b.node(
      "Attention", {q, k, v, nullptr, pk, pv}, 4,
      test::attrs(Attribute::makeInt("q_num_heads", 6), Attribute::makeInt("kv_num_heads", 2)));
  InferContext ic(*n, 23, 6, 4);
  ic.input_types = {&q->type, &k->type, &v->type, nullptr, &pk->type, &pv->type};
  OpRegistry::instance().find("", "Attention", 23)->infer(ic);
  const Shape& y = *ic.output_types[0].shape;
  EXPECT_EQ(y.dims[0].param, q->type.shape->dims[0].param);
  EXPECT_EQ(y.dims[1].value, 5);
  EXPECT_EQ(y.dims[2].value, 60);  // 6 heads x v_head_size 10
  const Shape& pres = *ic.output_types[2].shape;
  EXPECT_EQ(pres.dims[1].value, 2);
  EXPECT_FALSE(pres.dims[2].isKnown());  // 7 + symbolic kv length
  EXPECT_EQ(pres.dims[3].value, 10);
  const Shape& qk = *ic.output_types[3].shape;
  EXPECT_EQ(qk.dims[1].value, 6);
  EXPECT_EQ(qk.dims[2].value, 5);
}

TEST(Attention, Float16AndSoftcap) {
  // Softcap bounds the scores; with identical keys the output is the mean of V.
  auto half = [](std::vector<int64_t> dims, const std::vector<float>& v) {
    Tensor t(DataType::kFloat16, std::move(dims));
    auto* p = reinterpret_cast<uint16_t*>(t.mutableBytes());
    for (size_t i = 0; i < v.size(); ++i)
      p[i] = kernels::floatToHalf(v[i]);
    return t;
  };
  const auto out = run("Attention",
                       {half({1, 1, 1, 2}, {1, 2}), half({1, 1, 2, 2}, {1, 1, 1, 1}),
                        half({1, 1, 2, 2}, {0, 2, 4, 6})},
                       test::attrs(Attribute::makeFloat("softcap", 0.5f)));
  ASSERT_EQ(out[0].dtype(), DataType::kFloat16);
  const auto* p = reinterpret_cast<const uint16_t*>(out[0].bytes());
  EXPECT_NEAR(kernels::halfToFloat(p[0]), 2.0f, 1e-3f);
  EXPECT_NEAR(kernels::halfToFloat(p[1]), 4.0f, 1e-3f);
}

}  // namespace
}  // namespace onnxfold
