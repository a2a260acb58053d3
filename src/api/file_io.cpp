#include "api/file_io.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "onnx/reader.h"

namespace onnxfold {

namespace {

std::string sysError(const std::string& what, const std::string& path) {
  return what + " '" + path + "': " + std::strerror(errno);
}

std::string dirOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string baseName(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string realPath(const std::string& path) {
  char buf[PATH_MAX];
  if (::realpath(path.c_str(), buf) == nullptr) throw Error(sysError("cannot resolve", path));
  return buf;
}

bool sameFile(const std::string& a, const std::string& b) {
  struct stat sa {
  }, sb{};
  if (::stat(a.c_str(), &sa) != 0 || ::stat(b.c_str(), &sb) != 0) return false;
  return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

// A file read with pread: weights in it are ranges, read only when a pass needs
// their values; the output copies them with copy_file_range (AtomicFile).
class FileSource : public Source {
 public:
  explicit FileSource(const std::string& path, std::string location = "")
      : path_(path), location_(std::move(location)) {
    // Non-blocking: opening a FIFO for reading would wait for a writer forever.
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd_ < 0) throw Error(sysError("cannot open", path));
    struct stat st {};
    if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd_);
      throw Error("'" + path + "' is not a regular file");
    }
    ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) & ~O_NONBLOCK);
    size_ = static_cast<uint64_t>(st.st_size);
  }
  ~FileSource() override { ::close(fd_); }
  FileSource(const FileSource&) = delete;
  FileSource& operator=(const FileSource&) = delete;

  uint64_t size() const override { return size_; }
  void read(uint64_t offset, size_t n, uint8_t* dst) const override {
    while (n > 0) {
      const ssize_t got = ::pread(fd_, dst, n, static_cast<off_t>(offset));
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) throw ResourceError(sysError("cannot read", path_) + " (did it change?)");
      dst += got;
      offset += static_cast<uint64_t>(got);
      n -= static_cast<size_t>(got);
    }
  }
  std::string describe() const override { return "'" + path_ + "'"; }
  std::string location() const override { return location_; }
  int fd() const { return fd_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::string location_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

// Opens external-data files relative to the model's folder, refusing any path
// (symlinks included) that resolves outside it; each file is opened once, as a
// source (nothing is read until a pass or the writer needs it).
ExternalDataIO fileExternalIO(const std::string& model_path, const std::string& out_path,
                              std::vector<std::unique_ptr<AtomicFile>>* created) {
  ExternalDataIO io;
  const std::string in_dir = dirOf(model_path);
  auto cache =
      std::make_shared<std::vector<std::pair<std::string, std::shared_ptr<const Source>>>>();
  io.open = [in_dir, cache](const std::string& location) {
    for (const auto& [loc, src] : *cache) {
      if (loc == location) return src;
    }
    const std::string root = realPath(in_dir);
    const std::string full = in_dir + "/" + location;
    struct stat st {};
    if (::stat(full.c_str(), &st) != 0) {
      throw Error(sysError("external data file not found:", full));
    }
    const std::string resolved = realPath(full);
    if (resolved.compare(0, root.size() + 1, root + "/") != 0) {
      throw Error("external data location '" + location + "' resolves to '" + resolved +
                  "', outside the model's folder '" + root + "'");
    }
    std::shared_ptr<const Source> source = std::make_shared<FileSource>(resolved, location);
    cache->emplace_back(location, source);
    return source;
  };
  if (created != nullptr) {
    const std::string out_dir = dirOf(out_path);
    io.create = [out_dir, created, in_dir, cache,
                 model_path](const std::string& location) -> std::unique_ptr<Sink> {
      checkExternalLocation(location, "external data output");
      const std::string target = out_dir + "/" + location;
      // Never replace a file this run reads from (the model or its data).
      if (sameFile(target, model_path)) {
        throw Error("the external-data output '" + target + "' is the input model");
      }
      for (const auto& [loc, src] : *cache) {
        if (sameFile(target, in_dir + "/" + loc)) {
          throw Error("the external-data output '" + target +
                      "' is an external-data file of the input; choose another output name");
        }
      }
      auto f = std::make_unique<AtomicFile>(target);
      AtomicFile* raw = f.get();
      created->push_back(std::move(f));
      struct Forward : Sink {
        AtomicFile* f;
        explicit Forward(AtomicFile* file) : f(file) {}
        void write(const uint8_t* d, size_t n) override { f->write(d, n); }
        void writeBuffer(const Buffer& b) override { f->writeBuffer(b); }
      };
      return std::make_unique<Forward>(raw);
    };
  }
  return io;
}

}  // namespace

Buffer readFileBuffer(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error(sysError("cannot open", path));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    throw Error(sysError("cannot stat", path));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error("'" + path + "' is not a regular file");
  }
  const auto size = static_cast<size_t>(st.st_size);
  if (size == 0) {
    ::close(fd);
    return Buffer(nullptr, 0, nullptr);
  }
#ifndef __EMSCRIPTEN__
  void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) throw Error(sysError("cannot map", path));
  std::shared_ptr<const void> owner(
      p, [size](const void* q) { ::munmap(const_cast<void*>(q), size); });
  return Buffer(static_cast<const uint8_t*>(p), size, std::move(owner));
#else
  uint8_t* data = nullptr;
  Buffer b = Buffer::allocateUninitialized(size, &data);  // read() fills it all
  size_t done = 0;
  while (done < size) {
    const ssize_t n = ::read(fd, data + done, size - done);
    if (n <= 0) {
      ::close(fd);
      throw Error(sysError("cannot read", path));
    }
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  return b;
#endif
}

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
  std::string tmpl = dirOf(path_) + "/." + baseName(path_) + ".tmp-XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  fd_ = ::mkstemp(buf.data());
  if (fd_ < 0) throw Error(sysError("cannot create a temporary file for", path_));
  temp_ = buf.data();
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!temp_.empty()) ::unlink(temp_.c_str());
}

void AtomicFile::write(const uint8_t* data, size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd_, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw Error(sysError("cannot write", path_));
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
}

void AtomicFile::writeBuffer(const Buffer& b) {
#ifdef __EMSCRIPTEN__
  Sink::writeBuffer(b);
#else
  const auto* file = dynamic_cast<const FileSource*>(b.source().get());
  if (file == nullptr || b.isResident()) {
    Sink::writeBuffer(b);
    return;
  }
  // In-kernel copy: the bytes never enter this process (and on filesystems that support it,
  // are not even copied). Falls back to reading through a chunk where the kernel refuses.
  auto from = static_cast<loff_t>(b.sourceOffset());
  size_t left = b.size();
  while (left > 0) {
    const ssize_t n = ::copy_file_range(file->fd(), &from, fd_, nullptr, left, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) throw Error("'" + file->path() + "' ended early (did it change?)");
      Sink::writeBuffer(b.slice(b.size() - left, left));
      return;
    }
    left -= static_cast<size_t>(n);
  }
#endif
}

void AtomicFile::commit() {
  // New files get the usual mode (mkstemp makes them 0600).
  const mode_t mask = ::umask(0);
  ::umask(mask);
  ::fchmod(fd_, 0666 & ~mask);
  if (::close(fd_) != 0) {
    fd_ = -1;
    throw Error(sysError("cannot write", path_));
  }
  fd_ = -1;
  if (::rename(temp_.c_str(), path_.c_str()) != 0)
    throw Error(sysError("cannot rename into", path_));
  temp_.clear();
}

Report optimizeFile(const std::string& in, const std::string& out, Options options) {
  if (sameFile(in, out)) {
    throw Error("the output '" + out + "' is the input file; onnxfold never overwrites its input");
  }
  if (options.external_data_location.empty())
    options.external_data_location = baseName(out) + ".data";
  if (options.reuse_input_data && realPath(dirOf(in)) != realPath(dirOf(out))) {
    throw Error("reuse-input-data: the output must be in the input's folder ('" + dirOf(in) +
                "'), where its data files are");
  }
  // The model file is a source too: its inline weights stay in it until needed.
  const ModelInput input(std::shared_ptr<const Source>(std::make_shared<FileSource>(in)));
  std::vector<std::unique_ptr<AtomicFile>> created;
  ExternalDataIO io = fileExternalIO(in, out, &created);
  AtomicFile model_file(out);
  Report r = optimize(input, model_file, options, io);
  for (auto& f : created)
    f->commit();  // data first, so the model never points at missing data
  model_file.commit();
  return r;
}

SplitReport splitConstantsFile(const std::string& in, const std::string& prep,
                               const std::string& main, const Options& options) {
  for (const std::string* out : {&prep, &main}) {
    if (sameFile(in, *out)) {
      throw Error("the output '" + *out +
                  "' is the input file; onnxfold never overwrites its input");
    }
  }
  if (prep == main || sameFile(prep, main)) {
    throw Error("--prep and --main name the same file '" + prep + "'");
  }
  const ModelInput input(std::shared_ptr<const Source>(std::make_shared<FileSource>(in)));
  AtomicFile prep_file(prep), main_file(main);
  SplitReport r =
      splitConstants(input, prep_file, main_file, options, fileExternalIO(in, in, nullptr));
  prep_file.commit();
  main_file.commit();
  return r;
}

ModelSummary inspectFile(const std::string& path) {
  return inspect(ModelInput(std::make_shared<FileSource>(path)),
                 fileExternalIO(path, path, nullptr));
}

void validateFile(const std::string& path) {
  validate(ModelInput(std::make_shared<FileSource>(path)), fileExternalIO(path, path, nullptr));
}

std::string modelTextFile(const std::string& path) {
  return modelText(readFileBuffer(path), fileExternalIO(path, path, nullptr));
}

}  // namespace onnxfold
