// atomic_file.h — files that appear whole or not at all (STYLE.md rule 5): everything is written
// to a temporary name beside the final one and then moved into place by one rename (or link), so
// a killed writer never leaves a half-written file under the final name. Every writer of lib/
// goes through move_into_place: h5::Writer (HDF5 files), write_text (tables, figures' data) and
// the loss's measurement cache.
//
// Not here: whether an output may be written at all (h5::check_writable, called before any
// expensive work).
#pragma once
#include <string>

namespace sg {

/// The temporary name an atomic writer of `path` writes before renaming: path + ".tmp." + this
/// process's pid. Temporaries of the same path left by processes that no longer exist (killed
/// writers) are removed first.
std::string temporary_for(const std::string& path);

/// A new empty file in $TMPDIR (else /tmp) named STEM-PID-XXXXXX, for data with no final name of
/// its own (a copy of stdin, a file on its way to stdout); those of processes that are gone are
/// removed first. Throws OutputError.
std::string make_temporary(const std::string& stem);

/// Throws OutputError when `path` exists and is not a regular file or a directory (a device such
/// as /dev/null, a FIFO, a socket): an output replaces its file by a rename, which would replace
/// the device itself. A missing path, a regular file and a symbolic link (replaced, not followed)
/// pass; directories are the callers' to refuse.
void check_replaceable(const std::string& path);

/// Moves the finished file `temporary` to `path` (check_replaceable first): flushes it to the disk, then links it under the
/// final name (without `force`: a file that appeared there meanwhile is never replaced) or renames
/// it over (with `force`). Throws OutputError (an existing file without force, a failed rename);
/// the temporary file is then left for the caller to remove.
void move_into_place(const std::string& temporary, const std::string& path, bool force);

/// Writes text to `path` ("-": stdout), for a file atomically (temporary_for, move_into_place).
/// Callers check the output first (h5::check_writable). Throws OutputError (an existing file
/// without force, an unwritable folder), ReaderGone when stdout's reader has gone.
void write_text(const std::string& path, const std::string& text, bool force);

}  // namespace sg
