// The variant plan (api/variants.cpp): transformers.js's file names, the options each variant
// depends on, and refusals that name what is wrong.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "api/onnxfold.h"

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

}  // namespace
}  // namespace onnxfold
