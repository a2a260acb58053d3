#include "kernels/op_registry.h"

#include <algorithm>

#include "ir/error.h"
#include "kernels/eval_budget.h"
#include "kernels/subgraph_eval.h"
#include "schema/op_schema.h"

namespace onnxfold {

std::vector<float> OpContext::attrFloats(std::string_view name, std::vector<float> dflt) const {
  const Attribute* a = node_.attr(name);
  return a && a->type == AttrType::kFloats ? a->floats : dflt;
}

namespace {
std::string nodeLabel(const Node& n) {
  std::string where = n.op_type;
  if (!n.name.empty()) where += " '" + n.name + "'";
  return where;
}
}  // namespace

const AttributeDefault& OpContext::schemaDefault(std::string_view name, AttrType type) const {
  const std::string where = "attribute '" + std::string(name) + "' is absent and ";
  const std::string domain = node_.domain.empty() ? "ai.onnx" : node_.domain;
  const OpSchema* s = OpSchemas::instance().find(node_.domain, node_.op_type, opset_);
  if (s == nullptr) {
    fail(where + "the op has no schema at opset " + std::to_string(opset_) + " of " + domain +
         " to give its default");
  }
  const AttributeSchema* a = s->attribute(name);
  const std::string version = node_.op_type + "-" + std::to_string(s->since_version) + " (opset " +
                              std::to_string(opset_) + " of " + domain + ")";
  if (a == nullptr) fail(where + version + " has no such attribute");
  if (!a->hasDefault()) {
    fail(where + version + (a->required ? " requires it" : " gives it no default"));
  }
  if (a->default_value.type != type) {
    fail(where + "its default in " + version + " is of type " +
         std::string(attrTypeName(a->default_value.type)) + ", read as " +
         std::string(attrTypeName(type)));
  }
  return a->default_value;
}

namespace {
// A present attribute of another type than the read: the node is invalid (validation refuses
// it before folding).
[[noreturn]] void wrongType(const OpContext& ctx, const Attribute& a, AttrType type) {
  ctx.fail("attribute '" + a.name + "' is of type " + std::string(attrTypeName(a.type)) + ", not " +
           std::string(attrTypeName(type)));
}
}  // namespace

int64_t OpContext::attrInt(std::string_view name) const {
  const Attribute* a = node_.attr(name);
  if (a == nullptr) return schemaDefault(name, AttrType::kInt).i;
  if (a->type != AttrType::kInt) wrongType(*this, *a, AttrType::kInt);
  return a->i;
}

float OpContext::attrFloat(std::string_view name) const {
  const Attribute* a = node_.attr(name);
  if (a == nullptr) return schemaDefault(name, AttrType::kFloat).f;
  if (a->type != AttrType::kFloat) wrongType(*this, *a, AttrType::kFloat);
  return a->f;
}

std::string OpContext::attrString(std::string_view name) const {
  const Attribute* a = node_.attr(name);
  if (a == nullptr) return schemaDefault(name, AttrType::kString).s;
  if (a->type != AttrType::kString) wrongType(*this, *a, AttrType::kString);
  return a->s;
}

void OpContext::fail(const std::string& message) const {
  throw Error(nodeLabel(node_) + ": " + message);
}

void OpContext::unsupported(const std::string& message) const {
  throw UnsupportedError(nodeLabel(node_) + ": " + message);
}

int64_t OpContext::sizeMul(int64_t a, int64_t b) const {
  int64_t r = 0;
  if (!checkedMul(a, b, &r)) {
    fail("a size overflows int64 (" + std::to_string(a) + " * " + std::to_string(b) + ")");
  }
  return r;
}

int64_t OpContext::sizeAdd(int64_t a, int64_t b) const {
  int64_t r = 0;
  if (!checkedAdd(a, b, &r)) {
    fail("a size overflows int64 (" + std::to_string(a) + " + " + std::to_string(b) + ")");
  }
  return r;
}

// ----------------------------------------------------------------- InferContext

InferContext::InferContext(const Node& node, int64_t opset, size_t num_inputs, size_t num_outputs)
    : OpContext(node, opset),
      input_types(num_inputs, nullptr),
      input_values(num_inputs, nullptr),
      input_symbolic(num_inputs, nullptr),
      output_types(num_outputs),
      output_values(num_outputs),
      output_symbolic(num_outputs) {}

DataType InferContext::inputDtype(size_t i) const {
  const Type* t = inputType(i);
  if (t != nullptr && (t->kind == Type::Kind::kTensor || t->kind == Type::Kind::kSparseTensor)) {
    return t->elem_type;
  }
  if (const Tensor* v = inputValue(i)) return v->dtype();
  return DataType::kUndefined;
}

const Shape* InferContext::inputShape(size_t i) const {
  const Type* t = inputType(i);
  if (t == nullptr || t->kind != Type::Kind::kTensor || !t->shape) return nullptr;
  return &*t->shape;
}

std::optional<SymbolicValue> InferContext::inputSymbolic(size_t i) const {
  if (i < input_symbolic.size() && input_symbolic[i] != nullptr) return *input_symbolic[i];
  const Tensor* v = inputValue(i);
  if (v == nullptr || !v->isPlain() || v->rank() > 1) return std::nullopt;
  if (v->dtype() != DataType::kInt64 && v->dtype() != DataType::kInt32) return std::nullopt;
  SymbolicValue out;
  const auto n = static_cast<size_t>(v->numElements());
  out.reserve(n);
  for (size_t k = 0; k < n; ++k) {
    out.push_back(
        Dim::known(v->dtype() == DataType::kInt64 ? v->at<int64_t>(k) : v->at<int32_t>(k)));
    // Negative entries (-1 in a Reshape target) are values, not dims: keep them.
    if (out.back().value < 0) {
      out.back().param.clear();
    }
  }
  return out;
}

bool InferContext::allInputValuesKnown() const {
  for (size_t i = 0; i < input_types.size(); ++i) {
    if (input_types[i] != nullptr && input_values[i] == nullptr) return false;
  }
  return true;
}

void InferContext::setOutput(size_t i, DataType dtype, Shape shape) {
  output_types.at(i) = Type::tensor(dtype, std::move(shape));
}

void InferContext::setOutput(size_t i, DataType dtype, const std::vector<int64_t>& dims) {
  Shape s;
  for (int64_t d : dims)
    s.dims.push_back(Dim::known(d));
  setOutput(i, dtype, std::move(s));
}

void InferContext::setOutputUnknownRank(size_t i, DataType dtype) {
  output_types.at(i) = Type::tensor(dtype, std::nullopt);
}

void InferContext::setOutputValue(size_t i, Tensor t) {
  setOutput(i, t.dtype(), t.dims());
  output_values.at(i) = std::move(t);
}

Dim InferContext::newSymbol() {
  static int fallback = 0;
  int& c = symbol_counter != nullptr ? *symbol_counter : fallback;
  return Dim::symbol("unk__" + std::to_string(c++));
}

// ----------------------------------------------------------------- ComputeContext

const Tensor& ComputeContext::input(size_t i) const {
  if (!hasInput(i)) fail("input " + std::to_string(i) + " is missing");
  return *inputs[i];
}

Tensor& ComputeContext::output(size_t i) const {
  if (!hasOutput(i)) fail("output " + std::to_string(i) + " is not produced");
  return *outputs[i];
}

// ----------------------------------------------------------------- OpRegistry

OpRegistry::OpRegistry() {
  registerUnaryMathOps(*this);
  registerActivationOps(*this);
  registerSwiGLUOps(*this);
  registerBinaryOps(*this);
  registerWhereClipDropoutOps(*this);
  registerCastOps(*this);
  registerQuantizeOps(*this);
  registerReduceOps(*this);
  registerMatmulOps(*this);
  registerQuantizedLinearOps(*this);
  registerConvOps(*this);
  registerConvTransposeOps(*this);
  registerPoolOps(*this);
  registerEinsumOps(*this);
  registerReshapeOps(*this);
  registerTransposeOps(*this);
  registerConcatSplitOps(*this);
  registerPadTileOps(*this);
  registerGatherSliceOps(*this);
  registerScatterOps(*this);
  registerSortingOps(*this);
  registerIndexingOps(*this);
  registerNormalizationOps(*this);
  registerShapeOps(*this);
  registerAttentionOps(*this);
  registerResizeOps(*this);
  registerGridSampleOps(*this);
  registerDetectionOps(*this);
  registerRecurrentOps(*this);
  registerSignalOps(*this);
  registerControlFlowOps(*this);
  registerLossOps(*this);
  registerDetOps(*this);
  registerRandomOps(*this);
  registerStringOps(*this);
  registerImageCodecOps(*this);
  registerMlOps(*this);
  registerTrainingOps(*this);
  registerSequenceOps(*this);
  registerFlexAttentionOps(*this);
  for (size_t i = 0; i < entries_.size(); ++i)
    by_type_[entries_[i].op_type].push_back(static_cast<uint32_t>(i));
}

const OpRegistry& OpRegistry::instance() {
  static const OpRegistry r;
  return r;
}

const OpEntry* OpRegistry::find(std::string_view domain, std::string_view op_type,
                                int64_t opset) const {
  const auto it = by_type_.find(op_type);
  if (it == by_type_.end()) return nullptr;
  const bool dflt = isDefaultDomain(domain);
  const OpEntry* best = nullptr;
  for (const uint32_t i : it->second) {
    const OpEntry& e = entries_[i];
    if (dflt ? !isDefaultDomain(e.domain) : e.domain != domain) continue;
    if (e.since_version > opset) continue;
    if (best == nullptr || e.since_version > best->since_version) best = &e;
  }
  return best;
}

// ----------------------------------------------------------------- evaluation

namespace {

// The static types of known input tensors, for an inference rule (`types` owns them).
void bindInputTypes(InferContext& ic, const std::vector<const Tensor*>& inputs,
                    std::vector<Type>& types) {
  types.resize(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i] == nullptr) continue;
    if (inputs[i]->kind() == Tensor::Kind::kSequence) {
      types[i] = Type::sequence(Type::tensor(inputs[i]->dtype()));
      ic.input_types[i] = &types[i];
      continue;
    }
    if (inputs[i]->kind() == Tensor::Kind::kNone) {
      types[i] = Type::optional(Type());
      ic.input_types[i] = &types[i];
      continue;
    }
    types[i] = Type::tensor(inputs[i]->dtype());
    types[i].shape.emplace();
    for (int64_t d : inputs[i]->dims())
      types[i].shape->dims.push_back(Dim::known(d));
    ic.input_types[i] = &types[i];
  }
}

// ONNX bools are bytes, and a hostile model may store 86 where it means true: reading that as
// a C++ bool is undefined (UBSan caught it in Cast), so kernels see 0 and 1 only.
Tensor withCanonicalBools(Tensor t) {
  if (!t.isPlain() || t.dtype() != DataType::kBool || !t.isLoaded()) return t;
  const uint8_t* b = t.bytes();
  size_t i = 0;
  while (i < t.byteSize() && b[i] <= 1)
    ++i;
  if (i == t.byteSize()) return t;
  uint8_t* w = t.mutableBytes();  // a copy: the bytes may be a view of the model
  for (; i < t.byteSize(); ++i)
    w[i] = w[i] != 0;
  return t;
}

}  // namespace

std::optional<Type> inferOutputType(const Node& node, int64_t opset,
                                    const std::vector<const Tensor*>& inputs, size_t output,
                                    int64_t max_value_elements) {
  const OpEntry* entry = OpRegistry::instance().find(node.domain, node.op_type, opset);
  if (entry == nullptr || output >= node.numOutputs()) return std::nullopt;
  InferContext ic(node, opset, inputs.size(), node.numOutputs());
  std::vector<Type> types;
  bindInputTypes(ic, inputs, types);
  std::vector<Tensor> aligned(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    // Values only of small inputs (shapes, axes, scales): large ones are not read.
    if (inputs[i] != nullptr && inputs[i]->numElements() <= max_value_elements) {
      aligned[i] = withCanonicalBools(inputs[i]->aligned());
      ic.input_values[i] = &aligned[i];
    }
  }
  int symbols = 0;
  ic.symbol_counter = &symbols;
  try {
    entry->infer(ic);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (ic.output_values[output]) return std::nullopt;  // computed by the rule: nothing to defer
  const Type& t = ic.output_types[output];
  if (t.kind != Type::Kind::kTensor || !t.shape || !t.shape->isStatic()) return std::nullopt;
  return t;
}

std::vector<Tensor> evaluateNode(const Node& node, int64_t opset,
                                 const std::vector<const Tensor*>& inputs, const SubgraphEnv* env) {
  const OpEntry* entry = OpRegistry::instance().find(node.domain, node.op_type, opset);
  const std::string op = (node.domain.empty() ? "" : node.domain + "::") + node.op_type;
  if (entry == nullptr) {
    throw Error("no rule for op " + op + " at opset " + std::to_string(opset));
  }
  EvalBudget::chargeSteps(1, op.c_str());
  // Values computed in a body are hidden from the size budgets: they count against the
  // run's bytes, before they are allocated.
  const bool in_body = env != nullptr && env->in_body;
  InferContext ic(node, opset, inputs.size(), node.numOutputs());
  std::vector<Type> types;
  bindInputTypes(ic, inputs, types);
  std::vector<Tensor> aligned(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i] == nullptr) continue;
    aligned[i] =
        withCanonicalBools((entry->flags & kOpUnalignedInputs) ? *inputs[i] : inputs[i]->aligned());
    ic.input_values[i] = &aligned[i];
  }
  int symbols = 0;
  ic.symbol_counter = &symbols;
  entry->infer(ic);

  std::vector<Tensor> outputs(node.numOutputs());
  ComputeContext cc(node, opset);
  cc.subgraph_env = env;
  for (size_t i = 0; i < inputs.size(); ++i)
    cc.inputs.push_back(inputs[i] ? &aligned[i] : nullptr);
  cc.outputs.assign(node.numOutputs(), nullptr);
  bool all_given = true;
  for (size_t i = 0; i < node.numOutputs(); ++i) {
    if (node.output(i) == nullptr) continue;
    if (ic.output_values[i]) {
      outputs[i] = std::move(*ic.output_values[i]);
      continue;
    }
    all_given = false;
    if (entry->flags & kOpSizesOutputs) {
      cc.outputs[i] = &outputs[i];
      continue;
    }
    const Type& t = ic.output_types[i];
    if (t.kind != Type::Kind::kTensor || !t.shape || !t.shape->isStatic()) {
      throw Error(op + ": output " + std::to_string(i) +
                  " has no static shape although all inputs are known (inference rule incomplete)");
    }
    std::vector<int64_t> dims;
    for (const Dim& d : t.shape->dims)
      dims.push_back(d.value);
    const int64_t count = checkedElementCount(dims);
    if (count < 0) throw Error(op + ": output shape overflows");
    if (in_body) EvalBudget::chargeBytes(rawByteSize64(t.elem_type, count), op.c_str());
    outputs[i] = (entry->flags & kOpWritesWholeOutputs) && t.elem_type != DataType::kString
                     ? Tensor::uninitialized(t.elem_type, dims)
                     : Tensor(t.elem_type, dims);
    cc.outputs[i] = &outputs[i];
  }
  if (!all_given) {
    if (entry->compute == nullptr) {
      throw Error("no kernel for op " + op + " at opset " + std::to_string(opset));
    }
    entry->compute(cc);
    if (in_body && (entry->flags & kOpSizesOutputs)) {
      uint64_t bytes = 0;  // sized by the kernel: counted once computed
      for (size_t i = 0; i < outputs.size(); ++i) {
        if (cc.outputs[i] != nullptr) bytes += outputs[i].storedBytes();
      }
      EvalBudget::chargeBytes(bytes, op.c_str());
    }
  }
  return outputs;
}

}  // namespace onnxfold
