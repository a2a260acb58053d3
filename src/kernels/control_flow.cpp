// control_flow op family: If, Loop and Scan.
//
// These ops hold subgraphs; the propagation walk infers a node's subgraphs
// before the node itself, so the rules read the types of the body outputs.
// If has no kernel: the fold pass inlines an If whose condition is known. Loop and
// Scan run their body with the other kernels (kernels/subgraph_eval.h) when every
// input is known: exporters emit them with constant trip counts for position tables,
// masks and Range. Their outputs' shapes are known only once they have run
// (kOpSizesOutputs); a loop that runs too long or grows too large is not folded.
#include <algorithm>
#include <cstring>

#include "kernels/axis_copy.h"
#include "kernels/common.h"
#include "kernels/subgraph_eval.h"

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
  if (m <= 0 || m > n_in) ctx.fail("num_scan_inputs does not fit the inputs");
  const int64_t n_state = n_in - m;
  // The sequence length: the scanned axis of every scan input (known lengths must agree).
  Dim len;
  const std::vector<int64_t> in_axes = ctx.attrInts("scan_input_axes");
  for (int64_t j = 0; j < m; ++j) {
    const Shape* s = ctx.inputShape(static_cast<size_t>(n_state + j));
    if (s == nullptr) continue;
    const int64_t axis = static_cast<size_t>(j) < in_axes.size() ? in_axes[j] : 0;
    const int64_t rank = static_cast<int64_t>(s->rank());
    if (axis < -rank || axis >= rank) {
      ctx.fail("scan_input_axes[" + std::to_string(j) + "] is out of range for rank " +
               std::to_string(rank));
    }
    const Dim& d = s->dims[static_cast<size_t>(axis < 0 ? axis + rank : axis)];
    if (len.isKnown() && d.isKnown() && d.value != len.value) {
      ctx.fail("scan inputs differ in length (" + std::to_string(len.value) + " and " +
               std::to_string(d.value) + ")");
    }
    if (j == 0 || (!len.isKnown() && d.isKnown())) len = d;
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

// ----------------------------------------------------------------- evaluation

// A cap on iterations: a loop whose condition never turns false, or a huge trip count,
// stays a loop (the memory limit bounds what the iterations allocate).
constexpr int64_t kMaxIterations = 1 << 20;

const Graph& bodyOf(const ComputeContext& ctx) {
  const Attribute* a = ctx.attr("body");
  if (a == nullptr || !a->g) ctx.fail("needs a body graph");
  return *a->g;
}

const SubgraphEnv& envOf(const ComputeContext& ctx) {
  if (ctx.subgraph_env == nullptr) ctx.unsupported("its body needs the model's opsets to run");
  return *ctx.subgraph_env;
}

bool scalarBool(const ComputeContext& ctx, const Tensor& t, const char* what) {
  if (t.dtype() != DataType::kBool || t.numElements() != 1)
    ctx.fail(std::string(what) + " must be one bool");
  return t.at<uint8_t>(0) != 0;
}

// Element `index` of `t` along `axis`, that axis removed.
Tensor sliceAt(const Tensor& t, size_t axis, int64_t index) {
  Tensor out = kernels::sliceAlong(t, axis, index, 1);
  std::vector<int64_t> dims = out.dims();
  dims.erase(dims.begin() + static_cast<std::ptrdiff_t>(axis));
  out.reshape(std::move(dims));
  return out;
}

// Stacks `parts` (one per step, all of one dtype and shape) along a new axis `axis`;
// `element` is the type of one part, for a loop that ran no step.
Tensor stack(const ComputeContext& ctx, const std::vector<Tensor>& parts, int64_t axis,
             const Type& element) {
  std::vector<int64_t> dims;
  if (!parts.empty()) {
    dims = parts[0].dims();
  } else {
    if (element.kind != Type::Kind::kTensor || !element.shape || !element.shape->isStatic() ||
        element.elem_type == DataType::kUndefined) {
      ctx.unsupported("ran no step and the body does not say its scan outputs' shape");
    }
    for (const Dim& d : element.shape->dims)
      dims.push_back(d.value);
  }
  const auto rank = static_cast<int64_t>(dims.size()) + 1;
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) ctx.fail("scan output axis out of range");
  if (parts.empty()) {
    dims.insert(dims.begin() + axis, 0);
    return Tensor(element.elem_type, dims);
  }
  for (const Tensor& p : parts) {
    if (!p.isPlain() || p.dtype() != parts[0].dtype() || p.dims() != dims) {
      ctx.fail("the body's scan output changes type or shape between steps");
    }
  }
  return kernels::stackAlong(parts, static_cast<size_t>(axis));
}

Tensor scalarOf(DataType dt, int64_t v) {
  Tensor t(dt, {});
  if (dt == DataType::kBool) {
    t.mutableBytes()[0] = v != 0 ? 1 : 0;
  } else {
    std::memcpy(t.mutableBytes(), &v, sizeof v);
  }
  return t;
}

// Loop(M, cond, v...) -> (v_final..., scan...): the body maps (i, cond, v...) to
// (cond, v..., scan...) and runs while i < M (when given) and cond (when given).
void computeLoop(ComputeContext& ctx) {
  const Graph& body = bodyOf(ctx);
  const SubgraphEnv& env = envOf(ctx);
  const bool has_m = ctx.hasInput(0);
  const bool has_cond = ctx.numInputs() > 1 && ctx.hasInput(1);
  if (!has_m && !has_cond) ctx.unsupported("runs until stopped from outside (no M, no cond)");
  int64_t trips = 0;
  if (has_m) {
    const Tensor& m = ctx.input(0);
    if (m.dtype() != DataType::kInt64 || m.numElements() != 1) ctx.fail("M must be one int64");
    trips = m.at<int64_t>(0);
  }
  bool cond = has_cond ? scalarBool(ctx, ctx.input(1), "cond") : true;
  const size_t carried = ctx.numInputs() > 2 ? ctx.numInputs() - 2 : 0;
  if (body.inputs().size() != 2 + carried || body.outputs().size() < 1 + carried) {
    ctx.fail("the body does not take (iter, cond, v...) and give (cond, v..., scan...)");
  }
  std::vector<Tensor> v;
  for (size_t k = 0; k < carried; ++k) {
    if (!ctx.hasInput(2 + k)) ctx.unsupported("an omitted loop-carried value");
    v.push_back(ctx.input(2 + k));
  }
  const size_t scans = body.outputs().size() - 1 - carried;
  std::vector<std::vector<Tensor>> scanned(scans);
  for (int64_t i = 0; (!has_m || i < trips) && cond; ++i) {
    if (i >= kMaxIterations) {
      ctx.unsupported("runs more than " + std::to_string(kMaxIterations) + " iterations");
    }
    const Tensor iter = scalarOf(DataType::kInt64, i);
    const Tensor c = scalarOf(DataType::kBool, 1);
    std::vector<const Tensor*> ins = {&iter, &c};
    for (const Tensor& t : v)
      ins.push_back(&t);
    std::vector<Tensor> outs = evaluateSubgraph(body, ins, env);
    cond = scalarBool(ctx, outs[0], "the body's condition");
    for (size_t k = 0; k < carried; ++k)
      v[k] = std::move(outs[1 + k]);
    for (size_t k = 0; k < scans; ++k)
      scanned[k].push_back(std::move(outs[1 + carried + k]));
  }
  for (size_t k = 0; k < carried && k < ctx.numOutputs(); ++k) {
    if (ctx.hasOutput(k)) ctx.output(k) = std::move(v[k]);
  }
  for (size_t k = 0; k < scans && carried + k < ctx.numOutputs(); ++k) {
    if (ctx.hasOutput(carried + k)) {
      ctx.output(carried + k) = stack(ctx, scanned[k], 0, body.outputs()[1 + carried + k]->type);
    }
  }
}

// Scan (opset >= 9): N states then M scanned inputs; the body maps (state..., slice...) to
// (state..., out...) once per position along each scanned input's axis.
// One scan: the body runs once per position along each scanned input's axis; returns the
// final states then the stacked scan outputs.
struct ScanSpec {
  std::vector<int64_t> in_axes, in_dirs, out_axes, out_dirs;
};

std::vector<Tensor> runScan(const ComputeContext& ctx, const Graph& body, const SubgraphEnv& env,
                            std::vector<Tensor> state, const std::vector<const Tensor*>& xs,
                            const ScanSpec& spec) {
  const size_t ns = state.size();
  if (body.inputs().size() != ns + xs.size() || body.outputs().size() < ns) {
    ctx.fail("the body does not take the states and one slice of each scanned input");
  }
  int64_t len = -1;
  std::vector<size_t> axes;
  for (size_t j = 0; j < xs.size(); ++j) {
    const auto rank = static_cast<int64_t>(xs[j]->rank());
    int64_t a = j < spec.in_axes.size() ? spec.in_axes[j] : 0;
    if (a < 0) a += rank;
    if (a < 0 || a >= rank) ctx.fail("scan input axis out of range");
    axes.push_back(static_cast<size_t>(a));
    const int64_t l = xs[j]->dims()[static_cast<size_t>(a)];
    if (len >= 0 && l != len) ctx.fail("scanned inputs differ in length");
    len = l;
  }
  if (len > kMaxIterations)
    ctx.unsupported("scans more than " + std::to_string(kMaxIterations) + " steps");
  const size_t k_out = body.outputs().size() - ns;
  std::vector<std::vector<Tensor>> scanned(k_out);
  for (int64_t t = 0; t < len; ++t) {
    std::vector<Tensor> slices;
    for (size_t j = 0; j < xs.size(); ++j) {
      const bool reverse = j < spec.in_dirs.size() && spec.in_dirs[j] != 0;
      slices.push_back(sliceAt(*xs[j], axes[j], reverse ? len - 1 - t : t));
    }
    std::vector<const Tensor*> ins;
    for (const Tensor& s : state)
      ins.push_back(&s);
    for (const Tensor& s : slices)
      ins.push_back(&s);
    std::vector<Tensor> outs = evaluateSubgraph(body, ins, env);
    for (size_t k = 0; k < ns; ++k)
      state[k] = std::move(outs[k]);
    for (size_t k = 0; k < k_out; ++k)
      scanned[k].push_back(std::move(outs[ns + k]));
  }
  std::vector<Tensor> results = std::move(state);
  for (size_t k = 0; k < k_out; ++k) {
    std::vector<Tensor>& parts = scanned[k];
    if (k < spec.out_dirs.size() && spec.out_dirs[k] != 0) std::reverse(parts.begin(), parts.end());
    results.push_back(stack(ctx, parts, k < spec.out_axes.size() ? spec.out_axes[k] : 0,
                            body.outputs()[ns + k]->type));
  }
  return results;
}

void setOutputs(ComputeContext& ctx, std::vector<Tensor> results) {
  for (size_t k = 0; k < results.size() && k < ctx.numOutputs(); ++k) {
    if (ctx.hasOutput(k)) ctx.output(k) = std::move(results[k]);
  }
}

// Scan (opset >= 9): N states then M scanned inputs.
void computeScan(ComputeContext& ctx) {
  const int64_t m = ctx.attrInt("num_scan_inputs", 0);
  const auto n_in = static_cast<int64_t>(ctx.numInputs());
  if (m <= 0 || n_in - m < 0) ctx.fail("num_scan_inputs does not fit the inputs");
  const auto ns = static_cast<size_t>(n_in - m);
  std::vector<Tensor> state;
  std::vector<const Tensor*> xs;
  for (size_t k = 0; k < static_cast<size_t>(n_in); ++k) {
    if (k < ns)
      state.push_back(ctx.input(k));
    else
      xs.push_back(&ctx.input(k));
  }
  const ScanSpec spec{ctx.attrInts("scan_input_axes"), ctx.attrInts("scan_input_directions"),
                      ctx.attrInts("scan_output_axes"), ctx.attrInts("scan_output_directions")};
  setOutputs(ctx, runScan(ctx, bodyOf(ctx), envOf(ctx), std::move(state), xs, spec));
}

// Scan-8: (sequence_lens, states..., scanned...), everything batched on axis 0, scanned on
// axis 1: one scan per batch entry, the results stacked on axis 0. Sequences shorter than
// the longest leave scan outputs undefined past their end: not folded.
void computeScan8(ComputeContext& ctx) {
  const int64_t m = ctx.attrInt("num_scan_inputs", 0);
  const auto n_in = static_cast<int64_t>(ctx.numInputs()) - 1;
  if (m <= 0 || n_in - m < 0) ctx.fail("num_scan_inputs does not fit the inputs");
  const auto ns = static_cast<size_t>(n_in - m);
  const Tensor& first = ctx.input(1 + ns);
  if (first.rank() < 2) ctx.fail("scanned inputs need a batch and a sequence axis");
  const int64_t batch = first.dims()[0];
  if (ctx.hasInput(0)) {
    const Tensor& lens = ctx.input(0);
    for (int64_t b = 0; b < lens.numElements(); ++b) {
      if (lens.dtype() != DataType::kInt64 ||
          lens.at<int64_t>(static_cast<size_t>(b)) != first.dims()[1])
        ctx.unsupported("sequences of different lengths");
    }
  }
  ScanSpec spec;
  spec.in_dirs = ctx.attrInts("directions");
  std::vector<std::vector<Tensor>> per_output;
  for (int64_t b = 0; b < batch; ++b) {
    std::vector<Tensor> state, slices;
    for (size_t k = 0; k < ns; ++k)
      state.push_back(sliceAt(ctx.input(1 + k), 0, b));
    for (size_t j = 0; j < static_cast<size_t>(m); ++j) {
      if (ctx.input(1 + ns + j).dims().at(0) != batch) ctx.fail("scanned inputs differ in batch");
      slices.push_back(sliceAt(ctx.input(1 + ns + j), 0, b));
    }
    std::vector<const Tensor*> xs;
    for (const Tensor& s : slices)
      xs.push_back(&s);
    std::vector<Tensor> r = runScan(ctx, bodyOf(ctx), envOf(ctx), std::move(state), xs, spec);
    per_output.resize(r.size());
    for (size_t k = 0; k < r.size(); ++k)
      per_output[k].push_back(std::move(r[k]));
  }
  if (batch == 0) ctx.unsupported("an empty batch");
  std::vector<Tensor> results;
  for (std::vector<Tensor>& parts : per_output)
    results.push_back(kernels::stackAlong(parts, 0));
  setOutputs(ctx, std::move(results));
}

// Scan-8's types: the body's, with the batch axis in front (and the sequence axis after it
// for scan outputs).
void inferScan8(InferContext& ctx) {
  const Graph* body = graphAttr(ctx, "body");
  if (body == nullptr) ctx.fail("needs a body graph");
  const int64_t m = ctx.attrInt("num_scan_inputs", 0);
  if (m <= 0 || m > static_cast<int64_t>(ctx.numInputs()) - 1) {
    ctx.fail("num_scan_inputs does not fit the inputs");
  }
  const auto n_state = static_cast<int64_t>(ctx.numInputs()) - 1 - m;
  Dim batch, len;
  if (const Shape* s = ctx.inputShape(static_cast<size_t>(1 + n_state)); s && s->rank() >= 2) {
    batch = s->dims[0];
    len = s->dims[1];
  }
  for (size_t i = 0; i < ctx.numOutputs() && i < body->outputs().size(); ++i) {
    Type t = body->outputs()[i]->type;
    if (t.kind == Type::Kind::kTensor && t.shape) {
      if (static_cast<int64_t>(i) >= n_state) t.shape->dims.insert(t.shape->dims.begin(), len);
      t.shape->dims.insert(t.shape->dims.begin(), batch);
    }
    ctx.setOutputType(i, t);
  }
}

}  // namespace

void registerControlFlowOps(OpRegistry& r) {
  constexpr uint32_t kRunsBody = kOpEvaluatesSubgraphs | kOpSizesOutputs;
  // Later versions widen what may flow through (If-11: branches of different shapes, merged;
  // 13: sequences; 16: optionals; then newer IR types) without changing what is computed.
  for (int v : {1, 11, 13, 16, 19, 21, 23, 24, 25})
    r.add({"", "If", v, inferIf, nullptr});
  for (int v : {1, 11, 13, 16, 19, 21, 23, 24, 25})
    r.add({"", "Loop", v, inferLoop, computeLoop, kRunsBody});
  r.add({"", "Scan", 8, inferScan8, computeScan8, kRunsBody});
  // Scan-11 allows negative axes, which inferScan and computeScan normalize at every version.
  for (int v : {9, 11, 16, 19, 21, 23, 24, 25})
    r.add({"", "Scan", v, inferScan, computeScan, kRunsBody});
}

}  // namespace onnxfold
