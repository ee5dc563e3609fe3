// file_lock.h — an exclusive lock on an output for a writer's lifetime, so that two processes
// never write one file (two sg-train runs started on the same -o).
//
// The lock is flock(2) on OUTPUT.lock beside the output, holding the owner's pid (for the
// message the second writer gets). The kernel drops it when the process dies, however it dies;
// the lock file is removed on release, and a stale one left by a killed process is simply taken
// over. Not for NFS without lock support (flock is then local to each machine).
#pragma once
#include <string>

namespace sg {

class FileLock {
 public:
  /// Locks `path` (the output; the lock file is path + ".lock", for a name too long for that within
  /// 255 bytes its head and a hash of it + ".lock": name_beside). Throws OutputError naming the
  /// holder's pid when another process holds it, or when the lock file cannot be created.
  explicit FileLock(const std::string& path);
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

  const std::string& lock_path() const { return lock_path_; }

 private:
  std::string lock_path_;
  int fd_ = -1;
};

}  // namespace sg
