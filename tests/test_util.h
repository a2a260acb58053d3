// Helpers shared by the onnxfold tests: where the shared test data is, reading
// files into Buffers, and a tiny builder for IR graphs.
//
// Tests that need ../shared call ONNXFOLD_REQUIRE_SHARED() first: without the
// folder they skip and say why, so a plain clone still tests.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ir/buffer.h"
#include "ir/graph.h"
#include "ir/graph_builder.h"
#include "passes/pass.h"
#include "passes/rewrite.h"

namespace onnxfold::test {

// The shared data folder: $ONNXFOLD_SHARED if set, else the ONNXFOLD_SHARED_DIR
// the build was configured with. Empty when that folder does not exist.
std::string sharedDir();

// A sub-path of the shared folder ("models", "onnx-tests/node/..."), or "" when
// the shared folder or that path is missing.
std::string sharedPath(const std::string& relative);

// Why shared data is missing, for skip messages.
std::string sharedMissingReason();

// Skips the current test (from the test body) when the shared folder is missing.
#define ONNXFOLD_REQUIRE_SHARED()                              \
  do {                                                         \
    if (::onnxfold::test::sharedDir().empty()) {               \
      GTEST_SKIP() << ::onnxfold::test::sharedMissingReason(); \
    }                                                          \
  } while (0)

// The whole file as an owned Buffer. Throws std::runtime_error if it cannot be read.
Buffer readFileBuffer(const std::string& path);

// An owned Buffer holding a copy of `bytes`.
Buffer bufferOf(const std::string& bytes);
// A Buffer that takes over `bytes` (no copy).
Buffer takeBuffer(std::string&& bytes);

// Every *.onnx under shared/models and shared/onnx-tests (recursively), sorted.
// Empty without shared data.
std::vector<std::string> allSharedModels();
// Every *.onnx under one sub-folder of shared (recursively), sorted.
std::vector<std::string> sharedModelsUnder(const std::string& relative);

// A path relative to the shared folder, for messages.
std::string shortPath(const std::string& path);

// A float tensor with the given dims and values (values.size() must match).
Tensor floatTensor(std::vector<int64_t> dims, const std::vector<float>& values,
                   std::string name = "");
Tensor int64Tensor(std::vector<int64_t> dims, const std::vector<int64_t>& values,
                   std::string name = "");

// Evaluates one op on constant inputs through the op registry (infer + compute); a
// default-constructed Tensor stands for an omitted optional input.
std::vector<Tensor> runOp(const std::string& op, std::vector<Tensor> inputs,
                          std::vector<Attribute> attrs, int64_t opset, size_t num_outputs);
// The same with optional inputs: a null entry is an omitted input; `domain` is the op's domain.
std::vector<Tensor> runOp(const std::string& op, const std::vector<const Tensor*>& inputs,
                          std::vector<Attribute> attrs, int64_t opset, size_t num_outputs,
                          const std::string& domain = "");
// Replaces graph input `v` by an initializer holding `t` under the same name (same uses,
// same place among the outputs).
void bindInput(Graph& g, Value* v, Tensor t);
// The elements of a float32 tensor.
std::vector<float> floatValues(const Tensor& t);
// Deterministic values in [-1, 1).
std::vector<float> ramp(size_t n, float step = 0.37F, float offset = 0.25F);
// Nodes of `g` (not of its subgraphs) with op type `op`.
size_t countOps(const Graph& g, const std::string& op);
// Evaluates `model` on `inputs` (graph input name -> data) by binding them as initializers
// and folding everything (DequantizeLinear of weights included, no size budget); returns the
// graph outputs, which must be float32 or float16, as float vectors (a test failure when one does
// not fold).
std::vector<std::vector<float>> evaluateByFolding(const Model& model,
                                                  const std::map<std::string, Tensor>& inputs);

// A vector of (move-only) attributes: attrs(Attribute::makeInt("axis", 1), ...), as the
// Rewriter's attributes() makes them.
template <class... A>
std::vector<Attribute> attrs(A&&... a) {
  return attributes(std::forward<A>(a)...);
}

// Builds a Model directly in IR, for tests:
//
//   ModelBuilder b;
//   Value* x = b.input("x", DataType::kFloat, {1, 3});
//   Value* w = b.initializer("w", {3}, {1, 2, 3});
//   Value* y = b.op("Mul", {x, w});
//   b.output(y);
//   std::unique_ptr<Model> m = b.build();
// Runs the registered pass `name` once with `options`, then the IR verifier (a
// failure is a test failure); returns whether the pass changed the model.
bool runPass(Model& m, const std::string& name, const PassOptions& options = {});

class ModelBuilder {
 public:
  explicit ModelBuilder(int64_t opset = 17);

  Model& model() { return *model_; }
  Graph& graph() { return *model_->graph; }

  // A graph input; negative dims are symbolic ("N0", "N1", ...).
  Value* input(const std::string& name, DataType dtype, const std::vector<int64_t>& dims);
  Value* initializer(const std::string& name, std::vector<int64_t> dims,
                     const std::vector<float>& values);
  Value* initializer(Tensor t);
  // A node appended to the main graph; `name` is the node name (may be empty).
  Node* node(const std::string& op_type, const std::vector<Value*>& inputs, size_t num_outputs = 1,
             std::vector<Attribute> attrs = {}, const std::string& name = "");
  // Shorthand for a one-output node: returns its output.
  Value* op(const std::string& op_type, const std::vector<Value*>& inputs,
            std::vector<Attribute> attrs = {}, const std::string& name = "");
  void output(Value* v);
  // A new empty graph attribute `attr` of `n` (an If branch, a Loop body, a score_mod), named
  // after it, for the test to fill.
  Graph& subgraph(Node* n, const std::string& attr);
  // Imports another domain (for custom ops).
  void importDomain(const std::string& domain, int64_t version);

  // Hands the model over; the builder is empty afterwards.
  std::unique_ptr<Model> build();

 private:
  std::unique_ptr<Model> model_;
};

}  // namespace onnxfold::test
