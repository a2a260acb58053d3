// control_flow op family: type and shape rules for If, Loop and Scan.
//
// These ops hold subgraphs; the propagation walk infers a node's subgraphs
// before the node itself, so the rules read the types of the body outputs.
// There are no kernels here: the fold pass inlines an If whose condition is
// known, and bodies are folded in place.
#include "kernels/common.h"

namespace onnxfold {

namespace {

const Graph* graphAttr(const InferContext& ctx, const char* name) {
  const Attribute* a = ctx.attr(name);
  return a != nullptr && a->g ? a->g.get() : nullptr;
}

// The more general of two types for the same output of two branches: dims that
// differ become unknown, a rank that differs becomes unknown.
Type mergeBranchTypes(const Type& a, const Type& b) {
  if (a.isNone()) return b;
  if (b.isNone() || a.kind != b.kind) return a;
  Type out = a;
  if (a.kind != Type::Kind::kTensor || !a.shape || !b.shape) {
    if (a.kind == Type::Kind::kTensor && (!a.shape || !b.shape)) out.shape.reset();
    return out;
  }
  if (a.shape->rank() != b.shape->rank()) {
    out.shape.reset();
    return out;
  }
  for (size_t i = 0; i < a.shape->rank(); ++i) {
    if (!(a.shape->dims[i] == b.shape->dims[i])) out.shape->dims[i] = Dim();
  }
  return out;
}

void inferIf(InferContext& ctx) {
  const Graph* then_g = graphAttr(ctx, "then_branch");
  const Graph* else_g = graphAttr(ctx, "else_branch");
  if (then_g == nullptr || else_g == nullptr) ctx.fail("needs then_branch and else_branch graphs");
  if (then_g->outputs().size() != ctx.numOutputs() ||
      else_g->outputs().size() != ctx.numOutputs()) {
    ctx.fail("branches have " + std::to_string(then_g->outputs().size()) + " and " +
             std::to_string(else_g->outputs().size()) + " outputs, the node " +
             std::to_string(ctx.numOutputs()));
  }
  for (size_t i = 0; i < ctx.numOutputs(); ++i) {
    ctx.setOutputType(i, mergeBranchTypes(then_g->outputs()[i]->type, else_g->outputs()[i]->type));
  }
}

// Loop(M, cond, v_initial...) -> (v_final..., scan_outputs...). The body is
// (iter, cond, v...) -> (cond, v..., scan...); scan outputs gain a leading
// dimension, the trip count, which is symbolic unless M is a known constant
// and the condition plays no part.
void inferLoop(InferContext& ctx) {
  const Graph* body = graphAttr(ctx, "body");
  if (body == nullptr) ctx.fail("needs a body graph");
  const size_t carried = ctx.numInputs() >= 2 ? ctx.numInputs() - 2 : 0;
  if (body->outputs().size() < 1 + carried) ctx.fail("body has too few outputs");
  for (size_t i = 0; i < carried && i < ctx.numOutputs(); ++i) {
    // The final value has the initial value's type, refined by the body's output where they agree.
    // An initial optional (None) carried into a body that gives a plain value: the body's.
    const Type* init = ctx.inputType(2 + i);
    const Type& out = body->outputs()[1 + i]->type;
    const bool use_body = init == nullptr || (!out.isNone() && init->kind != out.kind);
    ctx.setOutputType(i, use_body ? out : mergeBranchTypes(*init, out));
  }
  Dim trips;
  if (const Tensor* m = ctx.inputValue(0);
      m != nullptr && m->numElements() == 1 && !ctx.hasInput(1)) {
    trips = Dim::known(m->at<int64_t>(0));
  } else {
    trips = ctx.newSymbol();
  }
  for (size_t i = carried; i < ctx.numOutputs(); ++i) {
    const Type& per_iter = body->outputs()[1 + i]->type;
    if (per_iter.kind != Type::Kind::kTensor) {
      ctx.setOutputType(i, per_iter);
      continue;
    }
    Type t = per_iter;
    if (t.shape) t.shape->dims.insert(t.shape->dims.begin(), trips);
    ctx.setOutputType(i, t);
  }
}

// Scan (opset >= 9): N state variables then M scan inputs; outputs are N final
// states then K scan outputs, stacked along scan_output_axes.
void inferScan(InferContext& ctx) {
  const Graph* body = graphAttr(ctx, "body");
  if (body == nullptr) ctx.fail("needs a body graph");
  const int64_t m = ctx.attrInt("num_scan_inputs", 0);
  const auto n_in = static_cast<int64_t>(ctx.numInputs());
  const int64_t n_state = n_in - m;
  if (m <= 0 || n_state < 0) ctx.fail("num_scan_inputs does not fit the inputs");
  // The sequence length: the scanned axis of the first scan input.
  Dim len;
  const std::vector<int64_t> in_axes = ctx.attrInts("scan_input_axes");
  if (const Shape* s = ctx.inputShape(static_cast<size_t>(n_state))) {
    const int64_t axis = in_axes.empty() ? 0 : in_axes[0];
    const int64_t rank = static_cast<int64_t>(s->rank());
    if (axis >= -rank && axis < rank)
      len = s->dims[static_cast<size_t>(axis < 0 ? axis + rank : axis)];
  }
  const std::vector<int64_t> out_axes = ctx.attrInts("scan_output_axes");
  for (size_t i = 0; i < ctx.numOutputs() && i < body->outputs().size(); ++i) {
    const Type& bt = body->outputs()[i]->type;
    if (static_cast<int64_t>(i) < n_state) {
      ctx.setOutputType(i, bt);
      continue;
    }
    Type t = bt;
    if (t.kind == Type::Kind::kTensor && t.shape) {
      const size_t k = i - static_cast<size_t>(n_state);
      int64_t axis = k < out_axes.size() ? out_axes[k] : 0;
      const auto rank = static_cast<int64_t>(t.shape->rank()) + 1;
      if (axis < 0) axis += rank;
      if (axis < 0 || axis >= rank) ctx.fail("scan_output_axes out of range");
      t.shape->dims.insert(t.shape->dims.begin() + axis, len);
    }
    ctx.setOutputType(i, t);
  }
}

}  // namespace

void registerControlFlowOps(OpRegistry& r) {
  r.add({"", "If", 1, inferIf, nullptr});
  r.add({"", "Loop", 1, inferLoop, nullptr});
  r.add({"", "Scan", 9, inferScan, nullptr});
}

}  // namespace onnxfold
