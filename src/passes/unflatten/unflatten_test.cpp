// Unflatten tests: the module tree (from names and from torch metadata),
// outline-functions (deduplication, weight-free bodies, granularity),
// inline-functions (attribute references, round trip) and split-constants.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <sstream>

#include "api/onnxfold.h"
#include "ir/error.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "onnx/reader.h"
#include "onnx/writer.h"
#include "passes/analysis/module_tree.h"
#include "passes/registry.h"
#include "passes/unflatten/unflatten_passes.h"
#include "test_util.h"

namespace onnxfold {
namespace {

using test::attrs;
using test::floatTensor;
using test::ModelBuilder;

bool runPass(Model& m, const std::string& name, std::map<std::string, std::string> extra = {}) {
  PassOptions options;
  options.extra = std::move(extra);
  return test::runPass(m, name, options);
}

const Module* findModule(const Module& m, const std::string& path) {
  if (m.path == path) return &m;
  for (const auto& c : m.children) {
    if (const Module* f = findModule(*c, path)) return f;
  }
  return nullptr;
}

// The graph as text without value_info lines: function bodies carry no types (one body
// serves calls of different shapes), so inlined values come back untyped.
std::string graphText(const Graph& g) {
  std::string out, line;
  std::istringstream in(toString(g));
  while (std::getline(in, line)) {
    if (line.rfind("    info ", 0) != 0) out += line + "\n";
  }
  return out;
}

// graphText with the lines sorted: a call goes where its inputs are ready, so nodes a
// module's signature places elsewhere (unscoped weight nodes) may come back in another
// (still topological) order.
std::string sortedGraphText(const Graph& g) {
  std::vector<std::string> lines;
  std::string line;
  std::istringstream in(graphText(g));
  while (std::getline(in, line))
    lines.push_back(line);
  std::sort(lines.begin(), lines.end());
  std::string out;
  for (const std::string& l : lines)
    out += l + "\n";
  return out;
}

std::map<std::string, size_t> opCounts(const Graph& g) {
  std::map<std::string, size_t> ops;
  for (const Node* n : g.nodes())
    ++ops[n->domain + "::" + n->op_type];
  return ops;
}

size_t callsOf(const Graph& g, const std::string& fname) {
  size_t n = 0;
  for (const Node* node : g.nodes())
    n += node->op_type == fname && node->domain == kModuleFunctionDomain;
  return n;
}

// A block "/blocks.<i>": MatMul by its weight, Add its bias, then `act` (with a Constant
// scale for the Mul), named as the TorchScript exporter names nodes.
Value* addBlock(ModelBuilder& b, Value* x, int i, const std::string& act = "Relu",
                float scale = 2.0f) {
  const std::string p = "/blocks." + std::to_string(i);
  Value* w = b.initializer("blocks." + std::to_string(i) + ".weight", {4, 4},
                           std::vector<float>(16, 0.1f * static_cast<float>(i + 1)));
  Value* bias = b.initializer("blocks." + std::to_string(i) + ".bias", {4}, {1, 2, 3, 4});
  Value* mm = b.op("MatMul", {x, w}, {}, p + "/linear/MatMul");
  Value* add = b.op("Add", {mm, bias}, {}, p + "/linear/Add");
  Node* c =
      b.node("Constant", {}, 1, attrs(Attribute::makeTensor("value", floatTensor({}, {scale}))),
             "Constant_" + std::to_string(10 + i));  // unscoped, as torch leaves some
  Value* mul = b.op("Mul", {add, c->output(0)}, {}, p + "/Mul");
  return b.op(act, {mul}, {}, p + "/act/" + act);
}

std::unique_ptr<Model> blocksModel(const std::vector<std::string>& acts,
                                   std::vector<float> scales = {}) {
  ModelBuilder b;
  Value* x = b.input("x", DataType::kFloat, {2, 4});
  Value* h = b.op("Relu", {x}, {}, "/stem/Relu");
  for (size_t i = 0; i < acts.size(); ++i) {
    h = addBlock(b, h, static_cast<int>(i), acts[i], i < scales.size() ? scales[i] : 2.0f);
  }
  b.output(b.op("Neg", {h}, {}, "/head/Neg"));
  return b.build();
}

// ------------------------------------------------------------------ tree

TEST(ModuleTree, FromNodeNamesWithUnscopedConstantsJoiningTheirUser) {
  std::unique_ptr<Model> m = blocksModel({"Relu", "Relu"});
  ModuleTree tree(*m->graph);
  const Module& root = tree.root();
  EXPECT_EQ(root.nodes, m->graph->numNodes());
  ASSERT_EQ(root.children.size(), 4u);  // stem, blocks.0, blocks.1, head
  const Module* b0 = findModule(root, "/blocks.0");
  ASSERT_NE(b0, nullptr);
  EXPECT_EQ(b0->name, "blocks.0");
  EXPECT_EQ(b0->nodes, 5u);  // MatMul, Add, Constant_10 (joined), Mul, Relu
  EXPECT_EQ(b0->param_bytes, 16u * 4 + 4u * 4);
  EXPECT_EQ(b0->ops.at("Constant"), 1u);
  const Module* lin = findModule(root, "/blocks.0/linear");
  ASSERT_NE(lin, nullptr);
  EXPECT_EQ(lin->nodes, 2u);
  EXPECT_EQ(lin->param_bytes, b0->param_bytes);
  EXPECT_EQ(tree.moduleOf(tree.nodesBelow(*b0)[2]), b0);  // the Constant, in graph order

  const nlohmann::json j = nlohmann::json::parse(tree.toJson());
  EXPECT_EQ(j["path"], "");
  EXPECT_EQ(j["children"][1]["path"], "/blocks.0");
  EXPECT_EQ(j["children"][1]["children"][0]["name"], "linear");
  EXPECT_EQ(j["children"][1]["ops"]["MatMul"], 1);
  EXPECT_EQ(j["children"][1]["calls"], 1);
  const std::string text = tree.toText(1);
  EXPECT_NE(text.find("/blocks.1  5 nodes"), std::string::npos) << text;
  EXPECT_EQ(text.find("/blocks.1/linear"), std::string::npos) << text;  // below --depth 1
}

TEST(ModuleTree, FromTorchMetadata) {
  ModelBuilder b;
  Value* x = b.input("x", DataType::kFloat, {2, 4});
  Node* a = b.node("Relu", {x}, 1, {}, "relu_1");
  a->metadata_props.push_back(
      {"pkg.torch.onnx.name_scopes", "['', 'encoder', 'encoder.layer.0', 'relu_1']"});
  a->metadata_props.push_back({"pkg.torch.onnx.class_hierarchy",
                               "['__main__.Net', 'Encoder', 'my.Layer', 'aten.relu.default']"});
  Node* c = b.node("Neg", {a->output(0)}, 1, {}, "neg_2");
  c->metadata_props.push_back(
      {"namespace", ": __main__.Net/encoder: Encoder/encoder.layer.1: my.Layer/neg_2: aten.neg"});
  b.output(c->output(0));
  std::unique_ptr<Model> m = b.build();
  ModuleTree tree(*m->graph);
  EXPECT_EQ(tree.root().cls, "__main__.Net");
  const Module* l0 = findModule(tree.root(), "/encoder/layer.0");
  const Module* l1 = findModule(tree.root(), "/encoder/layer.1");
  ASSERT_NE(l0, nullptr);
  ASSERT_NE(l1, nullptr);
  EXPECT_EQ(l0->cls, "my.Layer");
  EXPECT_EQ(l1->cls, "my.Layer");
  EXPECT_EQ(l0->parent->cls, "Encoder");
  EXPECT_EQ(l1->own_nodes.size(), 1u);
  EXPECT_EQ(l0->calls, 1);
}

TEST(ModuleTree, RepeatedCallsOfOneModuleCount) {
  ModelBuilder b;
  Value* x = b.input("x", DataType::kFloat, {2});
  Node* a = b.node("Relu", {x}, 1, {}, "relu");
  a->metadata_props.push_back({"pkg.torch.onnx.name_scopes", "['', 'act', 'relu']"});
  Node* c = b.node("Relu", {a->output(0)}, 1, {}, "relu_1");
  c->metadata_props.push_back({"pkg.torch.onnx.name_scopes", "['', 'act@1', 'relu_1']"});
  b.output(c->output(0));
  std::unique_ptr<Model> m = b.build();
  ModuleTree tree(*m->graph);
  ASSERT_EQ(tree.root().children.size(), 1u);
  const Module& act = *tree.root().children[0];
  EXPECT_EQ(act.path, "/act");
  EXPECT_EQ(act.calls, 2);
  EXPECT_EQ(act.nodes, 2u);
  EXPECT_EQ(nlohmann::json::parse(tree.toJson())["children"][0]["calls"], 2);
}

TEST(ModuleTree, ParsesPythonStringLists) {
  EXPECT_EQ(parsePythonStringList("[]"), std::vector<std::string>{});
  EXPECT_EQ(parsePythonStringList("['', \"a.b\", 'it\\'s']"),
            (std::vector<std::string>{"", "a.b", "it's"}));
  EXPECT_THROW(parsePythonStringList("['a'"), Error);
  EXPECT_THROW(parsePythonStringList("a, b"), Error);
}

// ------------------------------------------------------------------ outline

TEST(OutlineFunctions, IdenticalBlocksShareOneWeightFreeFunction) {
  std::unique_ptr<Model> m = blocksModel({"Relu", "Relu", "Relu"});
  EXPECT_TRUE(runPass(*m, "outline-functions"));
  ASSERT_EQ(m->functions.size(), 1u);
  const Function& f = m->functions[0];
  EXPECT_EQ(f.domain, kModuleFunctionDomain);
  EXPECT_EQ(f.name, "blocks");
  EXPECT_EQ(callsOf(*m->graph, f.name), 3u);
  EXPECT_TRUE(f.body->initializers().empty());
  EXPECT_EQ(f.body->inputs().size(), 3u);  // activation, weight, bias
  EXPECT_EQ(f.body->numNodes(), 5u);
  EXPECT_EQ(f.body->firstNode()->name, "/linear/MatMul");  // relative to the module
  EXPECT_GE(m->opsetVersion(kModuleFunctionDomain), 1);
  EXPECT_GE(m->ir_version, 8);
  EXPECT_EQ(m->graph->numNodes(), 2u + 3u);  // stem, head, 3 calls
  // Idempotent: a second run leaves an outlined model alone.
  EXPECT_FALSE(runPass(*m, "outline-functions"));
}

TEST(OutlineFunctions, DifferentAttributesOrConstantsMakeDifferentBodies) {
  // blocks 0 and 1 match; block 2 differs by its activation, block 3 by its Constant.
  std::unique_ptr<Model> m = blocksModel({"Relu", "Relu", "Sigmoid", "Relu"}, {2, 2, 2, 3});
  EXPECT_TRUE(runPass(*m, "outline-functions"));
  // auto: blocks 0 and 1 share a function; in the unique blocks 2 and 3, the repeated
  // linear submodule is outlined instead.
  ASSERT_EQ(m->functions.size(), 2u);
  EXPECT_EQ(m->functions[0].name, "blocks");
  EXPECT_EQ(m->functions[1].name, "blocks_linear");
  EXPECT_EQ(callsOf(*m->graph, "blocks"), 2u);
  EXPECT_EQ(callsOf(*m->graph, "blocks_linear"), 2u);
  EXPECT_EQ(m->functions[1].body->numNodes(), 2u);

  std::unique_ptr<Model> d = blocksModel({"Relu", "Relu", "Sigmoid", "Relu"}, {2, 2, 2, 3});
  EXPECT_TRUE(runPass(*d, "outline-functions", {{"outline-functions.depth", "1"}}));
  // depth 1: every top-level module is a call; stem and head are one-node modules.
  size_t calls = 0;
  for (const Function& f : d->functions)
    calls += callsOf(*d->graph, f.name);
  EXPECT_EQ(d->functions.size(), 5u);  // stem, blocks x3 distinct, head
  EXPECT_EQ(calls, 6u);
  EXPECT_EQ(d->graph->numNodes(), 6u);
}

TEST(OutlineFunctions, SkipsAModuleOneCallCannotReplace) {
  // /a/Relu -> /b/Neg -> /a/Add, and /a/Relu -> /a/Add: module /a is not convex (a call
  // replacing it would both feed /b and need /b's result).
  ModelBuilder b;
  Value* x = b.input("x", DataType::kFloat, {2});
  Value* r = b.op("Relu", {x}, {}, "/a/Relu");
  Value* n = b.op("Neg", {r}, {}, "/b/Neg");
  Value* e = b.op("Exp", {n}, {}, "/b/Exp");
  b.output(b.op("Add", {r, e}, {}, "/a/Add"));
  std::unique_ptr<Model> m = b.build();
  PassOptions o;
  o.extra["outline-functions.depth"] = "1";
  PassContext ctx(o);
  EXPECT_TRUE(createPass("outline-functions")->run(*m, ctx));
  EXPECT_TRUE(verify(*m).ok);
  ASSERT_EQ(m->functions.size(), 1u);  // only /b
  EXPECT_EQ(callsOf(*m->graph, m->functions[0].name), 1u);
  EXPECT_EQ(m->graph->numNodes(), 3u);
  bool noted = false;
  for (const std::string& note : ctx.takeNotes()) {
    noted |= note.find("kept /a inline: not convex") != std::string::npos;
  }
  EXPECT_TRUE(noted);
}

TEST(OutlineFunctions, RejectsBadOptions) {
  std::unique_ptr<Model> m = blocksModel({"Relu", "Relu"});
  PassOptions o;
  o.extra["outline-functions.depth"] = "deep";
  PassContext ctx(o);
  EXPECT_THROW(createPass("outline-functions")->run(*m, ctx), Error);
}

// --extra settings are checked before any pass: an unknown pass or key, or a value the pass
// cannot use, is an error naming it (not a pass skipped with a warning).
TEST(ExtraOptions, CheckedBeforeTheRun) {
  auto check = [](std::map<std::string, std::string> extra) {
    PassOptions o;
    o.extra = std::move(extra);
    checkExtraOptions(o);
  };
  EXPECT_NO_THROW(check({{"outline-functions.depth", "2"}, {"convert-float16.block", "Exp"}}));
  auto message = [&](std::map<std::string, std::string> extra) {
    try {
      check(std::move(extra));
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message({{"outline-functions.depth", "deep"}}).find("'deep'"), std::string::npos);
  EXPECT_NE(message({{"convert-float16.keep-io-types", "maybe"}}).find("'maybe'"),
            std::string::npos);
  EXPECT_NE(message({{"outline-functions.deep", "1"}}).find("has no setting 'deep'"),
            std::string::npos);
  EXPECT_NE(message({{"fold-everything.x", "1"}}).find("no pass is named 'fold-everything'"),
            std::string::npos);
}

// ------------------------------------------------------------------ inline

TEST(InlineFunctions, OutlineThenInlineGivesTheSameGraph) {
  std::unique_ptr<Model> m = blocksModel({"Relu", "Relu", "Sigmoid", "Relu"});
  const std::string before = graphText(*m->graph);
  EXPECT_TRUE(runPass(*m, "outline-functions", {{"outline-functions.depth", "1"}}));
  EXPECT_NE(toString(*m->graph), before);
  EXPECT_TRUE(runPass(*m, "inline-functions"));
  EXPECT_TRUE(m->functions.empty());
  EXPECT_EQ(m->opsetVersion(kModuleFunctionDomain), -1);
  EXPECT_EQ(graphText(*m->graph), before);
}

TEST(InlineFunctions, ResolvesAttributeReferencesAndDefaults) {
  ModelBuilder b;
  Value* x = b.input("x", DataType::kFloat, {2});
  Node* c1 = b.node("Leaky", {x}, 1, attrs(Attribute::makeFloat("slope", 0.5f)), "call1");
  c1->domain = "my.fns";
  Node* c2 = b.node("Leaky", {c1->output(0)}, 1, {}, "call2");
  c2->domain = "my.fns";
  b.output(c2->output(0));
  b.importDomain("my.fns", 1);
  const std::string out_name = c2->output(0)->name();
  std::unique_ptr<Model> m = b.build();
  Function f;
  f.name = "Leaky";
  f.domain = "my.fns";
  f.body = std::make_unique<Graph>();
  Value* in = f.body->addInput(GraphBuilder::key(), "X", Type());
  Node* lr = f.body->addNode(GraphBuilder::key(), "LeakyRelu", {in});
  Attribute ref;
  ref.name = "alpha";
  ref.type = AttrType::kFloat;
  ref.ref_attr_name = "slope";
  lr->attributes.push_back(std::move(ref));
  f.body->addOutput(GraphBuilder::key(), lr->output(0));
  f.attribute_defaults.push_back(Attribute::makeFloat("slope", 0.25f));
  f.opset_import.push_back({"", m->opsetVersion(""), {}});
  m->functions.push_back(std::move(f));
  m->ir_version = 8;

  EXPECT_TRUE(runPass(*m, "inline-functions"));
  ASSERT_EQ(m->graph->numNodes(), 2u);
  const Node* first = m->graph->firstNode();
  EXPECT_EQ(first->op_type, "LeakyRelu");
  EXPECT_FLOAT_EQ(first->attrFloat("alpha", 0), 0.5f);
  EXPECT_TRUE(first->attr("alpha")->ref_attr_name.empty());
  EXPECT_FLOAT_EQ(first->next()->attrFloat("alpha", 0), 0.25f);  // the default
  EXPECT_EQ(m->graph->outputs()[0]->name(), out_name);           // the graph output keeps its name
  EXPECT_EQ(m->opsetVersion("my.fns"), -1);
}

TEST(InlineFunctions, RefusesAFunctionOfAnotherOpsetVersion) {
  ModelBuilder b(17);
  Value* x = b.input("x", DataType::kFloat, {2});
  Node* c = b.node("F", {x}, 1, {}, "call");
  c->domain = "my.fns";
  b.output(c->output(0));
  b.importDomain("my.fns", 1);
  std::unique_ptr<Model> m = b.build();
  Function f;
  f.name = "F";
  f.domain = "my.fns";
  f.body = std::make_unique<Graph>();
  Value* in = f.body->addInput(GraphBuilder::key(), "X", Type());
  f.body->addOutput(GraphBuilder::key(),
                    f.body->addNode(GraphBuilder::key(), "Relu", {in})->output(0));
  f.opset_import.push_back({"", 13, {}});
  m->functions.push_back(std::move(f));
  PassOptions o;
  PassContext ctx(o);
  try {
    createPass("inline-functions")->run(*m, ctx);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("version 13"), std::string::npos) << e.what();
  }
}

// ------------------------------------------------------------------ sample models

TEST(Unflatten, MinibertLayersBecomeOneFunctionCalledFourTimes) {
  ONNXFOLD_REQUIRE_SHARED();
  const std::string path = test::sharedPath("models/minibert.op14.nofold.onnx");
  if (path.empty()) GTEST_SKIP() << "models/minibert.op14.nofold.onnx is missing";
  std::unique_ptr<Model> m = readModel(test::readFileBuffer(path));
  const std::string before = graphText(*m->graph);
  {
    ModuleTree tree(*m->graph);
    const Module* enc = findModule(tree.root(), "/enc");
    ASSERT_NE(enc, nullptr);
    ASSERT_EQ(enc->children.size(), 4u);
    for (size_t i = 0; i < 4; ++i)
      EXPECT_EQ(enc->children[i]->name, "layers." + std::to_string(i));
  }
  EXPECT_TRUE(runPass(*m, "outline-functions"));
  ASSERT_EQ(m->functions.size(), 1u);
  EXPECT_EQ(callsOf(*m->graph, m->functions[0].name), 4u);
  EXPECT_TRUE(m->functions[0].body->initializers().empty());
  EXPECT_TRUE(runPass(*m, "inline-functions"));
  EXPECT_EQ(graphText(*m->graph), before);

  // nested: inside the layer body, norm1/norm2 (with the top-level /ln) and linear1/linear2
  // become functions of their own; the layers are still one function called 4 times.
  std::unique_ptr<Model> n = readModel(test::readFileBuffer(path));
  EXPECT_TRUE(runPass(*n, "outline-functions", {{"outline-functions.nested", "1"}}));
  ASSERT_EQ(n->functions.size(), 3u);
  EXPECT_EQ(callsOf(*n->graph, n->functions[0].name), 4u);
  const Graph& layer = *n->functions[0].body;
  size_t inner_calls = 0;
  for (const Node* node : layer.nodes())
    inner_calls += node->domain == kModuleFunctionDomain;
  EXPECT_EQ(inner_calls, 4u);                               // norm1, norm2, linear1, linear2
  EXPECT_EQ(callsOf(*n->graph, n->functions[1].name), 1u);  // /ln
  EXPECT_TRUE(runPass(*n, "inline-functions"));
  EXPECT_EQ(graphText(*n->graph), before);
}

// On every sample model and at several granularities, inline(outline(m)) is m again
// (up to value_info and node order), and both pass the verifier.
TEST(Unflatten, OutlineThenInlineRestoresEverySampleModel) {
  ONNXFOLD_REQUIRE_SHARED();
  const std::vector<std::string> models = test::sharedModelsUnder("models");
  if (models.empty()) GTEST_SKIP() << "no models under shared/models";
  for (const std::string& path : models) {
    for (const char* depth : {"auto", "1", "2", "3", "nested"}) {
      SCOPED_TRACE(test::shortPath(path) + " depth " + depth);
      std::unique_ptr<Model> m = readModel(test::readFileBuffer(path));
      const std::string before = sortedGraphText(*m->graph);
      const size_t original_nodes = m->graph->numNodes();
      const std::map<std::string, size_t> original_ops = opCounts(*m->graph);
      if (std::string(depth) == "nested")
        runPass(*m, "outline-functions", {{"outline-functions.nested", "1"}});
      else
        runPass(*m, "outline-functions", {{"outline-functions.depth", depth}});
      // Through bytes, as a user would: the names metadata must survive the writer.
      std::unique_ptr<Model> back = readModel(test::bufferOf(writeModelToString(*m)));
      runPass(*back, "inline-functions");
      EXPECT_TRUE(back->functions.empty());
      EXPECT_TRUE(verify(*back).ok);
      std::set<std::string> node_names;
      for (const Node* n : back->graph->nodes()) {
        EXPECT_TRUE(n->name.empty() || node_names.insert(n->name).second) << n->name;
      }
      if (std::string(depth) != "nested") {
        EXPECT_EQ(sortedGraphText(*back->graph), before);
        continue;
      }
      // Nested rounds move nodes out of bodies whose calls already recorded their names, so
      // unscoped names inside repeated nested blocks may come back renamed: compare ops.
      EXPECT_EQ(back->graph->numNodes(), original_nodes);
      EXPECT_EQ(opCounts(*back->graph), original_ops);
    }
  }
}

}  // namespace
}  // namespace onnxfold
