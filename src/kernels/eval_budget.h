// The evaluation budget of one run (a facade call: optimize, split-constants, check).
//
// Every kernel evaluation of the run draws on it: the folds of fold-constants and
// split-constants, the bodies Loop, Scan and SequenceMap run, the values inference
// computes while validating, TreeEnsemble's node visits and FlexAttention's scores. A
// limit per fold let 96 endless Loops take a second each (100 s in all); one per run
// bounds the run. A spent budget throws UnsupportedError: the fold is left as it is and
// explained, the run goes on.
#pragma once

#include <cstdint>

namespace onnxfold {

// Node evaluations per run: about four seconds of small kernels.
constexpr int64_t kEvalSteps = int64_t{1} << 20;
// Bytes of the values computed inside subgraph bodies, and of kernels' scratch
// (FlexAttention's scores), per run (a fold's own result is bounded by the size and
// growth budgets instead).
constexpr uint64_t kEvalBytes = uint64_t{1} << 30;

// Tree node visits (TreeEnsemble) that count as one step. A visit takes ~2.5 ns natively but
// ~30 ns in wasm (a chain walk over 400,000 nodes: 1024 per step let the run's steps take 31 s
// through npm); 128 keeps a degenerate tree within ~4 s there, and a real fold (trees of depth
// ~10, thousands of rows) within a small share of the steps.
constexpr int64_t kVisitsPerStep = 128;

class EvalBudget {
 public:
  // Takes `n` steps; throws UnsupportedError naming `what` when the run has fewer left
  // (nothing is taken then).
  static void chargeSteps(int64_t n, const char* what);
  // Takes `n` bytes, before they are allocated; throws UnsupportedError likewise.
  static void chargeBytes(uint64_t n, const char* what);

  // The budget of one run, restored to the enclosing one (or to none) when it ends.
  // Outside any run nothing is counted (unit tests of single kernels).
  class Scope {
   public:
    explicit Scope(int64_t steps = kEvalSteps, uint64_t bytes = kEvalBytes);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    Scope* previous_;
    const int64_t steps_limit_;
    const uint64_t bytes_limit_;
    int64_t steps_ = 0;   // taken
    uint64_t bytes_ = 0;  // taken
    friend class EvalBudget;
  };
};

}  // namespace onnxfold
