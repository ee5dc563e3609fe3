// sampler.h — the paired window sampler (paper App. A): which context-length windows of a token
// file's split a run reads, and in what order.
//
// Batches are windows drawn with replacement. The window starts come from a counter-based
// generator: draw k of the stream (seed, split) is a pure function of (seed, split, k), so two
// runs with one seed see the same windows in the same order whatever their arm, micro-batch or
// accumulation, and a resumed run needs only the index of its next draw.
//
// Not here: tensors (lib/model/tensors.h turns windows into (inputs, targets) batches).
#pragma once
#include <cstdint>
#include <vector>

#include "lib/text/token_file.h"

namespace sg {

/// SplitMix64's finaliser: a bijective mix of 64 bits (the counter-based generators' hash).
uint64_t mix64(uint64_t x);

/// Draw `index` of the stream (seed, split): a uniform integer in [0, range), counter-based.
/// Throws UsageError when range is not positive.
int64_t window_start(int64_t seed, Split split, int64_t index, int64_t range);

/// `count` windows of `length` consecutive tokens each, row-major.
struct Windows {
  int64_t count = 0;
  int64_t length = 0;
  std::vector<int64_t> tokens;  // (count, length)
  const int64_t* row(int64_t r) const { return tokens.data() + r * length; }
};

/// Windows first … first + count - 1 of the stream (seed, split), each of context + 1 tokens:
/// a row's first `context` tokens are the inputs, its last `context` the next-token targets.
/// Throws InputError naming the file when the split is not longer than the context.
Windows sample_windows(const TokenFile& tokens, Split split, int64_t seed, int64_t first, int64_t count,
                       int64_t context);

}  // namespace sg
