// quantize-weights: weight-only quantization of a float model (--quantize int4 | int8 | q8).
//
//  int4, format ort:  MatMul(A, W)  ->  com.microsoft MatMulNBits(A, B, scales[, zero_points])
//                     (bits 4, block_size, K, N, accuracy_level); B packed [N, K/bs, bs/2]
//  int4, format ort, quantOps with Gather:  Gather(table [V, H], idx)  ->  com.microsoft
//                     GatherBlockQuantized(table q [V, H/2], idx, scales [V, H/bs]); blocks along H
//  int4, format qdq:  MatMul(A, W)  ->  MatMul(A, DequantizeLinear(Wq, s[, z]; axis 0, block_size))
//                     with INT4 (symmetric) / UINT4 Wq [K, N] and s, z [ceil(K/bs), N] (opset >=
//                     21)
//  int8 (qdq):        MatMul / Gemm / Conv(W)  ->  the op on DequantizeLinear(Wq, s, z; axis)
//                     per output channel (MatMul: axis 1, Gemm: by transB, Conv: axis 0),
//                     INT8 symmetric or UINT8 asymmetric
//  q8:                MatMul(A, W)  ->  (a, sa, za) = DynamicQuantizeLinear(A);
//                     Mul(Cast<float>(MatMulInteger(a, Wq, za, zw)), Mul(sa, sw)) with UINT8 Wq,
//                     asymmetric per column (sw, zw [N]): onnxruntime's quantize_dynamic shape;
//                     the activation is quantized too, so this one is not exact. Conv stays float.
// Conditions: W a float32 initializer (not a graph input), 2-D for MatMul/Gemm, A of rank >= 2 for
// MatMulNBits; the node's op in quantOps and its name matched by no quantExclude glob.
// Algebra: the model computes op(x, dequant(quant(W))) exactly (quantize_weights.h).
// Streaming: the quantized tensors are Sources over one QuantizedWeight per weight
// (quantized_weight.h), computed when the writer first reads them, in one pass over the float
// weight, and dropped once read to the end; the report's relative RMS error of each weight is
// a note taken after the write.
#include "passes/quantize_weights.h"

#include <fnmatch.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>

#include "ir/error.h"
#include "passes/passes.h"
#include "passes/quant/quant.h"
#include "passes/quantized_weight.h"
#include "passes/rewrite.h"

namespace onnxfold {

namespace wq {

GroupParams paramsFromRange(float lo, float hi, Grid g) {
  GroupParams p;
  if (g.symmetric) {
    const float m = std::max(-lo, hi);
    p.scale = m > 0 ? m / static_cast<float>(g.qmax()) : 1.0F;
    return p;
  }
  if (hi - lo > 0) {
    p.scale = (hi - lo) / static_cast<float>(g.qmax());
    p.zero_point = std::clamp(static_cast<int32_t>(std::nearbyint(-lo / p.scale)), 0, g.qmax());
  }
  return p;
}

GroupParams chooseParams(const float* v, size_t n, size_t stride, Grid g) {
  float lo = 0;
  float hi = 0;
  for (size_t i = 0; i < n; ++i) {
    const float x = v[i * stride];
    if (!std::isfinite(x)) throw Error("weight value " + std::to_string(x) + " is not finite");
    lo = std::min(lo, x);
    hi = std::max(hi, x);
  }
  return paramsFromRange(lo, hi, g);
}

int32_t quantizeValue(float w, GroupParams p, Grid g) {
  const float r = std::nearbyint(w / p.scale);
  const float q = r + static_cast<float>(p.zero_point);
  return static_cast<int32_t>(
      std::clamp(q, static_cast<float>(g.qmin()), static_cast<float>(g.qmax())));
}

Quantized quantizeBlockwiseK(const float* w, int64_t k, int64_t n, int64_t block, Grid g) {
  const int64_t blocks = (k + block - 1) / block;
  Quantized out;
  out.q.resize(static_cast<size_t>(k * n));
  out.params.resize(static_cast<size_t>(blocks * n));
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t k0 = b * block;
    const int64_t rows = std::min(block, k - k0);
    for (int64_t c = 0; c < n; ++c) {
      const float* col = w + k0 * n + c;
      const GroupParams p = chooseParams(col, static_cast<size_t>(rows), static_cast<size_t>(n), g);
      out.params[static_cast<size_t>(b * n + c)] = p;
      for (int64_t r = 0; r < rows; ++r) {
        out.q[static_cast<size_t>((k0 + r) * n + c)] =
            static_cast<int16_t>(quantizeValue(col[r * n], p, g));
      }
    }
  }
  return out;
}

namespace {
struct AxisSplit {
  size_t outer = 1, channels = 1, inner = 1;
};
AxisSplit split(const std::vector<int64_t>& dims, size_t axis) {
  AxisSplit s;
  for (size_t i = 0; i < dims.size(); ++i) {
    const auto d = static_cast<size_t>(dims[i]);
    if (i < axis) s.outer *= d;
    if (i == axis) s.channels = d;
    if (i > axis) s.inner *= d;
  }
  return s;
}
}  // namespace

Quantized quantizePerChannel(const float* w, const std::vector<int64_t>& dims, size_t axis,
                             Grid g) {
  const AxisSplit s = split(dims, axis);
  Quantized out;
  out.q.resize(s.outer * s.channels * s.inner);
  out.params.resize(s.channels);
  std::vector<float> group(s.outer * s.inner);
  for (size_t c = 0; c < s.channels; ++c) {
    for (size_t o = 0; o < s.outer; ++o)
      std::memcpy(&group[o * s.inner], w + (o * s.channels + c) * s.inner, s.inner * sizeof(float));
    const GroupParams p = chooseParams(group.data(), group.size(), 1, g);
    out.params[c] = p;
    for (size_t o = 0; o < s.outer; ++o) {
      for (size_t i = 0; i < s.inner; ++i) {
        const size_t idx = (o * s.channels + c) * s.inner + i;
        out.q[idx] = static_cast<int16_t>(quantizeValue(w[idx], p, g));
      }
    }
  }
  return out;
}

std::vector<uint8_t> packNibbles(const std::vector<int16_t>& q) {
  std::vector<uint8_t> out((q.size() + 1) / 2, 0);
  for (size_t i = 0; i < q.size(); ++i) {
    const auto nib = static_cast<uint8_t>(q[i] & 0x0F);
    out[i / 2] |= static_cast<uint8_t>(i % 2 == 0 ? nib : nib << 4);
  }
  return out;
}

std::vector<uint8_t> packMatMulNBits(const Quantized& qw, int64_t k, int64_t n, int64_t block,
                                     Grid g) {
  const int64_t blocks = (k + block - 1) / block;
  const int32_t offset = g.symmetric ? 8 : 0;
  std::vector<uint8_t> out(static_cast<size_t>(n * blocks * block / 2), 0);
  for (int64_t c = 0; c < n; ++c) {
    for (int64_t b = 0; b < blocks; ++b) {
      const GroupParams p = qw.params[static_cast<size_t>(b * n + c)];
      uint8_t* dst = &out[static_cast<size_t>((c * blocks + b) * block / 2)];
      for (int64_t r = 0; r < block; ++r) {
        const int64_t row = b * block + r;
        const int32_t v =
            (row < k ? qw.q[static_cast<size_t>(row * n + c)] : p.zero_point) + offset;
        const auto nib = static_cast<uint8_t>(v & 0x0F);
        dst[r / 2] |= static_cast<uint8_t>(r % 2 == 0 ? nib : nib << 4);
      }
    }
  }
  return out;
}

std::vector<uint8_t> packMatMulNBitsZeroPoints(const Quantized& qw, int64_t k, int64_t n,
                                               int64_t block) {
  const int64_t blocks = (k + block - 1) / block;
  const int64_t per_col = (blocks + 1) / 2;
  std::vector<uint8_t> out(static_cast<size_t>(n * per_col), 0);
  for (int64_t c = 0; c < n; ++c) {
    for (int64_t b = 0; b < blocks; ++b) {
      const auto nib = static_cast<uint8_t>(qw.params[static_cast<size_t>(b * n + c)].zero_point);
      out[static_cast<size_t>(c * per_col + b / 2)] |=
          static_cast<uint8_t>(b % 2 == 0 ? nib : nib << 4);
    }
  }
  return out;
}

double relativeRmsError(const float* w, const std::vector<int64_t>& dims, const Quantized& qw,
                        int64_t block, size_t axis) {
  double err = 0;
  double ref = 0;
  if (block > 0) {
    const int64_t n = dims.at(1);
    for (size_t i = 0; i < qw.q.size(); ++i) {
      const auto row = static_cast<int64_t>(i) / n;
      const auto col = static_cast<int64_t>(i) % n;
      const GroupParams p = qw.params[static_cast<size_t>((row / block) * n + col)];
      const double d = static_cast<double>(w[i]) - dequantizeValue(qw.q[i], p);
      err += d * d;
      ref += static_cast<double>(w[i]) * w[i];
    }
  } else {
    const AxisSplit s = split(dims, axis);
    for (size_t i = 0; i < qw.q.size(); ++i) {
      const GroupParams p = qw.params[(i / s.inner) % s.channels];
      const double d = static_cast<double>(w[i]) - dequantizeValue(qw.q[i], p);
      err += d * d;
      ref += static_cast<double>(w[i]) * w[i];
    }
  }
  return ref > 0 ? std::sqrt(err / ref) : 0.0;
}

}  // namespace wq

namespace {

using namespace quant;

using wq::Part;
using Layout = wq::Plan::Layout;

Tensor partTensor(const std::shared_ptr<wq::QuantizedWeight>& w, Part part, DataType dtype,
                  std::vector<int64_t> dims) {
  std::shared_ptr<const Source> src = wq::QuantizedWeight::source(w, part);
  const uint64_t bytes = src->size();
  int64_t count = 1;
  for (int64_t d : dims)
    count *= d;
  if (rawByteSize(dtype, count) != bytes) throw Error("quantized part size mismatch");
  return Tensor(dtype, std::move(dims), Buffer::fromSource(std::move(src), 0, bytes));
}

bool excluded(const std::vector<std::string>& globs, const std::string& name) {
  for (const std::string& p : globs)
    if (p == name || fnmatch(p.c_str(), name.c_str(), 0) == 0) return true;
  return false;
}

class QuantizeWeights : public Pass {
 public:
  std::string_view name() const override { return "quantize-weights"; }
  std::string_view description() const override {
    return "weight-only quantization of MatMul/Gemm/Conv weights (--quantize int4 | int8 | q8)";
  }

  bool run(Model& model, PassContext& ctx) override {
    const PassOptions& o = ctx.options();
    if (o.weight_quant.mode.empty()) return false;
    const bool int4 = o.weight_quant.mode == "int4";
    const bool q8 = o.weight_quant.mode == "q8";
    const bool ort = o.weight_quant.format == "ort";
    if (o.weight_quant.mode == "int8" && ort)
      throw Error("option quantFormat: 'ort' is for int4 (MatMulNBits); int8 is written as qdq");
    if (int4 && !ort && model.opsetVersion("") < 21) {
      throw Error(
          "option quantize: int4 with quantFormat 'qdq' needs blocked DequantizeLinear "
          "(opset 21); the model imports opset " +
          std::to_string(model.opsetVersion("")) + " (use quantFormat 'ort')");
    }
    std::vector<std::string> ops = o.weight_quant.ops;
    if (ops.empty())
      ops = int4 || q8 ? std::vector<std::string>{"MatMul"}  // Gather on request, as onnxruntime
                       : std::vector<std::string>{"MatMul", "Gemm", "Conv"};
    for (const std::string& op : ops) {
      const bool ok = op == "MatMul" || (int4 && ort && op == "Gather") ||
                      (!int4 && !q8 && (op == "Gemm" || op == "Conv"));
      if (!ok)
        throw Error("option quantOps: " + op + " cannot be quantized by mode " +
                    o.weight_quant.mode +
                    " (int4: MatMul, and Gather with quantFormat ort; q8: MatMul; int8: "
                    "MatMul, Gemm, Conv)");
    }
    bool changed = false;
    Graph& g = *model.graph;  // the main graph (subgraph weights stay float)
    Rewriter rw(model, g, /*notify=*/false);
    std::map<std::pair<Value*, bool>, std::vector<Value*>> done;  // weight, contiguous -> parts
    for (Node* n : g.nodes()) {
      if (!n->isDefaultDomain() || std::find(ops.begin(), ops.end(), n->op_type) == ops.end())
        continue;
      if (excluded(o.weight_quant.exclude, n->name)) {
        ctx.explain(*n, "excluded by quantExclude");
        continue;
      }
      const bool gather = n->isOp("Gather");
      if (n->inputs().size() < 2 || n->input(gather ? 0 : 1) == nullptr) continue;
      Value* wv = n->input(gather ? 0 : 1);
      const Tensor* wt = constantOf(wv);
      if (dequantizeOf(wv) != nullptr) continue;  // quantized already
      if (wt == nullptr || wt->dtype() != DataType::kFloat) {
        ctx.explain(*n, "weight is not a float32 constant");
        continue;
      }
      if (wt->numElements() == 0) {
        ctx.explain(*n, "empty weight");
        continue;
      }
      const std::vector<int64_t>& d = wt->dims();
      wq::Plan plan;
      plan.grid = {int4 ? 4 : 8, o.weight_quant.symmetric && !q8};
      // int8 keeps its zero point even when 0: the quant finalize reads it.
      plan.zero_points = !plan.grid.symmetric || plan.grid.bits == 8;
      if (gather) {
        // GatherBlockQuantized: rows of the table in blocks along H (H a multiple of the block).
        if (wt->rank() != 2 || n->attrInt("axis", 0) != 0 ||
            d[1] % o.weight_quant.block_size != 0) {
          ctx.explain(*n,
                      "Gather of a table that is not 2-D, on axis != 0, or with rows not a "
                      "multiple of quantBlockSize");
          continue;
        }
        plan.contiguous = true;  // channel = a row of the table
        plan.channels = d[0];
        plan.length = d[1];
      } else if (n->isOp("MatMul") || n->isOp("Gemm")) {
        if (wt->rank() != 2) {
          ctx.explain(*n, "weight is not 2-D");
          continue;
        }
        // Channels are output columns: W [K, N], or rows of W [N, K] for Gemm with transB.
        plan.contiguous = n->isOp("Gemm") && n->attrInt("transB", 0) != 0;
        plan.channels = plan.contiguous ? d[0] : d[1];
        plan.length = plan.contiguous ? d[1] : d[0];
      } else if (wt->rank() < 3) {
        ctx.explain(*n, "Conv weight of rank < 3");
        continue;
      } else {  // Conv: one channel per output filter
        plan.contiguous = true;
        plan.channels = d[0];
        plan.length = wt->numElements() / d[0];
      }
      if (int4) {
        plan.block = o.weight_quant.block_size;
        if (ort) {
          plan.layout = Layout::kOrt;
          if (!gather && rankOf(n->input(0)) < 2) {
            ctx.explain(*n, "input A of unknown rank or rank 1 (MatMulNBits needs rank >= 2)");
            continue;
          }
        } else {
          plan.layout = Layout::kBlockedQdq;
        }
      } else if (q8 && rankOf(n->input(0)) < 2) {
        ctx.explain(*n, "input A of unknown rank or rank 1");
        continue;
      } else {
        plan.layout = Layout::kPerChannel;
        plan.block = plan.length;
      }
      quantizeNode(model, rw, n, wv, *wt, plan, q8, done, ctx);
      changed = true;
    }
    return changed;
  }

 private:
  static void importMicrosoft(Model& model) {
    bool imported = false;
    for (const OpsetId& id : model.opset_import)
      imported |= id.domain == "com.microsoft";
    if (!imported) model.opset_import.push_back({"com.microsoft", 1, {}});
  }

  static void quantizeNode(Model& model, Rewriter& rw, Node* n, Value* wv, const Tensor& wt,
                           const wq::Plan& plan, bool q8,
                           std::map<std::pair<Value*, bool>, std::vector<Value*>>& done,
                           PassContext& ctx) {
    const PassOptions& o = ctx.options();
    const std::string base = wv->name();
    const int64_t cn = plan.channels;
    const int64_t blocks = plan.blocks();
    const bool gather = n->isOp("Gather");
    const auto key = std::make_pair(wv, plan.contiguous);
    auto it = done.find(key);
    if (it == done.end()) {
      auto w = std::make_shared<wq::QuantizedWeight>(wt, plan);
      ctx.count("weights quantized");
      ctx.count("weight elements quantized", wt.numElements());
      // The error is known once the writer has computed the weight.
      ctx.noteAfterWrite([w, base, count = wt.numElements()] {
        const std::optional<double> e = w->relativeRmsError();
        if (!e) return std::string();
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.4g", *e);
        return "quantized '" + base + "' (" + std::to_string(count) +
               " weights): relative RMS error " + buf;
      });
      std::vector<Value*> parts;
      const bool sym = plan.grid.symmetric;
      if (plan.layout == Layout::kOrt) {
        // MatMulNBits: B [N, blocks, bs/2], scales [N * blocks], zero points [N * ceil(blocks/2)];
        // GatherBlockQuantized: the same bytes as [V, H/2], [V, blocks], [V, ceil(blocks/2)].
        const int64_t zpc = (blocks + 1) / 2;
        parts.push_back(
            rw.constant(partTensor(w, Part::kData, DataType::kUint8,
                                   gather ? std::vector<int64_t>{cn, blocks * plan.block / 2}
                                          : std::vector<int64_t>{cn, blocks, plan.block / 2}),
                        base + "_Q4"));
        parts.push_back(rw.constant(partTensor(w, Part::kScale, DataType::kFloat,
                                               gather ? std::vector<int64_t>{cn, blocks}
                                                      : std::vector<int64_t>{cn * blocks}),
                                    base + "_scales"));
        if (plan.zero_points)
          parts.push_back(rw.constant(
              partTensor(w, Part::kZeroPoint, DataType::kUint8,
                         gather ? std::vector<int64_t>{cn, zpc} : std::vector<int64_t>{cn * zpc}),
              base + "_zero_points"));
      } else {
        const DataType qt = plan.grid.bits == 4 ? (sym ? DataType::kInt4 : DataType::kUint4)
                                                : (sym ? DataType::kInt8 : DataType::kUint8);
        const std::vector<int64_t> pdims = plan.layout == Layout::kBlockedQdq
                                               ? std::vector<int64_t>{blocks, cn}
                                               : std::vector<int64_t>{cn};
        parts.push_back(
            rw.constant(partTensor(w, Part::kData, qt, wt.dims()), base + "_quantized"));
        parts.push_back(
            rw.constant(partTensor(w, Part::kScale, DataType::kFloat, pdims), base + "_scale"));
        if (plan.zero_points)
          parts.push_back(
              rw.constant(partTensor(w, Part::kZeroPoint, qt, pdims), base + "_zero_point"));
      }
      it = done.emplace(key, parts).first;
    }
    const std::vector<Value*>& parts = it->second;
    if (gather) {
      std::vector<Value*> in{parts[0], n->input(1), parts[1]};
      if (parts.size() > 2) in.push_back(parts[2]);
      Node* gq = rw.create(
          "GatherBlockQuantized", in, 1, n,
          n->name.empty() ? base + "_GatherBlockQuantized" : n->name + "_Q4",
          attributes(Attribute::makeInt("gather_axis", 0), Attribute::makeInt("quantize_axis", 1),
                     Attribute::makeInt("block_size", plan.block), Attribute::makeInt("bits", 4)),
          "com.microsoft");
      gq->output(0)->type = n->output(0)->type;
      importMicrosoft(model);
      rw.replaceNode(n, {gq->output(0)});
    } else if (plan.layout == Layout::kOrt) {
      std::vector<Value*> in{n->input(0), parts[0], parts[1]};
      if (parts.size() > 2) in.push_back(parts[2]);
      std::vector<Attribute> attrs =
          attributes(Attribute::makeInt("K", plan.length), Attribute::makeInt("N", cn),
                     Attribute::makeInt("bits", 4), Attribute::makeInt("block_size", plan.block));
      if (o.weight_quant.accuracy_level > 0)
        attrs.push_back(Attribute::makeInt("accuracy_level", o.weight_quant.accuracy_level));
      Node* m = rw.create("MatMulNBits", in, 1, n,
                          n->name.empty() ? base + "_MatMulNBits" : n->name + "_Q4",
                          std::move(attrs), "com.microsoft");
      m->output(0)->type = n->output(0)->type;
      importMicrosoft(model);
      rw.replaceNode(n, {m->output(0)});
    } else if (q8) {
      Value* a = n->input(0);
      Node* dyn = rw.create("DynamicQuantizeLinear", {a}, 3, n, n->name + "_DynamicQuantizeLinear");
      dyn->output(0)->type = Type::tensor(DataType::kUint8, a->type.shape);
      dyn->output(1)->type = Type::tensor(DataType::kFloat, Shape{});
      dyn->output(2)->type = Type::tensor(DataType::kUint8, Shape{});
      Node* mi = rw.create("MatMulInteger", {dyn->output(0), parts[0], dyn->output(2), parts[2]}, 1,
                           n, n->name + "_MatMulInteger");
      mi->output(0)->type = Type::tensor(DataType::kInt32, n->output(0)->type.shape);
      Node* cast =
          rw.create("Cast", {mi->output(0)}, 1, n, n->name + "_Cast",
                    attributes(Attribute::makeInt("to", static_cast<int64_t>(DataType::kFloat))));
      cast->output(0)->type = n->output(0)->type;
      Node* scale = rw.create("Mul", {dyn->output(1), parts[1]}, 1, n, n->name + "_scale");
      scale->output(0)->type = Type::tensor(DataType::kFloat, Shape{{Dim::known(cn)}, {}});
      Node* y = rw.create("Mul", {cast->output(0), scale->output(0)}, 1, n, n->name + "_rescale");
      y->output(0)->type = n->output(0)->type;
      rw.replaceNode(n, {y->output(0)});
    } else {
      std::vector<Value*> in(parts.begin(), parts.end());
      std::vector<Attribute> attrs;
      if (plan.layout == Layout::kBlockedQdq) {
        attrs.push_back(Attribute::makeInt("axis", 0));
        attrs.push_back(Attribute::makeInt("block_size", plan.block));
      } else {
        attrs.push_back(Attribute::makeInt("axis", plan.contiguous ? 0 : 1));  // channels
      }
      Node* dq =
          rw.create("DequantizeLinear", in, 1, n, base + "_DequantizeLinear", std::move(attrs));
      dq->output(0)->type = wv->type;
      rw.setInput(n, 1, dq->output(0));
    }
    if (wv->uses().empty() && !wv->isGraphOutput()) rw.removeConstant(wv);
  }
};

}  // namespace

std::unique_ptr<Pass> createQuantizeWeights() {
  return std::make_unique<QuantizeWeights>();
}

}  // namespace onnxfold
