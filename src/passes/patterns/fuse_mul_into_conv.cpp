// Conv (or ConvTranspose) followed by the Mul of a per-channel constant
// becomes one Conv with scaled weights and bias.
//
// Before:  %c = Conv(%x, %W, %B); %y = Mul(%c, %S)     (or Mul(%S, %c))
// After:   %y = Conv(%x, %W', %B')
//
// Conditions: %W, %B (if any) and %S are constants of one dtype (float32 or
// float64); the values of %S are finite; %S broadcast against the Conv output
// [N, M, d...] varies along the output-channel axis only and keeps the output
// shape ([] / [1] / [M,1,1] / [1,M,1,1] for rank 4); the Conv output feeds only
// the Mul; opset >= 7 (numpy broadcasting). The group must divide the weight's
// dim 0 (it decides the ConvTranspose channel layout). Pads, auto_pad, strides
// and dilations do not matter: padding adds zeros, which scaling keeps zero.
// Algebra, the convolution being linear in W, per output channel m:
//   W'[m, ...] = W[m, ...] * S[m]   (ConvTranspose, W: [C, M/g, k...]: element
//                                    [i0, i1, ...] is channel (i0 / (C/g)) * (M/g) + i1)
//   B'[m] = B[m] * S[m]             (no bias stays no bias)
#include <cmath>

#include "passes/patterns/patterns.h"

namespace onnxfold {

namespace {

using namespace patterns;

Value* otherOperand(const Chain& c) {
  return c[1]->input(0) == c[0]->output(0) ? c[1]->input(1) : c[1]->input(0);
}

bool perChannelScale(const Rewriter& rw, const Chain& c) {
  const Node* conv = c[0];
  const Node* mul = c[1];
  if (rw.opset() < 7) return false;  // Mul uses legacy broadcasting (opset < 7)
  if (mul->numInputs() != 2 || mul->input(0) == mul->input(1)) return false;  // not a binary Mul
  const Tensor* w = constantOf(conv->input(1));
  if (w == nullptr) return false;                // Conv weight is not constant
  if (!isFloat32Or64(w->dtype())) return false;  // not float32/float64
  int64_t channels = 0;
  if (!convOutputChannels(conv, w->dims(), channels)) return false;
  const Tensor* s = constantOf(otherOperand(c));
  if (s == nullptr) return false;              // Mul operand is not constant
  if (s->dtype() != w->dtype()) return false;  // Mul constant dtype differs from the weight's
  if (!isPerChannel(s->dims(), w->rank(), channels))
    return false;  // Mul constant does not broadcast along the output channels only
  for (int64_t i = 0; i < s->numElements(); ++i) {
    if (!std::isfinite(floatAt(*s, static_cast<size_t>(i))))
      return false;  // Mul constant is not finite
  }
  if (conv->input(2) != nullptr) {
    const Tensor* b = constantOf(conv->input(2));
    if (b == nullptr) return false;  // Conv bias is not constant
    if (b->dtype() != w->dtype() || b->numElements() != channels)
      return false;  // Conv bias shape is unexpected
  }
  return true;
}

void fold(const Chain& c, Rewriter& rw) {
  Node* conv = c[0];
  Node* mul = c[1];
  const Tensor& w = *constantOf(conv->input(1));
  const Tensor* b = constantOf(conv->input(2));
  const bool transpose = conv->op_type == "ConvTranspose";
  const int64_t group = conv->attrInt("group", 1);
  int64_t channels = 0;
  convOutputChannels(conv, w.dims(), channels);
  const std::vector<double> s = perChannelValues(*constantOf(otherOperand(c)), channels);

  Tensor nw = patterns::scaleOutputChannels(w, transpose, group, s);
  rw.setInput(conv, 1, rw.constant(std::move(nw), conv->input(1)->name() + "_mul"));
  if (b != nullptr) {
    std::vector<double> nb(static_cast<size_t>(channels));
    for (size_t m = 0; m < nb.size(); ++m)
      nb[m] = floatAt(*b, m) * s[m];
    rw.setInput(
        conv, 2,
        rw.constant(floatTensorLike(w.dtype(), {channels}, nb), conv->input(2)->name() + "_mul"));
  }
  rw.replaceNode(mul, {conv->output(0)});
}

}  // namespace

void addFuseMulIntoConvPatterns(PatternList& out) {
  for (const char* op : {"Conv", "ConvTranspose"}) {
    ChainSpec spec;
    spec.name =
        std::string("fuse-mul-into-") + (std::string(op) == "Conv" ? "conv" : "conv-transpose");
    spec.ops = {op, "Mul"};
    spec.benefit = 2;
    spec.any_input = true;
    spec.constraints = {perChannelScale};
    spec.build = fold;
    out.push_back(makeChainPattern(std::move(spec)));
  }
}

}  // namespace onnxfold
