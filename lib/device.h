// device.h — device selection, thread count and bf16 autocast on CUDA.
#pragma once
#include <torch/torch.h>

#include <string>

namespace sg {

/// "cpu", "cuda" or "cuda:N"; throws UsageError when CUDA is asked for but not available.
torch::Device parse_device(const std::string& name);

/// Keeps freed memory in the process instead of returning large buffers to the OS and faulting
/// them back in on every training step (glibc's default behaviour, which made PyTorch eager
/// several times slower on these machines). Called by every tool before it starts.
void tune_allocator();

/// Sets LibTorch's intra-op threads (0: keep LibTorch's default, all cores).
void set_threads(int64_t threads);

/// While alive, matrix multiplications on CUDA run under bf16 autocast (App. A); the gate
/// maths are written to stay in float32 regardless. A no-op on the CPU.
class AutocastGuard {
 public:
  explicit AutocastGuard(const torch::Device& device);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  bool enabled_ = false;
  bool previous_ = false;
};

}  // namespace sg
