// loss_tuning.h — the chunk size of the CPU float32 loss (loss.h), chosen from the machine.
//
// The loss multiplies chunks of rows by the output weight: short chunks keep the (rows, V) logits
// small but make MKL's packing and short-M kernels a larger share of the work, and where the
// balance lies depends on the CPU (cache sizes, how AVX-512 executes, which sgemm path MKL takes).
// So for a large enough problem (rows × width × vocab ≥ 2^32 multiply-adds), the first loss of a
// shape times the whole loss, on random rows of that shape, in chunks of each candidate size — the
// old fixed rule max(64, 2^24 / V) and the powers of two from 256 up to all the rows, no chunk's
// logits above 512 MB; two interleaved rounds after a warm-up — and takes another size than the
// old rule's only when its slower time beats the old rule's faster one by 10 % (a shared 2-core
// machine's speed drifts by ±15 % between runs; within that, the old behaviour stays). The choice is cached in the process and in cache_folder()/loss-chunks.tsv,
// keyed by the CPU model, the thread count and the shape, so that a machine measures once
// (about 6 s at tier cpu: eleven passes of the loss). SG_LOSS_CHUNK_ROWS=N forces N (on a GPU too,
// to measure there); SG_LOSS_TUNING=0 keeps the old rule.
// Every candidate computes the same loss and gradients (tests/model/test_loss.cpp).
//
// Not here: the loss itself (loss.h), its kernels (cpu_kernels.h).
#pragma once
#include <cstdint>
#include <vector>

namespace sg {

/// The candidates for a loss of `rows` rows and `vocab` classes, in increasing order.
std::vector<int64_t> loss_chunk_candidates(int64_t rows, int64_t vocab);

/// The chunk of rows for the CPU float32 loss of this shape (see the file comment).
int64_t loss_chunk_rows(int64_t rows, int64_t width, int64_t vocab);

/// SG_LOSS_CHUNK_ROWS as a positive number of rows, or 0 when it is unset (or not one: warned once).
/// It sets the chunk on every device; on a GPU, where nothing is measured, the fixed rule otherwise.
int64_t forced_loss_chunk_rows();

/// The old fixed rule: about 64 MB of float logits, at least 64 rows.
int64_t default_loss_chunk_rows(int64_t vocab);

}  // namespace sg
