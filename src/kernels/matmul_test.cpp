// Tests of the matmul family: MatMul broadcasting, 1-D promotion and integer
// types, Gemm's attributes and bias, and symbolic shape inference.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ir/error.h"
#include "kernels/kernel_test_util.h"
#include "kernels/op_registry.h"
#include "test_util.h"

namespace onnxfold {
namespace {

const test::OpRunner run{21};

constexpr auto floats = &test::floatValues;

TEST(Matmul, MatMulBroadcastsAndPromotes) {
  // [2,1,2,3] x [3,2] -> [2,1,2,2]; 1-D x 1-D -> scalar; 1-D x 3-D.
  std::vector<float> av(12), bv(6);
  for (size_t i = 0; i < av.size(); ++i)
    av[i] = static_cast<float>(i);
  for (size_t i = 0; i < bv.size(); ++i)
    bv[i] = static_cast<float>(i) - 2;
  const Tensor a = test::floatTensor({2, 1, 2, 3}, av);
  const Tensor b = test::floatTensor({3, 2}, bv);
  const Tensor y = run("MatMul", {a, b}, {}, 13)[0];
  EXPECT_EQ(y.dims(), (std::vector<int64_t>{2, 1, 2, 2}));
  // Row [0,1,2] x [[-2,-1],[0,1],[2,3]] = [4, 7].
  EXPECT_EQ(floats(y)[0], 4.0f);
  EXPECT_EQ(floats(y)[1], 7.0f);
  const Tensor v = test::floatTensor({3}, {1, 2, 3});
  const Tensor s = run("MatMul", {v, v}, {}, 13)[0];
  EXPECT_TRUE(s.dims().empty());
  EXPECT_EQ(s.at<float>(0), 14.0f);
  const Tensor b3 = test::floatTensor({2, 3, 1}, {1, 0, 0, 0, 0, 1});
  const Tensor vy = run("MatMul", {v, b3}, {}, 13)[0];
  EXPECT_EQ(vy.dims(), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(floats(vy), (std::vector<float>{1, 3}));
  // Integer MatMul and an inner-dimension mismatch.
  const Tensor ia = test::int64Tensor({2, 2}, {1, 2, 3, 4});
  const Tensor iy = run("MatMul", {ia, ia}, {}, 13)[0];
  EXPECT_EQ(iy.at<int64_t>(0), 7);
  EXPECT_EQ(iy.at<int64_t>(3), 22);
  EXPECT_THROW(run("MatMul", {a, a}, {}, 13), Error);
}

TEST(Matmul, GemmAttributesAndBias) {
  const Tensor a = test::floatTensor({3, 2}, {1, 2, 3, 4, 5, 6});  // A^T is [2,3]
  const Tensor b = test::floatTensor({4, 3}, std::vector<float>(12, 1.0f));
  const Tensor c = test::floatTensor({4}, {1, 2, 3, 4});
  const Tensor y =
      run("Gemm", {a, b, c},
          test::attrs(Attribute::makeInt("transA", 1), Attribute::makeInt("transB", 1),
                      Attribute::makeFloat("alpha", 2.0f), Attribute::makeFloat("beta", 0.5f)),
          13)[0];
  EXPECT_EQ(y.dims(), (std::vector<int64_t>{2, 4}));
  // Row 0 of A^T is [1,3,5]: 2*9 + 0.5*c.
  EXPECT_EQ(floats(y), (std::vector<float>{18.5f, 19, 19.5f, 20, 24.5f, 25, 25.5f, 26}));
  // No C.
  const Tensor y2 = run("Gemm", {a, test::floatTensor({2, 1}, {1, 1})}, {}, 13)[0];
  EXPECT_EQ(floats(y2), (std::vector<float>{3, 7, 11}));
}

TEST(Matmul, SymbolicShapeInference) {
  test::ModelBuilder b(17);
  Value* a = b.input("a", DataType::kFloat, {-1, 5, 7});
  Value* m = b.input("m", DataType::kFloat, {7, 4});
  Node* mm = b.node("MatMul", {a, m});
  InferContext im(*mm, 17, 2, 1);
  im.input_types = {&a->type, &m->type};
  OpRegistry::instance().find("", "MatMul", 17)->infer(im);
  const Shape& ms = *im.output_types[0].shape;
  ASSERT_EQ(ms.rank(), 3u);
  EXPECT_EQ(ms.dims[0].param, a->type.shape->dims[0].param);
  EXPECT_EQ(ms.dims[2].value, 4);
}

}  // namespace
}  // namespace onnxfold
