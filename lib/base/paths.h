// paths.h — where sinkgate keeps files of its own (the per-user cache folder) and the path
// arithmetic the file writers share. POSIX strings, not std::filesystem (lib/io/h5.cpp says why).
#pragma once
#include <string>

namespace sg {

/// The per-user cache folder: $SINKGATE_CACHE, else $XDG_CACHE_HOME/sinkgate, else
/// ~/.cache/sinkgate (the virtual environment, the GPT-2 vocabulary, machine measurements).
std::string cache_folder();

/// The folder part of a path: "." for a bare name, "/" for a name in the root.
std::string directory_of(const std::string& path);

/// Whether two paths name one file: the same (device, inode) when both exist, else the same name
/// in the same folder once the folders' links are resolved (an output not yet written and another
/// spelling of it, "run.h5" and "./run.h5"). "-" names no file.
bool same_file(const std::string& a, const std::string& b);

}  // namespace sg
