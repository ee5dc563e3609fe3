// file_lock.cpp — flock(2) on OUTPUT.lock (name_beside: within 255 bytes), robust against the file being replaced meanwhile.
#include "lib/io/file_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "lib/base/error.h"
#include "lib/base/paths.h"

namespace sg {

FileLock::FileLock(const std::string& path) : lock_path_(name_beside(path, ".lock")) {
  if (path == "-") return;
  for (int attempt = 0; attempt < 100; ++attempt) {
    // Never through a link: in a shared folder anyone can plant OUTPUT.lock as a symbolic link (or
    // a hard link) to a file of ours, which truncating and writing our pid would destroy.
    const int fd = ::open(lock_path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);  // opens: its lock
    if (fd < 0 && errno == ELOOP)
      throw OutputError("the lock file " + lock_path_ + " is a symbolic link; sinkgate does not write through one",
                        "remove it if you made it (someone else may have planted it to have a file overwritten)");
    if (fd < 0)
      throw OutputError("cannot create the lock file " + lock_path_ + ": " + std::strerror(errno));
    struct stat opened {};
    if (::fstat(fd, &opened) != 0 || !S_ISREG(opened.st_mode) || opened.st_nlink != 1 ||
        opened.st_uid != ::geteuid()) {
      const bool regular = S_ISREG(opened.st_mode);
      ::close(fd);
      throw OutputError("the lock file " + lock_path_ + " is " +
                            (!regular                   ? std::string("not a regular file")
                             : opened.st_nlink != 1    ? std::string("a hard link to another file")
                                                       : std::string("owned by another user")) +
                            "; sinkgate writes its pid only into a lock file of its own",
                        "remove it if it is stale and yours to remove, or write to another file");
    }
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
    if (::fstat(fd, &ours) == 0 && ::lstat(lock_path_.c_str(), &named) == 0 && ours.st_dev == named.st_dev &&
        ours.st_ino == named.st_ino) {
      const std::string pid = std::to_string(::getpid());
      if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
        const int error = errno;
        ::unlink(lock_path_.c_str());  // ours (checked above), and held: a full disk leaves no lock file behind
        ::close(fd);
        throw OutputError("cannot write the lock file " + lock_path_ + ": " + std::strerror(error));
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
