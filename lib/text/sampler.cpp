// sampler.cpp — counter-based window starts and the windows they select.
#include "lib/text/sampler.h"

#include "lib/base/error.h"

namespace sg {

uint64_t mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

int64_t window_start(int64_t seed, Split split, int64_t index, int64_t range) {
  if (range <= 0) throw UsageError("window range must be positive");
  const uint64_t key = mix64(static_cast<uint64_t>(seed) ^ mix64(split == Split::val ? 0x5641ull : 0x5452ull));
  const uint64_t bound = static_cast<uint64_t>(range);
  const uint64_t limit = -bound % bound;  // 2^64 mod range: reject below it for exact uniformity
  for (uint64_t attempt = 0;; ++attempt) {
    const uint64_t draw = mix64(key ^ mix64(static_cast<uint64_t>(index) * 0x100000001B3ull + attempt));
    const unsigned __int128 product = static_cast<unsigned __int128>(draw) * bound;
    if (static_cast<uint64_t>(product) >= limit) return static_cast<int64_t>(product >> 64);
  }
}

Windows sample_windows(const TokenFile& tokens, Split split, int64_t seed, int64_t first, int64_t count,
                       int64_t context) {
  const int64_t available = tokens.size(split);
  if (available <= context)
    throw InputError(tokens.path() + ": the " + to_string(split) + " split has " + std::to_string(available) +
                         " tokens, not more than the context length " + std::to_string(context),
                     "use a larger corpus, a smaller validation split (sg-tokenize --val-tokens) or a shorter context");
  Windows windows;
  windows.count = count;
  windows.length = context + 1;
  windows.tokens.resize(static_cast<size_t>(count * windows.length));
  for (int64_t row = 0; row < count; ++row) {
    const int64_t start = window_start(seed, split, first + row, available - context);
    tokens.read(split, start, windows.length, windows.tokens.data() + row * windows.length);
  }
  return windows;
}

}  // namespace sg
