// loss_tuning.h — how the CPU loss runs (a LossPlan, lib/io/loss_plan.h), chosen from the machine:
// measured once per shape and cached, forced by the environment, or fixed by a run and checked
// against this CPU. How and what it measures: docs/loss-plan.md.
//
// Not here: the plan's vocabulary and spelling (io/loss_plan.h), the loss itself (loss.h), its
// kernels (cpu_kernels.h, cpu_gemm.h).
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

/// The plan a training run fixes for its loss of rows × width × vocab, with every path named
/// (loss.h: a fixed plan runs the same arithmetic wherever it runs): for the CPU float32 loss
/// (`cpu_float32`) loss_plan()'s choice (forced by the environment, cached, or measured), with
/// the products and row kernel that the switches (SINKGATE_CPU_KERNELS) let run; elsewhere (a GPU,
/// autocast) SINKGATE_LOSS_CHUNK_ROWS or the fixed rule's chunk, plain products and portable rows
/// (cuBLAS and ATen: there the chunk is the plan's only choice). With `cpu_bf16` (a CPU run in
/// bf16): loss_plan(…, bf16)'s choice, bf16 products or the float32 AVX-512 ones, and the best row
/// kernel the switches let run.
LossPlan fixed_loss_plan(bool cpu_float32, int64_t rows, int64_t width, int64_t vocab, bool cpu_bf16 = false);

/// The fixed plan a named plan (not auto) runs: its left-out row kernel the switches'
/// (cpu_kernels.h's switched_row_kernel).
LossPlan spelled_loss_plan(const LossPlan& named);

/// "" where this CPU (and torch) has the feature, whatever the switches; else why not, in words
/// ("the CPU has no AVX-512F").
std::string cpu_feature_missing(CpuFeature feature);

/// What of a fixed plan this CPU cannot run, in words ("AVX-512 products (the CPU has no AVX-512F)"),
/// or "" when it runs all of it.
std::string loss_plan_missing(const LossPlan& plan);

/// A fixed plan with what this CPU cannot run replaced by what it runs instead: plain products,
/// the best row kernel it has.
LossPlan runnable_loss_plan(const LossPlan& plan);

/// What a training run asks of its loss plan (lib/SCHEMA.md "loss_plan"): the plan its
/// configuration names (auto, or a named one), where and at what size the loss runs, and on a
/// resume the plan the run file records.
struct LossPlanRequest {
  LossPlan asked;          // the configuration's loss_plan
  bool cpu_float32 = true; // the CPU float32 loss (false: a GPU, where autocast may run, or a CPU bf16 run)
  bool cpu_bf16 = false;   // the CPU loss under bf16 autocast (a bf16 run on a CPU)
  std::string device;      // its name (messages)
  int64_t rows = 0, width = 0, vocab = 0;
  bool resume = false;     // a resumed run...
  bool replaced = false;   // ... whose plan --set loss_plan replaces
  LossPlan recorded;       // on a resume, the run file's plan (auto in files of older versions)
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
