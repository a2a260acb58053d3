// The ONNX reader and writer on structure: external data, unknown fields, node order, cycles
// and SSA, subgraphs, functions and training info. Cases are encoded by hand
// (onnx/proto_test_util.h).
#include <gtest/gtest.h>

#include "onnx/proto_test_util.h"

namespace onnxfold {
namespace {

using namespace proto_test;
using protozero::pbf_writer;
using test::takeBuffer;

// ------------------------------------------------------------------ (d) external data

struct ExternalFiles {
  std::map<std::string, Buffer> files;
  std::vector<std::string> opened;
  ReadOptions options() {
    ReadOptions o;
    o.open_external = [this](const std::string& location) {
      opened.push_back(location);
      auto it = files.find(location);
      if (it == files.end()) throw Error("no such file: " + location);
      return std::make_shared<MemorySource>(it->second);
    };
    return o;
  }
};

TEST(ExternalData, ReadsASliceOfTheFile) {
  ExternalFiles ext;
  std::string file(32, '\0');
  const float v[4] = {1, 2, 3, 4};
  std::memcpy(&file[8], v, sizeof v);
  ext.files["weights.bin"] = test::bufferOf(file);
  const std::string bytes =
      pb::modelWithInitializer(pb::externalTensor("t", 1, {4}, "weights.bin", "8", "16"));
  std::unique_ptr<Model> m = readBytes(bytes, ext.options());
  EXPECT_EQ(ext.opened, std::vector<std::string>{"weights.bin"});
  const Tensor& t = *m->graph->lookup("t")->initializer();
  EXPECT_TRUE(t.isLoaded());
  EXPECT_EQ(t.bytes(), ext.files["weights.bin"].data() + 8) << "a view of the file";
  EXPECT_EQ(t.at<float>(3), 4.0f);
  ASSERT_TRUE(t.external.has_value());
  EXPECT_EQ(t.external->location, "weights.bin");
  EXPECT_EQ(t.external->offset, 8);
  EXPECT_EQ(t.external->length, 16);
  EXPECT_TRUE(verify(*m).ok);

  // Without a length: the dims decide; without an offset: 0.
  m = readBytes(
      pb::modelWithInitializer(pb::externalTensor("t", 1, {2}, "weights.bin", nullptr, nullptr)),
      ext.options());
  EXPECT_EQ(m->graph->lookup("t")->initializer()->bytes(), ext.files["weights.bin"].data());
}

TEST(ExternalData, UnresolvedReferencesRoundTrip) {
  const std::string bytes =
      pb::modelWithInitializer(pb::externalTensor("t", 1, {4}, "sub/weights.bin", "4096", "16"));
  std::unique_ptr<Model> m = readBytes(bytes);  // no open_external
  const Tensor& t = *m->graph->lookup("t")->initializer();
  EXPECT_FALSE(t.isLoaded());
  EXPECT_EQ(t.dims(), std::vector<int64_t>{4});
  EXPECT_TRUE(verify(*m).ok);
  const std::string w1 = writeModelToString(*m);
  std::unique_ptr<Model> back = readBytes(w1);
  const Tensor& bt = *back->graph->lookup("t")->initializer();
  ASSERT_TRUE(bt.external.has_value());
  EXPECT_EQ(bt.external->location, "sub/weights.bin");
  EXPECT_EQ(bt.external->offset, 4096);
  EXPECT_EQ(bt.external->length, 16);
  EXPECT_EQ(toString(*back), toString(*m));
  EXPECT_EQ(writeModelToString(*back), w1);
}

TEST(ExternalData, UnsafeLocationsAreRejected) {
  ExternalFiles ext;
  ext.files["w.bin"] = test::bufferOf(std::string(64, '\0'));
  for (const char* loc : {"/etc/passwd", "../w.bin", "a/../../w.bin", "sub/..", "..", "", "C:w.bin",
                          "a\\b.bin", "\\\\server\\share"}) {
    SCOPED_TRACE(loc);
    const std::string bytes =
        pb::modelWithInitializer(pb::externalTensor("t", 1, {4}, loc, "0", "16"));
    expectParseError(bytes, {"tensor 't'", "location '" + std::string(loc) + "'"}, ext.options());
    expectParseError(bytes, {"location '" + std::string(loc) + "'"});  // unresolved too
  }
  EXPECT_TRUE(ext.opened.empty()) << "no unsafe location may reach the file callback";
  // Names that merely contain dots are fine.
  for (const char* loc : {"w.bin", "./w.bin", "a/..b/w.bin"}) {
    SCOPED_TRACE(loc);
    std::unique_ptr<Model> m =
        readBytes(pb::modelWithInitializer(pb::externalTensor("t", 1, {4}, loc, "0", "16")));
    EXPECT_EQ(m->graph->lookup("t")->initializer()->external->location, loc);
  }
}

TEST(ExternalData, RangeAndEntryErrors) {
  ExternalFiles ext;
  ext.files["w.bin"] = test::bufferOf(std::string(32, '\0'));
  auto model = [](const char* offset, const char* length, const char* location = "w.bin") {
    return pb::modelWithInitializer(pb::externalTensor("t", 1, {4}, location, offset, length));
  };
  expectParseError(model("100", "16"), {"tensor 't'", "outside 'w.bin'"}, ext.options());
  expectParseError(model("24", "16"), {"tensor 't'", "outside 'w.bin'"}, ext.options());
  expectParseError(model("17", nullptr), {"tensor 't'", "outside 'w.bin'"}, ext.options());
  expectParseError(model("99999999999999999999", "16"), {"tensor 't'"}, ext.options());
  expectParseError(model("0", "12"), {"tensor 't'", "length 12"}, ext.options());
  expectParseError(model("-8", "16"), {"tensor 't'", "offset '-8'"}, ext.options());
  expectParseError(model("8x", "16"), {"tensor 't'", "offset '8x'"}, ext.options());
  expectParseError(model("", "16"), {"tensor 't'", "offset ''"}, ext.options());
  expectParseError(model("0", "sixteen"), {"tensor 't'", "length 'sixteen'"}, ext.options());
  expectParseError(model("0", "16", nullptr), {"tensor 't'", "without a 'location'"},
                   ext.options());
  // 16 bytes at offset 16 is exactly the end of the file: fine.
  std::unique_ptr<Model> m = readBytes(model("16", "16"), ext.options());
  EXPECT_TRUE(m->graph->lookup("t")->initializer()->isLoaded());
  // The callback's own error reaches the caller.
  EXPECT_THROW(readBytes(model("0", "16", "missing.bin"), ext.options()), Error);
}

// A sink appending to a string owned by the test.
class StringRefSink : public Sink {
 public:
  explicit StringRefSink(std::string& out) : out_(out) {}
  void write(const uint8_t* data, size_t size) override {
    out_.append(reinterpret_cast<const char*>(data), size);
  }

 private:
  std::string& out_;
};

TEST(ExternalData, WriterMovesBigTensorsToAlignedOffsets) {
  test::ModelBuilder b;
  Value* x = b.input("x", DataType::kFloat, {-1});
  std::vector<float> v1(3000), v2(1500);
  for (size_t i = 0; i < v1.size(); ++i)
    v1[i] = static_cast<float>(i);
  for (size_t i = 0; i < v2.size(); ++i)
    v2[i] = -static_cast<float>(i);
  Value* small = b.initializer("small", {4}, {1, 2, 3, 4});
  Value* big1 = b.initializer("big1", {3000}, v1);
  Value* big2 = b.initializer("big2", {1500}, v2);
  Value* ints = b.initializer(test::int64Tensor({2}, {5, 6}, "ints"));
  b.output(b.op("Sum", {x, small, big1, big2}));
  b.output(ints);
  std::unique_ptr<Model> m = b.build();

  std::string model_bytes, ext_bytes;
  std::vector<std::string> opened;
  WriteOptions wo;
  wo.external_threshold = 1024;
  wo.external_location = "model.onnx.data";
  wo.open_external = [&](const std::string& location) -> std::unique_ptr<Sink> {
    opened.push_back(location);
    return std::make_unique<StringRefSink>(ext_bytes);
  };
  StringSink sink;
  WriteStats stats = writeModel(*m, sink, wo);
  EXPECT_EQ(opened, std::vector<std::string>{"model.onnx.data"});
  EXPECT_EQ(stats.external_tensors, 2u);
  EXPECT_EQ(stats.external_bytes, ext_bytes.size());
  EXPECT_EQ(stats.model_bytes, sink.out.size());
  EXPECT_LT(sink.out.size(), 1024u) << "the weights are not inline";

  ExternalFiles files;
  files.files["model.onnx.data"] = test::bufferOf(ext_bytes);  // 64-byte aligned, like a mapping
  std::unique_ptr<Model> back = readBytes(sink.out, files.options());
  ASSERT_TRUE(verify(*back).ok);
  for (const char* name : {"small", "big1", "big2", "ints"}) {
    SCOPED_TRACE(name);
    const Tensor& orig = *m->graph->lookup(name)->initializer();
    const Tensor& t = *back->graph->lookup(name)->initializer();
    EXPECT_TRUE(t.sameContent(orig));
    const bool external = orig.byteSize() >= 1024;
    ASSERT_EQ(t.external.has_value(), external);
    if (external) {
      EXPECT_EQ(t.external->location, "model.onnx.data");
      EXPECT_EQ(t.external->offset % 4096, 0);
      EXPECT_EQ(t.external->length, static_cast<int64_t>(orig.byteSize()));
      EXPECT_TRUE(t.buffer().isAligned(64)) << "aligned in the file, aligned in memory";
    }
  }

  // Tensors over the threshold with nowhere to put them: an error, not a silent inline write.
  WriteOptions no_sink;
  no_sink.external_threshold = 1024;
  no_sink.external_location = "x.data";
  StringSink unused;
  EXPECT_THROW(writeModel(*m, unused, no_sink), Error);
}

// Shapes, axes, pads and scales stay inline at any threshold: ONNX Runtime reads them at load
// for shape inference and cannot from external data. Larger tensors go external.
TEST(ExternalData, SmallIntegerTensorsStayInline) {
  test::ModelBuilder b;
  Value* x = b.input("x", DataType::kFloat, {2, 3});
  Value* shape = b.initializer(test::int64Tensor({2}, {3, 2}, "shape"));
  std::vector<int64_t> many(200, 1);
  Value* indices = b.initializer(test::int64Tensor({200}, many, "indices"));
  Value* scale = b.initializer("scale", {2}, {1, 2});
  std::vector<float> many_floats(16, 0.5F);
  Value* w = b.initializer("w", {16}, many_floats);
  b.output(b.op("Reshape", {x, shape}));
  b.output(scale);
  b.output(indices);
  b.output(w);
  std::unique_ptr<Model> m = b.build();
  std::string ext_bytes;
  WriteOptions wo;
  wo.external_threshold = 0;
  wo.external_location = "m.data";
  wo.open_external = [&](const std::string&) -> std::unique_ptr<Sink> {
    return std::make_unique<StringRefSink>(ext_bytes);
  };
  StringSink sink;
  writeModel(*m, sink, wo);
  ExternalFiles files;
  files.files["m.data"] = test::bufferOf(ext_bytes);
  std::unique_ptr<Model> back = readBytes(sink.out, files.options());
  EXPECT_FALSE(back->graph->lookup("shape")->initializer()->external.has_value());
  EXPECT_TRUE(back->graph->lookup("indices")->initializer()->external.has_value());  // 1600 bytes
  EXPECT_FALSE(back->graph->lookup("scale")->initializer()->external.has_value());   // 8 bytes
  EXPECT_TRUE(back->graph->lookup("w")->initializer()->external.has_value());        // 64 bytes
}

// ------------------------------------------------------------------ (e) unknown fields

// Bytes laid out in the writer's own order (known fields by number, unknown
// ones last), so a round trip must reproduce them exactly.
std::string modelWithUnknownFields() {
  using pb::msg;
  const std::string attr = msg([](pbf_writer& w) {
    w.add_string(1, "k");
    w.add_int64(3, 3);
    w.add_int64(20, 2);
    w.add_string(88, "attr-unknown");
  });
  const std::string node = msg([&](pbf_writer& w) {
    w.add_string(1, "x");
    w.add_string(1, "w");
    w.add_string(2, "y");
    w.add_string(3, "n");
    w.add_string(4, "Add");
    w.add_message(5, attr);
    w.add_fixed32(50, 0xdeadbeef);
    w.add_int64(51, -1);
  });
  const std::string tensor = msg([](pbf_writer& w) {
    w.add_int64(1, 2);
    w.add_int32(2, 1);
    w.add_string(8, "w");
    w.add_string(9, le<float>({1.0f, 2.0f}));
    w.add_fixed64(77, 0x0123456789abcdefULL);
    w.add_string(78, "tensor-unknown");
  });
  const std::string graph = msg([&](pbf_writer& w) {
    w.add_message(1, node);
    w.add_string(2, "g");
    w.add_message(5, tensor);
    w.add_message(11, pb::valueInfo("x"));
    w.add_message(12, pb::valueInfo("y"));
    w.add_int32(40, 40);  // unknown in GraphProto
  });
  return msg([&](pbf_writer& w) {
    w.add_int64(1, 8);
    w.add_string(2, "producer");
    w.add_message(7, graph);
    w.add_message(8, msg([](pbf_writer& o) {
                    o.add_int64(2, 17);
                    o.add_int32(3, 1);  // unknown in OperatorSetIdProto
                  }));
    w.add_int64(99, 5);
    w.add_string(100, "model-unknown");
    w.add_double(101, 2.5);
  });
}

TEST(UnknownFields, SurviveByteExactly) {
  const std::string bytes = modelWithUnknownFields();
  std::unique_ptr<Model> m = readBytes(bytes);
  ASSERT_TRUE(verify(*m).ok);
  EXPECT_EQ(writeModelToString(*m), bytes);

  // Each unknown field is kept with its key, at the level it was found.
  auto enc = [](const std::function<void(pbf_writer&)>& f) { return pb::msg(f); };
  EXPECT_EQ(m->unknown_fields, enc([](pbf_writer& w) {
              w.add_int64(99, 5);
              w.add_string(100, "model-unknown");
              w.add_double(101, 2.5);
            }));
  EXPECT_EQ(m->graph->unknown_fields, enc([](pbf_writer& w) { w.add_int32(40, 40); }));
  const Node* n = m->graph->firstNode();
  EXPECT_EQ(n->unknown_fields, enc([](pbf_writer& w) {
              w.add_fixed32(50, 0xdeadbeef);
              w.add_int64(51, -1);
            }));
  EXPECT_EQ(n->attributes.at(0).unknown_fields,
            enc([](pbf_writer& w) { w.add_string(88, "attr-unknown"); }));
  EXPECT_EQ(m->graph->lookup("w")->initializer()->unknown_fields, enc([](pbf_writer& w) {
              w.add_fixed64(77, 0x0123456789abcdefULL);
              w.add_string(78, "tensor-unknown");
            }));
  EXPECT_EQ(m->opset_import.at(0).unknown_fields, enc([](pbf_writer& w) { w.add_int32(3, 1); }));
}

TEST(UnknownFields, InterleavedUnknownFieldsMoveToTheEndAndStay) {
  using pb::msg;
  // Unknown fields before and between known ones.
  const std::string node = msg([](pbf_writer& w) {
    w.add_int64(60, 1);
    w.add_string(1, "x");
    w.add_string(61, "between");
    w.add_string(2, "y");
    w.add_string(4, "Relu");
  });
  pb::GraphSpec g;
  g.nodes = {node};
  g.inputs = {pb::valueInfo("x")};
  g.outputs = {pb::valueInfo("y")};
  std::unique_ptr<Model> m = readBytes(pb::model(pb::graph(g)));
  EXPECT_EQ(m->graph->firstNode()->unknown_fields, msg([](pbf_writer& w) {
              w.add_int64(60, 1);
              w.add_string(61, "between");
            }));
  const std::string w1 = writeModelToString(*m);
  std::unique_ptr<Model> back = readBytes(w1);
  EXPECT_EQ(back->graph->firstNode()->unknown_fields, m->graph->firstNode()->unknown_fields);
  EXPECT_EQ(writeModelToString(*back), w1);
}

// ------------------------------------------------------------------ (f) order, cycles, SSA

std::string graphModel(const std::vector<std::string>& nodes,
                       const std::vector<std::string>& outputs = {"y"}) {
  pb::GraphSpec g;
  g.nodes = nodes;
  g.inputs = {pb::valueInfo("x")};
  for (const auto& o : outputs)
    g.outputs.push_back(pb::valueInfo(o));
  return pb::model(pb::graph(g));
}

std::string opOrder(const Graph& g) {
  std::string s;
  for (const Node* n : g.nodes())
    s += (s.empty() ? "" : " ") + n->op_type;
  return s;
}

TEST(NodeOrder, OutOfOrderNodesAreSorted) {
  const std::string bytes = graphModel({
      pb::node({"b"}, {"y"}, "Abs", "abs"),
      pb::node({"a"}, {"b"}, "Neg", "neg"),
      pb::node({"x"}, {"a"}, "Relu", "relu"),
      pb::node({"x"}, {"z"}, "Sigmoid", "independent"),
  });
  std::unique_ptr<Model> m = readBytes(bytes);
  EXPECT_EQ(opOrder(*m->graph), "Relu Neg Abs Sigmoid");
  EXPECT_TRUE(verify(*m).ok) << verify(*m).message;
  const std::string w1 = writeModelToString(*m);
  std::unique_ptr<Model> back = readBytes(w1);
  EXPECT_EQ(opOrder(*back->graph), "Relu Neg Abs Sigmoid");
  EXPECT_EQ(writeModelToString(*back), w1);
}

TEST(NodeOrder, CyclesAreParseErrors) {
  expectParseError(graphModel({
                       pb::node({"x", "b"}, {"a"}, "Add", "first"),
                       pb::node({"a"}, {"b"}, "Neg", "second"),
                       pb::node({"a"}, {"y"}, "Relu", "third"),
                   }),
                   {"cycle"});
  // A node using its own output.
  expectParseError(graphModel({pb::node({"y"}, {"y"}, "Relu", "self")}), {"'self'"});
}

TEST(NodeOrder, SsaViolationsNameTheNode) {
  expectParseError(graphModel({
                       pb::node({"x"}, {"y"}, "Relu", "first"),
                       pb::node({"x"}, {"y"}, "Neg", "second"),
                   }),
                   {"'second'", "'y'", "defined twice"});
  expectParseError(graphModel({pb::node({"x"}, {"x"}, "Relu", "clash")}),
                   {"'clash'", "'x'", "defined twice"});
  expectParseError(graphModel({pb::node({"x"}, {"y", "y"}, "Split", "split")}), {"'split'", "'y'"});
  expectParseError(graphModel({pb::node({"nope"}, {"y"}, "Relu", "n1")}),
                   {"'n1'", "'nope'", "not defined"});
  expectParseError(graphModel({pb::node({"x"}, {"y"}, "Relu", "n1")}, {"missing"}),
                   {"graph output 'missing'"});
  expectParseError(graphModel({pb::node({"x"}, {"y"}, "", "no_op")}), {"no_op", "op_type"});
}

// main: a = Relu(x); y = If(cond) { then: t = Neg(a) } { else: t = Abs(a) }
std::string ifModel(bool if_first) {
  auto branch = [](const char* name, const char* op) {
    pb::GraphSpec g;
    g.name = name;
    g.nodes = {pb::node({"a"}, {"t"}, op, std::string(op) + "_in_" + name)};
    g.outputs = {pb::valueInfo("t")};
    return pb::graph(g);
  };
  const std::string iff = pb::node({"cond"}, {"y"}, "If", "if",
                                   {pb::attrGraph("then_branch", branch("then", "Neg")),
                                    pb::attrGraph("else_branch", branch("else", "Abs"))});
  const std::string relu = pb::node({"x"}, {"a"}, "Relu", "relu");
  pb::GraphSpec g;
  g.nodes = if_first ? std::vector<std::string>{iff, relu} : std::vector<std::string>{relu, iff};
  g.inputs = {pb::valueInfo("x"), pb::valueInfo("cond", 9, {})};
  g.outputs = {pb::valueInfo("y")};
  return pb::model(pb::graph(g));
}

TEST(Subgraphs, BranchesReuseNamesAndCaptureOuterValues) {
  std::unique_ptr<Model> m = readBytes(ifModel(false));
  ASSERT_TRUE(verify(*m).ok) << verify(*m).message;
  Value* a = m->graph->lookup("a");
  ASSERT_NE(a, nullptr);
  ASSERT_EQ(a->uses().size(), 2u) << "one capture per branch";
  for (const Use& u : a->uses()) {
    EXPECT_EQ(u.user->graph()->parent(), m->graph.get());
    EXPECT_EQ(u.user->graph()->ownerNode()->op_type, "If");
  }
  const Node* iff = m->graph->lastNode();
  ASSERT_EQ(iff->op_type, "If");
  EXPECT_EQ(iff->attr("then_branch")->g->outputs().at(0)->name(), "t");
  EXPECT_EQ(iff->attr("else_branch")->g->outputs().at(0)->name(), "t");
  EXPECT_EQ(m->graph->lookup("t"), nullptr) << "branch values are not visible outside";

  const std::string w1 = writeModelToString(*m);
  std::unique_ptr<Model> back = readBytes(w1);
  EXPECT_TRUE(verify(*back).ok);
  EXPECT_EQ(toString(*back), toString(*m));
  EXPECT_EQ(writeModelToString(*back), w1);
  // A clone captures its own copy of the outer value.
  std::unique_ptr<Model> c = back->clone();
  EXPECT_EQ(c->graph->lookup("a")->uses().size(), 2u);
  EXPECT_EQ(back->graph->lookup("a")->uses().size(), 2u);
  EXPECT_EQ(writeModelToString(*c), w1);
}

TEST(Subgraphs, NodeBeforeTheValueItsSubgraphCapturesIsSorted) {
  std::unique_ptr<Model> m = readBytes(ifModel(true));
  EXPECT_EQ(opOrder(*m->graph), "Relu If");
  EXPECT_TRUE(verify(*m).ok) << verify(*m).message;
  EXPECT_EQ(writeModelToString(*m), writeModelToString(*readBytes(ifModel(false))));
}

TEST(Subgraphs, ErrorsInsideABranchNameThePath) {
  pb::GraphSpec then_g;
  then_g.name = "then";
  then_g.nodes = {pb::node({"undefined_thing"}, {"t"}, "Neg", "inner")};
  then_g.outputs = {pb::valueInfo("t")};
  const std::string iff =
      pb::node({"x"}, {"y"}, "If", "outer_if", {pb::attrGraph("then_branch", pb::graph(then_g))});
  expectParseError(graphModel({iff}), {"'outer_if'", "'inner'", "'undefined_thing'"});
}

// Model-local functions (with an attribute reference) and training info: no
// shared model has them, so they are encoded here.
std::string functionAndTrainingModel() {
  using pb::msg;
  pb::GraphSpec g;
  g.nodes = {msg([](pbf_writer& n) {
    n.add_string(1, "x");
    n.add_string(2, "y");
    n.add_string(4, "MyLeaky");
    n.add_message(5, msg([](pbf_writer& a) {
                    a.add_string(1, "alpha");
                    a.add_float(2, 0.25f);
                    a.add_int64(20, 1);
                  }));
    n.add_string(7, "custom");
  })};
  g.initializers = {typedTensor(1, {2}, [](pbf_writer& w) { packed<float>(w, 4, {1, 2}); })};
  g.inputs = {pb::valueInfo("x")};
  g.outputs = {pb::valueInfo("y")};
  const std::string function = msg([](pbf_writer& f) {
    f.add_string(1, "MyLeaky");
    f.add_string(4, "X");
    f.add_string(5, "Y");
    f.add_string(6, "alpha");
    f.add_message(7, msg([](pbf_writer& n) {
                    n.add_string(1, "X");
                    n.add_string(2, "Y");
                    n.add_string(4, "LeakyRelu");
                    n.add_message(5, msg([](pbf_writer& a) {
                                    a.add_string(1, "alpha");
                                    a.add_int64(20, 1);
                                    a.add_string(21, "alpha");
                                  }));
                  }));
    f.add_message(9, msg([](pbf_writer& o) { o.add_int64(2, 17); }));
    f.add_string(10, "custom");
  });
  pb::GraphSpec algo;
  algo.name = "algorithm";
  algo.nodes = {pb::node({"t", "t"}, {"t_new"}, "Add", "update")};  // t: main graph initializer
  algo.outputs = {pb::valueInfo("t_new")};
  const std::string training = msg([&](pbf_writer& t) {
    t.add_message(2, pb::graph(algo));
    t.add_message(4, pb::stringPair("t", "t_new"));
  });
  return msg([&](pbf_writer& w) {
    w.add_int64(1, 8);
    w.add_message(7, pb::graph(g));
    w.add_message(8, msg([](pbf_writer& o) { o.add_int64(2, 17); }));
    w.add_message(8, msg([](pbf_writer& o) {
                    o.add_string(1, "custom");
                    o.add_int64(2, 1);
                  }));
    w.add_message(20, training);
    w.add_message(25, function);
  });
}

TEST(ModelLevel, FunctionsAndTrainingInfoRoundTrip) {
  std::unique_ptr<Model> m = readBytes(functionAndTrainingModel());
  ASSERT_TRUE(verify(*m).ok) << verify(*m).message;
  ASSERT_EQ(m->functions.size(), 1u);
  const Function& f = m->functions[0];
  EXPECT_EQ(f.name, "MyLeaky");
  EXPECT_EQ(f.domain, "custom");
  EXPECT_EQ(f.attribute_names, std::vector<std::string>{"alpha"});
  ASSERT_EQ(f.body->numNodes(), 1u);
  EXPECT_EQ(f.body->firstNode()->attr("alpha")->ref_attr_name, "alpha");
  ASSERT_EQ(m->training_info.size(), 1u);
  ASSERT_TRUE(m->training_info[0].algorithm);
  EXPECT_EQ(m->graph->lookup("t")->uses().size(), 2u) << "the training graph uses 't' twice";

  const std::string w1 = writeModelToString(*m);
  std::unique_ptr<Model> back = readBytes(w1);
  EXPECT_TRUE(verify(*back).ok);
  EXPECT_EQ(toString(*back), toString(*m));
  EXPECT_EQ(writeModelToString(*back), w1);
  std::unique_ptr<Model> c = m->clone();
  EXPECT_EQ(writeModelToString(*c), w1);
}

TEST(ModelLevel, MissingGraphAndDuplicates) {
  expectParseError(pb::msg([](pbf_writer& w) { w.add_int64(1, 8); }), {"no graph"});
  const std::string two_graphs = pb::msg([](pbf_writer& w) {
    w.add_message(7, pb::graph({}));
    w.add_message(7, pb::graph({}));
  });
  expectParseError(two_graphs, {"more than one graph"});
  pb::GraphSpec g;
  g.initializers = {typedTensor(1, {1}, [](pbf_writer& w) { packed<float>(w, 4, {1}); }),
                    typedTensor(1, {1}, [](pbf_writer& w) { packed<float>(w, 4, {2}); })};
  expectParseError(pb::model(pb::graph(g)), {"'t'", "defined twice"});
}

}  // namespace
}  // namespace onnxfold
