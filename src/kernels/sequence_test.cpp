// Sequence and optional kernels (kernels/sequence.cpp), and their folding.
#include <gtest/gtest.h>

#include "ir/error.h"
#include "ir/printer.h"
#include "kernels/kernel_test_util.h"
#include "test_util.h"

namespace onnxfold {
namespace {

using test::attrs;
using test::countOps;
using test::floatTensor;
using test::floatValues;
using test::ModelBuilder;
using test::runOp;
using test::runPass;

Tensor seqOf(std::vector<Tensor> e) {
  const DataType dt = e.empty() ? DataType::kFloat : e[0].dtype();
  return Tensor::sequence(dt, std::move(e));
}

std::vector<std::vector<float>> floatsOf(const Tensor& seq) {
  std::vector<std::vector<float>> out;
  for (const Tensor& e : seq.elements())
    out.push_back(floatValues(e));
  return out;
}

Tensor one(float v) {
  return floatTensor({1}, {v});
}

TEST(Sequence, InsertAtAndEraseFollowTheSpecPositions) {
  const Tensor s = seqOf({one(1), one(2)});
  // Insert at the end by default, at -1 before the last, at n (= the end).
  EXPECT_EQ(floatsOf(runOp("SequenceInsert", {s, one(9)}, {}, 11, 1)[0]),
            (std::vector<std::vector<float>>{{1}, {2}, {9}}));
  EXPECT_EQ(floatsOf(runOp("SequenceInsert", {s, one(9), test::scalarI64(-1)}, {}, 11, 1)[0]),
            (std::vector<std::vector<float>>{{1}, {9}, {2}}));
  EXPECT_EQ(floatsOf(runOp("SequenceInsert", {s, one(9), test::scalarI64(2)}, {}, 11, 1)[0]),
            (std::vector<std::vector<float>>{{1}, {2}, {9}}));
  EXPECT_THROW(runOp("SequenceInsert", {s, one(9), test::scalarI64(3)}, {}, 11, 1), Error);
  // SequenceAt takes [-n, n - 1].
  EXPECT_EQ(floatValues(runOp("SequenceAt", {s, test::scalarI64(-2)}, {}, 11, 1)[0]),
            std::vector<float>{1});
  EXPECT_THROW(runOp("SequenceAt", {s, test::scalarI64(2)}, {}, 11, 1), Error);
  // SequenceErase removes the last by default.
  EXPECT_EQ(floatsOf(runOp("SequenceErase", {s}, {}, 11, 1)[0]),
            (std::vector<std::vector<float>>{{1}}));
  EXPECT_EQ(test::ints(runOp("SequenceLength", {s}, {}, 11, 1)[0]), std::vector<int64_t>{2});
  EXPECT_THROW(runOp("SequenceInsert", {s, test::scalarI64(1)}, {}, 11, 1), Error);  // type
}

TEST(Sequence, SplitToSequenceChunksAndSqueezes) {
  const Tensor x = floatTensor({5, 2}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  // A scalar split: chunks of 2, the last one shorter.
  const Tensor s = runOp("SplitToSequence", {x, test::scalarI64(2)}, {}, 11, 1)[0];
  EXPECT_EQ(floatsOf(s), (std::vector<std::vector<float>>{{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9}}));
  EXPECT_EQ(s.elements()[2].dims(), (std::vector<int64_t>{1, 2}));
  // No split: pieces of 1, squeezed with keepdims = 0.
  const Tensor t =
      runOp("SplitToSequence", {x},
            attrs(Attribute::makeInt("axis", 1), Attribute::makeInt("keepdims", 0)), 11, 1)[0];
  ASSERT_EQ(t.elements().size(), 2u);
  EXPECT_EQ(t.elements()[1].dims(), (std::vector<int64_t>{5}));
  EXPECT_EQ(floatValues(t.elements()[1]), (std::vector<float>{1, 3, 5, 7, 9}));
  // Sizes that do not add up are refused.
  EXPECT_THROW(runOp("SplitToSequence", {x, test::i64({2}, {1, 1})}, {}, 11, 1), Error);
}

TEST(Sequence, ConcatFromSequenceJoinsOrStacks) {
  const Tensor s = seqOf({floatTensor({1, 2}, {1, 2}), floatTensor({1, 2}, {3, 4})});
  const Tensor cat =
      runOp("ConcatFromSequence", {s}, attrs(Attribute::makeInt("axis", 1)), 11, 1)[0];
  EXPECT_EQ(cat.dims(), (std::vector<int64_t>{1, 4}));
  const Tensor st =
      runOp("ConcatFromSequence", {s},
            attrs(Attribute::makeInt("axis", -1), Attribute::makeInt("new_axis", 1)), 11, 1)[0];
  EXPECT_EQ(st.dims(), (std::vector<int64_t>{1, 2, 2}));
  EXPECT_EQ(floatValues(st), (std::vector<float>{1, 3, 2, 4}));
}

TEST(Optional, HasAndGetElement) {
  const Tensor none = Tensor::none();
  const Tensor x = one(5);
  EXPECT_EQ(
      runOp("OptionalHasElement", std::vector<const Tensor*>{&none}, {}, 18, 1)[0].at<uint8_t>(0),
      0);
  EXPECT_EQ(
      runOp("OptionalHasElement", std::vector<const Tensor*>{&x}, {}, 18, 1)[0].at<uint8_t>(0), 1);
  EXPECT_EQ(
      runOp("OptionalHasElement", std::vector<const Tensor*>{nullptr}, {}, 18, 1)[0].at<uint8_t>(0),
      0);
  EXPECT_EQ(floatValues(runOp("OptionalGetElement", std::vector<const Tensor*>{&x}, {}, 18, 1)[0]),
            std::vector<float>{5});
  EXPECT_THROW(runOp("OptionalGetElement", std::vector<const Tensor*>{&none}, {}, 18, 1), Error);
}

// A list built and read back within the model folds to a plain initializer; a sequence
// the model returns is written as SequenceConstruct of constants.
TEST(SequenceFold, ListsFoldAndReturnedSequencesBecomeConstructs) {
  ModelBuilder b(17);
  Value* x = b.initializer("x", {4}, {1, 2, 3, 4});
  Value* seq = b.op("SplitToSequence", {x, b.initializer(test::scalarI64(2))});
  Value* back = b.op("ConcatFromSequence", {seq}, attrs(Attribute::makeInt("axis", 0)));
  Value* neg = b.op("Neg", {back});
  b.output(neg);
  b.output(seq);
  std::unique_ptr<Model> m = b.build();
  m->graph->outputs()[1]->type = Type::sequence(Type::tensor(DataType::kFloat));
  runPass(*m, "fold-constants");
  runPass(*m, "dce");
  const Graph& g = *m->graph;
  ASSERT_TRUE(g.outputs()[0]->isConstant()) << toString(*m);
  EXPECT_EQ(floatValues(*g.outputs()[0]->initializer()), (std::vector<float>{-1, -2, -3, -4}));
  const Node* p = g.outputs()[1]->producer();
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->op_type, "SequenceConstruct");
  EXPECT_EQ(p->numInputs(), 2u);
  EXPECT_EQ(countOps(g, "SplitToSequence"), 0u);
  EXPECT_FALSE(runPass(*m, "fold-constants"));  // the canonical form stays: a fixpoint
}

}  // namespace
}  // namespace onnxfold
