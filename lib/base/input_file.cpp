// input_file.cpp — see input_file.h.
#include "lib/base/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "lib/base/error.h"

namespace sg {
namespace {

std::string named(const std::string& path, const std::string& what) {
  return what.empty() ? path : what + " " + path;
}

const char* kGiveAFile = "give a regular file (or a symbolic link to one)";

/// The kind of a file that is not a regular one, as a message says it.
std::string kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "is a directory, expected a file";
  if (S_ISCHR(mode)) return "a character device, not a regular file";
  if (S_ISBLK(mode)) return "a block device, not a regular file";
  if (S_ISSOCK(mode)) return "a socket, not a regular file";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe), not a regular file: this input is read at its size";
  return "not a regular file";
}

}  // namespace

InputHandle::InputHandle(std::string path, int descriptor, uint64_t size, bool fifo, std::string pending)
    : path_(std::move(path)), descriptor_(descriptor), size_(size), fifo_(fifo), pending_(std::move(pending)) {}

InputHandle::InputHandle(InputHandle&& other) noexcept
    : path_(std::move(other.path_)), descriptor_(other.descriptor_), size_(other.size_), fifo_(other.fifo_),
      pending_(std::move(other.pending_)) {
  other.descriptor_ = -1;
}

InputHandle& InputHandle::operator=(InputHandle&& other) noexcept {
  if (this == &other) return *this;
  if (descriptor_ >= 0) ::close(descriptor_);
  path_ = std::move(other.path_);
  descriptor_ = other.descriptor_;
  size_ = other.size_;
  fifo_ = other.fifo_;
  pending_ = std::move(other.pending_);
  other.descriptor_ = -1;
  return *this;
}

InputHandle::~InputHandle() {
  if (descriptor_ >= 0) ::close(descriptor_);
}

InputHandle open_input(const std::string& path, Fifo fifo, const std::string& what) {
  const std::string name = named(path, what);
  if (path.empty()) throw InputError("an empty file name" + (what.empty() ? std::string() : " for " + what));
  // O_NONBLOCK: opening a FIFO with no writer returns at once instead of waiting for one; the
  // flag is cleared below for what is read.
  const int descriptor = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (descriptor < 0) {
    const int error = errno;
    if (error == ENOENT) {
      struct stat link {};
      if (::lstat(path.c_str(), &link) == 0 && S_ISLNK(link.st_mode))
        throw InputError(name + ": a symbolic link to nothing (dangling)", kGiveAFile);
      throw InputError(name + ": no such file");
    }
    if (error == ELOOP)
      throw InputError(name + ": too many levels of symbolic links (a cycle of links?)", kGiveAFile);
    if (error == ENXIO) throw InputError(name + ": a socket or a device with nothing behind it, not a regular file", kGiveAFile);
    if (error == EACCES) throw InputError(name + ": cannot be read (permission denied)");
    throw InputError(name + ": cannot be opened: " + std::strerror(error));
  }
  struct stat info {};
  if (::fstat(descriptor, &info) != 0) {
    const int error = errno;
    ::close(descriptor);
    throw InputError(name + ": cannot be examined: " + std::strerror(error));
  }
  const bool is_fifo = S_ISFIFO(info.st_mode);
  if (!S_ISREG(info.st_mode) && !(is_fifo && fifo == Fifo::read_once)) {
    ::close(descriptor);
    throw InputError(name + ": " + kind_of(info.st_mode), kGiveAFile);
  }
  std::string pending;
  if (is_fifo) {
    // Still non-blocking: 0 bytes means no writer has the FIFO open (it would read as empty);
    // EAGAIN means a writer is there with nothing written yet. A writer started beside the tool
    // (`producer > fifo & sg-tokenize fifo`) may open its end a moment later: it is given
    // kFifoWriterWaitMs, polled, never an unbounded wait.
    char first[4096];
    ssize_t got = 0;
    for (int waited = 0;; waited += 10) {
      do got = ::read(descriptor, first, sizeof first);
      while (got < 0 && errno == EINTR);
      if (got != 0 || waited >= kFifoWriterWaitMs) break;
      ::usleep(10000);
    }
    if (got == 0) {
      ::close(descriptor);
      throw InputError(name + ": a FIFO (named pipe) with no writer (none within " +
                           std::to_string(kFifoWriterWaitMs / 1000) + " s), not a regular file",
                       "start the writer first, or give a regular file");
    }
    if (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
      const int error = errno;
      ::close(descriptor);
      throw InputError(name + ": cannot be read: " + std::strerror(error));
    }
    if (got > 0) pending.assign(first, static_cast<size_t>(got));
  }
  const int flags = ::fcntl(descriptor, F_GETFL);
  if (flags >= 0) ::fcntl(descriptor, F_SETFL, flags & ~O_NONBLOCK);
  return InputHandle(path, descriptor, is_fifo ? 0 : static_cast<uint64_t>(info.st_size), is_fifo, std::move(pending));
}

std::string input_reason(const std::string& message, const std::string& path) {
  const std::string prefix = path + ": ";
  return message.compare(0, prefix.size(), prefix) == 0 ? message.substr(prefix.size()) : message;
}

size_t InputHandle::read(char* data, size_t n) {
  if (n == 0) return 0;
  if (!pending_.empty()) {
    const size_t take = std::min(n, pending_.size());
    std::memcpy(data, pending_.data(), take);
    pending_.erase(0, take);
    return take;
  }
  for (;;) {
    const ssize_t got = ::read(descriptor_, data, n);
    if (got >= 0) return static_cast<size_t>(got);
    if (errno == EINTR) continue;
    throw InputError(path_ + ": read error: " + std::strerror(errno));
  }
}

void InputHandle::read_at(uint64_t offset, char* data, size_t n, const std::string& what) const {
  size_t done = 0;
  while (done < n) {
    const ssize_t got = ::pread(descriptor_, data + done, n - done, static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw InputError(path_ + ": cannot read " + what + ": " + std::strerror(errno));
    if (got == 0)
      throw InputError(path_ + ": ends at byte " + std::to_string(offset + done) + ", inside " + what,
                       "the file shrank while being read, or is truncated");
    done += static_cast<size_t>(got);
  }
}

std::string InputHandle::read_all(uint64_t max_bytes, const std::string& what) {
  const std::string name = named(path_, what);
  const auto too_large = [&](const std::string& size) {
    const std::string limit = max_bytes >= (uint64_t{1} << 20) && max_bytes % (uint64_t{1} << 20) == 0
                                  ? std::to_string(max_bytes >> 20) + " MiB"
                                  : std::to_string(max_bytes) + " bytes";
    return InputError(name + ": " + size + " bytes, more than the " + limit + " this input may have");
  };
  if (size_ > max_bytes) throw too_large(std::to_string(size_));
  std::string content;
  content.reserve(static_cast<size_t>(size_));
  char buffer[1 << 16];
  for (;;) {
    const size_t got = read(buffer, sizeof buffer);
    if (got == 0) break;
    content.append(buffer, got);
    if (content.size() > max_bytes) throw too_large("more than " + std::to_string(max_bytes));
  }
  return content;
}

InputStream::InputStream(InputHandle file) : std::istream(nullptr), buffer_(std::move(file)) { init(&buffer_); }

InputStream::Buffer::int_type InputStream::Buffer::underflow() {
  if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
  const size_t got = file.read(data, sizeof data);
  if (got == 0) return traits_type::eof();
  setg(data, data, data + got);
  return traits_type::to_int_type(*gptr());
}

}  // namespace sg
