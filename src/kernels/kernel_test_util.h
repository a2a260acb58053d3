// Helpers several kernel tests (src/kernels/*_test.cpp) share beyond
// tests/test_util.h: random data with a tolerance check for the differential
// tests, and string tensors and attributes.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "ir/graph.h"
#include "ir/tensor.h"

namespace onnxfold::test {

// n floats drawn uniformly from [-1, 1).
inline std::vector<float> randomFloats(std::mt19937& rng, size_t n) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& f : v)
    f = dist(rng);
  return v;
}

// Element-wise |got - want| <= tol * (1 + |want|); `what` names the case in failures.
inline void expectClose(const std::vector<float>& got, const std::vector<float>& want, float tol,
                        const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], tol * (1.0f + std::fabs(want[i]))) << what << " at " << i;
  }
}

inline Tensor stringTensor(std::vector<int64_t> dims, std::vector<std::string> v) {
  Tensor t(DataType::kString, std::move(dims));
  t.mutableStrings() = std::move(v);
  return t;
}

inline Attribute stringsAttr(const std::string& name, std::vector<std::string> v) {
  Attribute a;
  a.name = name;
  a.type = AttrType::kStrings;
  a.strings = std::move(v);
  return a;
}

}  // namespace onnxfold::test
