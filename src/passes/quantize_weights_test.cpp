// Tests of weight-only quantization: the math (round half to even, ranges, short last blocks,
// nibble order, the MatMulNBits layout) and the quantize-weights pass, whose QDQ output is
// evaluated by our DequantizeLinear kernel and compared with x @ dequant(quant(W)).
#include "passes/quantize_weights.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "ir/error.h"
#include "passes/pass.h"
#include "test_util.h"

namespace onnxfold {
namespace {

using wq::Grid;
using wq::GroupParams;

std::vector<float> randomWeights(size_t n, uint32_t seed) {
  std::mt19937 g(seed);
  std::normal_distribution<float> d(0.0F, 0.5F);
  std::vector<float> w(n);
  for (float& v : w)
    v = d(g);
  return w;
}

TEST(QuantizeWeights, RoundsHalfToEven) {
  const Grid g{4, true};
  // max |w| = 7: the scale is exactly 1, so w / s is w.
  const std::vector<float> w{7, 0.5F, 1.5F, 2.5F, -2.5F, -0.5F, -3.5F};
  const GroupParams p = wq::chooseParams(w.data(), w.size(), 1, g);
  EXPECT_EQ(p.scale, 1.0F);
  EXPECT_EQ(p.zero_point, 0);
  std::vector<int32_t> q;
  for (float v : w)
    q.push_back(wq::quantizeValue(v, p, g));
  EXPECT_EQ(q, (std::vector<int32_t>{7, 0, 2, 2, -2, 0, -4}));
}

TEST(QuantizeWeights, SymmetricRanges) {
  for (int bits : {4, 8}) {
    const Grid g{bits, true};
    const std::vector<float> w{-3.0F, 1.0F, 2.9F, 0.0F};
    const GroupParams p = wq::chooseParams(w.data(), w.size(), 1, g);
    const int32_t top = (1 << (bits - 1)) - 1;  // 7 or 127
    EXPECT_EQ(wq::quantizeValue(-3.0F, p, g), -top) << bits;
    EXPECT_EQ(wq::quantizeValue(3.0F, p, g), top) << bits;
    // The clamp: values past the group's range saturate at -8..7 / -128..127.
    EXPECT_EQ(wq::quantizeValue(100.0F, p, g), top) << bits;
    EXPECT_EQ(wq::quantizeValue(-100.0F, p, g), -top - 1) << bits;
  }
  const std::vector<float> zeros(5, 0.0F);
  EXPECT_EQ(wq::chooseParams(zeros.data(), zeros.size(), 1, Grid{4, true}).scale, 1.0F);
}

TEST(QuantizeWeights, AsymmetricKeepsZeroExact) {
  const Grid g{4, false};
  const std::vector<float> w{0.5F, 1.0F, 2.0F, 3.0F};  // all positive: lo = 0
  const GroupParams p = wq::chooseParams(w.data(), w.size(), 1, g);
  EXPECT_EQ(p.zero_point, 0);
  EXPECT_FLOAT_EQ(p.scale, 3.0F / 15);
  EXPECT_EQ(wq::quantizeValue(3.0F, p, g), 15);
  const std::vector<float> v{-1.0F, 2.0F};
  const GroupParams p2 = wq::chooseParams(v.data(), v.size(), 1, g);
  EXPECT_EQ(p2.zero_point, 5);  // round(1 / 0.2)
  EXPECT_EQ(wq::dequantizeValue(wq::quantizeValue(0.0F, p2, g), p2), 0.0F);
  EXPECT_EQ(wq::quantizeValue(-1.0F, p2, g), 0);
}

TEST(QuantizeWeights, ShortLastBlock) {
  const int64_t k = 40, n = 3, block = 16;  // blocks of 16, 16, 8 rows
  std::vector<float> w = randomWeights(static_cast<size_t>(k * n), 1);
  w[static_cast<size_t>(39 * n + 1)] = 9.0F;  // only in the last block of column 1
  const Grid g{4, true};
  const wq::Quantized q = wq::quantizeBlockwiseK(w.data(), k, n, block, g);
  ASSERT_EQ(q.params.size(), 9U);
  EXPECT_FLOAT_EQ(q.params[2 * n + 1].scale, 9.0F / 7);
  EXPECT_LT(q.params[1 * n + 1].scale, 9.0F / 7);  // the block above does not see it
  for (int64_t r = 0; r < k; ++r) {
    for (int64_t c = 0; c < n; ++c) {
      const GroupParams p = q.params[static_cast<size_t>((r / block) * n + c)];
      const float d = wq::dequantizeValue(q.q[static_cast<size_t>(r * n + c)], p);
      EXPECT_LE(std::fabs(d - w[static_cast<size_t>(r * n + c)]), p.scale / 2 + 1e-6F);
    }
  }
  const double e = wq::relativeRmsError(w.data(), {k, n}, q, block, 0);
  EXPECT_GT(e, 0.0);
  EXPECT_LT(e, 0.2);
}

TEST(QuantizeWeights, NibbleOrder) {
  // Element 0 in the low nibble; signed values two's complement in 4 bits.
  EXPECT_EQ(wq::packNibbles({1, -2, 3}), (std::vector<uint8_t>{0xE1, 0x03}));
  EXPECT_EQ(wq::packNibbles({7, -8}), (std::vector<uint8_t>{0x87}));
}

TEST(QuantizeWeights, MatMulNBitsLayout) {
  // K = 20, N = 2, block 16: B [2, 2, 8]; rows past K are the zero point (8 when symmetric).
  const int64_t k = 20, n = 2, block = 16;
  std::vector<float> w = randomWeights(static_cast<size_t>(k * n), 2);
  for (const bool sym : {true, false}) {
    const Grid g{4, sym};
    const wq::Quantized q = wq::quantizeBlockwiseK(w.data(), k, n, block, g);
    const std::vector<uint8_t> b = wq::packMatMulNBits(q, k, n, block, g);
    ASSERT_EQ(b.size(), 2U * 2 * 8);
    const std::vector<uint8_t> zp = wq::packMatMulNBitsZeroPoints(q, k, n, block);
    ASSERT_EQ(zp.size(), 2U);  // one byte (two blocks) per column
    for (int64_t c = 0; c < n; ++c) {
      for (int64_t row = 0; row < 32; ++row) {
        const int64_t blk = row / 16, j = row % 16;
        const uint8_t byte = b[static_cast<size_t>((c * 2 + blk) * 8 + j / 2)];
        const int32_t u = j % 2 == 0 ? byte & 0x0F : byte >> 4;
        const GroupParams p = q.params[static_cast<size_t>(blk * n + c)];
        const int32_t z =
            sym ? 8
                : (blk == 0 ? zp[static_cast<size_t>(c)] & 0x0F : zp[static_cast<size_t>(c)] >> 4);
        if (!sym) {
          EXPECT_EQ(z, p.zero_point);
        }
        const float got = static_cast<float>(u - z) * p.scale;
        if (row < k) {
          EXPECT_EQ(got, wq::dequantizeValue(q.q[static_cast<size_t>(row * n + c)], p))
              << "row " << row << " col " << c;
        } else {
          EXPECT_EQ(got, 0.0F) << "padding row " << row;
        }
      }
    }
  }
}

// x [2, K] @ W [K, N] with W quantized by the pass; evaluated by folding (our DequantizeLinear
// kernel, blocked or per axis) against x @ dequant(quant(W)) computed here.
void checkPassMatMul(const std::string& mode, bool sym, int64_t opset) {
  const int64_t k = 40, n = 5;
  test::ModelBuilder b(opset);
  Value* x = b.input("x", DataType::kFloat, {2, k});
  const std::vector<float> wv = randomWeights(static_cast<size_t>(k * n), 3);
  Value* w = b.initializer("w", {k, n}, wv);
  b.output(b.op("MatMul", {x, w}, {}, "mm"));
  std::unique_ptr<Model> m = b.build();
  PassOptions po;
  po.weight_quant.mode = mode;
  po.weight_quant.block_size = 16;
  po.weight_quant.symmetric = sym;
  ASSERT_TRUE(test::runPass(*m, "quantize-weights", po));
  EXPECT_EQ(test::countOps(*m->graph, "DequantizeLinear"), 1U);
  const std::vector<float> xv = test::ramp(static_cast<size_t>(2 * k));
  const auto got = test::evaluateByFolding(*m, {{"x", test::floatTensor({2, k}, xv)}});
  const Grid g{mode == "int4" ? 4 : 8, sym};
  const wq::Quantized q = mode == "int4" ? wq::quantizeBlockwiseK(wv.data(), k, n, 16, g)
                                         : wq::quantizePerChannel(wv.data(), {k, n}, 1, g);
  for (int64_t i = 0; i < 2; ++i) {
    for (int64_t c = 0; c < n; ++c) {
      float want = 0;
      for (int64_t r = 0; r < k; ++r) {
        const GroupParams p = q.params[static_cast<size_t>(mode == "int4" ? (r / 16) * n + c : c)];
        want += xv[static_cast<size_t>(i * k + r)] *
                wq::dequantizeValue(q.q[static_cast<size_t>(r * n + c)], p);
      }
      EXPECT_NEAR(got.at(0).at(static_cast<size_t>(i * n + c)), want, 1e-4F) << mode << sym;
    }
  }
}

TEST(QuantizeWeights, PassInt4QdqComputesDequantizedWeights) {
  checkPassMatMul("int4", true, 21);
  checkPassMatMul("int4", false, 21);
}

TEST(QuantizeWeights, PassInt8PerChannel) {
  checkPassMatMul("int8", true, 17);
  checkPassMatMul("int8", false, 17);
}

TEST(QuantizeWeights, PassQ8MakesDynamicIntegerMatMul) {
  const int64_t k = 32, n = 6;
  test::ModelBuilder b(17);
  Value* x = b.input("x", DataType::kFloat, {2, k});
  const std::vector<float> wv = randomWeights(static_cast<size_t>(k * n), 7);
  b.output(b.op("MatMul", {x, b.initializer("w", {k, n}, wv)}, {}, "mm"));
  std::unique_ptr<Model> m = b.build();
  PassOptions po;
  po.weight_quant.mode = "q8";
  ASSERT_TRUE(test::runPass(*m, "quantize-weights", po));
  EXPECT_EQ(test::countOps(*m->graph, "MatMulInteger"), 1U);
  EXPECT_EQ(test::countOps(*m->graph, "DynamicQuantizeLinear"), 1U);
  EXPECT_EQ(test::countOps(*m->graph, "MatMul"), 0U);
  const std::vector<float> xv = test::ramp(static_cast<size_t>(2 * k));
  const auto got = test::evaluateByFolding(*m, {{"x", test::floatTensor({2, k}, xv)}});
  // Both operands carry at most half a step of 8-bit error: within 3% of the output's range.
  std::vector<float> want(static_cast<size_t>(2 * n), 0.0F);
  float lo = 0, hi = 0;
  for (int64_t i = 0; i < 2; ++i) {
    for (int64_t c = 0; c < n; ++c) {
      float& y = want[static_cast<size_t>(i * n + c)];
      for (int64_t r = 0; r < k; ++r)
        y += xv[static_cast<size_t>(i * k + r)] * wv[static_cast<size_t>(r * n + c)];
      lo = std::min(lo, y);
      hi = std::max(hi, y);
    }
  }
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(got.at(0).at(i), want[i], 0.03F * (hi - lo)) << i;
}

TEST(QuantizeWeights, Int4QdqNeedsOpset21) {
  test::ModelBuilder b(17);
  Value* x = b.input("x", DataType::kFloat, {2, 16});
  Value* w = b.initializer("w", {16, 4}, randomWeights(64, 4));
  b.output(b.op("MatMul", {x, w}));
  std::unique_ptr<Model> m = b.build();
  PassOptions po;
  po.weight_quant.mode = "int4";
  EXPECT_THROW(test::runPass(*m, "quantize-weights", po), Error);
}

TEST(QuantizeWeights, Int4OrtMakesMatMulNBits) {
  test::ModelBuilder b(17);
  Value* x = b.input("x", DataType::kFloat, {2, 24});
  Value* w = b.initializer("w", {24, 4}, randomWeights(96, 5));
  b.output(b.op("MatMul", {x, w}, {}, "keep"));
  Value* w2 = b.initializer("w2", {24, 4}, randomWeights(96, 6));
  b.output(b.op("MatMul", {x, w2}, {}, "q"));
  std::unique_ptr<Model> m = b.build();
  PassOptions po;
  po.weight_quant.mode = "int4";
  po.weight_quant.format = "ort";
  po.weight_quant.exclude = {"ke*"};
  ASSERT_TRUE(test::runPass(*m, "quantize-weights", po));
  EXPECT_EQ(test::countOps(*m->graph, "MatMulNBits"), 1U);
  EXPECT_EQ(test::countOps(*m->graph, "MatMul"), 1U);  // excluded by the glob
  for (const Node* n : m->graph->nodes()) {
    if (n->op_type != "MatMulNBits") continue;
    EXPECT_EQ(n->domain, "com.microsoft");
    EXPECT_EQ(n->attrInt("K", 0), 24);
    EXPECT_EQ(n->attrInt("N", 0), 4);
    EXPECT_EQ(n->attrInt("block_size", 0), 32);
    const Tensor* bq = n->input(1)->initializer();
    ASSERT_NE(bq, nullptr);
    EXPECT_EQ(bq->dims(), (std::vector<int64_t>{4, 1, 16}));
    EXPECT_EQ(bq->byteSize(), 64U);
    EXPECT_EQ(n->input(2)->initializer()->dims(), (std::vector<int64_t>{4}));
  }
}

TEST(QuantizeWeights, GatherBlockQuantizedOnRequest) {
  test::ModelBuilder b(17);
  Value* ids = b.input("ids", DataType::kInt64, {2, 3});
  Value* table = b.initializer("emb", {10, 64}, randomWeights(640, 8));
  b.output(b.op("Gather", {table, ids}, {}, "embed"));
  std::unique_ptr<Model> m = b.build();
  PassOptions po;
  po.weight_quant.mode = "int4";
  po.weight_quant.format = "ort";
  EXPECT_FALSE(test::runPass(*m, "quantize-weights", po));  // Gather is not quantized by default
  po.weight_quant.ops = {"MatMul", "Gather"};
  po.weight_quant.symmetric = false;
  ASSERT_TRUE(test::runPass(*m, "quantize-weights", po));
  ASSERT_EQ(test::countOps(*m->graph, "GatherBlockQuantized"), 1U);
  for (const Node* n : m->graph->nodes()) {
    EXPECT_EQ(n->attrInt("quantize_axis", -1), 1);
    EXPECT_EQ(n->input(0)->initializer()->dims(), (std::vector<int64_t>{10, 32}));
    EXPECT_EQ(n->input(2)->initializer()->dims(), (std::vector<int64_t>{10, 2}));
    EXPECT_EQ(n->input(3)->initializer()->dims(), (std::vector<int64_t>{10, 1}));
  }
  po.weight_quant.mode = "int8";
  po.weight_quant.format = "qdq";
  EXPECT_THROW(test::runPass(*m, "quantize-weights", po), Error);  // Gather is int4 ort only
}

}  // namespace
}  // namespace onnxfold
