// The variant plan (api/variants.cpp): transformers.js's file names, the options each variant
// depends on, and refusals that name what is wrong.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>

#include "api/onnxfold.h"
#include "onnx/proto_test_util.h"

namespace onnxfold {
namespace {

TEST(Variants, PlanNamesFilesAsTransformersJsAndSaysEveryOptionTheyDependOn) {
  const std::vector<VariantFile> plan = variantPlan("decoder_model_merged", {"fp16", "fp32"});
  ASSERT_EQ(plan.size(), 2u);
  EXPECT_EQ(plan[0].dtype, "fp16");
  EXPECT_EQ(plan[0].file, "decoder_model_merged_fp16.onnx");
  EXPECT_EQ(plan[1].file, "decoder_model_merged.onnx");
  // Applied over options that ask for float16, the fp32 variant is float32 again.
  Options o;
  o.float16 = true;
  applyOptionsJson(plan[1].options, o);
  EXPECT_FALSE(o.float16);
  EXPECT_EQ(o.external_data_location, "decoder_model_merged.onnx_data");
  EXPECT_EQ(o.external_data_chunk_separator, "_");
  EXPECT_GT(o.external_data_file_limit, 0u);
  EXPECT_LT(o.external_data_file_limit, uint64_t{1} << 31);
  applyOptionsJson(plan[0].options, o);
  EXPECT_TRUE(o.float16);
  // No dtypes: every known one, in the table's order.
  const std::vector<VariantFile> all = variantPlan("model", {});
  ASSERT_EQ(all.size(), variantSpecs().size());
  EXPECT_EQ(all[0].file, "model.onnx");
  EXPECT_EQ(nlohmann::json::parse(variantPlanJson("model", {"fp16"}))[0]["file"],
            "model_fp16.onnx");
  // transformers.js's names for the quantized ones; q4f16 is int4 MatMulNBits and float16.
  const std::vector<VariantFile> q = variantPlan("model", {"q8", "q4", "q4f16", "int8"});
  EXPECT_EQ(q[0].file, "model_quantized.onnx");
  EXPECT_EQ(q[1].file, "model_q4.onnx");
  EXPECT_EQ(q[3].file, "model_int8.onnx");
  Options q4f16;
  applyOptionsJson(q[2].options, q4f16);
  EXPECT_EQ(q4f16.weight_quant.mode, "int4");
  EXPECT_EQ(q4f16.weight_quant.format, "ort");
  EXPECT_TRUE(q4f16.float16);
  applyOptionsJson(plan[1].options, q4f16);  // fp32 over it: nothing quantized
  EXPECT_EQ(q4f16.weight_quant.mode, "");
}

TEST(Variants, UnknownOrRepeatedDtypesAndNamesWithFoldersAreRefused) {
  try {
    variantPlan("model", {"fp32", "int3"});
    FAIL() << "an unknown dtype was taken";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown dtype 'int3' (known: fp32, fp16"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(variantPlan("model", {"fp16", "fp16"}), Error);
  for (const char* name : {"", "..", "a/model", "a\\model"})
    EXPECT_THROW(variantPlan(name, {}), Error) << name;
}

namespace pb = proto_test::pb;

// A float32 initializer `name` of `dims`, seeded normal values, as raw_data.
std::string floatWeight(const std::string& name, const std::vector<int64_t>& dims, uint32_t seed) {
  size_t n = 1;
  for (int64_t d : dims)
    n *= static_cast<size_t>(d);
  std::mt19937 g(seed);
  std::normal_distribution<float> dist(0.0F, 0.5F);
  std::string raw(n * 4, '\0');
  for (size_t i = 0; i < n; ++i) {
    const float v = dist(g);
    std::memcpy(&raw[i * 4], &v, 4);
  }
  return pb::msg([&](protozero::pbf_writer& w) {
    for (int64_t d : dims)
      w.add_int64(1, d);
    w.add_int32(2, 1);
    w.add_string(8, name);
    w.add_string(9, raw);
  });
}

// Two MatMuls (quantized by the int8/q8/q4 variants) around a bias the pipeline folds
// (b = a * a) and a Conv (int8 quantizes it, q8 keeps it float).
std::string twoLayerModel() {
  pb::GraphSpec g;
  g.initializers = {floatWeight("w1", {64, 64}, 1), floatWeight("w2", {64, 64}, 2),
                    floatWeight("a", {64}, 3), floatWeight("k", {4, 2, 3}, 4)};
  g.nodes = {
      pb::node({"a", "a"}, {"b"}, "Mul", "bias"),    pb::node({"x", "w1"}, {"h"}, "MatMul", "fc1"),
      pb::node({"h", "b"}, {"hb"}, "Add", "add"),    pb::node({"hb"}, {"r"}, "Relu", "relu"),
      pb::node({"r", "w2"}, {"y"}, "MatMul", "fc2"), pb::node({"c", "k"}, {"z"}, "Conv", "conv")};
  g.inputs = {pb::valueInfo("x", 1, {2, 64}), pb::valueInfo("c", 1, {1, 2, 16})};
  g.outputs = {pb::valueInfo("y", 1, {2, 64}), pb::valueInfo("z", 1, {1, 4, 14})};
  return pb::model(pb::graph(g));
}

// Every file a run writes, by name: the model under `model` and its data files.
struct Files {
  std::map<std::string, std::unique_ptr<StringSink>> sinks;
  StringSink& make(const std::string& name) {
    auto& s = sinks[name];
    if (!s) s = std::make_unique<StringSink>();
    return *s;
  }
  ExternalDataIO io() {
    ExternalDataIO io;
    io.create = [this](const std::string& location) -> std::unique_ptr<Sink> {
      struct Forward : Sink {
        StringSink* to;
        explicit Forward(StringSink* s) : to(s) {}
        void write(const uint8_t* d, size_t n) override { to->write(d, n); }
      };
      return std::make_unique<Forward>(&make(location));
    };
    return io;
  }
};

TEST(Variants, OneReadForAllGivesEachVariantsBytesAsItsOwnRunDoes) {
  const std::string bytes = twoLayerModel();
  const std::vector<VariantFile> plan = variantPlan("m", {});
  Options base;
  base.external_data_threshold = 0;  // every weight to the data files too
  Files shared;
  std::vector<std::string> progress_variants;
  Options with_progress = base;
  with_progress.on_progress = [&](const Progress& p) {
    if (progress_variants.empty() || progress_variants.back() != p.variant)
      progress_variants.push_back(p.variant);
  };
  const std::vector<Report> reports = optimizeVariants(
      ModelInput(Buffer::copyOf(bytes.data(), bytes.size())), plan,
      [&](const VariantFile& v) -> Sink& { return shared.make(v.file); }, with_progress,
      shared.io());
  ASSERT_EQ(reports.size(), plan.size());
  std::vector<std::string> dtypes{""};
  for (const VariantFile& v : plan)
    dtypes.push_back(v.dtype);
  EXPECT_EQ(progress_variants, dtypes);  // the shared part, then each variant in turn

  size_t files = 0;
  for (size_t i = 0; i < plan.size(); ++i) {
    const VariantFile& v = plan[i];
    Options o = base;
    applyOptionsJson(v.options, o);
    Files own;
    const Report alone = optimize(ModelInput(Buffer::copyOf(bytes.data(), bytes.size())),
                                  own.make(v.file), o, own.io());
    ASSERT_FALSE(own.sinks.empty());
    for (const auto& [name, sink] : own.sinks) {
      ASSERT_TRUE(shared.sinks.count(name)) << v.dtype << ": " << name << " not written";
      EXPECT_EQ(shared.sinks.at(name)->out, sink->out) << v.dtype << ": " << name << " differs";
      ++files;
    }
    const Report& r = reports[i];
    EXPECT_EQ(r.output_bytes, alone.output_bytes) << v.dtype;
    EXPECT_EQ(r.external_files, alone.external_files) << v.dtype;
    ASSERT_EQ(r.passes.size(), alone.passes.size()) << v.dtype;
    for (size_t k = 0; k < r.passes.size(); ++k)
      EXPECT_EQ(r.passes[k].pass, alone.passes[k].pass) << v.dtype;
    EXPECT_EQ(r.after.op_histogram, alone.after.op_histogram) << v.dtype;
    EXPECT_GT(r.shared_ms, 0) << v.dtype;
    EXPECT_EQ(alone.shared_ms, 0);
  }
  EXPECT_EQ(files, shared.sinks.size()) << "optimizeVariants wrote a file no variant writes";
  // The variants differ where they should: the bias is folded and fc1 + add is a Gemm in all;
  // q4 makes fc2 MatMulNBits, fp32 keeps it MatMul.
  EXPECT_EQ(reports[0].after.op_histogram.count("Mul"), 0u);
  EXPECT_EQ(reports[0].after.op_histogram.at("Gemm"), 1u);
  EXPECT_EQ(reports[0].after.op_histogram.at("MatMul"), 1u);
  EXPECT_EQ(reports[4].after.op_histogram.at("com.microsoft::MatMulNBits"), 1u);
  EXPECT_EQ(reports[4].after.op_histogram.count("MatMul"), 0u);
}

TEST(Variants, APlanEntryThatWouldChangeTheSharedPipelineIsRefused) {
  std::vector<VariantFile> plan = variantPlan("m", {"fp32"});
  plan[0].options = R"({"float16": true, "sizeBudget": 0})";
  const std::string bytes = twoLayerModel();
  StringSink out;
  try {
    optimizeVariants(ModelInput(Buffer::copyOf(bytes.data(), bytes.size())), plan,
                     [&](const VariantFile&) -> Sink& { return out; });
    FAIL() << "a plan entry setting sizeBudget was taken";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'fp32' sets 'sizeBudget'"), std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(out.out.empty());
  for (const VariantSpec& spec : variantSpecs())  // the table's own entries all may share
    EXPECT_NO_THROW(checkSharedVariantOptions({spec.dtype, "m.onnx", spec.options}));
}

}  // namespace
}  // namespace onnxfold
