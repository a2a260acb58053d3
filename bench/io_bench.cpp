// Read and write throughput of the ONNX reader/writer on the largest shared
// model, next to a plain memcpy of the same bytes in the same run.
//
//   build/native/onnxfold_bench --benchmark_filter=Io
//
// Reported as bytes/s (GB/s) over the model's size. The model is read from a
// memory buffer (not the disk), so this measures parsing and encoding only.
#include <benchmark/benchmark.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "api/file_io.h"
#include "ir/sink.h"
#include "onnx/reader.h"
#include "onnx/writer.h"

namespace onnxfold {
namespace {

namespace fs = std::filesystem;

// The largest .onnx in shared/models (ONNXFOLD_SHARED overrides the configured folder).
const Buffer& largestModel(std::string* name) {
  static std::string path;
  static Buffer bytes;
  if (path.empty()) {
    const char* env = std::getenv("ONNXFOLD_SHARED");
    const fs::path dir = fs::path(env ? env : ONNXFOLD_SHARED_DIR) / "models";
    uintmax_t best = 0;
    if (fs::is_directory(dir)) {
      for (const auto& e : fs::directory_iterator(dir)) {
        if (e.path().extension() == ".onnx" && e.file_size() > best) {
          best = e.file_size();
          path = e.path().string();
        }
      }
    }
    if (!path.empty()) {
      // An owned copy, so the first benchmark does not pay the page faults of the mapping.
      Buffer mapped = readFileBuffer(path);
      bytes = Buffer::copyOf(mapped.data(), mapped.size());
    }
  }
  if (name != nullptr) *name = fs::path(path).filename().string();
  return bytes;
}

// Discards bytes after touching them, as a file write would.
class NullSink : public Sink {
 public:
  void write(const uint8_t* data, size_t size) override {
    checksum_ += size ? data[0] + data[size - 1] : 0;
    benchmark::DoNotOptimize(checksum_);
  }

 private:
  uint64_t checksum_ = 0;
};

bool haveModel(benchmark::State& state) {
  std::string name;
  if (largestModel(&name).empty()) {
    state.SkipWithError("no shared/models found (set ONNXFOLD_SHARED)");
    return false;
  }
  state.SetLabel(name);
  return true;
}

void BM_IoMemcpy(benchmark::State& state) {
  if (!haveModel(state)) return;
  const Buffer& in = largestModel(nullptr);
  std::vector<uint8_t> out(in.size());
  for (auto _ : state) {
    std::memcpy(out.data(), in.data(), in.size());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * in.size()));
}
BENCHMARK(BM_IoMemcpy)->Unit(benchmark::kMillisecond);

void BM_IoRead(benchmark::State& state) {
  if (!haveModel(state)) return;
  const Buffer& in = largestModel(nullptr);
  for (auto _ : state) {
    std::unique_ptr<Model> m = readModel(in);
    benchmark::DoNotOptimize(m.get());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * in.size()));
}
BENCHMARK(BM_IoRead)->Unit(benchmark::kMillisecond);

void BM_IoWrite(benchmark::State& state) {
  if (!haveModel(state)) return;
  const Buffer& in = largestModel(nullptr);
  std::unique_ptr<Model> m = readModel(in);
  for (auto _ : state) {
    NullSink sink;
    writeModel(*m, sink);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * in.size()));
}
BENCHMARK(BM_IoWrite)->Unit(benchmark::kMillisecond);

// Writing into memory, as the wasm build does: the bytes are really copied once.
void BM_IoWriteToString(benchmark::State& state) {
  if (!haveModel(state)) return;
  const Buffer& in = largestModel(nullptr);
  std::unique_ptr<Model> m = readModel(in);
  for (auto _ : state) {
    StringSink sink;
    sink.out.reserve(in.size());
    writeModel(*m, sink);
    benchmark::DoNotOptimize(sink.out.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * in.size()));
}
BENCHMARK(BM_IoWriteToString)->Unit(benchmark::kMillisecond);

void BM_IoRoundTrip(benchmark::State& state) {
  if (!haveModel(state)) return;
  const Buffer& in = largestModel(nullptr);
  for (auto _ : state) {
    std::unique_ptr<Model> m = readModel(in);
    NullSink sink;
    writeModel(*m, sink);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * in.size()));
}
BENCHMARK(BM_IoRoundTrip)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace onnxfold
