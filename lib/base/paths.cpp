// paths.cpp — see paths.h.
#include "lib/base/paths.h"

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

}  // namespace sg
