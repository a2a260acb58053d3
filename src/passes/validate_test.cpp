// Validation: each rule refuses what it should with a message naming the place, and every
// model we know to be valid (shared models, ONNX node tests, custom-domain models) passes.
#include "passes/validate.h"

#include <gtest/gtest.h>

#include "api/file_io.h"
#include "ir/error.h"
#include "schema/op_schema.h"
#include "test_util.h"

namespace onnxfold {
namespace {

using test::ModelBuilder;

// The message validateModel refuses `m` with, or "" when it accepts it.
std::string refusal(const Model& m) {
  try {
    validateModel(m);
  } catch (const ValidationError& e) {
    return e.what();
  }
  return "";
}

#define EXPECT_REFUSED(model, ...)                                              \
  do {                                                                          \
    const std::string why = refusal(model);                                     \
    EXPECT_FALSE(why.empty()) << "accepted";                                    \
    for (const char* part : {__VA_ARGS__})                                      \
      EXPECT_NE(why.find(part), std::string::npos) << why << " lacks " << part; \
  } while (0)

TEST(OpSchemas, TheGeneratedTableHasEveryVersionOfTheSpec) {
  const OpSchemas& s = OpSchemas::instance();
  EXPECT_GT(s.size(), 600u);
  const OpSchema* conv = s.find("", "Conv", 17);
  ASSERT_NE(conv, nullptr);
  EXPECT_EQ(conv->since_version, 11);
  EXPECT_EQ(conv->min_inputs, 2);
  EXPECT_EQ(conv->max_inputs, 3);
  ASSERT_NE(conv->attribute("kernel_shape"), nullptr);
  EXPECT_EQ(conv->attribute("kernel_shape")->type, AttrType::kInts);
  EXPECT_TRUE(conv->input(2)->optional);
  EXPECT_EQ(s.find("ai.onnx", "Conv", 22)->since_version, 22);
  EXPECT_EQ(s.find("", "Gelu", 19), nullptr);  // Gelu arrived in opset 20
  EXPECT_EQ(s.first("", "Gelu")->since_version, 20);
  const OpSchema* concat = s.find("", "Concat", 13);
  EXPECT_EQ(concat->max_inputs, -1);
  EXPECT_EQ(concat->input(5), &concat->inputs.back());  // the variadic repeats
  EXPECT_GE(s.newestOpset(""), 23);
  EXPECT_FALSE(s.knowsDomain("com.microsoft"));
}

TEST(Validate, AValidModelPassesAndIsNotChanged) {
  ModelBuilder b;
  Value* x = b.input("x", DataType::kFloat, {2, 3});
  Value* w = b.initializer("w", {3, 4}, std::vector<float>(12, 1.0f));
  Value* y = b.op("MatMul", {x, w});
  b.output(b.op("Relu", {y}));
  std::unique_ptr<Model> m = b.build();
  EXPECT_EQ(refusal(*m), "");
  EXPECT_TRUE(y->type.isNone()) << "validation refined a type in the model";
}

TEST(Validate, ModelFields) {
  ModelBuilder b;
  b.output(b.op("Neg", {b.input("x", DataType::kFloat, {2})}));
  std::unique_ptr<Model> m = b.build();
  m->ir_version = 0;
  EXPECT_REFUSED(*m, "no ir_version");
  m->ir_version = 99;
  EXPECT_REFUSED(*m, "ir_version 99", "newer", "13");
  m->ir_version = 8;
  m->opset_import[0].version = 99;
  EXPECT_REFUSED(*m, "opset 99 of ai.onnx", "newer than onnxfold knows");
}

TEST(Validate, NodeAgainstItsSchema) {
  {
    ModelBuilder b;
    Value* x = b.input("x", DataType::kFloat, {2});
    b.output(b.op("Cast", {x}, test::attrs(Attribute::makeInt("to", 999)), "c"));
    EXPECT_REFUSED(*b.build(), "node 'c' (Cast)", "'to' = 999", "not a known data type");
  }
  {
    ModelBuilder b;
    Value* x = b.input("x", DataType::kFloat, {2});
    b.output(b.op("Cast", {x}, {}, "c"));
    EXPECT_REFUSED(*b.build(), "requires attribute 'to'");
  }
  {
    ModelBuilder b;
    Value* x = b.input("x", DataType::kFloat, {2});
    b.output(b.op("Cast", {x}, test::attrs(Attribute::makeFloat("to", 1.0f)), "c"));
    EXPECT_REFUSED(*b.build(), "attribute 'to' is FLOAT", "takes INT");
  }
  {
    ModelBuilder b;
    Value* x = b.input("x", DataType::kFloat, {2});
    b.output(b.op("Relu", {x, x}, {}, "r"));
    EXPECT_REFUSED(*b.build(), "has 2 inputs", "Relu-14 takes 1");
  }
  {
    ModelBuilder b;
    Value* x = b.input("x", DataType::kFloat, {2});
    b.output(b.op("Relu", {x}, test::attrs(Attribute::makeInt("alpha", 1)), "r"));
    EXPECT_REFUSED(*b.build(), "Relu-14 has no attribute 'alpha'");
  }
  {
    ModelBuilder b;
    b.output(b.op("NoSuchOp", {b.input("x", DataType::kFloat, {2})}));
    EXPECT_REFUSED(*b.build(), "'NoSuchOp' is not an operator of ai.onnx");
  }
  {
    ModelBuilder b(17);
    b.output(b.op("Gelu", {b.input("x", DataType::kFloat, {2})}));
    EXPECT_REFUSED(*b.build(), "Gelu exists from opset 20", "imports opset 17");
  }
  {
    ModelBuilder b;
    Value* x = b.input("x", DataType::kFloat, {2});
    b.output(b.op(
        "Constant", {},
        test::attrs(Attribute::makeFloat("value_float", 1), Attribute::makeInt("value_int", 1))));
    (void)x;
    EXPECT_REFUSED(*b.build(), "exactly one value attribute");
  }
}

TEST(Validate, TypeConstraints) {
  {
    ModelBuilder b;
    Value* x = b.input("x", DataType::kString, {2});
    b.output(b.op("Relu", {x}, {}, "r"));
    EXPECT_REFUSED(*b.build(), "input 0 'x' is tensor(string)", "Relu-14 takes T");
  }
  {
    ModelBuilder b;
    Value* x = b.input("x", DataType::kFloat, {2});
    Value* y = b.input("y", DataType::kInt64, {2});
    b.output(b.op("Add", {x, y}, {}, "a"));
    EXPECT_REFUSED(*b.build(), "input 1 'y' is tensor(int64)", "binds T to another type");
  }
}

TEST(Validate, InferenceContradictions) {
  {
    // A constant shape that cannot hold the input.
    ModelBuilder b;
    Value* x = b.input("x", DataType::kFloat, {2, 3});
    Value* s = b.initializer(test::int64Tensor({1}, {5}, "shape"));
    b.output(b.op("Reshape", {x, s}, {}, "r"));
    EXPECT_REFUSED(*b.build(), "node 'r' (Reshape)");
  }
  {
    // A Conv whose weight rank disagrees with its input.
    ModelBuilder b;
    Value* x = b.input("x", DataType::kFloat, {1, 3, 8, 8});
    Value* w = b.initializer("w", {4, 3, 3}, std::vector<float>(36, 1.0f));
    b.output(b.op("Conv", {x, w}, {}, "c"));
    EXPECT_REFUSED(*b.build(), "node 'c' (Conv)");
  }
  {
    // A dynamic input is not a contradiction.
    ModelBuilder b;
    Value* x = b.input("x", DataType::kFloat, {-1, 6});
    Value* s = b.initializer(test::int64Tensor({2}, {-1, 3}, "shape"));
    b.output(b.op("Reshape", {x, s}));
    EXPECT_EQ(refusal(*b.build()), "");
  }
}

TEST(Validate, IfBranchesMustMatchTheNode) {
  ModelBuilder b;
  Value* c = b.input("c", DataType::kBool, {});
  Value* x = b.input("x", DataType::kFloat, {2});
  Node* n = b.node("If", {c}, 1, {}, "if");
  for (const char* branch : {"then_branch", "else_branch"}) {
    Graph& g = b.subgraph(n, branch);
    Node* neg = g.addNode(GraphBuilder::key(), "Neg", {x}, 1);
    g.addOutput(GraphBuilder::key(), neg->output(0));
    if (std::string(branch) == "else_branch") g.addOutput(GraphBuilder::key(), neg->output(0));
  }
  b.output(n->output(0));
  EXPECT_REFUSED(*b.build(), "node 'if' (If)", "else_branch gives 2 outputs", "has 1");
}

TEST(Validate, CustomDomainsPassThrough) {
  ModelBuilder b;
  b.importDomain("com.example", 1);
  Node* n = b.node("Anything", {b.input("x", DataType::kFloat, {2})}, 3,
                   test::attrs(Attribute::makeInt("whatever", 7)));
  n->domain = "com.example";
  b.output(n->output(0));
  EXPECT_EQ(refusal(*b.build()), "");
}

TEST(Validate, EveryModelWeKnowIsValid) {
  ONNXFOLD_REQUIRE_SHARED();
  size_t n = 0;
  std::vector<std::string> refused;
  for (const std::string& path : test::allSharedModels()) {
    ++n;
    try {
      validateFile(path);
    } catch (const ValidationError& e) {
      refused.push_back(test::shortPath(path) + ": " + e.what());
    } catch (const Error&) {
      // Unreadable for the reader (external data missing...): not validation's business.
    }
  }
  EXPECT_GT(n, 1000u);
  std::string list;
  for (size_t i = 0; i < refused.size() && i < 40; ++i)
    list += refused[i] + "\n";
  EXPECT_TRUE(refused.empty()) << refused.size() << " of " << n << " refused:\n" << list;
}

}  // namespace
}  // namespace onnxfold
