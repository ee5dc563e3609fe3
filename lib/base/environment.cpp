// environment.cpp — see environment.h.
#include "lib/base/environment.h"

#include <cstdlib>
#include <mutex>
#include <set>

#include "lib/base/log.h"

namespace sg {

const char* sinkgate_env(const std::string& suffix) {
  if (const char* value = std::getenv(("SINKGATE_" + suffix).c_str())) return value;
  const std::string old = "SG_" + suffix;
  const char* value = std::getenv(old.c_str());
  if (!value) return nullptr;
  static std::mutex mutex;
  static std::set<std::string> warned;
  std::lock_guard<std::mutex> lock(mutex);
  if (warned.insert(old).second)
    log::warn(old + " is an old name; use SINKGATE_" + suffix + " (" + old + " still works)");
  return value;
}

std::string sinkgate_env_name(const std::string& suffix) {
  const std::string name = "SINKGATE_" + suffix;
  if (std::getenv(name.c_str()) || !std::getenv(("SG_" + suffix).c_str())) return name;
  return "SG_" + suffix;
}

}  // namespace sg
