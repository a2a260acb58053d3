// Deferred folds: a large fold result is a FoldRecipe range, computed when read (by the writer),
// with the bytes an eager fold gives; at most one recipe holds its result at a time; ops whose
// kernel could fail at write time are folded eagerly instead.
#include "passes/fold_recipe.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ir/buffer.h"
#include "onnx/reader.h"
#include "onnx/writer.h"
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

}  // namespace
}  // namespace onnxfold
