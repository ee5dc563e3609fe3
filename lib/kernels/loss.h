// loss.h — the language-model loss without materialising the full (N, V) logits, run as a
// LossPlan says (lib/io/loss_plan.h: the products, the row kernel, the chunk).
#pragma once
#include <torch/torch.h>

#include "lib/io/loss_plan.h"

namespace sg {

/// Mean cross-entropy (nats) of logits = hidden · weightᵀ against targets, computed in chunks
/// of rows so that at most chunk_rows × V logits exist at once. When gradients are needed the
/// forward pass also computes them chunk by chunk (the loss ends the graph), and backward only
/// scales them: the same three matrix products as the unfused loss, a fraction of the memory.
/// On the CPU it takes the fast paths of cpu_kernels.h and cpu_gemm.h where they run
/// (the products as the plan says, one kernel for max, exp and sum); the sum is kept in double.
/// hidden: (N, C); weight: (V, C); targets: (N) int64 in [0, V). chunk_rows 0: automatic (on
/// the CPU in float32 the chunk this machine runs fastest, loss_tuning.h; else about 64 MB of logits).
torch::Tensor linear_cross_entropy(const torch::Tensor& hidden, const torch::Tensor& weight,
                                   const torch::Tensor& targets, int64_t chunk_rows = 0);

/// The same with the plan given whole (plan.chunk_rows 0: automatic; plan.products where they run).
torch::Tensor linear_cross_entropy(const torch::Tensor& hidden, const torch::Tensor& weight,
                                   const torch::Tensor& targets, const LossPlan& plan);

}  // namespace sg
