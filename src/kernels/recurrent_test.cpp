// Tests of the recurrent family against hand-written reference recurrences:
// RNN with bias, GRU with and without linear_before_reset, LSTM with
// peepholes, bidirectional with sequence_lens, and layout=1 vs layout=0.
#include <gtest/gtest.h>

#include <cmath>

#include "ir/error.h"
#include "kernels/common.h"
#include "kernels/op_registry.h"
#include "test_util.h"

namespace onnxfold {
namespace {

std::vector<Tensor> run(const std::string& op, const std::vector<const Tensor*>& ins,
                        std::vector<Attribute> attrs, size_t num_outputs, int64_t opset = 22) {
  return test::runOp(op, ins, std::move(attrs), opset, num_outputs);
}

constexpr auto floats = &test::floatValues;

std::vector<float> ramp(size_t n, float scale, float offset) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = std::sin(scale * static_cast<float>(i) + offset);
  return v;
}

double sigmoid(double x) {
  return 1 / (1 + std::exp(-x));
}

TEST(Recurrent, RnnScalarRecurrence) {
  // hidden 1, input 1: h_t = tanh(w x_t + r h_{t-1} + wb + rb).
  const Tensor x = test::floatTensor({3, 1, 1}, {0.5f, -1, 2});
  const Tensor w = test::floatTensor({1, 1, 1}, {0.7f});
  const Tensor r = test::floatTensor({1, 1, 1}, {-0.3f});
  const Tensor bias = test::floatTensor({1, 2}, {0.1f, 0.05f});
  const auto out =
      run("RNN", {&x, &w, &r, &bias}, test::attrs(Attribute::makeInt("hidden_size", 1)), 2);
  double h = 0;
  std::vector<float> ys;
  for (float xt : {0.5f, -1.0f, 2.0f}) {
    h = std::tanh(0.7 * xt - 0.3 * h + 0.15);
    ys.push_back(static_cast<float>(h));
  }
  const auto y = floats(out[0]);
  ASSERT_EQ(out[0].dims(), (std::vector<int64_t>{3, 1, 1, 1}));
  for (size_t i = 0; i < 3; ++i)
    EXPECT_NEAR(y[i], ys[i], 1e-6);
  EXPECT_NEAR(floats(out[1])[0], ys[2], 1e-6);
}

TEST(Recurrent, GruLinearBeforeReset) {
  const Tensor x = test::floatTensor({2, 1, 1}, {1, -0.5f});
  const Tensor w = test::floatTensor({1, 3, 1}, {0.2f, -0.4f, 0.9f});  // z, r, h
  const Tensor r = test::floatTensor({1, 3, 1}, {0.3f, 0.6f, -0.8f});
  const Tensor bias = test::floatTensor({1, 6}, {0.01f, 0.02f, 0.03f, 0.04f, 0.05f, 0.06f});
  for (int lbr : {0, 1}) {
    const auto out = run("GRU", {&x, &w, &r, &bias},
                         test::attrs(Attribute::makeInt("hidden_size", 1),
                                     Attribute::makeInt("linear_before_reset", lbr)),
                         2);
    double h = 0;
    for (float xt : {1.0f, -0.5f}) {
      const double z = sigmoid(0.2 * xt + 0.3 * h + 0.01 + 0.04);
      const double rr = sigmoid(-0.4 * xt + 0.6 * h + 0.02 + 0.05);
      const double hh = lbr ? std::tanh(0.9 * xt + 0.03 + rr * (-0.8 * h + 0.06))
                            : std::tanh(0.9 * xt + 0.03 + -0.8 * (rr * h) + 0.06);
      h = (1 - z) * hh + z * h;
    }
    EXPECT_NEAR(floats(out[1])[0], h, 1e-6) << "linear_before_reset=" << lbr;
  }
}

TEST(Recurrent, LstmPeepholes) {
  const Tensor x = test::floatTensor({2, 1, 1}, {0.3f, -0.7f});
  const Tensor w = test::floatTensor({1, 4, 1}, {0.5f, -0.2f, 0.8f, 0.1f});  // i, o, f, c
  const Tensor r = test::floatTensor({1, 4, 1}, {0.3f, 0.4f, -0.6f, 0.9f});
  const Tensor bias = test::floatTensor({1, 8}, {0, 0, 0, 0, 0.1f, 0.2f, 0.3f, 0.4f});
  const Tensor p = test::floatTensor({1, 3}, {0.25f, -0.5f, 0.75f});  // i, o, f
  const auto out = run("LSTM", {&x, &w, &r, &bias, nullptr, nullptr, nullptr, &p},
                       test::attrs(Attribute::makeInt("hidden_size", 1)), 3);
  double h = 0, c = 0;
  for (float xt : {0.3f, -0.7f}) {
    const double i = sigmoid(0.5 * xt + 0.3 * h + 0.1 + 0.25 * c);
    const double f = sigmoid(0.8 * xt - 0.6 * h + 0.3 + 0.75 * c);
    const double g = std::tanh(0.1 * xt + 0.9 * h + 0.4);
    c = f * c + i * g;
    const double o = sigmoid(-0.2 * xt + 0.4 * h + 0.2 - 0.5 * c);
    h = o * std::tanh(c);
  }
  EXPECT_NEAR(floats(out[1])[0], h, 1e-6);
  EXPECT_NEAR(floats(out[2])[0], c, 1e-6);
}

// The reverse half of a bidirectional LSTM with sequence_lens equals a forward
// run over each row's reversed valid prefix; padded steps of Y are zero.
TEST(Recurrent, BidirectionalSequenceLens) {
  const int64_t S = 4, B = 2, I = 3, H = 2;
  const Tensor x = test::floatTensor({S, B, I}, ramp(S * B * I, 0.37f, 0.1f));
  const Tensor w = test::floatTensor({2, 4 * H, I}, ramp(2 * 4 * H * I, 0.21f, 0.5f));
  const Tensor r = test::floatTensor({2, 4 * H, H}, ramp(2 * 4 * H * H, 0.13f, 1.1f));
  Tensor lens(DataType::kInt32, {B});
  kernels::mutableDataAs<int32_t>(lens)[0] = 4;
  kernels::mutableDataAs<int32_t>(lens)[1] = 2;
  const auto bi = run("LSTM", {&x, &w, &r, nullptr, &lens},
                      test::attrs(Attribute::makeInt("hidden_size", H),
                                  Attribute::makeString("direction", "bidirectional")),
                      2);
  ASSERT_EQ(bi[0].dims(), (std::vector<int64_t>{S, 2, B, H}));
  const auto y = floats(bi[0]);
  // Batch row 1 has length 2: steps 2 and 3 are zero in both directions.
  for (int64_t t = 2; t < S; ++t)
    for (int64_t d = 0; d < 2; ++d)
      for (int64_t k = 0; k < H; ++k)
        EXPECT_EQ(y[static_cast<size_t>(((t * 2 + d) * B + 1) * H + k)], 0.0f);
  // Reverse direction for row 1 = forward over [x1, x0] with the reverse weights.
  std::vector<float> xr;
  for (int64_t t : {1, 0})
    for (int64_t i = 0; i < I; ++i)
      xr.push_back(x.at<float>(static_cast<size_t>((t * B + 1) * I + i)));
  const Tensor xrev = test::floatTensor({2, 1, I}, xr);
  const std::vector<float> wall = floats(w), rall = floats(r);
  const std::vector<float> wr(wall.begin() + 4 * H * I, wall.end());
  const std::vector<float> rr(rall.begin() + 4 * H * H, rall.end());
  const Tensor w1 = test::floatTensor({1, 4 * H, I}, wr);
  const Tensor r1 = test::floatTensor({1, 4 * H, H}, rr);
  const auto fw =
      run("LSTM", {&xrev, &w1, &r1}, test::attrs(Attribute::makeInt("hidden_size", H)), 2);
  const auto yh = floats(bi[1]);
  const auto want = floats(fw[1]);
  for (int64_t k = 0; k < H; ++k)
    EXPECT_NEAR(yh[static_cast<size_t>((1 * B + 1) * H + k)], want[static_cast<size_t>(k)], 1e-6);
}

TEST(Recurrent, LayoutOneMatchesLayoutZero) {
  const int64_t S = 3, B = 2, I = 2, H = 3;
  const std::vector<float> xs = ramp(S * B * I, 0.5f, 0.0f);
  std::vector<float> xb(xs.size());
  for (int64_t t = 0; t < S; ++t)
    for (int64_t b = 0; b < B; ++b)
      for (int64_t i = 0; i < I; ++i)
        xb[static_cast<size_t>((b * S + t) * I + i)] = xs[static_cast<size_t>((t * B + b) * I + i)];
  const Tensor x0 = test::floatTensor({S, B, I}, xs);
  const Tensor x1 = test::floatTensor({B, S, I}, xb);
  const Tensor w = test::floatTensor({1, 3 * H, I}, ramp(3 * H * I, 0.3f, 0.2f));
  const Tensor r = test::floatTensor({1, 3 * H, H}, ramp(3 * H * H, 0.7f, 0.4f));
  const auto a = run("GRU", {&x0, &w, &r}, test::attrs(Attribute::makeInt("hidden_size", H)), 2);
  const auto b =
      run("GRU", {&x1, &w, &r},
          test::attrs(Attribute::makeInt("hidden_size", H), Attribute::makeInt("layout", 1)), 2);
  ASSERT_EQ(b[0].dims(), (std::vector<int64_t>{B, S, 1, H}));
  ASSERT_EQ(b[1].dims(), (std::vector<int64_t>{B, 1, H}));
  const auto ya = floats(a[0]), yb = floats(b[0]);
  for (int64_t t = 0; t < S; ++t)
    for (int64_t bb = 0; bb < B; ++bb)
      for (int64_t k = 0; k < H; ++k)
        EXPECT_EQ(ya[static_cast<size_t>((t * B + bb) * H + k)],
                  yb[static_cast<size_t>((bb * S + t) * H + k)]);
  EXPECT_EQ(floats(a[1]), floats(b[1]));
}

TEST(Recurrent, ActivationsAndClip) {
  const Tensor x = test::floatTensor({1, 1, 1}, {3});
  const Tensor w = test::floatTensor({1, 1, 1}, {2});
  const Tensor r = test::floatTensor({1, 1, 1}, {0});
  Attribute acts;
  acts.name = "activations";
  acts.type = AttrType::kStrings;
  acts.strings = {"Affine"};
  const auto out = run("RNN", {&x, &w, &r},
                       test::attrs(Attribute::makeInt("hidden_size", 1), std::move(acts),
                                   Attribute::makeFloats("activation_alpha", {0.5f}),
                                   Attribute::makeFloats("activation_beta", {1.0f}),
                                   Attribute::makeFloat("clip", 4.0f)),
                       2);
  EXPECT_NEAR(floats(out[1])[0], 0.5 * 4 + 1, 1e-6);  // clip(6) = 4, then affine
}

}  // namespace
}  // namespace onnxfold
