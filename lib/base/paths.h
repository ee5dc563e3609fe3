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

/// `path` with `suffix` added to its last name ("run.h5" + ".lock"), within the file system's limit
/// on one name (NAME_MAX, 255 bytes): a name too long for the suffix keeps its head, cut at a
/// UTF-8 character boundary, then "~" and a hash of the whole name (8 hex digits), then the suffix,
/// so that two long names sharing a head still get two names. The same path and suffix always
/// give the same name (an output's lock file, its temporary).
std::string name_beside(const std::string& path, const std::string& suffix);

/// Whether two paths name one file: the same (device, inode) when both exist, else the same name
/// in the same folder once the folders' links are resolved (an output not yet written and another
/// spelling of it, "run.h5" and "./run.h5"). "-" names no file.
bool same_file(const std::string& a, const std::string& b);

/// Why a write to `descriptor` failed, for a message: strerror(`error`) when the failed write left
/// an errno, else what the descriptor says now (an empty write to /dev/full fails with "no space
/// left on device"; a file system with no free block says so too), else "".
std::string write_failure(int error, int descriptor);

/// "cannot write to stdout: REASON" (write_failure on standard output), or without the reason when
/// none can be found.
std::string stdout_failure_message(int error);

}  // namespace sg
