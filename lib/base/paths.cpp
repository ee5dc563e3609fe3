// paths.cpp — see paths.h.
#include "lib/base/paths.h"

#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace sg {

std::string cache_folder() {
  auto env = [](const char* name) -> std::string {
    const char* value = std::getenv(name);
    return value ? value : "";
  };
  std::string cache = env("SINKGATE_CACHE");
  if (cache.empty() && !env("XDG_CACHE_HOME").empty()) cache = env("XDG_CACHE_HOME") + "/sinkgate";
  if (cache.empty()) cache = env("HOME") + "/.cache/sinkgate";
  return cache;
}

std::string directory_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string name_beside(const std::string& path, const std::string& suffix) {
  const auto slash = path.find_last_of('/');
  const std::string folder = slash == std::string::npos ? "" : path.substr(0, slash + 1);
  std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  constexpr size_t kNameMax = 255;
  if (name.size() + suffix.size() > kNameMax) {
    uint32_t hash = 2166136261u;  // FNV-1a
    for (const char c : name) hash = (hash ^ static_cast<unsigned char>(c)) * 16777619u;
    char tag[10];
    std::snprintf(tag, sizeof tag, "~%08x", hash);
    size_t keep = kNameMax - suffix.size() - 9;
    while (keep > 0 && (static_cast<unsigned char>(name[keep]) & 0xC0) == 0x80) --keep;
    name = name.substr(0, keep) + tag;
  }
  return folder + name + suffix;
}

namespace {

/// The path with its folder resolved (realpath), for a file that need not exist; "" when the
/// folder does not exist either.
std::string resolved(const std::string& path) {
  char buffer[PATH_MAX];
  if (!::realpath(directory_of(path).c_str(), buffer)) return "";
  const auto slash = path.find_last_of('/');
  return std::string(buffer) + "/" + (slash == std::string::npos ? path : path.substr(slash + 1));
}

}  // namespace

bool same_file(const std::string& a, const std::string& b) {
  if (a == "-" || b == "-" || a.empty() || b.empty()) return false;
  struct stat first {}, second {};
  const bool a_exists = ::stat(a.c_str(), &first) == 0, b_exists = ::stat(b.c_str(), &second) == 0;
  if (a_exists && b_exists) return first.st_dev == second.st_dev && first.st_ino == second.st_ino;
  if (a_exists != b_exists) return false;
  const auto left = resolved(a);
  return !left.empty() && left == resolved(b);
}

std::string write_failure(int error, int descriptor) {
  if (error == 0 && ::write(descriptor, "", 0) < 0) error = errno;
  if (error == 0) {
    struct stat info {};
    struct statvfs space {};
    if (::fstat(descriptor, &info) == 0 && S_ISREG(info.st_mode) && ::fstatvfs(descriptor, &space) == 0 &&
        space.f_bavail == 0)
      error = ENOSPC;
  }
  if (error == 0) return "";
  std::string reason = std::strerror(error);
  if (!reason.empty()) reason[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(reason[0])));
  return reason;
}

std::string stdout_failure_message(int error) {
  const std::string reason = write_failure(error, STDOUT_FILENO);
  return "cannot write to stdout" + (reason.empty() ? std::string() : ": " + reason);
}

}  // namespace sg
