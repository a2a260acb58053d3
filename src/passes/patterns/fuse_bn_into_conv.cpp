// Conv (or ConvTranspose) followed by BatchNormalization in inference mode
// becomes one Conv with folded weights and bias.
//
// Before:  %c = Conv(%x, %W, %B); %y = BatchNormalization(%c, %scale, %bias, %mean, %var)
// After:   %y = Conv(%x, %W', %B')
//
// Conditions: BN in inference mode at its version (kernels/op_modes.h: is_test
// before opset 7, one output at 7-13, training_mode from 14) and per channel
// (spatial = 1 before 9); W, B, scale, bias, mean and var are constants;
// float32 or float64; the Conv output feeds only the BN. Algebra, per output channel m:
//   s[m] = scale[m] / sqrt(var[m] + epsilon)
//   W'[m, ...] = W[m, ...] * s[m]          (ConvTranspose: W[:, m mod M/g, ...] of group m / (M/g))
//   B'[m] = (B[m] - mean[m]) * s[m] + bias[m]      (B = 0 when absent)
#include <cmath>

#include "kernels/op_modes.h"
#include "passes/patterns/patterns.h"

namespace onnxfold {

namespace patterns {

const Tensor* constantOf(const Value* v) {
  return v != nullptr && v->isConstant() && v->initializer()->isLoaded() ? v->initializer()
                                                                         : nullptr;
}

double floatAt(const Tensor& t, size_t i) {
  return t.dtype() == DataType::kDouble ? t.at<double>(i) : static_cast<double>(t.at<float>(i));
}

Tensor floatTensorLike(DataType dtype, std::vector<int64_t> dims,
                       const std::vector<double>& values) {
  Tensor t(dtype, std::move(dims));
  uint8_t* out = t.mutableBytes();
  for (size_t i = 0; i < values.size(); ++i) {
    if (dtype == DataType::kDouble) {
      std::memcpy(out + i * 8, &values[i], 8);
    } else {
      const auto f = static_cast<float>(values[i]);
      std::memcpy(out + i * 4, &f, 4);
    }
  }
  return t;
}

}  // namespace patterns

namespace {

using patterns::constantOf;
using patterns::floatAt;

bool inferenceModeBn(const Rewriter& rw, const Chain& c) {
  const Node* bn = c[1];
  const int64_t opset = rw.opset();
  if (opset < 1) return rw.notifyMatchFailure(*bn, "no default-domain opset: mode unknown");
  if (kernels::batchNormTraining(opset, bn->attrInt("is_test", 0), bn->attrInt("training_mode", 0),
                                 bn->numOutputs())) {
    // Worth telling: a training-mode export looks like an inference one but for this.
    return rw.notifyMatchFailure(
        *bn, "BatchNormalization is in training mode at opset " + std::to_string(opset) +
                 (opset >= 14  ? " (training_mode = 1)"
                  : opset >= 7 ? " (" + std::to_string(bn->numOutputs()) + " outputs)"
                               : " (is_test = 0)") +
                 ": it normalizes with batch statistics, so it is not fused into the Conv");
  }
  if (opset < 9 && bn->attrInt("spatial", 1) != 1) return false;  // not per channel (spatial = 0)
  for (size_t i = 1; i < bn->numOutputs(); ++i) {
    const Value* v = bn->output(i);
    if (v != nullptr && (v->hasUses() || v->isGraphOutput()))
      return false;  // statistics are used (an invalid inference-mode node)
  }
  for (size_t i = 1; i <= 4; ++i) {
    if (constantOf(bn->input(i)) == nullptr)
      return false;  // BatchNormalization parameters are not constant
  }
  return true;
}

bool constantConvWeights(const Rewriter&, const Chain& c) {
  const Node* conv = c[0];
  const Tensor* w = constantOf(conv->input(1));
  if (w == nullptr || w->rank() < 3) return false;  // Conv weight is not a constant of rank >= 3
  if (w->dtype() != DataType::kFloat && w->dtype() != DataType::kDouble)
    return false;  // not float32/float64
  if (conv->input(2) != nullptr && constantOf(conv->input(2)) == nullptr)
    return false;  // Conv bias is not constant
  const Node* bn = c[1];
  int64_t channels = 0;
  if (!patterns::convOutputChannels(conv, w->dims(), channels)) return false;
  for (size_t i = 1; i <= 4; ++i) {
    const Tensor* p = constantOf(bn->input(i));
    if (p->dtype() != w->dtype() || p->numElements() != channels)
      return false;  // BN parameter shapes do not match
  }
  return true;
}

void fold(const Chain& c, Rewriter& rw) {
  Node* conv = c[0];
  Node* bn = c[1];
  const Tensor& w = *constantOf(conv->input(1));
  const Tensor* b = constantOf(conv->input(2));
  const Tensor& scale = *constantOf(bn->input(1));
  const Tensor& bias = *constantOf(bn->input(2));
  const Tensor& mean = *constantOf(bn->input(3));
  const Tensor& var = *constantOf(bn->input(4));
  const double eps = bn->attrFloat("epsilon", 1e-5f);
  const bool transpose = conv->op_type == "ConvTranspose";
  const int64_t group = conv->attrInt("group", 1);
  const int64_t channels = scale.numElements();

  std::vector<double> s(static_cast<size_t>(channels)), nb(static_cast<size_t>(channels));
  for (size_t m = 0; m < s.size(); ++m) {
    s[m] = floatAt(scale, m) / std::sqrt(floatAt(var, m) + eps);
    nb[m] = ((b ? floatAt(*b, m) : 0.0) - floatAt(mean, m)) * s[m] + floatAt(bias, m);
  }
  Tensor nw = patterns::scaleOutputChannels(w, transpose, group, s);
  Value* new_w = rw.constant(std::move(nw), conv->input(1)->name() + "_bn");
  Value* new_b =
      rw.constant(patterns::floatTensorLike(w.dtype(), {channels}, nb),
                  (conv->input(2) ? conv->input(2)->name() : conv->input(1)->name()) + "_bn_bias");
  rw.setInput(conv, 1, new_w);
  if (conv->numInputs() < 3)
    rw.addInput(conv, new_b);
  else
    rw.setInput(conv, 2, new_b);
  rw.replaceNode(bn, {conv->output(0)});
}

}  // namespace

void addFuseBatchNormPatterns(PatternList& out) {
  for (const char* op : {"Conv", "ConvTranspose"}) {
    ChainSpec spec;
    spec.name =
        std::string("fuse-bn-into-") + (std::string(op) == "Conv" ? "conv" : "conv-transpose");
    spec.ops = {op, "BatchNormalization"};
    spec.benefit = 2;
    spec.constraints = {inferenceModeBn, constantConvWeights};
    spec.build = fold;
    out.push_back(makeChainPattern(std::move(spec)));
  }
}

}  // namespace onnxfold
