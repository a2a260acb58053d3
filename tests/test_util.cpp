#include "test_util.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "ir/verifier.h"
#include "kernels/common.h"
#include "kernels/op_registry.h"
#include "passes/registry.h"

namespace onnxfold::test {

namespace fs = std::filesystem;

namespace {

std::string configuredSharedDir() {
  if (const char* env = std::getenv("ONNXFOLD_SHARED"); env != nullptr && *env != '\0') {
    return env;
  }
#ifdef ONNXFOLD_SHARED_DIR
  return ONNXFOLD_SHARED_DIR;
#else
  return {};
#endif
}

bool isDir(const std::string& p) {
  std::error_code ec;
  return !p.empty() && fs::is_directory(p, ec);
}

}  // namespace

std::string sharedDir() {
  static const std::string dir = [] {
    const std::string d = configuredSharedDir();
    return isDir(d) ? d : std::string();
  }();
  return dir;
}

std::string sharedPath(const std::string& relative) {
  const std::string root = sharedDir();
  if (root.empty()) return {};
  const std::string p = (fs::path(root) / relative).string();
  std::error_code ec;
  return fs::exists(p, ec) ? p : std::string();
}

std::string sharedMissingReason() {
  const std::string d = configuredSharedDir();
  return "shared test data not found (" + (d.empty() ? std::string("no path configured") : d) +
         "); set ONNXFOLD_SHARED to the shared/ folder to run this test";
}

Buffer readFileBuffer(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw std::runtime_error("cannot open " + path);
  const std::streamoff size = in.tellg();
  if (size < 0) throw std::runtime_error("cannot size " + path);
  in.seekg(0);
  uint8_t* p = nullptr;
  Buffer b = Buffer::allocate(static_cast<size_t>(size), &p);
  if (size > 0 && !in.read(reinterpret_cast<char*>(p), size)) {
    throw std::runtime_error("cannot read " + path);
  }
  return b;
}

Buffer bufferOf(const std::string& bytes) {
  return Buffer::copyOf(bytes.data(), bytes.size());
}

Buffer takeBuffer(std::string&& bytes) {
  auto owner = std::make_shared<std::string>(std::move(bytes));
  return Buffer(reinterpret_cast<const uint8_t*>(owner->data()), owner->size(), owner);
}

std::vector<std::string> sharedModelsUnder(const std::string& relative) {
  std::vector<std::string> out;
  const std::string root = sharedPath(relative);
  if (root.empty()) return out;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(root, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    if (it->is_regular_file(ec) && it->path().extension() == ".onnx") {
      out.push_back(it->path().string());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> allSharedModels() {
  std::vector<std::string> out = sharedModelsUnder("models");
  std::vector<std::string> more = sharedModelsUnder("onnx-tests");
  out.insert(out.end(), more.begin(), more.end());
  std::sort(out.begin(), out.end());
  return out;
}

std::string shortPath(const std::string& path) {
  const std::string root = sharedDir();
  if (!root.empty() && path.compare(0, root.size(), root) == 0) {
    size_t k = root.size();
    while (k < path.size() && path[k] == '/')
      ++k;
    return path.substr(k);
  }
  return path;
}

Tensor floatTensor(std::vector<int64_t> dims, const std::vector<float>& values, std::string name) {
  Tensor t(DataType::kFloat, std::move(dims));
  if (static_cast<int64_t>(values.size()) != t.numElements()) {
    throw std::invalid_argument("floatTensor: values do not match dims");
  }
  if (!values.empty()) std::memcpy(t.mutableBytes(), values.data(), values.size() * sizeof(float));
  t.name = std::move(name);
  return t;
}

Tensor int64Tensor(std::vector<int64_t> dims, const std::vector<int64_t>& values,
                   std::string name) {
  Tensor t(DataType::kInt64, std::move(dims));
  if (static_cast<int64_t>(values.size()) != t.numElements()) {
    throw std::invalid_argument("int64Tensor: values do not match dims");
  }
  if (!values.empty()) {
    std::memcpy(t.mutableBytes(), values.data(), values.size() * sizeof(int64_t));
  }
  t.name = std::move(name);
  return t;
}

ModelBuilder::ModelBuilder(int64_t opset) : model_(std::make_unique<Model>()) {
  model_->ir_version = 8;
  model_->producer_name = "onnxfold-test";
  model_->graph->name = "test";
  model_->opset_import.push_back(OpsetId{"", opset, {}});
}

Value* ModelBuilder::input(const std::string& name, DataType dtype,
                           const std::vector<int64_t>& dims) {
  Shape s;
  for (size_t i = 0; i < dims.size(); ++i) {
    s.dims.push_back(dims[i] >= 0 ? Dim::known(dims[i]) : Dim::symbol("N" + std::to_string(i)));
  }
  return graph().addInput(GraphBuilder::key(), name, Type::tensor(dtype, std::move(s)));
}

Value* ModelBuilder::initializer(const std::string& name, std::vector<int64_t> dims,
                                 const std::vector<float>& values) {
  return graph().addInitializer(GraphBuilder::key(), floatTensor(std::move(dims), values, name));
}

Value* ModelBuilder::initializer(Tensor t) {
  return graph().addInitializer(GraphBuilder::key(), std::move(t));
}

Node* ModelBuilder::node(const std::string& op_type, const std::vector<Value*>& inputs,
                         size_t num_outputs, std::vector<Attribute> attrs,
                         const std::string& name) {
  Node* n = graph().addNode(GraphBuilder::key(), op_type, inputs, num_outputs);
  n->name = name;
  if (!name.empty()) graph().reserveName(name);
  for (Attribute& a : attrs)
    n->setAttr(std::move(a));
  return n;
}

Value* ModelBuilder::op(const std::string& op_type, const std::vector<Value*>& inputs,
                        std::vector<Attribute> attrs, const std::string& name) {
  return node(op_type, inputs, 1, std::move(attrs), name)->output(0);
}

void ModelBuilder::output(Value* v) {
  graph().addOutput(GraphBuilder::key(), v);
}

Graph& ModelBuilder::subgraph(Node* n, const std::string& attr) {
  Attribute a;
  a.name = attr;
  a.type = AttrType::kGraph;
  a.g = std::make_unique<Graph>(&graph(), n);
  a.g->name = attr;
  Graph& g = *a.g;
  n->setAttr(std::move(a));
  return g;
}

void ModelBuilder::importDomain(const std::string& domain, int64_t version) {
  model_->opset_import.push_back(OpsetId{domain, version, {}});
}

std::unique_ptr<Model> ModelBuilder::build() {
  return std::move(model_);
}

std::vector<Tensor> runOp(const std::string& op, std::vector<Tensor> inputs,
                          std::vector<Attribute> attrs, int64_t opset, size_t num_outputs) {
  std::vector<const Tensor*> ptrs;
  for (const Tensor& t : inputs)
    ptrs.push_back(t.dtype() == DataType::kUndefined ? nullptr : &t);
  return runOp(op, ptrs, std::move(attrs), opset, num_outputs);
}

std::vector<Tensor> runOp(const std::string& op, const std::vector<const Tensor*>& inputs,
                          std::vector<Attribute> attrs, int64_t opset, size_t num_outputs,
                          const std::string& domain) {
  ModelBuilder b(opset);
  std::vector<Value*> values;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i] == nullptr) {
      values.push_back(nullptr);
      continue;
    }
    Tensor t = *inputs[i];
    t.name = "in" + std::to_string(i);
    values.push_back(b.initializer(std::move(t)));
  }
  Node* n = b.node(op, values, num_outputs, std::move(attrs));
  n->domain = domain;
  return evaluateNode(*n, opset, inputs);
}

void bindInput(Graph& g, Value* v, Tensor t) {
  const std::string name = v->name();
  t.name = g.uniqueName(name + "__data");
  Value* c = g.addInitializer(GraphBuilder::key(), std::move(t));
  g.replaceValue(GraphBuilder::key(), v, c);  // a graph output's name moves to c
  g.removeInput(GraphBuilder::key(), v);
  c->setName(name);
}

std::vector<float> floatValues(const Tensor& t) {
  std::vector<float> v;
  for (int64_t i = 0; i < t.numElements(); ++i)
    v.push_back(t.at<float>(static_cast<size_t>(i)));
  return v;
}

bool runPass(Model& m, const std::string& name, const PassOptions& options) {
  PassContext ctx(options);
  std::unique_ptr<Pass> p = createPass(name);
  EXPECT_NE(p, nullptr) << name;
  if (p == nullptr) return false;
  const bool changed = p->run(m, ctx);
  const VerifyResult v = verify(m);
  EXPECT_TRUE(v.ok) << name << ": " << v.message;
  return changed;
}

std::vector<float> ramp(size_t n, float step, float offset) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = std::fmod(static_cast<float>(i) * step + offset, 2.0F) - 1.0F;
  return v;
}

size_t countOps(const Graph& g, const std::string& op) {
  size_t n = 0;
  for (const Node* node : g.nodes())
    n += node->op_type == op;
  return n;
}

std::vector<std::vector<float>> evaluateByFolding(const Model& model,
                                                  const std::map<std::string, Tensor>& inputs) {
  std::unique_ptr<Model> m = model.clone();
  Graph& g = *m->graph;
  for (const auto& [name, t] : inputs) {
    Value* v = g.lookupLocal(name);
    EXPECT_TRUE(v != nullptr && v->isGraphInput()) << name;
    if (v != nullptr) bindInput(g, v, t);
  }
  PassOptions po;
  po.size_budget = int64_t{1} << 40;
  po.fold_dequantize_weights = true;
  PassContext ctx(po);
  createPass("fold-constants")->run(*m, ctx);
  std::vector<std::vector<float>> out;
  for (const Value* v : g.outputs()) {
    EXPECT_TRUE(v->isConstant()) << v->name() << " was not folded";
    if (!v->isConstant()) return {};
    const Tensor& t = *v->initializer();
    EXPECT_TRUE(t.dtype() == DataType::kFloat || t.dtype() == DataType::kFloat16) << v->name();
    const std::vector<double> d = kernels::readAll(t);  // float16 widened exactly
    out.emplace_back(d.begin(), d.end());
  }
  return out;
}

}  // namespace onnxfold::test
