// loss_plan.h — the loss plan as a value: its vocabulary (one table of the products and one of the
// row kernels: name, what each computes, what the CPU and the run's precision must have), its
// spelling ("auto" or ROWS:PRODUCTS[:ROW_KERNEL]: the run file's field loss_plan, --set
// loss_plan=, the machine's cache), parsed here once and printed by one function.
//
// It sits in io/, below both of its readers, which are peers that do not include each other:
// run/ (the configuration field, sg-info; no LibTorch) and kernels/ (the loss that runs the plan,
// and loss_tuning, which chooses and checks it on this CPU). No LibTorch here.
//
// Not here: what the CPU has (kernels/cpu_kernels.h), choosing a plan (kernels/loss_tuning.h).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace sg {

/// What runs the CPU loss's three matrix products (each computes the same loss and gradients;
/// which is fastest depends on the machine). A row per enumerator in loss_products_table().
enum class LossProducts { plain, packed, avx512, bf16, avx512bf16 };  // avx512bf16 last: the table's static_assert

/// The kernel of the softmax rows (max, exp, sum). A row per enumerator in row_kernels_table().
enum class RowKernel { portable, avx2, avx512f };  // ascending: the last one a CPU has is its best; avx512f last

/// What a product or row kernel needs of the machine (kernels/cpu_kernels.h's cpu_feature_missing).
enum class CpuFeature { none, mkl_packed, avx512f, avx2_fma, bf16_matrix, avx512_bf16 };

/// One kind of products: its name in a plan, what it computes, what it needs, and what a machine
/// without that runs instead.
struct LossProductsInfo {
  LossProducts value;
  const char* name;
  const char* title;    // in messages: "AVX-512 products"
  const char* computes;
  CpuFeature needs;
  bool bf16_run_only;   // bf16 under bf16 autocast: a bf16 run's (precision bf16)
  LossProducts instead; // what runs where the CPU lacks `needs` (plain needs nothing)
  LossProducts in_float32;  // what they run as outside autocast (a bf16 run's float32 validation)
};
const std::vector<LossProductsInfo>& loss_products_table();
const LossProductsInfo& info(LossProducts products);

/// One row kernel: its name in a plan, what it computes and what it needs.
struct RowKernelInfo {
  RowKernel value;
  const char* name;
  const char* computes;
  CpuFeature needs;
};
const std::vector<RowKernelInfo>& row_kernels_table();
const RowKernelInfo& info(RowKernel kernel);

const char* loss_products_name(LossProducts products);
const char* row_kernel_name(RowKernel kernel);
/// The products / row kernel of that name, or none.
std::optional<LossProducts> loss_products_named(const std::string& name);
std::optional<RowKernel> row_kernel_named(const std::string& name);
/// Which products a list names: all, those of any run, those of bf16 runs only.
enum class ProductsOf { all, float32_runs, bf16_runs_only };
/// The names joined for a message: "plain, packed, avx512, bf16 or avx512bf16".
std::string loss_products_names(ProductsOf which = ProductsOf::all);
std::string row_kernel_names();

/// How the loss runs: rows of logits a chunk (0: automatic, chosen per shape: loss_tuning.h) and,
/// on the CPU, what runs the products and the softmax rows. A plan without a row kernel follows
/// the switches of cpu_kernels.h (SINKGATE_CPU_KERNELS): its products and rows take the fast
/// paths where they are on. A plan that names its row kernel is *fixed*: the products and the
/// rows it names run wherever the CPU has them, whatever the switches, so that the same plan gives
/// the same arithmetic in every process (a run records its plan). Either way, a path the CPU lacks
/// runs as plain products or portable rows. Under bf16 autocast the products run in bf16 (as
/// cuBLAS or oneDNN run them, bf16 logits), unless a fixed plan names float32 products of the CPU
/// (packed, avx512); avx512bf16 products round the operands to bf16 but keep the logits float32.
/// Outside autocast (a bf16 run's float32 validation) bf16 products run as plain float32 ones,
/// avx512bf16 ones as avx512 ones. On the CPU the softmax rows are float32 either way.
struct LossPlan {
  int64_t chunk_rows = 0;  // 0: automatic ("auto" as a run's field)
  LossProducts products = LossProducts::packed;
  std::optional<RowKernel> row_kernel;  // none: the switches'
  bool automatic() const { return chunk_rows == 0; }
  bool fixed() const { return row_kernel.has_value(); }
  bool operator==(const LossPlan& other) const {
    return automatic() ? other.automatic()
                       : chunk_rows == other.chunk_rows && products == other.products && row_kernel == other.row_kernel;
  }
  bool operator!=(const LossPlan& other) const { return !(*this == other); }
};

/// Parses "auto" or ROWS:PRODUCTS[:ROW_KERNEL] (ROWS > 0, the names of the tables); throws
/// UsageError naming `what` (e.g. "field 'loss_plan'") and the syntax.
LossPlan parse_loss_plan(const std::string& text, const std::string& what = "field 'loss_plan'");

/// A plan as text, as parse_loss_plan reads it: "auto", "2048:avx512", "4096:packed:avx512f".
std::string loss_plan_text(const LossPlan& plan);

/// A fixed plan in words, for sg-info: "chunks of 4096 rows, packed products, avx512f softmax rows".
std::string loss_plan_words(const LossPlan& plan);

/// The syntax and the names, for a hint and --help: "auto, or ROWS:PRODUCTS[:ROW_KERNEL] with …".
std::string loss_plan_syntax();

/// The two tables as Markdown (docs/loss-plan.md holds them verbatim).
std::string loss_plan_markdown();

}  // namespace sg
