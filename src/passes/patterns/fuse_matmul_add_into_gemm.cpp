// A 2-D MatMul by constant weights followed by the Add of a constant bias
// becomes one Gemm.
//
// Before:  %m = MatMul(%A, %B); %y = Add(%m, %C)     (or Add(%C, %m))
// After:   %y = Gemm(%A, %B, %C)                     (alpha = beta = 1, no transposes)
//
// Conditions: %A has rank 2 ([M, K], static or symbolic dims); %B is a
// constant [K, N]; %C is a constant that Gemm may broadcast to [M, N] and that
// does not change the Add's output shape: [], [1], [N], [1, N], [1, 1] or
// [M, N] / [M, 1] with M known; A, B and C are float32 or float64 of one
// dtype; the MatMul output feeds only the Add; opset >= 7 (numpy broadcasting,
// Gemm's unidirectional broadcast of C). The Gemm output keeps the Add's
// output name. Algebra: Gemm(A, B, C) = A @ B + C.
#include "passes/patterns/patterns.h"

namespace onnxfold {

namespace {

using namespace patterns;

Value* otherOperand(const Chain& c) {
  return c[1]->input(0) == c[0]->output(0) ? c[1]->input(1) : c[1]->input(0);
}

bool gemmOperands(const Rewriter& rw, const Chain& c) {
  const Node* matmul = c[0];
  const Node* add = c[1];
  if (rw.opset() < 7) return false;  // Add uses legacy broadcasting (opset < 7)
  if (add->numInputs() != 2 || add->input(0) == add->input(1)) return false;  // not a binary Add
  const Shape* a = shapeOf(matmul->input(0));
  if (a == nullptr || a->rank() != 2) return false;  // MatMul input A is not known to be 2-D
  const DataType dt = dtypeOf(matmul->input(0));
  if (!isFloat32Or64(dt)) return false;  // not float32/float64
  const Tensor* b = constantOf(matmul->input(1));
  if (b == nullptr || b->rank() != 2) return false;  // MatMul input B is not a 2-D constant
  if (b->dtype() != dt) return false;                // MatMul dtypes differ
  const Dim& k = a->dims[1];
  if (k.isKnown() && k.value != b->dims()[0]) return false;  // MatMul inner dims differ
  const Tensor* bias = constantOf(otherOperand(c));
  if (bias == nullptr) return false;      // Add operand is not constant
  if (bias->dtype() != dt) return false;  // Add constant dtype differs
  const int64_t n = b->dims()[1];
  const std::vector<int64_t>& cd = bias->dims();
  if (cd.size() > 2) return false;  // bias rank is above 2
  if (!cd.empty() && cd.back() != 1 && cd.back() != n)
    return false;  // bias does not broadcast to [M, N]
  if (cd.size() == 2 && cd[0] != 1) {
    const Dim& m = a->dims[0];
    if (!m.isKnown() || m.value != cd[0])
      return false;  // bias rows differ from M (or M is unknown)
  }
  return true;
}

void build(const Chain& c, Rewriter& rw) {
  Node* matmul = c[0];
  Node* add = c[1];
  Value* y = add->output(0);
  const std::string name = y->name();
  Node* gemm = rw.create("Gemm", {matmul->input(0), matmul->input(1), otherOperand(c)}, 1, add);
  gemm->name = add->name.empty() ? matmul->name : add->name;
  gemm->output(0)->type = y->type;
  rw.replaceNode(add, {gemm->output(0)});
  rw.erase(matmul);
  // The Add's output name is kept (a graph output already took it over).
  if (gemm->output(0)->name() != name) rw.rename(gemm->output(0), name);
}

}  // namespace

void addFuseMatMulAddPatterns(PatternList& out) {
  ChainSpec spec;
  spec.name = "fuse-matmul-add-into-gemm";
  spec.ops = {"MatMul", "Add"};
  spec.benefit = 1;
  spec.any_input = true;
  spec.constraints = {gemmOperands};
  spec.build = build;
  out.push_back(makeChainPattern(std::move(spec)));
}

}  // namespace onnxfold
