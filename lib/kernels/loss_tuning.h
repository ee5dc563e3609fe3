// loss_tuning.h — how the CPU float32 loss runs (loss.h's LossPlan), chosen from the machine.
//
// The loss multiplies chunks of rows by the output weight. Short chunks keep the (rows, V) logits
// small but make packing and short-M kernels a larger share of the work; MKL's packed GEMM packs
// the weight once a call where torch::mm packs it inside every product. Where the balance lies
// depends on the CPU (cache sizes, how AVX-512 executes, which sgemm path MKL takes on it), so for
// a large enough problem (rows × width × vocab ≥ 2^32 multiply-adds) the first loss of a shape
// times the whole loss, on random rows of that shape, under each candidate plan:
//   - packed, in chunks of the old fixed rule max(64, 2^24 / V) (the reference) and of the powers
//     of two from 256 up to all the rows, no chunk's logits above 512 MB;
//   - plain torch::mm, in the chunks of 512 rows and more (and all the rows);
//   - the loss's own AVX-512 products (cpu_gemm.h), in the same long chunks, where the CPU has
//     AVX-512F: on CPUs where MKL runs 256-bit kernels (AMD's) they are up to twice as fast;
// (only plain ones where neither the packed GEMM nor AVX-512 is present). A warm-up, then three rounds: the first
// times every candidate, the next two the reference and the three fastest of the first. Each time
// is divided by the reference's in the same round, so that the drift of a shared machine's speed
// (±15 % between runs here) cancels, and a candidate replaces the reference only when it was
// faster in every round and by at least 3 % in the median of its three. The choice is cached in
// the process and in cache_folder()/loss-chunks.tsv, keyed by the CPU model, the thread count,
// the shape and which CPU fast paths run (cpu_kernels.h), so that a machine measures once (about 12 s at
// tier cpu on two threads).
// SINKGATE_LOSS_CHUNK_ROWS=N forces the chunk (on a GPU too, to measure there) and
// SINKGATE_LOSS_PRODUCTS=plain|packed|avx512|bf16|avx512bf16 the products (SINKGATE_LOSS_PACKED=0|1: plain or
// packed, where SINKGATE_LOSS_PRODUCTS is unset); either one skips the measurement (the other keeps
// the reference's value). SINKGATE_LOSS_TUNING=0 keeps the reference. (The old names SG_LOSS_* still
// work, with a warning.)
// A training run fixes its plan once, at its start (fixed_loss_plan), records it in the run file
// (the field loss_plan, lib/SCHEMA.md) and keeps it on --resume: the environment and the cache
// only choose the plan of a run that does not have one yet.
// Every candidate computes the same loss and gradients (tests/kernels/test_loss.cpp).
//
// Not here: the loss itself (loss.h), its kernels (cpu_kernels.h).
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "lib/kernels/loss.h"

namespace sg {

/// The chunk sizes for a loss of `rows` rows and `vocab` classes, in increasing order.
std::vector<int64_t> loss_chunk_candidates(int64_t rows, int64_t vocab);

/// The reference plan: the old fixed rule's chunk (at most `rows`), packed where MKL's packed
/// GEMM is present. What runs where nothing is measured.
LossPlan reference_plan(int64_t rows, int64_t vocab);

/// The plans measured for a loss of this shape: the reference first (see the file comment); with
/// `bf16`, those a CPU bf16 run measures under autocast (loss_plan's).
std::vector<LossPlan> loss_plan_candidates(int64_t rows, int64_t vocab, bool bf16 = false);

/// The plan for the CPU float32 loss of this shape (see the file comment); with `bf16`, for the
/// CPU loss under bf16 autocast (a bf16 run): bf16 products in the fixed rule's chunk (the
/// reference) against bf16 products in the other chunks, the float32 AVX-512 products and the
/// loss's own AVX512-BF16 products, measured the same way and cached under their own key.
LossPlan loss_plan(int64_t rows, int64_t width, int64_t vocab, bool bf16 = false);

/// SINKGATE_LOSS_CHUNK_ROWS as a positive number of rows, or 0 when it is unset (or not one: warned once).
/// It sets the chunk on every device; on a GPU, where nothing is measured, the fixed rule otherwise.
int64_t forced_loss_chunk_rows();

/// The old fixed rule: about 64 MB of float logits, at least 64 rows.
int64_t default_loss_chunk_rows(int64_t vocab);

/// The products named "plain", "packed", "avx512" or "bf16" (loss_products_name's names), or none.
std::optional<LossProducts> loss_products_named(const std::string& name);

/// The plan a training run fixes for its loss of rows × width × vocab, with every path named
/// (loss.h: a fixed plan runs the same arithmetic wherever it runs): for the CPU float32 loss
/// (`cpu_float32`) loss_plan()'s choice (forced by the environment, cached, or measured), with
/// the products and row kernel that the switches (SINKGATE_CPU_KERNELS) let run; elsewhere (a GPU,
/// autocast) SINKGATE_LOSS_CHUNK_ROWS or the fixed rule's chunk, plain products and portable rows
/// (cuBLAS and ATen: there the chunk is the plan's only choice). With `cpu_bf16` (a CPU run in
/// bf16): loss_plan(…, bf16)'s choice, bf16 products or the float32 AVX-512 ones, and the best row
/// kernel the switches let run.
LossPlan fixed_loss_plan(bool cpu_float32, int64_t rows, int64_t width, int64_t vocab, bool cpu_bf16 = false);

/// The row kernel the switches (SINKGATE_CPU_KERNELS) let run here: exp_shifted_rows_isa(), or
/// "portable" where none does.
std::string switches_row_kernel();

/// The fixed plan a loss_plan field spells (ROWS:PRODUCTS[:ROW_KERNEL], not auto), its left-out
/// row kernel the switches' (switches_row_kernel). Throws std::invalid_argument for unknown products.
LossPlan spelled_loss_plan(int64_t chunk_rows, const std::string& products, const std::string& row_kernel);

/// A fixed plan as text, "ROWS:PRODUCTS:ROW_KERNEL", e.g. "4096:packed:avx512f" (lib/SCHEMA.md).
std::string loss_plan_text(const LossPlan& plan);

/// What of a fixed plan this CPU cannot run, in words ("AVX-512 products (the CPU has no AVX-512F)"),
/// or "" when it runs all of it.
std::string loss_plan_missing(const LossPlan& plan);

/// A fixed plan with what this CPU cannot run replaced by what it runs instead: plain products,
/// the best row kernel it has.
LossPlan runnable_loss_plan(const LossPlan& plan);

/// What a training run asks of its loss plan (lib/SCHEMA.md "loss_plan"), as plain values: the
/// plan its configuration names (run/config.h's LossPlanSpec: chunk_rows 0 for auto), where and at
/// what size the loss runs, and on a resume the plan the run file records.
struct LossPlanRequest {
  std::string text;        // the configuration's loss_plan, as written (messages)
  int64_t chunk_rows = 0;  // 0: auto
  std::string products;    // "" for auto
  std::string row_kernel;  // "" for auto, or when not given
  bool cpu_float32 = true; // the CPU float32 loss (false: a GPU, where autocast may run, or a CPU bf16 run)
  bool cpu_bf16 = false;   // the CPU loss under bf16 autocast (a bf16 run on a CPU)
  std::string device;      // its name (messages)
  int64_t rows = 0, width = 0, vocab = 0;
  bool resume = false;     // a resumed run...
  bool replaced = false;   // ... whose plan --set loss_plan replaces
  std::string recorded;    // on a resume, the run file's plan ("auto" in files of older versions)
};

/// The loss plan a training run trains with: auto through fixed_loss_plan (the environment, the
/// machine's cache, a measurement), or the plan it names (a row kernel left out: the one the CPU
/// kernel switches give; on a GPU only the chunk applies, said in a line). A resume keeps its
/// recorded plan unless replaced; where this CPU cannot run the recorded plan it runs
/// runnable_loss_plan's with a warning (the resume will not be bitwise identical), where it cannot
/// run a named one it throws UsageError. `agree` (may be empty) makes every rank take one plan
/// (rank 0's). Says what it chose on the log, each line led by `prefix`.
LossPlan resolve_run_loss_plan(const LossPlanRequest& request, const std::string& prefix,
                               const std::function<LossPlan(const LossPlan&)>& agree);

}  // namespace sg
