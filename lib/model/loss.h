// loss.h — the language-model loss without materialising the full (N, V) logits.
#pragma once
#include <torch/torch.h>

namespace sg {

/// Mean cross-entropy (nats) of logits = hidden · weightᵀ against targets, computed in chunks
/// of rows so that at most chunk_rows × V logits exist at once. When gradients are needed the
/// forward pass also computes them chunk by chunk (the loss ends the graph), and backward only
/// scales them: the same three matrix products as the unfused loss, a fraction of the memory.
/// float32 on the CPU takes the fast paths of lib/cpu_kernels.h where they run (the weight
/// packed once for every chunk, one kernel for max, exp and sum); the sum is kept in double.
/// hidden: (N, C); weight: (V, C); targets: (N) int64 in [0, V). chunk_rows 0: automatic (on
/// the CPU in float32 the chunk this machine runs fastest, loss_tuning.h; else about 64 MB of logits).
torch::Tensor linear_cross_entropy(const torch::Tensor& hidden, const torch::Tensor& weight,
                                   const torch::Tensor& targets, int64_t chunk_rows = 0);

}  // namespace sg
