// h5_api.cpp — see h5_api.h.
#include "lib/io/h5_api.h"

#include <cctype>
#include <vector>

#include "lib/base/error.h"

namespace sg::h5 {

/// Silences HDF5's automatic error printing (per thread: the library is built thread-safe), and
/// keeps HDF5 from closing, at exit, files that our own code did not close: a Writer abandoned on
/// an error (a full disk) holds a file whose flush can only fail, and the library's exit-time
/// close of it crashed the process (SIGSEGV in H5F__close_cb) after the error was reported.
/// Every file that must reach the disk is closed explicitly (Writer::commit), so nothing is lost.
void init() {
  thread_local bool done = false;
  if (done) return;
  static const bool no_atexit = [] { return H5dont_atexit() >= 0; }();  // before the library starts
  (void)no_atexit;
  H5open();
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  done = true;
}

namespace {

herr_t collect_error(unsigned, const H5E_error2_t* error, void* data) {
  auto* messages = static_cast<std::vector<std::string>*>(data);
  if (error->desc && *error->desc) messages->push_back(error->desc);
  return 0;
}

}  // namespace

std::string hdf5_message() {
  std::vector<std::string> messages;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, collect_error, &messages);
  H5Eclear2(H5E_DEFAULT);
  if (messages.empty()) return "HDF5 error";
  // A failed system call: HDF5's long description ("file write failed: time = …, errno = 28,
  // error message = 'No space left on device', …") said as the system's message alone.
  for (const auto& message : messages) {
    const auto at = message.find("error message = '");
    if (at == std::string::npos) continue;
    const auto begin = at + 17, end = message.find('\'', begin);
    if (end != std::string::npos) {
      std::string reason = message.substr(begin, end - begin);
      if (!reason.empty()) reason[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(reason[0])));
      return reason;
    }
  }
  if (messages.size() == 1 || messages.front() == messages.back()) return messages.front();
  return messages.front() + ": " + messages.back();
}

[[noreturn]] void fail_input(const std::string& file, const std::string& what) {
  throw InputError(file + ": " + what + " (" + hdf5_message() + ")");
}
[[noreturn]] void fail_output(const std::string& file, const std::string& what) {
  throw OutputError(file + ": " + what + " (" + hdf5_message() + ")");
}

}  // namespace sg::h5
