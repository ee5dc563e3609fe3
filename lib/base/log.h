// log.h — progress and diagnostics on stderr, filtered by --log-level.
#pragma once
#include <iostream>
#include <string>

namespace sg::log {

enum class Level { quiet = 0, info = 1, debug = 2 };

inline Level& level() {
  static Level current = Level::info;
  return current;
}

/// Sets the level from its name (quiet, info, debug); unknown names leave it unchanged.
inline void set_level(const std::string& name) {
  if (name == "quiet") level() = Level::quiet;
  if (name == "info") level() = Level::info;
  if (name == "debug") level() = Level::debug;
}

inline void info(const std::string& message) {
  if (level() >= Level::info) std::cerr << message << "\n";
}

inline void debug(const std::string& message) {
  if (level() >= Level::debug) std::cerr << message << "\n";
}

}  // namespace sg::log
