// sequence op family: sequences and optionals (what torch exports for lists and None).
//
// SequenceEmpty, SequenceConstruct, SequenceInsert, SequenceAt, SequenceErase,
// SequenceLength, SplitToSequence, ConcatFromSequence, SequenceMap, Optional,
// OptionalHasElement, OptionalGetElement.
//
// Values are Tensors of kind kSequence (the elements) or kNone (an optional without a
// value); an optional holding a value is the value itself. The outputs' shapes are known
// only once computed (kOpSizesOutputs). Positions follow the spec: negative counts from
// the back, SequenceInsert takes [-n, n], SequenceAt and SequenceErase [-n, n - 1].
#include <algorithm>
#include <cstring>

#include "ir/error.h"
#include "kernels/axis_copy.h"
#include "kernels/common.h"
#include "kernels/subgraph_eval.h"

namespace onnxfold {

namespace {

constexpr uint32_t kSequenceFlags = kOpSizesOutputs;

// The element type of sequence input `i` (a tensor type, rank possibly unknown).
Type elementType(const InferContext& ctx, size_t i) {
  const Type* t = ctx.inputType(i);
  if (t != nullptr && (t->kind == Type::Kind::kSequence || t->kind == Type::Kind::kOptional) &&
      t->elem) {
    return *t->elem;
  }
  if (t != nullptr && t->kind == Type::Kind::kTensor) return *t;
  return Type();
}

// A tensor type of `dt` whose rank and dims nothing says.
Type anyTensor(DataType dt) {
  return Type::tensor(dt);
}

const std::vector<Tensor>& sequenceInput(const ComputeContext& ctx, size_t i) {
  const Tensor& s = ctx.input(i);
  if (s.kind() != Tensor::Kind::kSequence)
    ctx.fail("input " + std::to_string(i) + " is not a sequence");
  return s.elements();
}

// A position given as a scalar int32/int64 tensor, made non-negative against `n`
// (`inclusive`: n itself is allowed, for inserting at the end).
size_t position(const ComputeContext& ctx, size_t input, size_t n, bool inclusive) {
  const Tensor& p = ctx.input(input);
  if (p.numElements() != 1 || (p.dtype() != DataType::kInt64 && p.dtype() != DataType::kInt32)) {
    ctx.fail("position must be one int32 or int64");
  }
  int64_t v = p.dtype() == DataType::kInt64 ? p.at<int64_t>(0) : p.at<int32_t>(0);
  const auto len = static_cast<int64_t>(n);
  if (v < 0) v += len;
  if (v < 0 || v > len || (!inclusive && v == len)) {
    ctx.fail("position " + std::to_string(v) + " is outside a sequence of " + std::to_string(n));
  }
  return static_cast<size_t>(v);
}

void checkElement(const ComputeContext& ctx, const Tensor& t, DataType dt) {
  if (!t.isPlain()) ctx.fail("a sequence element must be a tensor");
  if (dt != DataType::kUndefined && t.dtype() != dt) {
    ctx.fail("element of type " + std::string(dataTypeName(t.dtype())) + " in a sequence of " +
             std::string(dataTypeName(dt)));
  }
}

// ----------------------------------------------------------------- construct, insert, erase

void inferSequenceEmpty(InferContext& ctx) {
  const auto dt =
      static_cast<DataType>(ctx.attrInt("dtype", static_cast<int64_t>(DataType::kFloat)));
  ctx.setOutputType(0, Type::sequence(anyTensor(dt)));
}
void computeSequenceEmpty(ComputeContext& ctx) {
  const auto dt =
      static_cast<DataType>(ctx.attrInt("dtype", static_cast<int64_t>(DataType::kFloat)));
  ctx.output(0) = Tensor::sequence(dt, {});
}

void inferSequenceConstruct(InferContext& ctx) {
  if (ctx.numInputs() == 0) ctx.fail("needs at least one input");
  const Type* first = ctx.inputType(0);
  Type elem = first != nullptr ? *first : Type();
  for (size_t i = 1; i < ctx.numInputs(); ++i) {
    const Type* t = ctx.inputType(i);
    if (t == nullptr || !(*t == elem)) elem.shape.reset();  // the elements differ in shape
  }
  ctx.setOutputType(0, Type::sequence(std::move(elem)));
}
void computeSequenceConstruct(ComputeContext& ctx) {
  std::vector<Tensor> e;
  for (size_t i = 0; i < ctx.numInputs(); ++i) {
    checkElement(ctx, ctx.input(i), ctx.input(0).dtype());
    e.push_back(ctx.input(i));
  }
  ctx.output(0) = Tensor::sequence(ctx.input(0).dtype(), std::move(e));
}

void inferSequenceInsert(InferContext& ctx) {
  Type elem = elementType(ctx, 0);
  const Type* t = ctx.inputType(1);
  if (t == nullptr || !(*t == elem)) elem.shape.reset();
  if (elem.kind == Type::Kind::kNone && t != nullptr) elem = anyTensor(t->elem_type);
  ctx.setOutputType(0, Type::sequence(std::move(elem)));
}
void computeSequenceInsert(ComputeContext& ctx) {
  std::vector<Tensor> e = sequenceInput(ctx, 0);
  checkElement(ctx, ctx.input(1), ctx.input(0).dtype());
  const size_t at = ctx.hasInput(2) ? position(ctx, 2, e.size(), true) : e.size();
  e.insert(e.begin() + static_cast<std::ptrdiff_t>(at), ctx.input(1));
  ctx.output(0) = Tensor::sequence(ctx.input(0).dtype(), std::move(e));
}

void inferSequenceErase(InferContext& ctx) {
  ctx.setOutputType(0, Type::sequence(elementType(ctx, 0)));
}
void computeSequenceErase(ComputeContext& ctx) {
  std::vector<Tensor> e = sequenceInput(ctx, 0);
  if (e.empty()) ctx.fail("erasing from an empty sequence");
  const size_t at = ctx.hasInput(1) ? position(ctx, 1, e.size(), false) : e.size() - 1;
  e.erase(e.begin() + static_cast<std::ptrdiff_t>(at));
  ctx.output(0) = Tensor::sequence(ctx.input(0).dtype(), std::move(e));
}

// ----------------------------------------------------------------- reading

void inferSequenceAt(InferContext& ctx) {
  ctx.setOutputType(0, elementType(ctx, 0));
}
void computeSequenceAt(ComputeContext& ctx) {
  const std::vector<Tensor>& e = sequenceInput(ctx, 0);
  ctx.output(0) = e[position(ctx, 1, e.size(), false)];
}

void inferSequenceLength(InferContext& ctx) {
  ctx.setOutput(0, DataType::kInt64, std::vector<int64_t>{});
}
void computeSequenceLength(ComputeContext& ctx) {
  Tensor t(DataType::kInt64, {});
  const auto n = static_cast<int64_t>(sequenceInput(ctx, 0).size());
  std::memcpy(t.mutableBytes(), &n, sizeof n);
  ctx.output(0) = std::move(t);
}

// ----------------------------------------------------------------- split and concat

size_t normalizedAxis(const ComputeContext& ctx, int64_t axis, size_t rank) {
  const auto r = static_cast<int64_t>(rank);
  if (axis < 0) axis += r;
  if (axis < 0 || axis >= r) ctx.fail("axis out of range");
  return static_cast<size_t>(axis);
}

void inferSplitToSequence(InferContext& ctx) {
  ctx.setOutputType(0, Type::sequence(anyTensor(ctx.inputDtype(0))));
}
void computeSplitToSequence(ComputeContext& ctx) {
  const Tensor& x = ctx.input(0);
  const size_t axis = normalizedAxis(ctx, ctx.attrInt("axis"), x.rank());
  const int64_t len = x.dims()[axis];
  std::vector<int64_t> sizes;
  bool squeeze = false;
  if (!ctx.hasInput(1)) {
    sizes.assign(static_cast<size_t>(len), 1);
    squeeze = ctx.attrInt("keepdims") == 0;
  } else {
    const Tensor& s = ctx.input(1);
    auto at = [&s](size_t k) {
      return s.dtype() == DataType::kInt64 ? s.at<int64_t>(k) : s.at<int32_t>(k);
    };
    if (s.dtype() != DataType::kInt64 && s.dtype() != DataType::kInt32)
      ctx.fail("split must be int32 or int64");
    if (s.rank() == 0) {
      const int64_t chunk = at(0);
      if (chunk <= 0) ctx.fail("split must be positive");
      for (int64_t done = 0; done < len; done += chunk)
        sizes.push_back(std::min(chunk, len - done));
    } else {
      int64_t sum = 0;
      for (size_t k = 0; k < static_cast<size_t>(s.numElements()); ++k) {
        if (at(k) < 0) ctx.fail("split sizes must not be negative");
        sizes.push_back(at(k));
        if (!checkedAdd(sum, at(k), &sum)) ctx.fail("split sizes overflow int64");
      }
      if (sum != len) ctx.fail("split sizes do not add up to the axis length");
    }
  }
  std::vector<Tensor> parts;
  int64_t start = 0;
  for (int64_t n : sizes) {
    Tensor p = kernels::sliceAlong(x, axis, start, n);
    if (squeeze) {
      std::vector<int64_t> d = p.dims();
      d.erase(d.begin() + static_cast<std::ptrdiff_t>(axis));
      p.reshape(std::move(d));
    }
    parts.push_back(std::move(p));
    start += n;
  }
  ctx.output(0) = Tensor::sequence(x.dtype(), std::move(parts));
}

void inferConcatFromSequence(InferContext& ctx) {
  const Type elem = elementType(ctx, 0);
  ctx.setOutputUnknownRank(0, elem.elem_type);
}
void computeConcatFromSequence(ComputeContext& ctx) {
  const std::vector<Tensor>& e = sequenceInput(ctx, 0);
  if (e.empty()) ctx.fail("concatenating an empty sequence");
  const bool new_axis = ctx.attrInt("new_axis") != 0;
  if (!ctx.hasAttr("axis")) ctx.fail("needs the axis attribute");
  const size_t rank = e[0].rank() + (new_axis ? 1 : 0);
  const size_t axis = normalizedAxis(ctx, ctx.attrInt("axis", 0), rank);
  try {
    ctx.output(0) = new_axis ? kernels::stackAlong(e, axis) : kernels::concatAlong(e, axis);
  } catch (const UnsupportedError&) {
    throw;
  } catch (const std::exception& ex) {
    ctx.fail(ex.what());
  }
}

// ----------------------------------------------------------------- SequenceMap

void inferSequenceMap(InferContext& ctx) {
  const Attribute* a = ctx.attr("body");
  if (a == nullptr || !a->g) ctx.fail("needs a body graph");
  if (a->g->outputs().size() != ctx.numOutputs()) ctx.fail("body outputs do not match the node's");
  for (size_t i = 0; i < ctx.numOutputs(); ++i) {
    const Type& t = a->g->outputs()[i]->type;
    ctx.setOutputType(i, Type::sequence(t.kind == Type::Kind::kTensor ? t : Type()));
  }
}
void computeSequenceMap(ComputeContext& ctx) {
  const Attribute* a = ctx.attr("body");
  if (a == nullptr || !a->g) ctx.fail("needs a body graph");
  if (ctx.subgraph_env == nullptr) ctx.unsupported("its body needs the model's opsets to run");
  const Graph& body = *a->g;
  const size_t n = sequenceInput(ctx, 0).size();
  for (size_t j = 1; j < ctx.numInputs(); ++j) {
    const Tensor& in = ctx.input(j);
    if (in.kind() == Tensor::Kind::kSequence && in.elements().size() != n)
      ctx.fail("the sequences differ in length");
  }
  std::vector<std::vector<Tensor>> outs(ctx.numOutputs());
  for (size_t i = 0; i < n; ++i) {
    std::vector<const Tensor*> ins;
    for (size_t j = 0; j < ctx.numInputs(); ++j) {
      const Tensor& in = ctx.input(j);
      ins.push_back(in.kind() == Tensor::Kind::kSequence ? &in.elements()[i] : &in);
    }
    std::vector<Tensor> r = evaluateSubgraph(body, ins, *ctx.subgraph_env);
    for (size_t k = 0; k < outs.size(); ++k)
      outs[k].push_back(std::move(r.at(k)));
  }
  for (size_t k = 0; k < outs.size(); ++k) {
    if (!ctx.hasOutput(k)) continue;
    DataType dt = body.outputs()[k]->type.elem_type;
    if (!outs[k].empty()) dt = outs[k][0].dtype();
    ctx.output(k) = Tensor::sequence(dt, std::move(outs[k]));
  }
}

// ----------------------------------------------------------------- optionals

void inferOptional(InferContext& ctx) {
  if (ctx.hasInput(0)) {
    ctx.setOutputType(0, Type::optional(*ctx.inputType(0)));
    return;
  }
  const Attribute* a = ctx.attr("type");
  if (a == nullptr) ctx.fail("needs an input or the type attribute");
  ctx.setOutputType(0, Type::optional(a->tp));
}
void computeOptional(ComputeContext& ctx) {
  ctx.output(0) = ctx.hasInput(0) ? ctx.input(0) : Tensor::none();
}

void inferOptionalHasElement(InferContext& ctx) {
  ctx.setOutput(0, DataType::kBool, std::vector<int64_t>{});
}
void computeOptionalHasElement(ComputeContext& ctx) {
  Tensor t(DataType::kBool, {});
  t.mutableBytes()[0] = ctx.hasInput(0) && ctx.input(0).kind() != Tensor::Kind::kNone ? 1 : 0;
  ctx.output(0) = std::move(t);
}

void inferOptionalGetElement(InferContext& ctx) {
  const Type* t = ctx.inputType(0);
  if (t != nullptr && t->kind == Type::Kind::kOptional && t->elem) {
    ctx.setOutputType(0, *t->elem);
  } else if (t != nullptr) {
    ctx.setOutputType(0, *t);
  }
}
void computeOptionalGetElement(ComputeContext& ctx) {
  const Tensor& in = ctx.input(0);
  if (in.kind() == Tensor::Kind::kNone) ctx.fail("the optional holds no value");
  ctx.output(0) = in;
}

}  // namespace

void registerSequenceOps(OpRegistry& r) {
  const uint32_t f = kSequenceFlags;
  r.add({"", "SequenceEmpty", 11, inferSequenceEmpty, computeSequenceEmpty, f});
  r.add({"", "SequenceConstruct", 11, inferSequenceConstruct, computeSequenceConstruct, f});
  r.add({"", "SequenceInsert", 11, inferSequenceInsert, computeSequenceInsert, f});
  r.add({"", "SequenceErase", 11, inferSequenceErase, computeSequenceErase, f});
  r.add({"", "SequenceAt", 11, inferSequenceAt, computeSequenceAt, f});
  r.add({"", "SequenceLength", 11, inferSequenceLength, computeSequenceLength, f});
  for (int v : {11, 24})  // 24 adds types only
    r.add({"", "SplitToSequence", v, inferSplitToSequence, computeSplitToSequence, f});
  r.add({"", "ConcatFromSequence", 11, inferConcatFromSequence, computeConcatFromSequence, f});
  r.add({"", "SequenceMap", 17, inferSequenceMap, computeSequenceMap, f | kOpEvaluatesSubgraphs});
  for (int v : {15})
    r.add({"", "Optional", v, inferOptional, computeOptional, f});
  for (int v : {15, 18}) {
    r.add({"", "OptionalHasElement", v, inferOptionalHasElement, computeOptionalHasElement, f});
    r.add({"", "OptionalGetElement", v, inferOptionalGetElement, computeOptionalGetElement, f});
  }
}

}  // namespace onnxfold
