// bench_checksum.cpp — what the per-dataset CRC32C costs a reader, against HDF5's Fletcher32.
//
// Writes one float32 dataset of SIZE_MB (default 500) with lib/io/h5 (chunked, Fletcher32, CRC32C),
// makes two copies with the project's Python (h5py): one without the sg_crc32c attribute
// (Fletcher32 alone is verified) and one contiguous without any checksum; then reads each whole
// with Dataset::read_array, ROUNDS times (the files are in the page cache after the first), and
// times CRC32C alone over the same bytes (SSE4.2 and portable). Prints the median of each, the
// checksums' costs per GB and their ratio, and the CPU (lscpu). Built with the tests, never run by
// ctest (a timing is no test):
//
//   build/bin/bench_checksum [SIZE_MB] [ROUNDS] [FOLDER]
//   build/bin/bench_checksum 500 5 /tmp
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "lib/io/checksum.h"
#include "lib/io/h5.h"

namespace {

double seconds_of(const std::function<void()>& f) {
  const auto start = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::string quote(const std::string& s) { return "'" + s + "'"; }

}  // namespace

int main(int argc, char** argv) {
  const long size_mb = argc > 1 ? std::atol(argv[1]) : 500;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 5;
  const std::string folder = argc > 3 ? argv[3] : "/tmp";
  const int64_t count = size_mb * 1000 * 1000 / 4;
  std::vector<float> values(static_cast<size_t>(count));
  uint32_t state = 1;
  for (auto& v : values) {
    state = state * 1664525u + 1013904223u;
    v = static_cast<float>(state >> 8) * 1e-7f;
  }
  const std::string crc = folder + "/bench-crc.h5", fletcher = folder + "/bench-fletcher.h5",
                    plain = folder + "/bench-plain.h5";
  const int64_t rows = count / 1000;
  {
    sg::h5::Writer writer(crc, /*force=*/true);
    writer.root().write_array("w", sg::h5::Dtype::float32, {rows, 1000}, values.data());
    writer.commit();
  }
  const std::string python = SG_PYTHON;
  const std::string copy = quote(python) + " " + quote(std::string(SG_TEST_SOURCE_DIR) + "/h5_hostile.py") +
                           " no-checksum " + quote(crc) + " " + quote(fletcher) + " >/dev/null && " + quote(python) +
                           " -c \"import h5py, sys; a = h5py.File(sys.argv[1], 'r'); b = h5py.File(sys.argv[2], 'w'); "
                           "b.create_dataset('w', data=a['w'][()])\" " + quote(crc) + " " + quote(plain);
  if (python.empty() || std::system(copy.c_str()) != 0) {
    std::fprintf(stderr, "bench_checksum: making the copies with the project's Python failed\n");
    return 1;
  }
  std::vector<float> back(values.size());
  auto read = [&](const std::string& path) {
    return median([&] {
      std::vector<double> times;
      for (int r = 0; r < rounds + 1; ++r) {
        const double t = seconds_of([&] { sg::h5::File::open(path).dataset("w").read_array(sg::h5::Dtype::float32, back.data()); });
        if (r > 0) times.push_back(t);  // the first round fills the page cache
      }
      return times;
    }());
  };
  const double t_plain = read(plain), t_fletcher = read(fletcher), t_both = read(crc);
  auto time_crc = [&](uint32_t (*f)(const void*, size_t, uint32_t)) {
    std::vector<double> times;
    for (int r = 0; r < rounds; ++r)
      times.push_back(seconds_of([&] { (void)f(values.data(), values.size() * 4, 0); }));
    return median(times);
  };
  const double t_hardware = time_crc(sg::crc32c_hardware), t_portable = time_crc(sg::crc32c_portable);
  const double gb = static_cast<double>(values.size()) * 4 / 1e9;
  std::fflush(stdout);
  std::system("lscpu | grep -E 'Model name|^CPU\\(s\\)' | sed 's/  */ /g'");
  std::printf("dataset: %.3f GB float32, chunked; median of %d reads from the page cache (read_array)\n", gb, rounds);
  std::printf("  read, no checksum (contiguous):   %.3f s\n", t_plain);
  std::printf("  read, Fletcher32:                 %.3f s  (Fletcher32 %.2f s/GB)\n", t_fletcher,
              (t_fletcher - t_plain) / gb);
  std::printf("  read, Fletcher32 + CRC32C:        %.3f s  (CRC32C %.2f s/GB)\n", t_both, (t_both - t_fletcher) / gb);
  std::printf("  CRC32C alone: SSE4.2 %.3f s (%.1f GB/s%s), portable %.3f s (%.1f GB/s)\n", t_hardware,
              gb / t_hardware, sg::crc32c_has_hardware() ? "" : ", no SSE4.2: portable", t_portable, gb / t_portable);
  std::printf("  CRC32C's cost / Fletcher32's: %.2f (reading); CRC32C alone / Fletcher32: %.2f\n",
              (t_both - t_fletcher) / std::max(t_fletcher - t_plain, 1e-9),
              t_hardware / std::max(t_fletcher - t_plain, 1e-9));
  for (const auto& path : {crc, fletcher, plain}) std::remove(path.c_str());
  return 0;
}
