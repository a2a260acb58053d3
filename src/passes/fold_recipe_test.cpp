// Deferred folds: a large fold result is a FoldRecipe range, computed when read (by the writer),
// with the bytes an eager fold gives; at most one recipe holds its result at a time; ops whose
// kernel could fail at write time are folded eagerly instead.
#include "passes/fold_recipe.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "ir/buffer.h"
#include "onnx/reader.h"
#include "onnx/writer.h"
#include "passes/quant/quant.h"
#include "passes/rewrite.h"
#include "test_util.h"

namespace onnxfold {
namespace {

// y_i = Transpose(w_i) for two 512x256 float weights: 512 KiB results each (above what
// propagation computes itself, 64 Ki elements).
std::unique_ptr<Model> twoTransposes() {
  test::ModelBuilder b;
  for (int i = 0; i < 2; ++i) {
    std::vector<float> w(512 * 256);
    for (size_t k = 0; k < w.size(); ++k)
      w[k] = static_cast<float>(k) + 0.5f * static_cast<float>(i);
    Value* v = b.initializer("w" + std::to_string(i), {512, 256}, w);
    std::vector<Attribute> attrs;
    attrs.push_back(Attribute::makeInts("perm", {1, 0}));
    b.output(b.op("Transpose", {v}, std::move(attrs)));
  }
  return b.build();
}

TEST(FoldRecipe, LargeResultsAreComputedWhenReadOneAtATime) {
  std::unique_ptr<Model> m = twoTransposes();
  ASSERT_TRUE(test::runPass(*m, "fold-constants"));
  std::vector<const Tensor*> results;
  for (const Value* v : m->graph->outputs())
    results.push_back(v->initializer());
  ASSERT_EQ(results.size(), 2u);
  for (const Tensor* t : results) {
    ASSERT_NE(t, nullptr);
    EXPECT_TRUE(t->buffer().isSourceRange()) << "deferred";
    EXPECT_FALSE(t->buffer().isResident()) << "not computed yet";
    EXPECT_EQ(t->dims(), (std::vector<int64_t>{256, 512}));
  }
  // Reading parts computes each one in turn; only the last computed keeps its result.
  float first[2];
  results[0]->buffer().copyTo(0, sizeof first, reinterpret_cast<uint8_t*>(first));
  EXPECT_EQ(first[1], 256.0f) << "row 0 of the transpose is column 0: w[1][0] = 256";
  const uint64_t with_one = Buffer::memoryStats().live;
  float second[2];
  results[1]->buffer().copyTo(4, sizeof second, reinterpret_cast<uint8_t*>(second));
  EXPECT_EQ(second[0], 256.5f);
  EXPECT_LE(Buffer::memoryStats().live, with_one) << "the first result was dropped";

  // Written, the model equals the eagerly folded one byte for byte.
  const std::string written = writeModelToString(*m);
  std::unique_ptr<Model> back = readModel(test::bufferOf(written));
  const Tensor& t0 = *back->graph->outputs()[0]->initializer();
  for (int r = 0; r < 256; r += 31)
    for (int c = 0; c < 512; c += 17)
      EXPECT_EQ(t0.at<float>(static_cast<size_t>(r) * 512 + c), static_cast<float>(c * 256 + r));
}

TEST(FoldRecipe, OpsWhoseKernelMayFailAreFoldedNow) {
  // Integer Add may not be deferred (only float arithmetic is): the result is computed now.
  test::ModelBuilder b;
  std::vector<int64_t> big(100000, 7);
  Value* a = b.initializer(test::int64Tensor({100000}, big, "a"));
  b.output(b.op("Add", {a, a}));
  std::unique_ptr<Model> m = b.build();
  ASSERT_TRUE(test::runPass(*m, "fold-constants"));
  const Tensor* t = m->graph->outputs()[0]->initializer();
  ASSERT_NE(t, nullptr);
  EXPECT_FALSE(t->buffer().isSourceRange());
  EXPECT_EQ(t->at<int64_t>(99999), 14);
}

// A float weight quantized by the model (QuantizeLinear of a constant, per output channel)
// is quantized when written: 256 x 300 int8 values, the kernel's bytes.
TEST(FoldRecipe, WeightsQuantizedOnceAreQuantizedWhenWritten) {
  test::ModelBuilder b;
  std::vector<float> w(256 * 300), scale(256);
  for (size_t k = 0; k < w.size(); ++k)
    w[k] = static_cast<float>(static_cast<int>(k % 201) - 100) / 50.0f;
  for (size_t k = 0; k < scale.size(); ++k)
    scale[k] = 0.01f + 0.001f * static_cast<float>(k % 7);
  Tensor zp(DataType::kInt8, {256});  // zeros
  zp.name = "zp";
  std::vector<Attribute> attrs;
  attrs.push_back(Attribute::makeInt("axis", 0));
  b.output(b.op("QuantizeLinear",
                {b.initializer("w", {256, 300}, w), b.initializer("scale", {256}, scale),
                 b.initializer(std::move(zp))},
                std::move(attrs)));
  std::unique_ptr<Model> m = b.build();
  ASSERT_TRUE(test::runPass(*m, "fold-constants"));
  const Tensor* q = m->graph->outputs()[0]->initializer();
  ASSERT_NE(q, nullptr);
  EXPECT_TRUE(q->buffer().isSourceRange()) << "deferred";
  EXPECT_FALSE(q->buffer().isResident()) << "not computed yet";
  ASSERT_EQ(q->dtype(), DataType::kInt8);
  for (size_t k = 0; k < w.size(); k += 37) {
    const size_t ch = k / 300;
    const double want = std::nearbyint(static_cast<double>(w[k] / scale[ch]));
    ASSERT_EQ(q->at<int8_t>(k), static_cast<int8_t>(std::clamp(want, -128.0, 127.0)))
        << "element " << k;
  }
}

// Conv -> BatchNormalization -> Mul over a weight of 64 x 32 x 3 x 3 floats (72 KiB): both folds
// leave recipes (the Mul's reads the BN's), computed when written, with the bytes of the
// formula: W'[m] = W[m] * s_bn[m] * s_mul[m], each product in double and rounded once.
TEST(FoldRecipe, ConvWeightsRescaledByPatternsAreComputedWhenWritten) {
  test::ModelBuilder b;
  const int64_t m = 64, c = 32;
  std::vector<float> w(static_cast<size_t>(m * c * 9)), scale(m), bias(m), mean(m), var(m), mul(m);
  for (size_t k = 0; k < w.size(); ++k)
    w[k] = static_cast<float>(static_cast<int>(k % 97) - 48) / 7.0f;
  for (size_t k = 0; k < static_cast<size_t>(m); ++k) {
    scale[k] = 0.5f + static_cast<float>(k) / 16.0f;
    bias[k] = 0.25f;
    mean[k] = 0.125f * static_cast<float>(k % 5);
    var[k] = 1.0f + static_cast<float>(k % 3);
    mul[k] = 1.5f - static_cast<float>(k) / 64.0f;
  }
  Value* x = b.input("x", DataType::kFloat, {1, c, 8, 8});
  Value* conv = b.op("Conv", {x, b.initializer("w", {m, c, 3, 3}, w)});
  Value* bn = b.op("BatchNormalization",
                   {conv, b.initializer("scale", {m}, scale), b.initializer("bias", {m}, bias),
                    b.initializer("mean", {m}, mean), b.initializer("var", {m}, var)});
  b.output(b.op("Mul", {bn, b.initializer("mul", {1, m, 1, 1}, mul)}));
  std::unique_ptr<Model> model = b.build();
  ASSERT_TRUE(test::runPass(*model, "freezing-patterns"));
  const Node* fused = model->graph->outputs()[0]->producer();
  ASSERT_NE(fused, nullptr);
  ASSERT_EQ(fused->op_type, "Conv") << "BatchNormalization and Mul folded into the Conv";
  const Tensor& nw = *fused->input(1)->initializer();
  EXPECT_TRUE(nw.buffer().isSourceRange()) << "deferred";
  EXPECT_FALSE(nw.buffer().isResident()) << "not computed yet";

  const std::string written = writeModelToString(*model);
  std::unique_ptr<Model> back = readModel(test::bufferOf(written));
  const Tensor& got = *back->graph->outputs()[0]->producer()->input(1)->initializer();
  ASSERT_EQ(got.dims(), (std::vector<int64_t>{m, c, 3, 3}));
  for (size_t k = 0; k < w.size(); k += 13) {
    const size_t ch = k / static_cast<size_t>(c * 9);
    const double s = static_cast<double>(scale[ch]) /
                     std::sqrt(static_cast<double>(var[ch]) + static_cast<double>(1e-5f));
    const auto bn_w = static_cast<float>(static_cast<double>(w[k]) * s);
    const auto want = static_cast<float>(static_cast<double>(bn_w) * static_cast<double>(mul[ch]));
    ASSERT_EQ(got.at<float>(k), want) << "element " << k;
  }
}

// The 8-bit weights integer ops take (QLinearMatMul's B as uint8 and transposed, say) are made
// when written: 300 x 256 int8 values, sign flipped and transposed.
TEST(FoldRecipe, IntegerOpWeightsAreMadeWhenWritten) {
  test::ModelBuilder b;
  Tensor w(DataType::kInt8, {300, 256});
  int8_t* p = reinterpret_cast<int8_t*>(w.mutableBytes());
  for (int64_t k = 0; k < w.numElements(); ++k)
    p[k] = static_cast<int8_t>(k * 7 % 256 - 128);
  w.name = "w";
  Value* wv = b.initializer(w);
  b.output(b.op("Identity", {wv}));
  Rewriter rw(b.model(), b.graph(), /*notify=*/false);
  const Value* made = quant::weightIn(rw, wv, DataType::kUint8, /*transpose=*/true);
  const Tensor& t = *made->initializer();
  EXPECT_TRUE(t.buffer().isSourceRange()) << "deferred";
  EXPECT_FALSE(t.buffer().isResident()) << "not computed yet";
  ASSERT_EQ(t.dtype(), DataType::kUint8);
  ASSERT_EQ(t.dims(), (std::vector<int64_t>{256, 300}));
  for (int64_t r = 0; r < 300; r += 7) {
    for (int64_t c = 0; c < 256; c += 5) {
      const auto want = static_cast<uint8_t>(static_cast<uint8_t>(p[r * 256 + c]) ^ 0x80);
      ASSERT_EQ(t.at<uint8_t>(static_cast<size_t>(c * 300 + r)), want) << r << "," << c;
    }
  }
}

}  // namespace
}  // namespace onnxfold
