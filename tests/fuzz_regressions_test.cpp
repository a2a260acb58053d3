// Inputs the pipeline fuzzer (tests/fuzz/pipeline_fuzz.cpp) found crashing, kept in
// tests/fuzz/regressions/ (minimized): each goes through every job the fuzz target runs,
// through the facade, and must either succeed or be rejected with an onnxfold::Error. A crash
// or a sanitizer report (native-asan) fails the run; any other exception fails the test.
#include <gtest/gtest.h>

#include <algorithm>
#include <exception>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <typeinfo>
#include <utility>
#include <vector>

#include "api/onnxfold.h"
#include "test_util.h"

namespace onnxfold {
namespace {

// As in the fuzz target: a memory cap and modest budgets.
constexpr uint64_t kMemoryLimit = uint64_t{256} << 20;

Options fuzzOptions() {
  Options o;
  o.memory_limit = kMemoryLimit;
  o.size_budget = 4096;
  o.constructor_budget = 256;
  o.max_iterations = 4;
  return o;
}

// The model as a file read on demand (its weights stay ranges of it).
class BufferSource : public Source {
 public:
  explicit BufferSource(Buffer b) : b_(std::move(b)) {}
  uint64_t size() const override { return b_.size(); }
  void read(uint64_t offset, size_t n, uint8_t* dst) const override { b_.copyTo(offset, n, dst); }
  std::string describe() const override { return "regression input"; }

 private:
  Buffer b_;
};

std::vector<std::string> regressionFiles() {
  namespace fs = std::filesystem;
  std::vector<std::string> files;
  const fs::path dir = fs::path(ONNXFOLD_SOURCE_DIR) / "tests" / "fuzz" / "regressions";
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return files;
  for (const fs::directory_entry& e : fs::directory_iterator(dir)) {
    if (e.is_regular_file() && e.path().extension() == ".onnx") files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// Runs `job`; an onnxfold::Error is an accepted outcome, any other exception a failure.
void expectNoCrash(const std::string& what, const std::function<void()>& job) {
  try {
    job();
  } catch (const Error&) {
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << ": threw " << typeid(e).name()
                  << " (not an onnxfold::Error): " << e.what();
  }
}

void optimizeWith(const ModelInput& in, const Options& o, std::string* out = nullptr) {
  StringSink sink;
  (void)optimize(in, sink, o);
  if (out != nullptr) *out = std::move(sink.out);
}

TEST(FuzzRegressions, EveryJobSucceedsOrThrowsError) {
  const std::vector<std::string> files = regressionFiles();
  if (files.empty()) GTEST_SKIP() << "no tests/fuzz/regressions/*.onnx";
  for (const std::string& path : files) {
    SCOPED_TRACE(path);
    const Buffer bytes = test::readFileBuffer(path);
    const ModelInput in(bytes);
    const ModelInput file(std::make_shared<BufferSource>(bytes));

    expectNoCrash("inspect", [&] {
      (void)inspect(in).toJson();
      (void)modelText(in);
      (void)moduleTreeText(in, 3);
    });
    expectNoCrash("default pipeline", [&] { optimizeWith(in, fuzzOptions()); });
    expectNoCrash("default pipeline, read as a file", [&] { optimizeWith(file, fuzzOptions()); });
    for (const char* mode : {"qoperator", "integer", "qdq-clean"}) {
      expectNoCrash(std::string("quant ") + mode, [&] {
        Options o = fuzzOptions();
        o.quant = mode;
        optimizeWith(in, o);
      });
    }
    expectNoCrash("outline-functions then inline-functions", [&] {
      Options o = fuzzOptions();
      o.passes = {"outline-functions"};
      std::string outlined;
      optimizeWith(in, o, &outlined);
      o.passes = {"inline-functions",   "freeze", "fold-constants", "freezing-patterns",
                  "eliminate-identity", "cse",    "pool-constants", "dce"};
      optimizeWith(test::bufferOf(outlined), o);
    });
    expectNoCrash("every pass", [&] {
      Options o = fuzzOptions();
      o.passes = availablePasses();
      o.fold_dequantize_weights = true;
      o.verify_each = true;
      optimizeWith(in, o);
    });
    expectNoCrash("splitConstants", [&] {
      Options o = fuzzOptions();
      o.fold_dequantize_weights = true;
      // splitConstants does not apply memory_limit itself; the fuzz target caps it this way.
      Buffer::setMemoryLimit(kMemoryLimit);
      struct Clear {
        ~Clear() { Buffer::setMemoryLimit(0); }
      } clear;
      StringSink prep, main;
      (void)splitConstants(in, prep, main, o);
    });
  }
}

}  // namespace
}  // namespace onnxfold
