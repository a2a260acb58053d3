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
// Streaming: the quantized tensors are Sources computed when first read (by the writer) from the
// float weight and dropped once read to the end, so writing holds one weight's result at a time;
// the pass itself quantizes each weight once for its error (reported as a note) and drops it.
#include "passes/quantize_weights.h"

#include <fnmatch.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>

#include "ir/error.h"
#include "passes/passes.h"
#include "passes/quant/quant.h"
#include "passes/rewrite.h"

namespace onnxfold {

namespace wq {

GroupParams chooseParams(const float* v, size_t n, size_t stride, Grid g) {
  float lo = 0;
  float hi = 0;
  for (size_t i = 0; i < n; ++i) {
    const float x = v[i * stride];
    if (!std::isfinite(x)) throw Error("weight value " + std::to_string(x) + " is not finite");
    lo = std::min(lo, x);
    hi = std::max(hi, x);
  }
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

// How one weight is quantized and laid out.
struct Plan {
  enum class Layout { kOrt, kBlockedQdq, kPerChannel } layout;
  std::vector<int64_t> dims;  // of the float weight (transposed when `transposed`)
  bool transposed = false;    // a Gather's table [V, H], quantized as W = table^T [H, V]
  int64_t block = 0;          // kOrt / kBlockedQdq
  size_t axis = 0;            // kPerChannel
  wq::Grid grid;

  wq::Quantized quantize(const float* w) const {
    if (layout == Layout::kPerChannel) return wq::quantizePerChannel(w, dims, axis, grid);
    return wq::quantizeBlockwiseK(w, dims[0], dims[1], block, grid);
  }
};

// The float weight's values (a temporary copy: the weight may be an unaligned view or a range of
// an external-data file, which this does not make resident).
std::vector<float> readFloats(const Tensor& t, bool transposed) {
  std::vector<float> v(static_cast<size_t>(t.numElements()));
  t.buffer().copyTo(0, v.size() * sizeof(float), reinterpret_cast<uint8_t*>(v.data()));
  if (!transposed) return v;
  const auto rows = static_cast<size_t>(t.dims()[0]);
  const auto cols = static_cast<size_t>(t.dims()[1]);
  std::vector<float> tv(v.size());
  for (size_t r = 0; r < rows; ++r)
    for (size_t c = 0; c < cols; ++c)
      tv[c * rows + r] = v[r * cols + c];
  return tv;
}

// One output tensor of a weight's quantization, computed when first read.
class QuantizedPart : public Source {
 public:
  enum class Part { kData, kScale, kZeroPoint };
  QuantizedPart(Tensor weight, Plan plan, Part part, uint64_t bytes)
      : weight_(std::move(weight)), plan_(std::move(plan)), part_(part), bytes_(bytes) {}

  uint64_t size() const override { return bytes_; }
  std::string describe() const override { return "quantized weight '" + weight_.name + "'"; }
  void read(uint64_t offset, size_t n, uint8_t* dst) const override {
    const std::lock_guard<std::mutex> lock(mu_);
    if (result_.empty()) result_ = compute();
    if (result_.size() != bytes_) throw Error(describe() + ": computed size mismatch");
    std::memcpy(dst, result_.data() + offset, n);
    if (offset + n == bytes_) result_ = {};  // read to the end: drop it
  }

 private:
  std::vector<uint8_t> compute() const {
    std::vector<float> w = readFloats(weight_, plan_.transposed);
    const wq::Quantized qw = plan_.quantize(w.data());
    w = {};
    const int64_t k = plan_.dims[0];
    const int64_t n = plan_.dims.size() > 1 ? plan_.dims[1] : 1;
    const int64_t blocks = plan_.block > 0 ? (k + plan_.block - 1) / plan_.block : 0;
    std::vector<uint8_t> out;
    auto floats = [&out](const std::vector<float>& f) {
      out.resize(f.size() * sizeof(float));
      std::memcpy(out.data(), f.data(), out.size());
    };
    switch (part_) {
      case Part::kData:
        if (plan_.layout == Plan::Layout::kOrt)
          return wq::packMatMulNBits(qw, k, n, plan_.block, plan_.grid);
        if (plan_.grid.bits == 4) return wq::packNibbles(qw.q);
        out.resize(qw.q.size());
        for (size_t i = 0; i < out.size(); ++i)
          out[i] = static_cast<uint8_t>(qw.q[i]);  // int8 two's complement, or uint8
        return out;
      case Part::kScale: {
        std::vector<float> s(qw.params.size());
        if (plan_.layout == Plan::Layout::kOrt) {  // [N, blocks]: column-major of params
          for (int64_t c = 0; c < n; ++c)
            for (int64_t b = 0; b < blocks; ++b)
              s[static_cast<size_t>(c * blocks + b)] =
                  qw.params[static_cast<size_t>(b * n + c)].scale;
        } else {
          for (size_t i = 0; i < s.size(); ++i)
            s[i] = qw.params[i].scale;
        }
        floats(s);
        return out;
      }
      case Part::kZeroPoint: {
        if (plan_.layout == Plan::Layout::kOrt)
          return wq::packMatMulNBitsZeroPoints(qw, k, n, plan_.block);
        std::vector<int16_t> z(qw.params.size());
        for (size_t i = 0; i < z.size(); ++i)
          z[i] = static_cast<int16_t>(qw.params[i].zero_point);
        if (plan_.grid.bits == 4) return wq::packNibbles(z);
        out.resize(z.size());
        for (size_t i = 0; i < out.size(); ++i)
          out[i] = static_cast<uint8_t>(z[i]);
        return out;
      }
    }
    return out;
  }

  Tensor weight_;
  Plan plan_;
  Part part_;
  uint64_t bytes_;
  mutable std::mutex mu_;
  mutable std::vector<uint8_t> result_;
};

Tensor deferredTensor(const Tensor& weight, const Plan& plan, QuantizedPart::Part part,
                      DataType dtype, std::vector<int64_t> dims) {
  int64_t count = 1;
  for (int64_t d : dims)
    count *= d;
  const size_t bytes = rawByteSize(dtype, count);
  auto src = std::make_shared<QuantizedPart>(weight, plan, part, bytes);
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
    std::map<std::pair<Value*, size_t>, std::vector<Value*>> done;  // weight, axis -> parts
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
      Plan plan;
      plan.dims = wt->dims();
      plan.grid = {int4 ? 4 : 8, o.weight_quant.symmetric && !q8};
      if (gather) {
        // GatherBlockQuantized: rows of the table in blocks along H (H a multiple of the block).
        if (wt->rank() != 2 || n->attrInt("axis", 0) != 0 ||
            wt->dims()[1] % o.weight_quant.block_size != 0) {
          ctx.explain(*n,
                      "Gather of a table that is not 2-D, on axis != 0, or with rows not a "
                      "multiple of quantBlockSize");
          continue;
        }
        plan.transposed = true;
        plan.dims = {wt->dims()[1], wt->dims()[0]};
      } else if (n->isOp("MatMul") || n->isOp("Gemm")) {
        if (wt->rank() != 2) {
          ctx.explain(*n, "weight is not 2-D");
          continue;
        }
      } else if (wt->rank() < 3) {
        ctx.explain(*n, "Conv weight of rank < 3");
        continue;
      }
      if (int4) {
        plan.block = o.weight_quant.block_size;
        if (ort) {
          plan.layout = Plan::Layout::kOrt;
          if (!gather && rankOf(n->input(0)) < 2) {
            ctx.explain(*n, "input A of unknown rank or rank 1 (MatMulNBits needs rank >= 2)");
            continue;
          }
        } else {
          plan.layout = Plan::Layout::kBlockedQdq;
        }
      } else if (q8 && rankOf(n->input(0)) < 2) {
        ctx.explain(*n, "input A of unknown rank or rank 1");
        continue;
      } else {
        plan.layout = Plan::Layout::kPerChannel;
        plan.axis = n->isOp("MatMul") ? 1 : n->isOp("Gemm") ? (n->attrInt("transB", 0) ? 0 : 1) : 0;
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
                           const Plan& plan, bool q8,
                           std::map<std::pair<Value*, size_t>, std::vector<Value*>>& done,
                           PassContext& ctx) {
    const PassOptions& o = ctx.options();
    const std::string base = wv->name();
    const int64_t k = plan.dims[0];
    const int64_t nn = plan.dims.size() > 1 ? plan.dims[1] : 1;
    const int64_t blocks = plan.block > 0 ? (k + plan.block - 1) / plan.block : 0;
    const auto key = std::make_pair(wv, plan.transposed ? size_t{99} : plan.axis);
    auto it = done.find(key);
    if (it == done.end()) {
      {  // the error, once per weight (the result is dropped again)
        std::vector<float> w = readFloats(wt, plan.transposed);
        const wq::Quantized qw = plan.quantize(w.data());
        const double e = wq::relativeRmsError(w.data(), plan.dims, qw, plan.block, plan.axis);
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.4g", e);
        ctx.note("quantized '" + base + "' (" + std::to_string(wt.numElements()) +
                 " weights): relative RMS error " + buf);
        ctx.count("weights quantized");
        ctx.count("weight elements quantized", wt.numElements());
      }
      using Part = QuantizedPart::Part;
      std::vector<Value*> parts;
      const bool sym = plan.grid.symmetric;
      if (plan.layout == Plan::Layout::kOrt) {
        // MatMulNBits: B [N, blocks, bs/2], scales [N * blocks], zero points [N * ceil(blocks/2)];
        // GatherBlockQuantized: the same bytes as [V, H/2], [V, blocks], [V, ceil(blocks/2)].
        const bool g = plan.transposed;
        const int64_t zpc = (blocks + 1) / 2;
        parts.push_back(
            rw.constant(deferredTensor(wt, plan, Part::kData, DataType::kUint8,
                                       g ? std::vector<int64_t>{nn, blocks * plan.block / 2}
                                         : std::vector<int64_t>{nn, blocks, plan.block / 2}),
                        base + "_Q4"));
        parts.push_back(rw.constant(deferredTensor(wt, plan, Part::kScale, DataType::kFloat,
                                                   g ? std::vector<int64_t>{nn, blocks}
                                                     : std::vector<int64_t>{nn * blocks}),
                                    base + "_scales"));
        if (!sym)
          parts.push_back(rw.constant(
              deferredTensor(wt, plan, Part::kZeroPoint, DataType::kUint8,
                             g ? std::vector<int64_t>{nn, zpc} : std::vector<int64_t>{nn * zpc}),
              base + "_zero_points"));
      } else {
        const DataType qt = plan.grid.bits == 4 ? (sym ? DataType::kInt4 : DataType::kUint4)
                                                : (sym ? DataType::kInt8 : DataType::kUint8);
        std::vector<int64_t> pdims;
        if (plan.layout == Plan::Layout::kBlockedQdq)
          pdims = {blocks, nn};
        else
          pdims = {plan.dims[plan.axis]};
        parts.push_back(
            rw.constant(deferredTensor(wt, plan, Part::kData, qt, plan.dims), base + "_quantized"));
        parts.push_back(rw.constant(deferredTensor(wt, plan, Part::kScale, DataType::kFloat, pdims),
                                    base + "_scale"));
        if (!sym || plan.grid.bits == 8)  // int8 keeps its zero point (the quant finalize reads it)
          parts.push_back(rw.constant(deferredTensor(wt, plan, Part::kZeroPoint, qt, pdims),
                                      base + "_zero_point"));
      }
      it = done.emplace(key, parts).first;
    }
    const std::vector<Value*>& parts = it->second;
    if (plan.transposed) {
      Node* gq = rw.create("GatherBlockQuantized", {parts[0], n->input(1), parts[1]}, 1, n);
      if (parts.size() > 2) rw.addInput(gq, parts[2]);
      gq->domain = "com.microsoft";
      gq->name = n->name.empty() ? base + "_GatherBlockQuantized" : n->name + "_Q4";
      gq->setAttr(Attribute::makeInt("gather_axis", 0));
      gq->setAttr(Attribute::makeInt("quantize_axis", 1));
      gq->setAttr(Attribute::makeInt("block_size", plan.block));
      gq->setAttr(Attribute::makeInt("bits", 4));
      gq->output(0)->type = n->output(0)->type;
      importMicrosoft(model);
      rw.replaceNode(n, {gq->output(0)});
    } else if (plan.layout == Plan::Layout::kOrt) {
      Node* m = rw.create("MatMulNBits", {n->input(0), parts[0], parts[1]}, 1, n);
      if (parts.size() > 2) rw.addInput(m, parts[2]);
      m->domain = "com.microsoft";
      m->name = n->name.empty() ? base + "_MatMulNBits" : n->name + "_Q4";
      m->setAttr(Attribute::makeInt("K", k));
      m->setAttr(Attribute::makeInt("N", nn));
      m->setAttr(Attribute::makeInt("bits", 4));
      m->setAttr(Attribute::makeInt("block_size", plan.block));
      if (o.weight_quant.accuracy_level > 0)
        m->setAttr(Attribute::makeInt("accuracy_level", o.weight_quant.accuracy_level));
      m->output(0)->type = n->output(0)->type;
      importMicrosoft(model);
      rw.replaceNode(n, {m->output(0)});
    } else if (q8) {
      Value* a = n->input(0);
      Node* dyn = rw.create("DynamicQuantizeLinear", {a}, 3, n);
      dyn->name = n->name + "_DynamicQuantizeLinear";
      dyn->output(0)->type = Type::tensor(DataType::kUint8, a->type.shape);
      dyn->output(1)->type = Type::tensor(DataType::kFloat, Shape{});
      dyn->output(2)->type = Type::tensor(DataType::kUint8, Shape{});
      Node* mi =
          rw.create("MatMulInteger", {dyn->output(0), parts[0], dyn->output(2), parts[2]}, 1, n);
      mi->name = n->name + "_MatMulInteger";
      mi->output(0)->type = Type::tensor(DataType::kInt32, n->output(0)->type.shape);
      Node* cast = rw.create("Cast", {mi->output(0)}, 1, n);
      cast->name = n->name + "_Cast";
      cast->setAttr(Attribute::makeInt("to", static_cast<int64_t>(DataType::kFloat)));
      cast->output(0)->type = n->output(0)->type;
      Node* scale = rw.create("Mul", {dyn->output(1), parts[1]}, 1, n);
      scale->name = n->name + "_scale";
      scale->output(0)->type = Type::tensor(DataType::kFloat, Shape{{Dim::known(nn)}, {}});
      Node* y = rw.create("Mul", {cast->output(0), scale->output(0)}, 1, n);
      y->name = n->name + "_rescale";
      y->output(0)->type = n->output(0)->type;
      rw.replaceNode(n, {y->output(0)});
    } else {
      std::vector<Value*> in(parts.begin(), parts.end());
      Node* dq = rw.create("DequantizeLinear", in, 1, n);
      dq->name = base + "_DequantizeLinear";
      if (plan.layout == Plan::Layout::kBlockedQdq) {
        dq->setAttr(Attribute::makeInt("axis", 0));
        dq->setAttr(Attribute::makeInt("block_size", plan.block));
      } else {
        dq->setAttr(Attribute::makeInt("axis", static_cast<int64_t>(plan.axis)));
      }
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
