// quant-fold-weights: weights are quantized once, offline.
//
//  - QuantizeLinear of a constant float weight with constant parameters is
//    evaluated by the QuantizeLinear kernel itself (src/kernels/quantize.cpp), so
//    the int8/uint8/int4 initializer is bit-identical to what the model
//    computed at run time (float division, round half to even, saturation).
//    fold-constants does the same in the default pipeline; this pass makes the
//    quant pipeline independent of it.
//  - The float bias of a Conv or Gemm whose input and weight are dequantized
//    (constant parameters, input per tensor) becomes an int32 constant with
//    zero point 0 and scale x_scale * w_scale (per output channel when the
//    weight is), behind a DequantizeLinear: the form QLinearConv and the QDQ
//    runtimes expect. The value is round(b / (sx * sw)), half to even,
//    saturated to int32, with sx * sw in float32 and the quotient in double:
//    a bias step is tiny, so quotients are large (1e5 and more) and a
//    float32 quotient keeps too few fraction bits to round them right near
//    .5 (double reproduces all 18,056 int32 biases of the mobilenet_v2 int8w
//    sample; float32 division misses 42). The bias moves
//    by at most half a step of sx * sw, the accumulator's unit: for an 8-bit
//    output far below one output step, but a 16-bit output's step can be finer
//    than that. So the bias is made int32 only if its rounding moves no
//    channel by more than half the finest step of the QuantizeLinear nodes its
//    result reaches through float ops: after Relu, Clip, pooling and data
//    movement (which move no value farther than their input moved) the output
//    then moves by at most one step; after ops that scale values (a MatMul
//    sums the shift over its K terms) the same rule is a heuristic. A value
//    that reaches no QuantizeLinear (a float graph output) is not bounded by
//    one: the bias is made int32 as quantizers make it (mobilenet_v2's fp32w
//    and int8w samples then finalize to the same bytes). Otherwise it stays
//    float (ConvInteger / MatMulInteger add a float bias after the rescale;
//    QLinearConv, which needs the int32 form, is not made then).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <unordered_set>
#include <vector>

#include "kernels/op_registry.h"
#include "passes/passes.h"
#include "passes/quant/quant.h"
#include "passes/rewrite.h"

namespace onnxfold {

namespace {

using namespace quant;

class QuantFoldWeights : public Pass {
 public:
  std::string_view name() const override { return "quant-fold-weights"; }
  std::string_view description() const override {
    return "quantize constant weights once (QuantizeLinear of a constant) and float biases of "
           "quantized Conv/Gemm to int32";
  }

  bool run(Model& model, PassContext& ctx) override {
    bool changed = false;
    forEachGraph(model, [&](Graph& g) {
      Rewriter rw(model, g, /*notify=*/false);
      for (Node* n : g.nodes()) {
        if (n->isOp("QuantizeLinear"))
          changed |= foldQuantize(model, rw, n, ctx);
        else if (n->isOp("Conv") || n->isOp("Gemm"))
          changed |= quantizeBias(rw, n, ctx);
      }
    });
    return changed;
  }

 private:
  static bool foldQuantize(const Model& model, Rewriter& rw, Node* n, PassContext& ctx) {
    const Value* x = n->input(0);
    const Tensor* xt = constantOf(x);
    if (xt == nullptr || !isFloatingPoint(xt->dtype()) || n->output(0)->isGraphOutput())
      return false;  // a graph output keeps its producer; fold-constants handles those
    std::vector<const Tensor*> inputs;
    for (const Value* v : n->inputs()) {
      if (v == nullptr) {
        inputs.push_back(nullptr);
        continue;
      }
      const Tensor* t = constantOf(v);
      if (t == nullptr) return false;
      inputs.push_back(t);
    }
    std::vector<Tensor> out;
    try {
      out = evaluateNode(*n, model.opsetVersion(""), inputs);
    } catch (const std::exception& e) {
      // A malformed quantization stays as it is, for the runtime to reject.
      ctx.explain(*n, std::string("weight quantization failed: ") + e.what());
      return false;
    }
    Value* qv = rw.constant(std::move(out.at(0)), x->name() + "_quantized");
    qv->type = n->output(0)->type;
    rw.replaceNode(n, {qv});
    ctx.count("weights quantized");
    return true;
  }

  // The finest step of the QuantizeLinear nodes the float value `v` reaches through float ops
  // (values of unknown type followed too; at most 256 nodes visited); +inf when it reaches none, 0
  // when one's parameters are not known constants.
  static float finestQuantStep(const Value* v) {
    float step = std::numeric_limits<float>::infinity();
    std::vector<const Value*> todo = {v};
    std::unordered_set<const Node*> seen;
    while (!todo.empty() && seen.size() < 256) {
      const Value* cur = todo.back();
      todo.pop_back();
      for (const Use& u : cur->uses()) {
        const Node* n = u.user;
        if (!seen.insert(n).second) continue;
        if (n->isOp("QuantizeLinear") && u.index == 0) {
          const auto p = paramsOf(n);
          if (!p) return 0.0F;
          for (float s : p->scale)
            step = std::min(step, s);
          continue;
        }
        for (const Value* o : n->outputs()) {
          const DataType t = o != nullptr ? dtypeOf(o) : DataType::kUndefined;
          if (o != nullptr && (t == DataType::kFloat || t == DataType::kUndefined)) {
            todo.push_back(o);  // a float value (or one whose type is not inferred yet)
          }
        }
      }
    }
    return step;
  }

  static bool quantizeBias(Rewriter& rw, Node* n, PassContext& ctx) {
    Value* b = n->input(2);
    const Tensor* bt = constantOf(b);
    if (bt == nullptr || bt->dtype() != DataType::kFloat || bt->rank() != 1) return false;
    Node* xdq = dequantizeOf(n->input(0));
    Node* wdq = dequantizeOf(n->input(1));
    if (xdq == nullptr || wdq == nullptr) return false;
    auto x = paramsOf(xdq);
    auto w = paramsOf(wdq);
    const Tensor* wt = constantOf(wdq->input(0));
    if (!x || !w || !x->perTensor() || wt == nullptr || wt->rank() < 2) return false;
    int64_t channels = wt->dims()[0];
    int64_t w_axis = 0;
    if (n->isOp("Gemm")) {
      if (n->attrInt("transA", 0) != 0 || n->attrFloat("alpha", 1.0F) != 1.0F ||
          n->attrFloat("beta", 1.0F) != 1.0F || wt->rank() != 2)
        return false;
      w_axis = n->attrInt("transB", 0) != 0 ? 0 : 1;
      channels = wt->dims()[static_cast<size_t>(w_axis)];
    }
    if (bt->numElements() != channels) return false;
    if (!w->perTensor() && w->axis != w_axis) return false;
    const bool per_channel = !w->perTensor();
    const std::vector<float> scale = biasScale(*x, *w, per_channel ? channels : 1);
    std::vector<int64_t> q(static_cast<size_t>(channels));
    double moved = 0;  // the largest |b - q * scale|
    for (size_t c = 0; c < q.size(); ++c) {
      const double s = static_cast<double>(scale[per_channel ? c : 0]);
      const double b = static_cast<double>(bt->at<float>(c));
      const double v = b / s;
      q[c] = std::isfinite(v) ? static_cast<int64_t>(std::nearbyint(
                                    std::min(std::max(v, double{INT32_MIN}), double{INT32_MAX})))
                              : 0;
      moved = std::max(moved, std::fabs(b - static_cast<double>(q[c]) * s));
    }
    if (n->output(0) == nullptr || !(moved <= 0.5 * finestQuantStep(n->output(0)))) {
      ctx.explain(*n,
                  "bias kept float: int32 rounding would move it by more than half a step of "
                  "the output quantization");
      return false;
    }

    const std::vector<int64_t> sdims =
        per_channel ? std::vector<int64_t>{channels} : std::vector<int64_t>{};
    Value* qv = rw.constant(intTensor(DataType::kInt32, {channels}, q), b->name() + "_quantized");
    qv->type = Type::tensor(DataType::kInt32, Shape{{Dim::known(channels)}, {}});
    Value* sv = rw.constant(floatTensor(sdims, scale), b->name() + "_quantized_scale");
    Value* zv =
        rw.constant(intTensor(DataType::kInt32, sdims, std::vector<int64_t>(scale.size(), 0)),
                    b->name() + "_quantized_zero_point");
    Node* dq = rw.create("DequantizeLinear", {qv, sv, zv}, 1, n);
    if (per_channel) rw.setAttr(dq, Attribute::makeInt("axis", 0));
    dq->name = b->name() + "_DequantizeLinear";
    dq->output(0)->type = b->type;
    rw.setInput(n, 2, dq->output(0));
    ctx.count("biases quantized to int32");
    return true;
  }
};

}  // namespace

std::unique_ptr<Pass> createQuantFoldWeights() {
  return std::make_unique<QuantFoldWeights>();
}

}  // namespace onnxfold
