// log.h — progress and diagnostics on stderr, filtered by --log-level.
//
// Levels, from the least said to the most: error (errors only: the tool wrapper prints those),
// quiet (warnings too), info (progress too; the default), debug. A warning is something the user
// must see even in a quiet script: an unfinished run measured, an option spelled the old way, a
// setting that makes a result differ from what was asked.
#pragma once
#include <iostream>
#include <string>
#include <vector>

namespace sg::log {

enum class Level { error = 0, quiet = 1, info = 2, debug = 3 };

inline Level& level() {
  static Level current = Level::info;
  return current;
}

/// The name warnings are prefixed with ("sg-train: warning: …"); the tool wrapper sets it.
inline std::string& tool() {
  static std::string current = "sinkgate";
  return current;
}

/// The levels' names, in the order of Level: every --log-level list is this one.
inline const std::vector<std::string>& level_names() {
  static const std::vector<std::string> names = {"error", "quiet", "info", "debug"};
  return names;
}

/// Sets the level from its name (level_names()); unknown names leave it unchanged.
inline void set_level(const std::string& name) {
  for (size_t i = 0; i < level_names().size(); ++i)
    if (name == level_names()[i]) level() = static_cast<Level>(i);
}

/// "TOOL: warning: MESSAGE", shown at every level but error.
inline void warn(const std::string& message) {
  if (level() >= Level::quiet) std::cerr << tool() << ": warning: " << message << "\n";
}

inline void info(const std::string& message) {
  if (level() >= Level::info) std::cerr << message << "\n";
}

inline void debug(const std::string& message) {
  if (level() >= Level::debug) std::cerr << message << "\n";
}

}  // namespace sg::log
