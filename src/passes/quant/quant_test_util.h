// Helpers for the quantization-finalize tests: QDQ graphs in IR, the quant
// pipelines, and evaluation through the op registry (the QLinear*/Integer
// kernels) to compare a finalized model with its QDQ original.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ir/verifier.h"
#include "passes/pass_manager.h"
#include "passes/quant/quant.h"
#include "passes/quant/quant_fuse.h"
#include "passes/registry.h"
#include "test_util.h"

namespace onnxfold::quant::testing {

using test::attrs;
using test::countOps;
using test::evaluateByFolding;
using test::ModelBuilder;
using test::ramp;

// Builds QDQ graphs with unique initializer names.
class QdqBuilder {
 public:
  explicit QdqBuilder(int64_t opset = 17) : b_(opset) {}
  ModelBuilder& b() { return b_; }

  Value* scale(const std::vector<float>& s, bool vector = false) {
    return b_.initializer(test::floatTensor(
        vector ? std::vector<int64_t>{static_cast<int64_t>(s.size())} : std::vector<int64_t>{}, s,
        fresh("scale")));
  }
  Value* ints(DataType t, std::vector<int64_t> dims, const std::vector<int64_t>& v,
              const std::string& base = "zp") {
    Tensor x = intTensor(t, std::move(dims), v);
    x.name = fresh(base);
    return b_.initializer(std::move(x));
  }
  Value* zp(DataType t, int64_t v) { return ints(t, {}, {v}); }
  Value* q(Value* x, Value* s, Value* z, int64_t axis = -100) {
    return b_.op("QuantizeLinear", {x, s, z},
                 axis == -100 ? std::vector<Attribute>{} : attrs(Attribute::makeInt("axis", axis)));
  }
  Value* dq(Value* x, Value* s, Value* z, int64_t axis = -100) {
    return b_.op("DequantizeLinear", {x, s, z},
                 axis == -100 ? std::vector<Attribute>{} : attrs(Attribute::makeInt("axis", axis)));
  }
  Value* qdq(Value* x, Value* s, Value* z) { return dq(q(x, s, z), s, z); }
  Value* floats(std::vector<int64_t> dims, const std::vector<float>& v,
                const std::string& base = "w") {
    return b_.initializer(test::floatTensor(std::move(dims), v, fresh(base)));
  }
  std::string fresh(const std::string& base) { return base + std::to_string(next_++); }

 private:
  ModelBuilder b_;
  int next_ = 0;
};

// Runs `passes` by name on `m`, verifying the IR after each; returns counters.
inline std::map<std::string, int64_t> runPasses(Model& m, const std::vector<std::string>& passes) {
  PassOptions options;
  PassContext ctx(options);
  for (const std::string& p : passes) {
    auto pass = createPass(p);
    EXPECT_TRUE(pass != nullptr) << p;
    if (!pass) continue;
    pass->run(m, ctx);
    const VerifyResult v = verify(m);
    EXPECT_TRUE(v.ok) << "after " << p << ": " << v.message;
  }
  return ctx.takeCounters();
}

// A whole quantization-finalize pipeline (one round, like the manager's first iteration).
inline std::map<std::string, int64_t> finalize(Model& m, const std::string& mode) {
  return runPasses(m, quantPipeline(mode));
}

// Largest |a - b| over all outputs.
inline double maxDiff(const std::vector<std::vector<float>>& a,
                      const std::vector<std::vector<float>>& b) {
  EXPECT_EQ(a.size(), b.size());
  double m = 0;
  for (size_t k = 0; k < a.size() && k < b.size(); ++k) {
    EXPECT_EQ(a[k].size(), b[k].size());
    for (size_t i = 0; i < a[k].size() && i < b[k].size(); ++i)
      m = std::max(m, std::fabs(double(a[k][i]) - double(b[k][i])));
  }
  return m;
}

}  // namespace onnxfold::quant::testing
