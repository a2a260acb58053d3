// libFuzzer target for the ONNX reader and writer.
//
// Any input is either rejected with an onnxfold::Error, or read into a model
// that verifies, writes, reads back, and writes again to the same bytes with
// the same printout. Anything else aborts (a finding).
//
//   cmake --preset fuzz && cmake --build --preset fuzz
//   build/fuzz/onnxfold_reader_fuzz -max_total_time=120 -rss_limit_mb=4096 corpus/
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "ir/error.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "onnx/reader.h"
#include "onnx/writer.h"

namespace {

[[noreturn]] void finding(const char* what, const std::string& detail) {
  std::fprintf(stderr, "reader_fuzz: %s: %s\n", what, detail.c_str());
  std::abort();
}

// The bytes in an allocation of exactly their size, so that reading past the
// end is a heap overflow AddressSanitizer reports.
onnxfold::Buffer exactCopy(const uint8_t* data, size_t size) {
  std::shared_ptr<uint8_t> owner(new uint8_t[size], std::default_delete<uint8_t[]>());
  if (size != 0) std::memcpy(owner.get(), data, size);
  return onnxfold::Buffer(owner.get(), size, owner);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace onnxfold;
  std::unique_ptr<Model> m1;
  try {
    m1 = readModel(exactCopy(data, size));
  } catch (const Error& e) {
    if (e.what()[0] == '\0') finding("rejected with an empty message", "");
    return 0;
  }
  if (VerifyResult r = verify(*m1); !r.ok) finding("read, but verify() fails", r.message);

  std::string w1, w2;
  std::unique_ptr<Model> m2;
  try {
    w1 = writeModelToString(*m1);
  } catch (const Error& e) {
    finding("read, but cannot be written", e.what());
  }
  try {
    m2 = readModel(exactCopy(reinterpret_cast<const uint8_t*>(w1.data()), w1.size()));
  } catch (const Error& e) {
    finding("the written model does not read back", e.what());
  }
  if (VerifyResult r = verify(*m2); !r.ok) finding("re-read model fails verify()", r.message);
  try {
    w2 = writeModelToString(*m2);
  } catch (const Error& e) {
    finding("the re-read model cannot be written", e.what());
  }
  if (w1 != w2)
    finding("a second write differs from the first",
            std::to_string(w1.size()) + " vs " + std::to_string(w2.size()) + " bytes");
  const std::string p1 = toString(*m1), p2 = toString(*m2);
  if (p1 != p2) finding("the printout changes in a round trip", "\n" + p1 + "\n---\n" + p2);
  return 0;
}
