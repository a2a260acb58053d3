// The attribute defaults of the generated table (tools/gen_op_schemas.py keeps the spec's
// "(default is X)" of INT, FLOAT and STRING attributes): read with the attribute's type.
#include "schema/op_schema.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>

namespace onnxfold {
namespace {

const AttributeSchema& attribute(std::string_view op, int64_t opset, std::string_view name,
                                 std::string_view domain = "") {
  const OpSchema* s = OpSchemas::instance().find(domain, op, opset);
  EXPECT_NE(s, nullptr) << op << " at opset " << opset;
  const AttributeSchema* a = s ? s->attribute(name) : nullptr;
  EXPECT_NE(a, nullptr) << op << "." << name;
  static const AttributeSchema kNone;
  return a ? *a : kNone;
}

TEST(OpSchemaDefaults, ScalarDefaultsHaveTheAttributesType) {
  const AttributeSchema& eps = attribute("LayerNormalization", 17, "epsilon");
  EXPECT_EQ(eps.type, AttrType::kFloat);
  ASSERT_EQ(eps.default_value.type, AttrType::kFloat);
  EXPECT_EQ(eps.default_value.f, 1e-5f);

  const AttributeSchema& ln_axis = attribute("LayerNormalization", 17, "axis");
  ASSERT_EQ(ln_axis.default_value.type, AttrType::kInt);
  EXPECT_EQ(ln_axis.default_value.i, -1);

  const AttributeSchema& gather_axis = attribute("Gather", 13, "axis");
  ASSERT_EQ(gather_axis.default_value.type, AttrType::kInt);
  EXPECT_EQ(gather_axis.default_value.i, 0);

  const AttributeSchema& mode = attribute("Resize", 19, "mode");
  ASSERT_EQ(mode.default_value.type, AttrType::kString);
  EXPECT_EQ(mode.default_value.s, "nearest");
  EXPECT_EQ(attribute("Resize", 19, "cubic_coeff_a").default_value.f, -0.75f);
  EXPECT_EQ(attribute("Resize", 19, "coordinate_transformation_mode").default_value.s,
            "half_pixel");

  EXPECT_EQ(attribute("Concat", 13, "axis").default_value.type, AttrType::kUndefined);
  EXPECT_EQ(attribute("Softmax", 13, "axis").default_value.i, -1);
  EXPECT_EQ(attribute("Softmax", 11, "axis").default_value.i, 1);  // per version
  EXPECT_EQ(attribute("Gemm", 13, "alpha").default_value.f, 1.0f);
  EXPECT_EQ(attribute("Cast", 21, "saturate").default_value.i, 1);
}

TEST(OpSchemaDefaults, RequiredAndListAttributesHaveNone) {
  const AttributeSchema& eq = attribute("Einsum", 12, "equation");
  EXPECT_TRUE(eq.required);
  EXPECT_FALSE(eq.hasDefault());
  EXPECT_FALSE(attribute("LSTM", 14, "hidden_size").hasDefault());  // optional, no default
  // List defaults are not kept (RNN's activations ['Tanh', 'Tanh']).
  EXPECT_FALSE(attribute("RNN", 14, "activations").hasDefault());
}

TEST(OpSchemaDefaults, PrintedFloatsAreWhatTheChangelogSays) {
  // "(3.402823e+38)": the parentheses are dropped; the value is the printed one, not FLT_MAX.
  const AttributeSchema& max = attribute("Clip", 6, "max");
  ASSERT_EQ(max.default_value.type, AttrType::kFloat);
  EXPECT_EQ(max.default_value.f, 3.402823e+38f);
  EXPECT_LT(max.default_value.f, std::numeric_limits<float>::max());
  EXPECT_EQ(attribute("Clip", 6, "min").default_value.f, -3.402823e+38f);
  // Rounded to 5 decimals: Selu's alpha is 1.67326319... in the spec's C++.
  EXPECT_EQ(attribute("Selu", 6, "alpha").default_value.f, 1.67326f);
}

}  // namespace
}  // namespace onnxfold
