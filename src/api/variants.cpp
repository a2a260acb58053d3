// The model variants transformers.js loads, defined once: each dtype's file name and the
// options that make it. The CLI's `variants`, the npm package's variants() and the page all
// make them with optimizeVariants (api/optimize.cpp): one read and pipeline, a copy per entry
// of variantPlan for its stages and write.
#include <nlohmann/json.hpp>

#include "api/onnxfold.h"
#include "ir/error.h"

namespace onnxfold {

namespace {

using Json = nlohmann::json;

// transformers.js picks `onnx/<name><suffix>.onnx` by dtype, and reads external data as
// `<file>_data`, `<file>_data_1`, ... (each file under 2 GB, what ORT-web can take).
constexpr uint64_t kVariantDataFileLimit = 2'000'000'000;

// What a variant may set: the stages after the pipeline and the write. Anything else would
// change the shared read or pipeline.
constexpr const char* kPerVariantOptions[] = {"float16",
                                              "quantize",
                                              "quantFormat",
                                              "quantBlockSize",
                                              "quantSymmetric",
                                              "quantOps",
                                              "quantExclude",
                                              "quantAccuracyLevel",
                                              "externalDataThreshold",
                                              "externalDataLocation",
                                              "externalDataFileLimit",
                                              "externalDataChunkSeparator"};

}  // namespace

const std::vector<VariantSpec>& variantSpecs() {
  // Each entry says every option a variant depends on, so the caller's own choices of
  // float16 or quantization cannot leak into another variant. Quantization options the entry
  // does not set (block size, symmetric, ops, excludes) are the caller's.
  static const std::vector<VariantSpec> table = {
      {"fp32", "", R"({"float16": false, "quantize": ""})", "float32, optimized"},
      {"fp16", "_fp16", R"({"float16": true, "quantize": ""})",
       "float16 weights and computation (inputs and outputs stay float32)"},
      {"int8", "_int8", R"({"float16": false, "quantize": "int8", "quantFormat": "qdq"})",
       "int8 weights per channel (MatMul, Gemm, Conv) as DequantizeLinear"},
      {"q8", "_quantized", R"({"float16": false, "quantize": "q8", "quantFormat": "qdq"})",
       "DynamicQuantizeLinear + MatMulInteger, uint8 MatMul weights (Conv stays float)"},
      {"q4", "_q4", R"({"float16": false, "quantize": "int4", "quantFormat": "ort"})",
       "int4 MatMul weights in blocks (com.microsoft MatMulNBits)"},
      {"q4f16", "_q4f16", R"({"float16": true, "quantize": "int4", "quantFormat": "ort"})",
       "q4 with float16 activations and scales"},
  };
  return table;
}

std::vector<VariantFile> variantPlan(const std::string& name,
                                     const std::vector<std::string>& dtypes) {
  if (name.empty() || name == "." || name == ".." ||
      name.find_first_of("/\\") != std::string::npos) {
    throw Error("variants: the model name '" + name +
                "' must be a file name without a folder (e.g. 'model')");
  }
  std::vector<std::string> wanted = dtypes;
  if (wanted.empty()) {
    for (const VariantSpec& v : variantSpecs())
      wanted.push_back(v.dtype);
  }
  std::vector<VariantFile> plan;
  for (const std::string& dtype : wanted) {
    const VariantSpec* spec = nullptr;
    for (const VariantSpec& v : variantSpecs())
      spec = v.dtype == dtype ? &v : spec;
    if (spec == nullptr) {
      std::string known;
      for (const VariantSpec& v : variantSpecs())
        known += (known.empty() ? "" : ", ") + v.dtype;
      throw Error("variants: unknown dtype '" + dtype + "' (known: " + known + ")");
    }
    for (const VariantFile& f : plan) {
      if (f.dtype == dtype) throw Error("variants: dtype '" + dtype + "' given twice");
    }
    VariantFile f;
    f.dtype = dtype;
    f.file = name + spec->suffix + ".onnx";
    Json o = Json::parse(spec->options);
    o["externalDataLocation"] = f.file + "_data";
    o["externalDataFileLimit"] = kVariantDataFileLimit;
    o["externalDataChunkSeparator"] = "_";
    f.options = o.dump();
    plan.push_back(std::move(f));
  }
  return plan;
}

void checkSharedVariantOptions(const VariantFile& v) {
  const Json options = Json::parse(v.options);
  for (const auto& [key, value] : options.items()) {
    bool ok = false;
    for (const char* name : kPerVariantOptions)
      ok = ok || key == name;
    if (!ok) {
      throw Error("variants: the variant '" + v.dtype + "' sets '" + key +
                  "', which would change the read or pipeline all variants share");
    }
  }
}

std::string variantPlanJson(const std::string& name, const std::vector<std::string>& dtypes) {
  Json a = Json::array();
  for (const VariantFile& f : variantPlan(name, dtypes)) {
    std::string help;
    for (const VariantSpec& v : variantSpecs())
      help = v.dtype == f.dtype ? v.help : help;
    a.push_back({{"dtype", f.dtype},
                 {"file", f.file},
                 {"options", Json::parse(f.options)},
                 {"help", help}});
  }
  return a.dump();
}

}  // namespace onnxfold
