// Tests of the misc family: losses (weights, ignore_index, reductions, SCE's
// log_prob), Det, string ops, TfIdfVectorizer, the ai.onnx.ml ops, the
// training optimizers, and that random generators infer but never evaluate.
#include <gtest/gtest.h>

#include <cmath>

#include "ir/error.h"
#include "kernels/common.h"
#include "kernels/op_registry.h"
#include "test_util.h"

namespace onnxfold {
namespace {

std::vector<Tensor> run(const std::string& op, const std::vector<const Tensor*>& ins,
                        std::vector<Attribute> attrs = {}, int64_t opset = 22,
                        size_t num_outputs = 1, const std::string& domain = "") {
  return test::runOp(op, ins, std::move(attrs), opset, num_outputs, domain);
}

constexpr auto floats = &test::floatValues;

Tensor strings(std::vector<int64_t> dims, std::vector<std::string> v) {
  Tensor t(DataType::kString, std::move(dims));
  t.mutableStrings() = std::move(v);
  return t;
}

Attribute stringsAttr(const std::string& name, std::vector<std::string> v) {
  Attribute a;
  a.name = name;
  a.type = AttrType::kStrings;
  a.strings = std::move(v);
  return a;
}

TEST(Misc, NllLossWeightsAndIgnoreIndex) {
  const Tensor x = test::floatTensor({2, 3}, {-1, -2, -3, -4, -5, -6});
  const Tensor target = test::int64Tensor({2}, {2, 0});
  const Tensor weight = test::floatTensor({3}, {0.5f, 1, 2});
  const auto none = run("NegativeLogLikelihoodLoss", {&x, &target, &weight},
                        test::attrs(Attribute::makeString("reduction", "none")));
  EXPECT_EQ(floats(none[0]), (std::vector<float>{6, 2}));
  const auto mean = run("NegativeLogLikelihoodLoss", {&x, &target, &weight});
  EXPECT_NEAR(floats(mean[0])[0], 8.0 / 2.5, 1e-6);
  const auto ignored = run("NegativeLogLikelihoodLoss", {&x, &target, &weight},
                           test::attrs(Attribute::makeInt("ignore_index", 0)));
  EXPECT_NEAR(floats(ignored[0])[0], 6.0 / 2.0, 1e-6);
  EXPECT_TRUE(ignored[0].dims().empty());
}

TEST(Misc, SoftmaxCrossEntropyLogProb) {
  const Tensor x = test::floatTensor({1, 2, 2}, {0, 1, 0, 1});  // [N, C, d1]
  const Tensor target = test::int64Tensor({1, 2}, {0, 1});
  const auto out = run("SoftmaxCrossEntropyLoss", {&x, &target},
                       test::attrs(Attribute::makeString("reduction", "sum")), 13, 2);
  const double lp = std::log(0.5);
  for (float v : floats(out[1]))
    EXPECT_NEAR(v, lp, 1e-6);
  EXPECT_NEAR(floats(out[0])[0], -2 * lp, 1e-6);
}

TEST(Misc, Det) {
  const Tensor x = test::floatTensor({2, 3, 3}, {2, 0, 1, 1, 3, 2, 1, 1, 2,  //
                                                 0, 1, 0, 1, 0, 0, 0, 0, 1});
  const auto out = run("Det", {&x});
  ASSERT_EQ(out[0].dims(), (std::vector<int64_t>{2}));
  EXPECT_NEAR(floats(out[0])[0], 6.0, 1e-5);  // 2(6-2) - 0 + 1(1-3)
  EXPECT_NEAR(floats(out[0])[1], -1.0, 1e-6);
}

TEST(Misc, RandomOpsInferButNeverEvaluate) {
  const Tensor x = test::floatTensor({2}, {0.5f, 0.5f});
  EXPECT_THROW(run("Bernoulli", {&x}), Error);
  const OpEntry* e = OpRegistry::instance().find("", "RandomUniformLike", 22);
  ASSERT_NE(e, nullptr);
  EXPECT_TRUE(e->flags & kOpNondeterministic);
  EXPECT_EQ(e->compute, nullptr);
}

TEST(Misc, StringOps) {
  const Tensor x = strings({4}, {"Monday", "tuesday", "MONDAY", "Straße"});
  const auto norm = run("StringNormalizer", {&x},
                        test::attrs(Attribute::makeString("case_change_action", "UPPER"),
                                    stringsAttr("stopwords", {"monday"})),
                        10);
  // Case-insensitive stopwords; simple (length-preserving) case mapping keeps ß.
  EXPECT_EQ(norm[0].strings(), (std::vector<std::string>{"TUESDAY", "STRAßE"}));
  const Tensor a = strings({2}, {"a", "b"});
  const Tensor b = strings({}, {"!"});
  EXPECT_EQ(run("StringConcat", {&a, &b}, {}, 20)[0].strings(),
            (std::vector<std::string>{"a!", "b!"}));
  const Tensor s = strings({2}, {" x  y z ", "a,b,,c"});
  const auto ws = run("StringSplit", {&s}, test::attrs(Attribute::makeInt("maxsplit", 1)), 20, 2);
  EXPECT_EQ(ws[0].strings(), (std::vector<std::string>{"x", "y z ", "a,b,,c", ""}));
  const auto comma =
      run("StringSplit", {&s}, test::attrs(Attribute::makeString("delimiter", ",")), 20, 2);
  ASSERT_EQ(comma[0].dims(), (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(comma[1].at<int64_t>(1), 4);
  EXPECT_EQ(comma[0].strings()[6], "");
  const auto re =
      run("RegexFullMatch", {&a}, test::attrs(Attribute::makeString("pattern", "[a-a]")), 20);
  EXPECT_EQ(re[0].at<bool>(0), true);
  EXPECT_EQ(re[0].at<bool>(1), false);
}

TEST(Misc, TfIdfVectorizer) {
  Tensor x(DataType::kInt64, {6});
  const int64_t vals[] = {1, 2, 1, 3, 1, 2};
  std::memcpy(x.mutableBytes(), vals, sizeof vals);
  const auto out =
      run("TfIdfVectorizer", {&x},
          test::attrs(
              Attribute::makeInt("min_gram_length", 1), Attribute::makeInt("max_gram_length", 2),
              Attribute::makeInt("max_skip_count", 1), Attribute::makeString("mode", "TFIDF"),
              Attribute::makeInts("ngram_counts", {0, 2}),
              Attribute::makeInts("ngram_indexes", {0, 1, 2}),
              Attribute::makeInts("pool_int64s", {1, 2, 1, 2}),
              Attribute::makeFloats("weights", {1, 1, 0.5f})),
          9);
  // Unigrams 1 (x3) and 2 (x2); bigram (1,2) adjacent twice, never at distance 2.
  const auto v = floats(out[0]);
  EXPECT_EQ(v[0], 3);
  EXPECT_EQ(v[1], 2);
  EXPECT_EQ(v[2], 0.5f * 2);
}

TEST(Misc, LabelEncoderAndFeatureOps) {
  const Tensor x = strings({3}, {"a", "z", "b"});
  const auto le = run("LabelEncoder", {&x},
                      test::attrs(stringsAttr("keys_strings", {"a", "b"}),
                                  Attribute::makeFloats("values_floats", {1.5f, 2.5f})),
                      2, 1, "ai.onnx.ml");
  EXPECT_EQ(le[0].dtype(), DataType::kFloat);
  const auto lv = floats(le[0]);
  EXPECT_EQ(lv[0], 1.5f);
  EXPECT_TRUE(std::signbit(lv[1]) && lv[1] == 0);  // default_float is -0.0
  EXPECT_EQ(lv[2], 2.5f);
  const Tensor m = test::floatTensor({2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor idx = test::int64Tensor({2}, {2, 0});
  const auto afe = run("ArrayFeatureExtractor", {&m, &idx}, {}, 1, 1, "ai.onnx.ml");
  EXPECT_EQ(floats(afe[0]), (std::vector<float>{3, 1, 6, 4}));
  const auto bin = run("Binarizer", {&m}, test::attrs(Attribute::makeFloat("threshold", 3.5f)), 1,
                       1, "ai.onnx.ml");
  EXPECT_EQ(floats(bin[0]), (std::vector<float>{0, 0, 0, 1, 1, 1}));
}

TEST(Misc, MomentumNesterov) {
  const Tensor r = test::floatTensor({}, {0.1f});
  const Tensor t = test::int64Tensor({}, {1});
  const Tensor x = test::floatTensor({1}, {1});
  const Tensor g = test::floatTensor({1}, {2});
  const Tensor v = test::floatTensor({1}, {3});
  const auto out =
      run("Momentum", {&r, &t, &x, &g, &v},
          test::attrs(Attribute::makeFloat("alpha", 0.5f), Attribute::makeFloat("beta", 0.25f),
                      Attribute::makeString("mode", "nesterov"),
                      Attribute::makeFloat("norm_coefficient", 0.0f)),
          1, 2, "ai.onnx.preview.training");
  const double vn = 0.5 * 3 + 0.25 * 2;
  EXPECT_NEAR(floats(out[1])[0], vn, 1e-6);
  EXPECT_NEAR(floats(out[0])[0], 1 - 0.1 * (2 + 0.5 * vn), 1e-6);
}

}  // namespace
}  // namespace onnxfold
