// input_file.h — the one way a module opens a file it reads (open_input): every reader of lib/
// (HDF5 files before libhdf5 sees them, safetensors, vocabulary files, JSON, corpora, result tables, task data)
// opens its inputs through it, so every input meets one rule:
//
//   - a regular file, read at the size fstat gives for the opened descriptor (never a stat of the
//     path before the open: the path may be swapped between the two);
//   - symbolic links are followed (Hugging Face caches are folders of links); a cycle of links is
//     an input error naming the path;
//   - a folder, a character or block device, a socket are refused by name;
//   - a FIFO (named pipe) is refused by name by a reader that needs the file's size or seeks in
//     it, and read once, start to end, by one that reads a stream (Fifo::read_once); a FIFO with no
//     writer is refused by name then too (after kFifoWriterWaitMs for one to come): the open never
//     blocks (O_NONBLOCK, cleared after it).
//
// Not here: "-" for stdin and the copy of a pipe a format must read twice (h5::resolve_input);
// files sinkgate writes (atomic_file, h5::Writer) and its own lock and cache.
#pragma once
#include <cstdint>
#include <istream>
#include <memory>
#include <streambuf>
#include <string>

namespace sg {

/// How long open_input(…, Fifo::read_once) waits for a FIFO's writer to open its end: a writer
/// started beside the tool may come a moment after it.
inline constexpr int kFifoWriterWaitMs = 5000;

/// What open_input does with a FIFO: refuse it (a reader that needs the size, or seeks), or read
/// it once, start to end (a reader of a stream).
enum class Fifo { refuse, read_once };

class InputHandle;

/// Opens `path` for reading under the rules above. Throws InputError naming `path` (after `what`,
/// e.g. "merges file", when given) and the reason: no such file, permission denied, a cycle of
/// symbolic links, a dangling link, a folder, a device, a socket, a FIFO (or a FIFO with no writer).
InputHandle open_input(const std::string& path, Fifo fifo = Fifo::refuse, const std::string& what = "");

/// The reason of one of open_input's messages about `path` (the text after "PATH: "), for a reader
/// that words its messages its own way.
std::string input_reason(const std::string& message, const std::string& path);

/// An opened input: its descriptor (closed with it), its size, reads.
class InputHandle {
 public:
  InputHandle(InputHandle&& other) noexcept;
  InputHandle& operator=(InputHandle&& other) noexcept;
  InputHandle(const InputHandle&) = delete;
  InputHandle& operator=(const InputHandle&) = delete;
  ~InputHandle();

  const std::string& path() const { return path_; }
  /// The size of the opened regular file (fstat of its descriptor); 0 for a FIFO.
  uint64_t size() const { return size_; }
  bool is_fifo() const { return fifo_; }
  int descriptor() const { return descriptor_; }

  /// Reads up to `n` bytes from the current position; 0 at the end. Throws InputError on a read error.
  size_t read(char* data, size_t n);
  /// Reads exactly `n` bytes at `offset` of a regular file; throws InputError naming `path` and
  /// `what` when the file ends first (it shrank since it was opened).
  void read_at(uint64_t offset, char* data, size_t n, const std::string& what) const;
  /// The whole file, when it has at most `max_bytes` (checked on the size after the open, and again
  /// while reading: a file that grows is refused too). `what` names it in the messages.
  std::string read_all(uint64_t max_bytes, const std::string& what);

 private:
  friend InputHandle open_input(const std::string&, Fifo, const std::string&);
  InputHandle(std::string path, int descriptor, uint64_t size, bool fifo, std::string pending);
  std::string path_;
  int descriptor_ = -1;
  uint64_t size_ = 0;
  bool fifo_ = false;
  std::string pending_;  // bytes of a FIFO read while checking it has a writer
};

/// An std::istream over an opened input, read from start to end.
class InputStream : public std::istream {
 public:
  explicit InputStream(InputHandle file);
  const InputHandle& file() const { return buffer_.file; }

 private:
  struct Buffer : std::streambuf {
    explicit Buffer(InputHandle f) : file(std::move(f)) {}
    int_type underflow() override;
    InputHandle file;
    char data[1 << 16];
  };
  Buffer buffer_;
};

}  // namespace sg
