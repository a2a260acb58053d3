// Conv (or ConvTranspose) followed by the Add of a per-channel constant
// becomes one Conv whose bias absorbs the constant.
//
// Before:  %c = Conv(%x, %W, %B); %y = Add(%c, %K)     (or Add(%K, %c))
// After:   %y = Conv(%x, %W, %B')
//
// Conditions: %K is a constant of the weight's dtype (float32 or float64)
// whose broadcast against the Conv output [N, M, d...] varies along the
// output-channel axis only and keeps the output shape: [] / [1] / [M,1,1] /
// [1,M,1,1] (rank 4), where M = W[0] for Conv and W[1] * group for
// ConvTranspose; the bias %B, if any, is constant; the Conv output feeds only
// the Add; opset >= 7 (numpy broadcasting). Pads, auto_pad, strides,
// dilations and group do not matter (group only through M): the bias is added
// to every output position of its channel, as the Add was. Algebra, per output
// channel m:
//   B'[m] = B[m] + K[m]          (B = 0 when absent; K[m] = K[0] when uniform)
#include "passes/patterns/patterns.h"

namespace onnxfold {

namespace {

using namespace patterns;

// The Add operand that is not the Conv output.
Value* otherOperand(const Chain& c) {
  return c[1]->input(0) == c[0]->output(0) ? c[1]->input(1) : c[1]->input(0);
}

bool perChannelConstant(const Rewriter& rw, const Chain& c) {
  const Node* conv = c[0];
  const Node* add = c[1];
  if (rw.opset() < 7) return false;  // Add uses legacy broadcasting (opset < 7)
  if (add->numInputs() != 2 || add->input(0) == add->input(1)) return false;  // not a binary Add
  const std::optional<std::vector<int64_t>> w = knownDims(conv->input(1));
  if (!w) return false;  // Conv weight shape is unknown
  int64_t channels = 0;
  if (!convOutputChannels(conv, *w, channels)) return false;
  const DataType dt =
      constantOf(conv->input(1)) ? constantOf(conv->input(1))->dtype() : dtypeOf(conv->input(1));
  if (!isFloat32Or64(dt)) return false;  // not float32/float64
  const Tensor* k = constantOf(otherOperand(c));
  if (k == nullptr) return false;      // Add operand is not constant
  if (k->dtype() != dt) return false;  // Add constant dtype differs from the weight's
  if (!isPerChannel(k->dims(), w->size(), channels))
    return false;  // Add constant does not broadcast along the output channels only
  if (conv->input(2) != nullptr) {
    const Tensor* b = constantOf(conv->input(2));
    if (b == nullptr) return false;  // Conv bias is not constant
    if (b->dtype() != dt || b->numElements() != channels)
      return false;  // Conv bias shape is unexpected
  }
  return true;
}

void fold(const Chain& c, Rewriter& rw) {
  Node* conv = c[0];
  Node* add = c[1];
  const Tensor& k = *constantOf(otherOperand(c));
  const Tensor* b = constantOf(conv->input(2));
  int64_t channels = 0;
  convOutputChannels(conv, *knownDims(conv->input(1)), channels);
  std::vector<double> nb = perChannelValues(k, channels);
  for (size_t m = 0; m < nb.size() && b != nullptr; ++m)
    nb[m] += floatAt(*b, m);
  const std::string base =
      (conv->input(2) ? conv->input(2)->name() : conv->input(1)->name() + "_bias") + "_add";
  Value* new_b = rw.constant(floatTensorLike(k.dtype(), {channels}, nb), base);
  if (conv->numInputs() < 3)
    rw.addInput(conv, new_b);
  else
    rw.setInput(conv, 2, new_b);
  rw.replaceNode(add, {conv->output(0)});
}

}  // namespace

void addFuseAddIntoConvPatterns(PatternList& out) {
  for (const char* op : {"Conv", "ConvTranspose"}) {
    ChainSpec spec;
    spec.name =
        std::string("fuse-add-into-") + (std::string(op) == "Conv" ? "conv" : "conv-transpose");
    spec.ops = {op, "Add"};
    spec.benefit = 2;
    spec.any_input = true;
    spec.constraints = {perChannelConstant};
    spec.build = fold;
    out.push_back(makeChainPattern(std::move(spec)));
  }
}

}  // namespace onnxfold
