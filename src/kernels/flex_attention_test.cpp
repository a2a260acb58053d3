// Tests of FlexAttention: a hand-computed case, the default and explicit scale, GQA and
// different value head sizes against a direct reference, float16 and double, the
// score_mod and prob_mod graphs (run by the kernel and by fold-constants), inference, and
// the errors for invalid inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>

#include "ir/error.h"
#include "ir/graph_builder.h"
#include "kernels/kernel_test_util.h"
#include "kernels/subgraph_eval.h"
#include "passes/pass.h"
#include "passes/registry.h"

namespace onnxfold {
namespace {

constexpr const char* kPreview = "ai.onnx.preview";

struct Dims {
  int64_t B, Hq, Hkv, L, S, E, Ev;
};

std::vector<double> randoms(size_t n, unsigned seed) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<double> v(n);
  for (double& x : v)
    x = u(g);
  return v;
}

// y = softmax_j(mod(q.k_j * scale)) v_j in double; query head h reads kv head h / (Hq / Hkv).
std::vector<double> reference(const Dims& d, const std::vector<double>& q,
                              const std::vector<double>& k, const std::vector<double>& v,
                              double scale,
                              const std::function<double(int64_t, int64_t, double)>& mod = {}) {
  std::vector<double> y(static_cast<size_t>(d.B * d.Hq * d.L * d.Ev), 0.0);
  for (int64_t b = 0; b < d.B; ++b)
    for (int64_t h = 0; h < d.Hq; ++h) {
      const int64_t hk = h / (d.Hq / d.Hkv);
      for (int64_t i = 0; i < d.L; ++i) {
        std::vector<double> s(static_cast<size_t>(d.S));
        double mx = -INFINITY, sum = 0;
        for (int64_t j = 0; j < d.S; ++j) {
          double dot = 0;
          for (int64_t e = 0; e < d.E; ++e)
            dot += q[static_cast<size_t>(((b * d.Hq + h) * d.L + i) * d.E + e)] *
                   k[static_cast<size_t>(((b * d.Hkv + hk) * d.S + j) * d.E + e)];
          s[static_cast<size_t>(j)] = mod ? mod(i, j, dot * scale) : dot * scale;
          mx = std::max(mx, s[static_cast<size_t>(j)]);
        }
        for (double& x : s)
          sum += (x = std::exp(x - mx));
        for (int64_t j = 0; j < d.S; ++j)
          for (int64_t e = 0; e < d.Ev; ++e)
            y[static_cast<size_t>(((b * d.Hq + h) * d.L + i) * d.Ev + e)] +=
                s[static_cast<size_t>(j)] / sum *
                v[static_cast<size_t>(((b * d.Hkv + hk) * d.S + j) * d.Ev + e)];
      }
    }
  return y;
}

// Random Q, K, V of `dt` (the values as stored, for the reference).
struct Inputs {
  Tensor Q, K, V;
  std::vector<double> q, k, v;
};
Inputs makeInputs(const Dims& d, DataType dt, unsigned seed) {
  Inputs in;
  in.Q = test::tensorOf(dt, {d.B, d.Hq, d.L, d.E}, randoms(size_t(d.B * d.Hq * d.L * d.E), seed));
  in.K = test::tensorOf(dt, {d.B, d.Hkv, d.S, d.E},
                        randoms(size_t(d.B * d.Hkv * d.S * d.E), seed + 1));
  in.V = test::tensorOf(dt, {d.B, d.Hkv, d.S, d.Ev},
                        randoms(size_t(d.B * d.Hkv * d.S * d.Ev), seed + 2));
  in.q = test::valuesOf(in.Q);
  in.k = test::valuesOf(in.K);
  in.v = test::valuesOf(in.V);
  return in;
}

std::vector<Tensor> flex(const Inputs& in, std::vector<Attribute> attrs = {}) {
  return test::runOp("FlexAttention", {&in.Q, &in.K, &in.V}, std::move(attrs), 1, 1, kPreview);
}

void expectClose(const std::vector<double>& got, const std::vector<double>& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], tol * (1 + std::fabs(want[i]))) << "at " << i;
}

TEST(FlexAttention, HandComputed) {
  // E = 1 (scale 1): scores [0, ln 2] give probabilities [1/3, 2/3], so y = 3/3 + 12/3 = 5.
  Inputs in;
  in.Q = test::floatTensor({1, 1, 1, 1}, {1});
  in.K = test::floatTensor({1, 1, 2, 1}, {0, std::log(2.0f)});
  in.V = test::floatTensor({1, 1, 2, 1}, {3, 6});
  const std::vector<Tensor> y = flex(in);
  ASSERT_EQ(y[0].dims(), (std::vector<int64_t>{1, 1, 1, 1}));
  EXPECT_NEAR(test::floatValues(y[0])[0], 5.0f, 1e-5);
}

TEST(FlexAttention, DefaultAndExplicitScale) {
  const Dims d{2, 2, 2, 3, 5, 4, 4};
  const Inputs in = makeInputs(d, DataType::kFloat, 1);
  expectClose(test::valuesOf(flex(in)[0]), reference(d, in.q, in.k, in.v, 0.5), 1e-5);
  expectClose(test::valuesOf(flex(in, test::attrs(Attribute::makeFloat("scale", 0.1f)))[0]),
              reference(d, in.q, in.k, in.v, 0.1), 1e-5);
  // A negative scale has no square root to split between Q and K, and still applies.
  expectClose(test::valuesOf(flex(in, test::attrs(Attribute::makeFloat("scale", -2.0f)))[0]),
              reference(d, in.q, in.k, in.v, -2.0), 1e-5);
}

TEST(FlexAttention, GroupedQueryHeadsAndValueHeadSize) {
  const Dims d{1, 6, 2, 3, 4, 8, 5};  // query heads 0-2 read kv head 0, 3-5 kv head 1
  const Inputs in = makeInputs(d, DataType::kFloat, 7);
  const std::vector<Tensor> y = flex(in);
  ASSERT_EQ(y[0].dims(), (std::vector<int64_t>{1, 6, 3, 5}));
  expectClose(test::valuesOf(y[0]), reference(d, in.q, in.k, in.v, 1 / std::sqrt(8.0)), 1e-5);
}

TEST(FlexAttention, Float16AndDouble) {
  const Dims d{1, 2, 1, 4, 6, 16, 8};
  for (DataType dt : {DataType::kFloat16, DataType::kBfloat16, DataType::kDouble}) {
    const Inputs in = makeInputs(d, dt, 3);
    const std::vector<Tensor> y = flex(in);
    ASSERT_EQ(y[0].dtype(), dt);
    const double tol = dt == DataType::kDouble ? 1e-7 : dt == DataType::kFloat16 ? 5e-3 : 3e-2;
    expectClose(test::valuesOf(y[0]), reference(d, in.q, in.k, in.v, 0.25), tol);
  }
}

// A one-input, one-output modifier graph of `holder`: x -> op(x, c) with a float constant c.
void setModifier(Node* holder, const char* attr, const char* op, float c) {
  Attribute a;
  a.name = attr;
  a.type = AttrType::kGraph;
  a.g = std::make_unique<Graph>(holder->graph(), holder);
  a.g->name = std::string(attr) + "_graph";
  Value* x =
      a.g->addInput(GraphBuilder::key(), a.g->uniqueName("x"), Type::tensor(DataType::kFloat));
  Value* k =
      a.g->addInitializer(GraphBuilder::key(), test::floatTensor({}, {c}, a.g->uniqueName("c")));
  a.g->addOutput(GraphBuilder::key(), a.g->addNode(GraphBuilder::key(), op, {x, k})->output(0));
  holder->setAttr(std::move(a));
}

SubgraphEnv opsets26() {
  return {[](std::string_view d) -> int64_t { return d.empty() ? 26 : -1; }, {}};
}

TEST(FlexAttention, ScoreAndProbModifiers) {
  const Dims d{1, 2, 1, 3, 4, 4, 4};
  const Inputs in = makeInputs(d, DataType::kFloat, 11);
  test::ModelBuilder b(26);
  Node* n = b.node("FlexAttention", {}, 1);
  n->domain = kPreview;
  setModifier(n, "score_mod", "Add", 0.75f);  // a constant shift: softmax does not see it
  setModifier(n, "prob_mod", "Mul", 0.5f);
  const SubgraphEnv env = opsets26();
  const std::vector<Tensor> y = evaluateNode(*n, 1, {&in.Q, &in.K, &in.V}, &env);
  std::vector<double> want = reference(d, in.q, in.k, in.v, 0.5);
  for (double& w : want)
    w *= 0.5;
  expectClose(test::valuesOf(y[0]), want, 1e-5);

  // Without the model's opsets the graphs cannot run: not folded, and said why.
  try {
    evaluateNode(*n, 1, {&in.Q, &in.K, &in.V});
    FAIL() << "ran score_mod without opsets";
  } catch (const UnsupportedError& e) {
    EXPECT_NE(std::string(e.what()).find("score_mod"), std::string::npos) << e.what();
  }
}

// Y = FlexAttention(Q, K, V) of [1, 1, 3, 2] inputs with a causal score_mod: Where of a
// constant lower-triangular mask.
std::unique_ptr<Model> causalModel() {
  test::ModelBuilder b(26);
  b.importDomain(kPreview, 1);
  std::vector<Value*> qkv;
  for (const char* name : {"Q", "K", "V"})
    qkv.push_back(b.input(name, DataType::kFloat, {1, 1, 3, 2}));
  Node* n = b.node("FlexAttention", qkv, 1, {}, "flex");
  n->domain = kPreview;
  Graph& g = b.subgraph(n, "score_mod");
  Value* s = g.addInput(GraphBuilder::key(), "scores", Type::tensor(DataType::kFloat));
  Tensor m(DataType::kBool, {3, 3});
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 3; ++j)
      m.mutableBytes()[i * 3 + j] = j <= i;
  m.name = "mask";
  Value* mask = g.addInitializer(GraphBuilder::key(), std::move(m));
  Value* ninf = g.addInitializer(GraphBuilder::key(), test::floatTensor({}, {-INFINITY}, "ninf"));
  g.addOutput(GraphBuilder::key(),
              g.addNode(GraphBuilder::key(), "Where", {mask, s, ninf})->output(0));
  b.output(n->output(0));
  return b.build();
}

TEST(FlexAttention, FoldsWithAScoreModGraph) {
  // The fold pass gives the kernel the model's opsets to run the graph with.
  const Dims d{1, 1, 1, 3, 3, 2, 2};
  const Inputs in = makeInputs(d, DataType::kFloat, 5);
  const std::vector<std::vector<float>> y =
      test::evaluateByFolding(*causalModel(), {{"Q", in.Q}, {"K", in.K}, {"V", in.V}});
  ASSERT_EQ(y.size(), 1u);
  const std::vector<double> want =
      reference(d, in.q, in.k, in.v, 1 / std::sqrt(2.0),
                [](int64_t i, int64_t j, double s) { return j <= i ? s : -INFINITY; });
  expectClose(std::vector<double>(y[0].begin(), y[0].end()), want, 1e-5);
}

TEST(FlexAttention, WithDynamicInputsStaysAndSaysWhy) {
  // Not reported as control flow: the node waits for its inputs like any other.
  std::unique_ptr<Model> m = causalModel();
  PassOptions po;
  PassContext ctx(po);
  createPass("fold-constants")->run(*m, ctx);
  EXPECT_EQ(m->graph->numNodes(), 1u);
  const std::vector<Explanation> why = ctx.takeExplanations();
  ASSERT_EQ(why.size(), 1u);
  EXPECT_NE(why[0].reason.find("depends on graph input 'Q'"), std::string::npos) << why[0].reason;
}

TEST(FlexAttention, InfersTheOutputShape) {
  test::ModelBuilder b(26);
  Value* q = b.input("q", DataType::kFloat16, {-1, 8, 5, 16});
  Value* k = b.input("k", DataType::kFloat16, {2, 2, -1, 16});
  Value* v = b.input("v", DataType::kFloat16, {-1, 2, -1, 32});
  Node* n = b.node("FlexAttention", {q, k, v}, 1);
  n->domain = kPreview;
  InferContext ic(*n, 1, 3, 1);
  ic.input_types = {&q->type, &k->type, &v->type};
  OpRegistry::instance().find(kPreview, "FlexAttention", 1)->infer(ic);
  const Type& t = ic.output_types[0];
  EXPECT_EQ(t.elem_type, DataType::kFloat16);
  ASSERT_TRUE(t.shape);
  ASSERT_EQ(t.shape->rank(), 4u);
  EXPECT_EQ(t.shape->dims[0].value, 2);  // the batch K knows
  EXPECT_EQ(t.shape->dims[1].value, 8);
  EXPECT_EQ(t.shape->dims[2].value, 5);
  EXPECT_EQ(t.shape->dims[3].value, 32);
}

// The message of what running FlexAttention (node 'bad') on these inputs throws.
std::string failure(const Tensor& Q, const Tensor& K, const Tensor& V,
                    std::vector<Attribute> attrs = {}) {
  test::ModelBuilder b(26);
  Node* n = b.node("FlexAttention", {}, 1, std::move(attrs), "bad");
  n->domain = kPreview;
  try {
    evaluateNode(*n, 1, {&Q, &K, &V});
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(FlexAttention, InvalidInputsNameTheNode) {
  const Tensor q4 = test::floatTensor({1, 4, 2, 3}, std::vector<float>(24, 0.5f));
  const Tensor k4 = test::floatTensor({1, 2, 2, 3}, std::vector<float>(12, 0.5f));
  const Tensor v4 = test::floatTensor({1, 2, 2, 3}, std::vector<float>(12, 0.5f));
  const Tensor q3 = test::floatTensor({4, 2, 3}, std::vector<float>(24, 0.5f));
  const Tensor k3heads = test::floatTensor({1, 3, 2, 3}, std::vector<float>(18, 0.5f));
  const Tensor kE = test::floatTensor({1, 2, 2, 2}, std::vector<float>(8, 0.5f));
  const Tensor vS = test::floatTensor({1, 2, 3, 3}, std::vector<float>(18, 0.5f));
  const Tensor qd = test::tensorOf(DataType::kDouble, {1, 4, 2, 3}, std::vector<double>(24, 0.5));
  const Tensor qi = test::int64Tensor({1, 4, 2, 3}, std::vector<int64_t>(24, 1));
  const struct {
    std::string got, says;
  } cases[] = {
      {failure(q3, k4, v4), "Q must be 4-D"},
      {failure(q4, k3heads, k3heads), "multiple of the key/value head count"},
      {failure(q4, kE, v4), "different head sizes"},
      {failure(q4, k4, vS), "sequence lengths"},
      {failure(qd, k4, v4), "same element type"},
      {failure(qi, k4, v4), "expected a float type"},
      {failure(q4, k4, v4, test::attrs(Attribute::makeInt("softmax_precision", 7))),
       "softmax_precision"},
  };
  for (const auto& c : cases) {
    EXPECT_NE(c.got.find("FlexAttention 'bad'"), std::string::npos) << c.got;
    EXPECT_NE(c.got.find(c.says), std::string::npos) << c.got;
  }
}

}  // namespace
}  // namespace onnxfold
