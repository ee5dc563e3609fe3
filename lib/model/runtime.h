// runtime.h — the LibTorch side of a tool's process: device selection, thread count, the heap,
// bf16 autocast, and the wrapper that runs a model tool.
//
// Not here: the command-line vocabulary itself (lib/base/cli.h, which needs no LibTorch).
#pragma once
#include <torch/torch.h>

#include <functional>
#include <string>

#include "lib/base/cli.h"

namespace sg {

/// cli::run_tool for the tools that run a model: tunes the heap (tune_allocator) and sets the
/// threads from --threads (where the tool has it) before body, and reports LibTorch's errors as "TOOL: error: MESSAGE" without their C++ backtrace (exit 1).
int run_torch_tool(cli::Parser& parser, int argc, char** argv, const std::function<void()>& body);

/// "cpu", "cuda" or "cuda:N"; throws UsageError when CUDA is asked for but not available.
torch::Device parse_device(const std::string& name);

/// Keeps freed memory in the process instead of returning large buffers to the OS and faulting
/// them back in on every training step (glibc's default behaviour, which made PyTorch eager
/// several times slower on these machines). run_torch_tool calls it before the tool starts.
void tune_allocator();

/// Sets LibTorch's intra-op threads (0: keep LibTorch's default, all cores).
void set_threads(int64_t threads);

/// What decides the last bits of a model's numbers on `device` besides the model and its inputs,
/// in words for a result's provenance (Provenance::arithmetic): "cpu (AMD EPYC 9B45), 2 threads"
/// or "cuda:0, bf16 autocast". The thread count changes how LibTorch splits its sums.
std::string arithmetic_text(const torch::Device& device);

/// How many distinct threads an at::parallel_for compiled into lib/ runs its parts on (at most
/// torch::get_num_threads()). 1 where lib/ was compiled without OpenMP: at::parallel_for is a
/// header template that runs serially then, whatever the thread count.
int64_t parallel_for_threads();

/// While alive, matrix multiplications run under bf16 autocast (App. A): on CUDA by default, on
/// the device given when `bf16` says so (a CPU too: sg-train --precision bf16); the gate maths are
/// written to stay in float32 regardless, and LayerNorm sees the float32 residual stream. A no-op
/// where bf16 is false.
class AutocastGuard {
 public:
  explicit AutocastGuard(const torch::Device& device) : AutocastGuard(device, device.is_cuda()) {}
  AutocastGuard(const torch::Device& device, bool bf16);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  bool enabled_ = false;
  bool previous_ = false;
  at::ScalarType previous_dtype_ = at::kBFloat16;
  c10::DeviceType type_ = c10::DeviceType::CPU;
};

}  // namespace sg
