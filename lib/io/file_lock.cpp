// file_lock.cpp — flock(2) on OUTPUT.lock, robust against the file being replaced meanwhile.
#include "lib/io/file_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "lib/base/error.h"

namespace sg {

FileLock::FileLock(const std::string& path) : lock_path_(path + ".lock") {
  if (path == "-") return;
  for (int attempt = 0; attempt < 100; ++attempt) {
    const int fd = ::open(lock_path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
      throw OutputError("cannot create the lock file " + lock_path_ + ": " + std::strerror(errno));
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      char buffer[32] = {};
      const auto got = ::pread(fd, buffer, sizeof buffer - 1, 0);
      ::close(fd);
      const std::string holder = got > 0 ? std::string(buffer, static_cast<size_t>(got)) : "";
      throw OutputError("another process" + (holder.empty() ? std::string() : " (pid " + holder + ")") +
                            " is writing " + path + " (it holds " + lock_path_ + ")",
                        "wait for it to finish, or write to another file");
    }
    // The holder before us may have removed the file between our open and our lock: then we hold
    // a lock on a name nobody else sees. Keep it only if the path still names our file.
    struct stat ours {}, named {};
    if (::fstat(fd, &ours) == 0 && ::stat(lock_path_.c_str(), &named) == 0 && ours.st_dev == named.st_dev &&
        ours.st_ino == named.st_ino) {
      const std::string pid = std::to_string(::getpid());
      if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
        ::close(fd);
        throw OutputError("cannot write the lock file " + lock_path_ + ": " + std::strerror(errno));
      }
      fd_ = fd;
      return;
    }
    ::close(fd);
  }
  throw OutputError("cannot lock " + path + ": the lock file " + lock_path_ + " keeps being replaced");
}

FileLock::~FileLock() {
  if (fd_ < 0) return;
  ::unlink(lock_path_.c_str());  // while still holding the lock, so no one locks the old file after us
  ::close(fd_);
}

}  // namespace sg
