// Files for the native CLI, tests and benchmarks: memory-mapped input (so
// weights are never copied), atomic output (temp file + rename, or nothing),
// and external-data files resolved next to the model.
#pragma once

#include <memory>
#include <string>

#include "api/onnxfold.h"

namespace onnxfold {

// The file's bytes: memory-mapped read-only natively, read into memory in wasm.
Buffer readFileBuffer(const std::string& path);

// A file written atomically: bytes go to a temporary file beside `path`, and
// commit() renames it into place. Destroyed without commit(), it leaves nothing.
class AtomicFile : public Sink {
 public:
  explicit AtomicFile(std::string path);
  ~AtomicFile() override;
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(const uint8_t* data, size_t size) override;
  // A range of a file source is copied file to file (copy_file_range).
  void writeBuffer(const Buffer& b) override;
  void commit();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::string temp_;
  int fd_ = -1;
};

// Reads `in`, optimizes, writes `out` atomically (with its external-data file
// when there is one). Refuses to overwrite the input. `options` may name the
// external-data file; by default it is "<out file name>.data".
Report optimizeFile(const std::string& in, const std::string& out, Options options);

ModelSummary inspectFile(const std::string& path);
// validate() on a file (its external data read from its folder, range by range).
void validateFile(const std::string& path);

// split-constants on files: prep and main are each written atomically (main after
// prep, so a failed run leaves at most prep).
// Refuses to overwrite the input or to write both models to one file.
SplitReport splitConstantsFile(const std::string& in, const std::string& prep,
                               const std::string& main, const Options& options = {});
std::string modelTextFile(const std::string& path);

}  // namespace onnxfold
