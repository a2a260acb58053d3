#include "passes/fold_recipe.h"

#include <cstring>
#include <unordered_set>
#include <utility>

#include "ir/error.h"
#include "ir/graph_builder.h"
#include "ir/hash.h"
#include "kernels/op_registry.h"

namespace onnxfold {

namespace {

// The one recipe whose result is in memory (single-threaded by design).
const FoldRecipe* g_resident = nullptr;

// One node of a detached copy, evaluated at an opset (fold-constants' recipes).
class NodeStep : public FoldRecipe::Step {
 public:
  NodeStep(const Node& node, int64_t opset, const std::vector<std::optional<Tensor>>& inputs,
           size_t output)
      : graph_(std::make_unique<Graph>()), opset_(opset), output_(output) {
    // A detached copy: the fold erases the original node.
    std::vector<Value*> ins;
    for (size_t i = 0; i < inputs.size(); ++i) {
      ins.push_back(inputs[i] ? graph_->addInput(GraphBuilder::key(), "in" + std::to_string(i),
                                                 Type::tensor(inputs[i]->dtype()))
                              : nullptr);
    }
    node_ = graph_->addNode(GraphBuilder::key(), node.op_type, ins, node.numOutputs(), node.domain);
    node_->name = node.name;
    for (const Attribute& a : node.attributes)
      node_->attributes.push_back(a.copyWithoutGraphs());
  }

  Tensor compute(const std::vector<const Tensor*>& inputs) const override {
    std::vector<Tensor> outs = evaluateNode(*node_, opset_, inputs);
    return std::move(outs.at(output_));
  }

  void hash(Fnv1a& h) const override {
    h.str(node_->domain);
    h.str(node_->op_type);
    h.pod(opset_);
    h.pod(output_);
    for (const Attribute& a : node_->attributes) {
      h.str(a.name);
      h.pod(static_cast<int>(a.type));
      h.pod(a.i);
      h.pod(a.f);
      h.str(a.s);
      for (int64_t v : a.ints)
        h.pod(v);
      for (float v : a.floats)
        h.pod(v);
      for (const std::string& v : a.strings)
        h.str(v);
      if (a.type == AttrType::kTensor) FoldRecipe::hashTensor(h, a.t);
      for (const Tensor& t : a.tensors)
        FoldRecipe::hashTensor(h, t);
    }
  }

  std::string describe() const override {
    return "the folded output of " + node_->op_type + " '" + node_->name + "'";
  }

 private:
  std::unique_ptr<Graph> graph_;  // owns the detached copy of the node
  Node* node_ = nullptr;
  int64_t opset_;
  size_t output_;
};

}  // namespace

void FoldRecipe::hashTensor(Fnv1a& h, const Tensor& t) {
  h.pod(static_cast<int32_t>(t.dtype()));
  for (int64_t d : t.dims())
    h.pod(d);
  const Buffer& b = t.buffer();
  if (b.isSourceRange()) {
    const auto& src = b.source();
    h.pod(src->identity() ? *src->identity() : reinterpret_cast<uintptr_t>(src.get()));
    h.pod(b.sourceOffset());
  } else {
    h.pod(t.contentHash());
  }
}

FoldRecipe::FoldRecipe(const Node& node, int64_t opset, std::vector<std::optional<Tensor>> inputs,
                       size_t output, DataType dtype, std::vector<int64_t> dims)
    : step_(std::make_unique<NodeStep>(node, opset, inputs, output)),
      inputs_(std::move(inputs)),
      dtype_(dtype),
      dims_(std::move(dims)) {
  init();
}

FoldRecipe::FoldRecipe(std::unique_ptr<Step> step, std::vector<std::optional<Tensor>> inputs,
                       DataType dtype, std::vector<int64_t> dims)
    : step_(std::move(step)), inputs_(std::move(inputs)), dtype_(dtype), dims_(std::move(dims)) {
  init();
}

void FoldRecipe::init() {
  bytes_ = rawByteSize(dtype_, checkedElementCount(dims_));
  Fnv1a h;
  step_->hash(h);
  for (const auto& t : inputs_) {
    h.pod(t.has_value());
    if (t) hashTensor(h, *t);
  }
  identity_ = h.h;
}

FoldRecipe::~FoldRecipe() {
  if (g_resident == this) g_resident = nullptr;
}

std::string FoldRecipe::describe() const {
  return step_->describe();
}

namespace {
// The recipe whose result `t` is, when those bytes are not in memory (else null).
const FoldRecipe* pendingRecipe(const std::optional<Tensor>& t) {
  if (!t || !t->buffer().isSourceRange() || t->buffer().isResident()) return nullptr;
  return dynamic_cast<const FoldRecipe*>(t->buffer().source().get());
}
}  // namespace

// A chain of folds over one weight (151 Negs) is a chain of recipes, each reading the one
// before. Reading them on demand would recurse once per link and keep every link's result
// resident; computed innermost first instead, each reads only the previous result, so
// the peak is about three tensors and the stack does not grow with the chain.
void FoldRecipe::compute() const {
  std::vector<const FoldRecipe*> order;  // post-order: inputs before their readers
  std::vector<std::pair<const FoldRecipe*, size_t>> stack{{this, 0}};
  std::unordered_set<const FoldRecipe*> seen{this};
  while (!stack.empty()) {
    const FoldRecipe* r = stack.back().first;
    const size_t i = stack.back().second++;
    if (i == r->inputs_.size()) {
      order.push_back(r);
      stack.pop_back();
    } else if (const FoldRecipe* in = pendingRecipe(r->inputs_[i]);
               in != nullptr && in->result_.empty() && seen.insert(in).second) {
      stack.emplace_back(in, 0);
    }
  }
  for (const FoldRecipe* r : order)
    r->computeOne();
}

void FoldRecipe::computeOne() const {
  std::vector<bool> was_resident;
  std::vector<const Tensor*> ins;
  for (const auto& t : inputs_) {
    was_resident.push_back(!t || t->buffer().isResident());
    ins.push_back(t ? &*t : nullptr);
  }
  Tensor out;
  try {
    out = step_->compute(ins);
  } catch (const ResourceError&) {
    throw;
  } catch (const std::exception& e) {
    // It computed when the fold was planned; failing now means its inputs changed.
    throw ResourceError("cannot compute " + describe() + ": " + e.what());
  }
  // Inputs read only for this (weights in an input file) leave memory again.
  for (size_t i = 0; i < inputs_.size(); ++i) {
    if (!was_resident[i]) inputs_[i]->buffer().release();
  }
  if (out.dtype() != dtype_ || out.dims() != dims_ || out.byteSize() != bytes_) {
    throw ResourceError(describe() + " does not have the type its fold was planned with");
  }
  result_ = out.buffer();
  // Only now: the previous result may have been this one's input.
  if (g_resident != nullptr && g_resident != this) g_resident->drop();
  g_resident = this;
}

void FoldRecipe::read(uint64_t offset, size_t n, uint8_t* dst) const {
  if (result_.empty()) compute();
  std::memcpy(dst, result_.data() + offset, n);
}

Tensor FoldRecipe::computeOrDefer(std::unique_ptr<Step> step, const Tensor& input, DataType dtype,
                                  std::vector<int64_t> dims) {
  if (rawByteSize64(dtype, checkedElementCount(dims)) < kDeferBytes) return step->compute({&input});
  return deferred(std::make_shared<FoldRecipe>(
      std::move(step), std::vector<std::optional<Tensor>>{input}, dtype, std::move(dims)));
}

Tensor FoldRecipe::deferred(std::shared_ptr<FoldRecipe> recipe) {
  const DataType dtype = recipe->dtype_;
  std::vector<int64_t> dims = recipe->dims_;
  const auto bytes = static_cast<size_t>(recipe->bytes_);
  return Tensor(dtype, std::move(dims), Buffer::fromSource(std::move(recipe), 0, bytes));
}

}  // namespace onnxfold
