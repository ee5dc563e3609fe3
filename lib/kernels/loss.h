// loss.h — the language-model loss without materialising the full (N, V) logits.
#pragma once
#include <torch/torch.h>

#include <string>

namespace sg {

/// What runs the CPU float32 loss's three matrix products (each computes the same loss and
/// gradients; which is fastest depends on the machine, loss_tuning.h).
enum class LossProducts {
  plain,   // torch::mm, which packs the weight inside each product
  packed,  // MKL's packed GEMM (cpu_kernels.h), the weight packed once a call for every chunk
  avx512,  // the loss's own AVX-512 product (cpu_gemm.h): for CPUs where MKL runs narrower kernels
  bf16,    // under CPU bf16 autocast: torch::mm in bf16 (oneDNN: AMX or AVX512-BF16, float32 accumulation)
  avx512bf16,  // under CPU bf16 autocast: the loss's own AVX512-BF16 product (cpu_gemm.h), float32 logits
};

/// "plain", "packed", "avx512", "bf16" or "avx512bf16".
const char* loss_products_name(LossProducts products);

/// Whether the products are a bf16 run's (bf16, avx512bf16): bf16 under autocast only.
inline bool bf16_products(LossProducts products) {
  return products == LossProducts::bf16 || products == LossProducts::avx512bf16;
}

/// How the loss runs: rows of logits a chunk (0: automatic, as below) and, for CPU float32, what
/// runs the products and the softmax rows. A plan with an empty row_kernel follows the switches
/// of cpu_kernels.h (SINKGATE_CPU_KERNELS): its products and rows take the fast paths where they
/// are on. A plan that names its row kernel is *fixed*: the products and the rows it names run
/// wherever the CPU has them, whatever the switches, so that the same plan gives the same
/// arithmetic in every process (a run records its plan, loss_tuning.h's fixed_loss_plan). Either
/// way, a path the CPU lacks (no MKL, no AVX-512F, no AVX2) runs as plain products or portable rows.
/// Under bf16 autocast the products run in bf16 (as cuBLAS or oneDNN run them, bf16 logits), unless
/// a fixed plan names float32 products of the CPU (packed, avx512); avx512bf16 products round the
/// operands to bf16 but keep the logits float32. Outside autocast (a bf16 run's float32 validation)
/// bf16 products run as plain float32 ones, avx512bf16 ones as avx512 ones. On the CPU the softmax rows are
/// float32 either way, and take the row kernel the plan or the switches give.
struct LossPlan {
  int64_t chunk_rows = 0;
  LossProducts products = LossProducts::packed;
  std::string row_kernel;  // "avx512f", "avx2", "portable" (ATen's max, exp, sum), or "" (the switches')
};

/// Mean cross-entropy (nats) of logits = hidden · weightᵀ against targets, computed in chunks
/// of rows so that at most chunk_rows × V logits exist at once. When gradients are needed the
/// forward pass also computes them chunk by chunk (the loss ends the graph), and backward only
/// scales them: the same three matrix products as the unfused loss, a fraction of the memory.
/// float32 on the CPU takes the fast paths of lib/cpu_kernels.h and lib/cpu_gemm.h where they run
/// (the products as the plan says, one kernel for max, exp and sum); the sum is kept in double.
/// hidden: (N, C); weight: (V, C); targets: (N) int64 in [0, V). chunk_rows 0: automatic (on
/// the CPU in float32 the chunk this machine runs fastest, loss_tuning.h; else about 64 MB of logits).
torch::Tensor linear_cross_entropy(const torch::Tensor& hidden, const torch::Tensor& weight,
                                   const torch::Tensor& targets, int64_t chunk_rows = 0);

/// The same with the plan given whole (plan.chunk_rows 0: automatic; plan.products where they run).
torch::Tensor linear_cross_entropy(const torch::Tensor& hidden, const torch::Tensor& weight,
                                   const torch::Tensor& targets, const LossPlan& plan);

}  // namespace sg
