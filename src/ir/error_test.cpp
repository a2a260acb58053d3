// Error messages are one line of valid UTF-8 of at most kMaxErrorBytes, whatever bytes the model
// put in its names; and the JSON report survives such names.
#include "ir/error.h"

#include <gtest/gtest.h>

#include <string>

#include "api/onnxfold.h"
#include "onnx/writer.h"
#include "test_util.h"

namespace onnxfold {
namespace {

bool validUtf8(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (size_t k = 1; k < n; ++k)
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    i += n;
  }
  return true;
}

TEST(ErrorText, ValidUtf8OneLineBounded) {
  const std::string name = "node \xff\xfe\xc0\x80 \xed\xa0\x80 caf\xc3\xa9\n";
  const Error e("graph 'g' > " + name + std::string(5000, 'x') + " is wrong");
  const std::string what = e.what();
  EXPECT_TRUE(validUtf8(what)) << what;
  EXPECT_LE(what.size(), kMaxErrorBytes);
  EXPECT_EQ(what.find('\n'), std::string::npos);
  EXPECT_NE(what.find("caf\xc3\xa9"), std::string::npos) << "valid characters are kept";
  EXPECT_NE(what.find("\xEF\xBF\xBD"), std::string::npos) << "bad bytes become U+FFFD";
  EXPECT_NE(what.find("bytes ...]"), std::string::npos);
  EXPECT_NE(what.find("is wrong"), std::string::npos) << "the end of the message is kept";
  EXPECT_EQ(std::string(Error("short").what()), "short");
}

TEST(ErrorText, AModelWithBinaryNamesIsRefusedInValidUtf8AndItsSummaryIsValidJson) {
  test::ModelBuilder b;
  Value* x = b.input("x\xff", DataType::kFloat, {2});
  b.output(b.op("Neg", {x}, {}, "n\xfe"));
  const std::string bytes = writeModelToString(*b.build());
  StringSink out;
  Options o;
  o.passes = {"fold-constants"};
  try {
    optimize(test::bufferOf(bytes), out, o);
    ADD_FAILURE() << "a model whose names are not UTF-8 was accepted";
  } catch (const ValidationError& e) {
    EXPECT_TRUE(validUtf8(e.what())) << e.what();
    EXPECT_NE(std::string(e.what()).find("not valid UTF-8"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(out.out.empty());
  // `info` still describes it, and its JSON stays valid.
  std::string json;
  ASSERT_NO_THROW(json = inspect(test::bufferOf(bytes)).toJson());
  EXPECT_TRUE(validUtf8(json));
  EXPECT_NE(json.find("x\xEF\xBF\xBD"), std::string::npos);
}

}  // namespace
}  // namespace onnxfold
