#include "kernels/eval_budget.h"

#include <string>

#include "ir/error.h"

namespace onnxfold {

namespace {
// One run at a time, as for the memory limit (ir/buffer.h); wasm32 has no thread_local
// without atomics.
EvalBudget::Scope* g_scope = nullptr;
}  // namespace

EvalBudget::Scope::Scope(int64_t steps, uint64_t bytes)
    : previous_(g_scope), steps_limit_(steps), bytes_limit_(bytes) {
  g_scope = this;
}

EvalBudget::Scope::~Scope() {
  g_scope = previous_;
}

void EvalBudget::chargeSteps(int64_t n, const char* what) {
  if (g_scope == nullptr) return;
  if (n > g_scope->steps_limit_ - g_scope->steps_) {
    throw UnsupportedError(std::string(what) + ": over the run's evaluation budget of " +
                           std::to_string(g_scope->steps_limit_) + " steps");
  }
  g_scope->steps_ += n;
}

void EvalBudget::chargeBytes(uint64_t n, const char* what) {
  if (g_scope == nullptr) return;
  if (n > g_scope->bytes_limit_ - g_scope->bytes_) {
    throw UnsupportedError(std::string(what) + ": over the run's evaluation budget of " +
                           std::to_string(g_scope->bytes_limit_ >> 20) + " MiB (" +
                           std::to_string(n) + " bytes more asked)");
  }
  g_scope->bytes_ += n;
}

}  // namespace onnxfold
