// atomic_file.cpp — see atomic_file.h. POSIX calls, not std::filesystem (lib/io/h5.cpp says why).
#include "lib/io/atomic_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <vector>

#include "lib/base/error.h"
#include "lib/base/log.h"
#include "lib/base/paths.h"

namespace sg {
namespace {

std::string temporary_directory() {
  const char* tmp = std::getenv("TMPDIR");
  return tmp && *tmp ? tmp : "/tmp";
}

/// Whether no process has this pid (a signal 0 finds none).
bool process_gone(const std::string& digits) {
  if (digits.empty() || digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos) return false;
  const auto pid = static_cast<pid_t>(std::stol(digits));
  return pid > 0 && pid != getpid() && kill(pid, 0) != 0 && errno == ESRCH;
}

/// Removes the files of `directory` named PREFIX + PID + rest whose PID is a process that is gone;
/// `rest` is empty, or starts with '-' (make_temporary's random suffix).
void remove_stale(const std::string& directory, const std::string& prefix) {
  DIR* dir = opendir(directory.c_str());
  if (!dir) return;
  while (const dirent* entry = readdir(dir)) {
    const std::string name = entry->d_name;
    if (name.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string tail = name.substr(prefix.size());
    const std::string pid = tail.substr(0, tail.find('-'));
    if (process_gone(pid) && std::remove((directory + "/" + name).c_str()) == 0)
      log::debug("removed " + directory + "/" + name + ", left by a process that is gone");
  }
  closedir(dir);
}

}  // namespace

std::string temporary_for(const std::string& path) {
  // NAME + ".tmp." + PID beside the output, shortened to fit the file system (name_beside).
  const std::string suffix = ".tmp." + std::to_string(getpid());
  const std::string temporary = name_beside(path, suffix);
  const auto slash = temporary.find_last_of('/');
  const std::string name = temporary.substr(slash == std::string::npos ? 0 : slash + 1);
  remove_stale(directory_of(path), name.substr(0, name.size() - suffix.size()) + ".tmp.");
  return temporary;
}

std::string make_temporary(const std::string& stem) {
  remove_stale(temporary_directory(), stem + "-");
  std::string pattern = temporary_directory() + "/" + stem + "-" + std::to_string(getpid()) + "-XXXXXX";
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  const int fd = mkstemp(buffer.data());
  if (fd < 0)
    throw OutputError("cannot create a temporary file in " + temporary_directory() + ": " + std::strerror(errno),
                      "free space there, or point TMPDIR to another folder");
  close(fd);
  return std::string(buffer.data());
}

void check_replaceable(const std::string& path) {
  struct stat info {};
  if (lstat(path.c_str(), &info) != 0 || S_ISREG(info.st_mode) || S_ISLNK(info.st_mode) || S_ISDIR(info.st_mode))
    return;
  throw OutputError(path + " is not a regular file (a device, FIFO or socket): an output replaces its file by a "
                    "rename, which would replace " + path + " itself",
                    "name a file; to discard an output, write it to stdout (-o -) and redirect that");
}

void move_into_place(const std::string& temporary, const std::string& path, bool force) {
  check_replaceable(path);
  const int fd = ::open(temporary.c_str(), O_RDONLY);  // opens: its own temporary, to sync it
  if (fd >= 0) {
    fsync(fd);
    ::close(fd);
  }
  if (!force) {
    // link() refuses an existing name, so a file that appeared meanwhile is never clobbered.
    if (link(temporary.c_str(), path.c_str()) == 0) {
      std::remove(temporary.c_str());
      return;
    }
    if (errno == EEXIST) throw OutputError(path + " exists", "use --force to overwrite it");
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0)
    throw OutputError("cannot rename " + temporary + " to " + path + ": " + std::strerror(errno));
}

void write_text(const std::string& path, const std::string& text, bool force) {
  if (path == "-") {
    errno = 0;
    std::cout << text << std::flush;
    if (!std::cout && errno == EPIPE) throw ReaderGone();
    if (!std::cout)
      throw OutputError(stdout_failure_message(errno));
    return;
  }
  const std::string temporary = temporary_for(path);
  {
    errno = 0;
    std::ofstream out(temporary, std::ios::binary);
    out << text;
    out.close();
    if (!out) {
      const int error = errno;
      std::remove(temporary.c_str());
      throw OutputError("cannot write " + path + " (through " + temporary + ")" +
                        (error != 0 ? ": " + std::string(std::strerror(error)) : ""));
    }
  }
  try {
    move_into_place(temporary, path, force);
  } catch (const OutputError&) {
    std::remove(temporary.c_str());
    throw;
  }
}

}  // namespace sg
