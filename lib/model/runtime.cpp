// runtime.cpp — device parsing, threads, the heap, autocast, the model tools' wrapper.
#include "lib/model/runtime.h"

#include <ATen/Parallel.h>
#include <ATen/autocast_mode.h>
#include <malloc.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <vector>

#include "lib/base/error.h"
#include "lib/kernels/cpu_kernels.h"

namespace sg {

int run_torch_tool(cli::Parser& parser, int argc, char** argv, const std::function<void()>& body) {
  return cli::run_tool(parser, argc, argv, [&] {
    tune_allocator();
    if (parser.common_options() && (parser.common_flags() & cli::kThreads)) set_threads(parser.common_options()->threads);
    try {
      body();
    } catch (const c10::Error& error) {
      throw Error(error.what_without_backtrace());
    }
  });
}

torch::Device parse_device(const std::string& name) {
  torch::Device device(torch::kCPU);
  try {
    device = torch::Device(name);
  } catch (const c10::Error&) {
    throw UsageError("unknown device '" + name + "'", "use cpu, cuda or cuda:N");
  }
  if (device.is_cuda()) {
    if (!torch::cuda::is_available())
      throw UsageError("device '" + name + "' asked for, but no CUDA GPU is available", "use --device cpu");
    if (device.has_index() && device.index() >= static_cast<int>(torch::cuda::device_count()))
      throw UsageError("device '" + name + "' does not exist: " + std::to_string(torch::cuda::device_count()) +
                       " CUDA device(s)");
  } else if (!device.is_cpu()) {
    throw UsageError("unsupported device '" + name + "'", "use cpu, cuda or cuda:N");
  }
  return device;
}

void tune_allocator() {
  mallopt(M_MMAP_MAX, 0);               // no mmap'd chunks: large buffers come from the heap …
  mallopt(M_TRIM_THRESHOLD, INT_MAX);   // … and the heap is never trimmed back to the OS
  mallopt(M_TOP_PAD, 64 << 20);         // grow it in large steps
}

void set_threads(int64_t threads) {
  if (threads < 0) throw UsageError("--threads must be >= 0");
  if (threads > 0) torch::set_num_threads(static_cast<int>(threads));
}

std::string arithmetic_text(const torch::Device& device) {
  if (device.is_cuda()) return device.str() + ", bf16 autocast";
  const int64_t threads = at::get_num_threads();
  return "cpu (" + cpu_model_name() + "), " + std::to_string(threads) + (threads == 1 ? " thread" : " threads");
}

int64_t parallel_for_threads() {
  const int64_t threads = at::get_num_threads();
  std::vector<std::atomic<int>> seen(static_cast<size_t>(threads));
  at::parallel_for(0, threads, /*grain_size=*/1, [&](int64_t, int64_t) {
    const int64_t id = at::get_thread_num();
    if (id >= 0 && id < threads) seen[static_cast<size_t>(id)] = 1;
  });
  int64_t distinct = 0;
  for (const auto& s : seen) distinct += s.load();
  return std::max<int64_t>(1, distinct);
}

AutocastGuard::AutocastGuard(const torch::Device& device, bool bf16) : enabled_(bf16), type_(device.type()) {
  if (!enabled_) return;
  previous_ = at::autocast::is_autocast_enabled(type_);
  previous_dtype_ = at::autocast::get_autocast_dtype(type_);
  at::autocast::set_autocast_dtype(type_, at::kBFloat16);
  at::autocast::set_autocast_enabled(type_, true);
}

AutocastGuard::~AutocastGuard() {
  if (!enabled_) return;
  at::autocast::set_autocast_enabled(type_, previous_);
  at::autocast::set_autocast_dtype(type_, previous_dtype_);
  if (!previous_) at::autocast::clear_cache();
}

}  // namespace sg
