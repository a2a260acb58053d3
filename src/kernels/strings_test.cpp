// Tests of the strings family: StringNormalizer (case-insensitive stopwords,
// case mapping), StringConcat, StringSplit, RegexFullMatch and
// TfIdfVectorizer with skip-grams.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "kernels/kernel_test_util.h"
#include "kernels/op_registry.h"
#include "test_util.h"

namespace onnxfold {
namespace {

constexpr auto floats = &test::floatValues;

TEST(Strings, StringOps) {
  const Tensor x = test::stringTensor({4}, {"Monday", "tuesday", "MONDAY", "Straße"});
  const auto norm = test::runOp("StringNormalizer", {&x},
                                test::attrs(Attribute::makeString("case_change_action", "UPPER"),
                                            test::stringsAttr("stopwords", {"monday"})),
                                10, 1);
  // Case-insensitive stopwords; simple (length-preserving) case mapping keeps ß.
  EXPECT_EQ(norm[0].strings(), (std::vector<std::string>{"TUESDAY", "STRAßE"}));
  const Tensor a = test::stringTensor({2}, {"a", "b"});
  const Tensor b = test::stringTensor({}, {"!"});
  EXPECT_EQ(test::runOp("StringConcat", std::vector<const Tensor*>{&a, &b}, {}, 20, 1)[0].strings(),
            (std::vector<std::string>{"a!", "b!"}));
  const Tensor s = test::stringTensor({2}, {" x  y z ", "a,b,,c"});
  const auto ws =
      test::runOp("StringSplit", {&s}, test::attrs(Attribute::makeInt("maxsplit", 1)), 20, 2);
  EXPECT_EQ(ws[0].strings(), (std::vector<std::string>{"x", "y z ", "a,b,,c", ""}));
  const auto comma =
      test::runOp("StringSplit", {&s}, test::attrs(Attribute::makeString("delimiter", ",")), 20, 2);
  ASSERT_EQ(comma[0].dims(), (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(comma[1].at<int64_t>(1), 4);
  EXPECT_EQ(comma[0].strings()[6], "");
  const auto re = test::runOp("RegexFullMatch", {&a},
                              test::attrs(Attribute::makeString("pattern", "[a-a]")), 20, 1);
  EXPECT_EQ(re[0].at<bool>(0), true);
  EXPECT_EQ(re[0].at<bool>(1), false);
}

TEST(Strings, TfIdfVectorizer) {
  Tensor x(DataType::kInt64, {6});
  const int64_t vals[] = {1, 2, 1, 3, 1, 2};
  std::memcpy(x.mutableBytes(), vals, sizeof vals);
  const auto out = test::runOp(
      "TfIdfVectorizer", {&x},
      test::attrs(Attribute::makeInt("min_gram_length", 1),
                  Attribute::makeInt("max_gram_length", 2), Attribute::makeInt("max_skip_count", 1),
                  Attribute::makeString("mode", "TFIDF"),
                  Attribute::makeInts("ngram_counts", {0, 2}),
                  Attribute::makeInts("ngram_indexes", {0, 1, 2}),
                  Attribute::makeInts("pool_int64s", {1, 2, 1, 2}),
                  Attribute::makeFloats("weights", {1, 1, 0.5f})),
      9, 1);
  // Unigrams 1 (x3) and 2 (x2); bigram (1,2) adjacent twice, never at distance 2.
  const auto v = floats(out[0]);
  EXPECT_EQ(v[0], 3);
  EXPECT_EQ(v[1], 2);
  EXPECT_EQ(v[2], 0.5f * 2);
}

}  // namespace
}  // namespace onnxfold
