// loss_plan.cpp — see loss_plan.h.
#include "lib/io/loss_plan.h"

#include <iterator>
#include <stdexcept>

#include "lib/base/error.h"
#include "lib/base/text.h"

namespace sg {
namespace {

constexpr LossProductsInfo kProducts[] = {
    {LossProducts::plain, "plain", "plain products",
     "torch::mm (oneDNN or MKL), which packs the weight inside each product; under bf16 autocast, bf16 ones",
     CpuFeature::none, false, LossProducts::plain, LossProducts::plain},
    {LossProducts::packed, "packed", "packed products",
     "MKL's packed GEMM, the output weight packed once a call for every chunk", CpuFeature::mkl_packed, false,
     LossProducts::plain, LossProducts::packed},
    {LossProducts::avx512, "avx512", "AVX-512 products",
     "the loss's own AVX-512 product, for CPUs where MKL runs narrower kernels", CpuFeature::avx512f, false,
     LossProducts::plain, LossProducts::avx512},
    {LossProducts::bf16, "bf16", "bf16 products",
     "torch::mm in bf16 (oneDNN: AMX or AVX512-BF16, float32 accumulation), bf16 logits", CpuFeature::bf16_matrix,
     true, LossProducts::plain, LossProducts::plain},
    {LossProducts::avx512bf16, "avx512bf16", "AVX512-BF16 products",
     "the loss's own AVX512-BF16 product: operands rounded to bf16, float32 logits", CpuFeature::avx512_bf16, true,
     LossProducts::bf16, LossProducts::avx512},
};
static_assert(std::size(kProducts) == static_cast<size_t>(LossProducts::avx512bf16) + 1, "a row for every LossProducts");

constexpr RowKernelInfo kRowKernels[] = {
    {RowKernel::portable, "portable", "ATen's max, exp and sum, three sweeps", CpuFeature::none},
    {RowKernel::avx2, "avx2", "one AVX2 pass for max, exp and sum", CpuFeature::avx2_fma},
    {RowKernel::avx512f, "avx512f", "one AVX-512 pass for max, exp and sum", CpuFeature::avx512f},
};
static_assert(std::size(kRowKernels) == static_cast<size_t>(RowKernel::avx512f) + 1, "a row for every RowKernel");

template <typename Row>
bool rows_in_order(const Row* begin, const Row* end) {
  for (const Row* row = begin; row != end; ++row)
    if (static_cast<size_t>(row->value) != static_cast<size_t>(row - begin)) return false;
  return true;
}

const char* feature_words(CpuFeature feature) {
  switch (feature) {
    case CpuFeature::none: return "—";
    case CpuFeature::mkl_packed: return "MKL's packed GEMM in the torch library";
    case CpuFeature::avx512f: return "AVX-512F";
    case CpuFeature::avx2_fma: return "AVX2 with FMA";
    case CpuFeature::bf16_matrix: return "AVX512-BF16 or AMX-BF16";
    case CpuFeature::avx512_bf16: return "AVX-512F and AVX512-BF16";
  }
  return "—";
}

std::string or_list(const std::vector<std::string>& names) {
  if (names.size() < 2) return join(names, "");
  return join(std::vector<std::string>(names.begin(), names.end() - 1), ", ") + " or " + names.back();
}

}  // namespace

const std::vector<LossProductsInfo>& loss_products_table() {
  static const std::vector<LossProductsInfo> table = [] {
    if (!rows_in_order(std::begin(kProducts), std::end(kProducts))) throw std::logic_error("loss products out of order");
    return std::vector<LossProductsInfo>(std::begin(kProducts), std::end(kProducts));
  }();
  return table;
}

const std::vector<RowKernelInfo>& row_kernels_table() {
  static const std::vector<RowKernelInfo> table = [] {
    if (!rows_in_order(std::begin(kRowKernels), std::end(kRowKernels))) throw std::logic_error("row kernels out of order");
    return std::vector<RowKernelInfo>(std::begin(kRowKernels), std::end(kRowKernels));
  }();
  return table;
}

const LossProductsInfo& info(LossProducts products) { return loss_products_table().at(static_cast<size_t>(products)); }
const RowKernelInfo& info(RowKernel kernel) { return row_kernels_table().at(static_cast<size_t>(kernel)); }
const char* loss_products_name(LossProducts products) { return info(products).name; }
const char* row_kernel_name(RowKernel kernel) { return info(kernel).name; }

std::optional<LossProducts> loss_products_named(const std::string& name) {
  for (const auto& row : loss_products_table())
    if (name == row.name) return row.value;
  return std::nullopt;
}

std::optional<RowKernel> row_kernel_named(const std::string& name) {
  for (const auto& row : row_kernels_table())
    if (name == row.name) return row.value;
  return std::nullopt;
}

std::string loss_products_names(ProductsOf which) {
  std::vector<std::string> names;
  for (const auto& row : loss_products_table())
    if (which == ProductsOf::all || (which == ProductsOf::bf16_runs_only) == row.bf16_run_only) names.emplace_back(row.name);
  return or_list(names);
}

std::string row_kernel_names() {
  std::vector<std::string> names;  // the best first, as the messages always named them
  for (auto row = row_kernels_table().rbegin(); row != row_kernels_table().rend(); ++row) names.emplace_back(row->name);
  return or_list(names);
}

std::string loss_plan_syntax() {
  return "loss_plan is auto, or ROWS:PRODUCTS[:ROW_KERNEL] with PRODUCTS " + loss_products_names() +
         " and ROW_KERNEL " + row_kernel_names() + ", e.g. --set loss_plan=2048:avx512";
}

LossPlan parse_loss_plan(const std::string& text, const std::string& what) {
  LossPlan plan;
  if (text == "auto") return plan;
  const auto fail = [&](const std::string& why) -> LossPlan {
    throw UsageError(what + ": '" + text + "' " + why, loss_plan_syntax());
  };
  std::vector<std::string> parts;
  for (size_t begin = 0;;) {
    const size_t colon = text.find(':', begin);
    parts.push_back(text.substr(begin, colon == std::string::npos ? std::string::npos : colon - begin));
    if (colon == std::string::npos) break;
    begin = colon + 1;
  }
  if (parts.size() < 2 || parts.size() > 3) return fail("is not auto or ROWS:PRODUCTS[:ROW_KERNEL]");
  size_t used = 0;
  long long rows = 0;
  try {
    rows = std::stoll(parts[0], &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != parts[0].size() || rows <= 0) return fail("needs a positive number of rows before ':'");
  plan.chunk_rows = rows;
  const auto products = loss_products_named(parts[1]);
  if (!products) return fail("names products '" + parts[1] + "', not " + loss_products_names());
  plan.products = *products;
  if (parts.size() == 3) {
    plan.row_kernel = row_kernel_named(parts[2]);
    if (!plan.row_kernel) return fail("names the row kernel '" + parts[2] + "', not " + row_kernel_names());
  }
  return plan;
}

std::string loss_plan_text(const LossPlan& plan) {
  if (plan.automatic()) return "auto";
  return std::to_string(plan.chunk_rows) + ":" + loss_products_name(plan.products) +
         (plan.row_kernel ? std::string(":") + row_kernel_name(*plan.row_kernel) : "");
}

std::string loss_plan_words(const LossPlan& plan) {
  if (plan.automatic()) return "chosen for the machine at the start of the run";
  return "chunks of " + std::to_string(plan.chunk_rows) + " rows, " + loss_products_name(plan.products) + " products" +
         (plan.row_kernel ? std::string(", ") + row_kernel_name(*plan.row_kernel) + " softmax rows" : "");
}

std::string loss_plan_markdown() {
  std::string text = "| products | what runs them | needs | precision |\n| --- | --- | --- | --- |\n";
  for (const auto& row : loss_products_table())
    text += std::string("| `") + row.name + "` | " + row.computes + " | " + feature_words(row.needs) + " | " +
            (row.bf16_run_only ? "bf16 runs only" : "any") + " |\n";
  text += "\n| row kernel | what it computes | needs |\n| --- | --- | --- |\n";
  for (const auto& row : row_kernels_table())
    text += std::string("| `") + row.name + "` | " + row.computes + " | " + feature_words(row.needs) + " |\n";
  return text;
}

}  // namespace sg
