// Helpers several kernel tests (src/kernels/*_test.cpp) share beyond
// tests/test_util.h: random data with tolerance checks for the differential
// and image tests, counting tensors, inference on symbolic inputs, and string tensors and
// attributes.
#pragma once

#include <gtest/gtest.h>
#include <hwy/highway.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "ir/graph.h"
#include "ir/tensor.h"
#include "kernels/common.h"
#include "kernels/op_registry.h"
#include "test_util.h"

namespace onnxfold::test {

// n floats drawn uniformly from [lo, hi), from `rng` or from a generator seeded with `seed`.
inline std::vector<float> randomFloats(std::mt19937& rng, size_t n, float lo = -1.0f,
                                       float hi = 1.0f) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& f : v)
    f = dist(rng);
  return v;
}
inline std::vector<float> randomFloats(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  return randomFloats(rng, n, lo, hi);
}

// Element-wise |got - want| <= tol * (1 + |want|); `what` names the case in failures.
inline void expectClose(const std::vector<float>& got, const std::vector<float>& want, float tol,
                        const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], tol * (1.0f + std::fabs(want[i]))) << what << " at " << i;
  }
}

// Element-wise |got - want| <= tol (1e-5 in the image ops' tests), each element reported.
inline void expectNear(const std::vector<float>& got, const std::vector<float>& want,
                       float tol = 1e-5f) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], tol) << "at " << i;
}

// test::runOp with the defaults a kernel test file uses: no attributes, its opset, one
// output (const test::OpRunner run{17}; run("Add", {a, b})).
struct OpRunner {
  int64_t default_opset;
  std::vector<Tensor> operator()(const std::string& op, std::vector<Tensor> ins,
                                 std::vector<Attribute> attrs = {}, int64_t opset = 0,
                                 size_t num_outputs = 1) const {
    return runOp(op, std::move(ins), std::move(attrs), opset != 0 ? opset : default_opset,
                 num_outputs);
  }
};

// A float tensor of `dims` holding 0, 1, 2, ...
inline Tensor iota(std::vector<int64_t> dims) {
  std::vector<float> v(static_cast<size_t>(kernels::product(dims, 0, dims.size())));
  std::iota(v.begin(), v.end(), 0.0f);
  return test::floatTensor(std::move(dims), v);
}

// Runs only infer() of a new node `op` of `b` on inputs with these types and symbolic values.
inline InferContext inferWith(test::ModelBuilder& b, const std::string& op, std::vector<Value*> ins,
                              std::vector<const Type*> types,
                              std::vector<const SymbolicValue*> syms,
                              std::vector<Attribute> attrs = {}, int64_t opset = 17) {
  Node* n = b.node(op, ins, 1, std::move(attrs));
  InferContext ic(*n, opset, ins.size(), 1);
  ic.input_types = std::move(types);
  ic.input_symbolic = std::move(syms);
  OpRegistry::instance().find("", op, opset)->infer(ic);
  return ic;
}

// A tensor of any numeric dtype holding `values`, and the elements of one as doubles.
inline Tensor tensorOf(DataType dt, std::vector<int64_t> dims, const std::vector<double>& values) {
  Tensor t(dt, std::move(dims));
  kernels::dispatchNumeric(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = kernels::mutableDataAs<T>(t);
    for (size_t i = 0; i < values.size(); ++i)
      p[i] = kernels::fromDouble<T>(values[i]);
  });
  return t;
}

inline std::vector<double> valuesOf(const Tensor& t) {
  std::vector<double> v;
  kernels::dispatchNumeric(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (int64_t i = 0; i < t.numElements(); ++i)
      v.push_back(kernels::toDouble(t.at<T>(static_cast<size_t>(i))));
  });
  return v;
}

// Sizes below, at and above the float32 vector width of the static Highway target,
// for the tests of a Highway kernel against its scalar reference.
inline std::vector<size_t> sizesAroundVector() {
  const size_t l = hwy::HWY_NAMESPACE::Lanes(hwy::HWY_NAMESPACE::ScalableTag<float>());
  return {0, 1, l - 1, l, l + 1, 2 * l - 1, 2 * l, 2 * l + 1, 4 * l + 3, 257};
}

// The raw bytes of a tensor.
inline std::vector<uint8_t> bytesOf(const Tensor& t) {
  return std::vector<uint8_t>(t.bytes(), t.bytes() + t.byteSize());
}

// Short int64 tensors and their elements, for the index-heavy tests.
inline Tensor i64(std::vector<int64_t> dims, const std::vector<int64_t>& v) {
  return test::int64Tensor(std::move(dims), v);
}
inline Tensor scalarI64(int64_t v) {
  Tensor t = i64({1}, {v});
  t.reshape({});
  return t;
}
inline std::vector<int64_t> ints(const Tensor& t) {
  std::vector<int64_t> v;
  for (int64_t i = 0; i < t.numElements(); ++i)
    v.push_back(t.at<int64_t>(static_cast<size_t>(i)));
  return v;
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
