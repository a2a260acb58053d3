// Embind surface of the wasm module: a flat, pointers-and-strings boundary over
// api/onnxfold.h, used by the hand-written JS layer in js/ (which turns
// options into JSON, the report back into objects and copies bytes in and out),
// so no Embind type leaks to users.
//
// Every export takes the model's size and the `host` object described in host.h:
// the model is host source 0, read range by range like external data (a skeleton
// read keeps large raw_data in the file); the output plan, progress and cancel go
// through it too, the same for every export. Nothing is zero-filled that is about to be
// overwritten (on the machines we run on, first-touched memory costs ~3 ms/MB).
//
// Every export catches C++ exceptions and throws a JS Error with the message
// (Emscripten 3.1.6 would otherwise surface an opaque WebAssembly.Exception);
// the module stays usable after a failed call.
#include <emscripten/bind.h>
#include <emscripten/val.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <new>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "api/onnxfold.h"
#include "host.h"
#include "interop.h"

using emscripten::val;
using namespace onnxfold_wasm;

namespace {

// The run's options from JSON, with the host's progress (stage, pass, fraction, variant) and
// cancel when it has them.
onnxfold::Options hostOptions(const std::string& options_json, const val& host,
                              bool& was_cancelled) {
  onnxfold::Options options;
  onnxfold::applyOptionsJson(options_json, options);
  if (host["progress"].typeOf().as<std::string>() == "function") {
    options.on_progress = [host](const onnxfold::Progress& p) {
      host.call<void>("progress", p.stage, p.pass, p.fraction, p.variant);
    };
  }
  if (host["cancelled"].typeOf().as<std::string>() == "function") {
    options.cancelled = [host, &was_cancelled]() {
      was_cancelled = was_cancelled || host.call<bool>("cancelled");
      return was_cancelled;
    };
  }
  return options;
}

// optimize(modelSize, optionsJson, host) -> report JSON string; the model (location "") and
// its external-data files go out through host.output.
std::string optimize(double model_size, std::string options_json, val host) {
  bool was_cancelled = false;
  return guarded(
      [&] {
        const onnxfold::ModelInput in = hostModel(host, model_size);
        const onnxfold::Options options = hostOptions(options_json, host, was_cancelled);
        HostSink out(host, "");
        const onnxfold::Report report = onnxfold::optimize(in, out, options, hostIO(host));
        out.flush();
        return report.toJson(-1);
      },
      [&was_cancelled] { return was_cancelled; });
}

// variants(modelSize, planJson, optionsJson, host) -> JSON [report, ...] in plan order: every
// variant of planJson ([{dtype, file, options}], variantPlan's) from one read
// (optimizeVariants); each model goes out through host.output under its file name, its
// external-data files under theirs.
std::string variants(double model_size, std::string plan_json, std::string options_json, val host) {
  bool was_cancelled = false;
  return guarded(
      [&] {
        std::vector<onnxfold::VariantFile> plan;
        for (const nlohmann::json& v : nlohmann::json::parse(plan_json)) {
          plan.push_back({v.at("dtype").get<std::string>(), v.at("file").get<std::string>(),
                          v.at("options").dump()});
        }
        const onnxfold::Options options = hostOptions(options_json, host, was_cancelled);
        // One model file at a time: the one before is finished when the next begins.
        std::unique_ptr<HostSink> model;
        const std::vector<onnxfold::Report> reports = onnxfold::optimizeVariants(
            hostModel(host, model_size), plan,
            [&](const onnxfold::VariantFile& v) -> onnxfold::Sink& {
              if (model) model->flush();
              model = std::make_unique<HostSink>(host, v.file);
              return *model;
            },
            options, hostIO(host));
        if (model) model->flush();
        nlohmann::json out = nlohmann::json::array();
        for (const onnxfold::Report& r : reports)
          out.push_back(nlohmann::json::parse(r.toJson(-1)));
        return out.dump();
      },
      [&was_cancelled] { return was_cancelled; });
}

// inspect(modelSize, host) -> summary JSON string.
std::string inspect(double model_size, val host) {
  return guarded(
      [&] { return onnxfold::inspect(hostModel(host, model_size), hostIO(host)).toJson(-1); });
}

// inspectText(modelSize, host) -> the CLI's `info` text of the same summary.
std::string inspectText(double model_size, val host) {
  return guarded(
      [&] { return onnxfold::inspect(hostModel(host, model_size), hostIO(host)).toText(); });
}

// validate(modelSize, host) -> JSON {"valid": bool, "error": string}: an invalid model is an
// answer, not a failure (other errors, e.g. a file that cannot be read, still throw).
std::string validate(double model_size, val host) {
  return guarded([&] {
    nlohmann::json j;
    try {
      onnxfold::validate(hostModel(host, model_size), hostIO(host));
      j["valid"] = true;
    } catch (const onnxfold::ValidationError& e) {
      j = {{"valid", false}, {"error", e.what()}};
    } catch (const onnxfold::ParseError& e) {
      j = {{"valid", false}, {"error", e.what()}};
    }
    return j.dump();
  });
}

// optionSchema() -> JSON [{name, flag, type, help}]: the options optimize takes (api/options.cpp).
std::string optionSchema() {
  return onnxfold::optionSpecsJson();
}

// variantPlan(name, dtypesJson) -> JSON [{dtype, file, options, help}] (api/variants.cpp);
// dtypes [] means all.
std::string variantPlan(std::string name, std::string dtypes_json) {
  return guarded([&] {
    std::vector<std::string> dtypes;
    try {
      dtypes = nlohmann::json::parse(dtypes_json).get<std::vector<std::string>>();
    } catch (const nlohmann::json::exception&) {
      throw onnxfold::Error("variants: dtypes must be an array of strings");
    }
    return onnxfold::variantPlanJson(name, dtypes);
  });
}

std::string version() {
  return onnxfold::version();
}

// passes() -> JSON {"available": [...], "default": [...]}
std::string passes() {
  nlohmann::json j;
  j["available"] = onnxfold::availablePasses();
  j["default"] = onnxfold::defaultPasses();
  return j.dump();
}

}  // namespace

EMSCRIPTEN_BINDINGS(onnxfold) {
  emscripten::function("optimize", &optimize);
  emscripten::function("variants", &variants);
  emscripten::function("inspect", &inspect);
  emscripten::function("inspectText", &inspectText);
  emscripten::function("validate", &validate);
  emscripten::function("version", &version);
  emscripten::function("passes", &passes);
  emscripten::function("optionSchema", &optionSchema);
  emscripten::function("variantPlan", &variantPlan);
}
