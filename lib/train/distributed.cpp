// distributed.cpp — see distributed.h.
#include "lib/train/distributed.h"

#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#ifdef SG_WITH_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <thread>

#include "lib/base/error.h"
#include "lib/base/log.h"

namespace sg {
namespace {

int64_t parse_count(const char* name, const char* text) {
  try {
    size_t used = 0;
    const long long value = std::stoll(text, &used);
    if (used != std::string(text).size() || value < 0) throw std::invalid_argument(text);
    return value;
  } catch (const std::exception&) {
    throw UsageError(std::string(name) + "='" + text + "' is not a non-negative integer",
                     "the launcher (torchrun, srun) sets it; unset it to train in one process");
  }
}

}  // namespace

std::string DistributedEnv::describe() const {
  return "rank " + std::to_string(rank) + " of " + std::to_string(world_size) + " (" + launcher + ", MASTER_ADDR " +
         master_addr + ", MASTER_PORT " + std::to_string(master_port) + ")";
}

std::string first_slurm_host(const std::string& nodelist) {
  // "a[01-03,7],b" → "a01": the text before the first comma outside brackets, with its first
  // bracket element expanded to its first value.
  std::string first;
  int depth = 0;
  for (const char c : nodelist) {
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (c == ',' && depth == 0) break;
    first += c;
  }
  const auto open = first.find('[');
  if (open == std::string::npos) return first;
  const auto close = first.find(']', open);
  std::string inside = first.substr(open + 1, (close == std::string::npos ? first.size() : close) - open - 1);
  inside = inside.substr(0, inside.find(','));
  inside = inside.substr(0, inside.find('-'));
  return first.substr(0, open) + inside + (close == std::string::npos ? "" : first.substr(close + 1));
}

DistributedEnv distributed_env(const std::function<const char*(const char*)>& lookup_in) {
  const auto lookup = lookup_in ? lookup_in : [](const char* name) -> const char* { return std::getenv(name); };
  const auto set = [&](const char* name) {
    const char* value = lookup(name);
    return value != nullptr && *value != '\0';
  };
  DistributedEnv env;
  if (set("WORLD_SIZE") || set("RANK")) {
    if (!set("WORLD_SIZE") || !set("RANK"))
      throw UsageError(std::string("RANK and WORLD_SIZE go together; only ") + (set("RANK") ? "RANK" : "WORLD_SIZE") +
                           " is set",
                       "launch with torchrun --no-python --nproc-per-node N build/bin/sg-train …, or unset it");
    env.launcher = "torchrun";
    env.rank = parse_count("RANK", lookup("RANK"));
    env.world_size = parse_count("WORLD_SIZE", lookup("WORLD_SIZE"));
    env.local_rank = set("LOCAL_RANK") ? parse_count("LOCAL_RANK", lookup("LOCAL_RANK")) : env.rank;
  } else if (set("SLURM_NTASKS") && set("SLURM_PROCID") && parse_count("SLURM_NTASKS", lookup("SLURM_NTASKS")) > 1) {
    env.launcher = "slurm";
    env.rank = parse_count("SLURM_PROCID", lookup("SLURM_PROCID"));
    env.world_size = parse_count("SLURM_NTASKS", lookup("SLURM_NTASKS"));
    env.local_rank = set("SLURM_LOCALID") ? parse_count("SLURM_LOCALID", lookup("SLURM_LOCALID")) : 0;
  } else {
    return env;  // one process
  }
  if (env.world_size < 1) throw UsageError("WORLD_SIZE must be at least 1");
  if (env.rank >= env.world_size)
    throw UsageError("rank " + std::to_string(env.rank) + " is outside a world of " + std::to_string(env.world_size));
  if (set("MASTER_ADDR")) env.master_addr = lookup("MASTER_ADDR");
  else if (env.launcher == "slurm" && set("SLURM_JOB_NODELIST")) env.master_addr = first_slurm_host(lookup("SLURM_JOB_NODELIST"));
  else if (env.world_size == 1) env.master_addr = "127.0.0.1";
  else
    throw UsageError("MASTER_ADDR is not set: the ranks cannot find rank 0",
                     "torchrun sets it; under srun export MASTER_ADDR=$(scontrol show hostnames | head -n 1)");
  env.master_port = set("MASTER_PORT") ? parse_count("MASTER_PORT", lookup("MASTER_PORT")) : 29500;
  if (env.master_port < 1 || env.master_port > 65535)
    throw UsageError("MASTER_PORT=" + std::to_string(env.master_port) + " is not a TCP port");
  return env;
}

std::vector<std::pair<int64_t, int64_t>> rank_chunks(const TrainConfig& train, int64_t step, int64_t rank,
                                                     int64_t world) {
  const int64_t batch = train.batch();
  if (world < 1 || batch % world != 0)
    throw UsageError("the batch of " + std::to_string(batch) + " sequences (micro_batch " + std::to_string(train.micro_batch) +
                         " x accumulation " + std::to_string(train.accumulation) + ") does not divide among " +
                         std::to_string(world) + " ranks",
                     "choose accumulation (or micro_batch) so that micro_batch x accumulation is a multiple of the "
                     "world size; the batch, not the hardware, defines the run");
  const int64_t share = batch / world;
  std::vector<std::pair<int64_t, int64_t>> chunks;
  const int64_t begin = step * batch + rank * share;
  for (int64_t done = 0; done < share; done += train.micro_batch)
    chunks.emplace_back(begin + done, std::min(train.micro_batch, share - done));
  return chunks;
}

std::pair<int64_t, int64_t> rank_share(int64_t sequences, int64_t rank, int64_t world) {
  const int64_t first = sequences * rank / world, last = sequences * (rank + 1) / world;
  return {first, last - first};
}

struct Communicator::Impl {
  DistributedEnv env;
  torch::Device device = torch::kCPU;  // where the scalar collectives' tensors live
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<c10d::Backend> group;

  struct Bucket {
    torch::Tensor flat;
    std::vector<size_t> members;   // indices into parameters
    std::vector<int64_t> offsets;  // of each member in flat
    std::atomic<int64_t> pending{0};
    c10::intrusive_ptr<c10d::Work> work;
  };
  std::vector<torch::Tensor> parameters;
  std::vector<std::unique_ptr<Bucket>> buckets;
  std::vector<size_t> bucket_of, slot_of;
  std::vector<uint8_t> ready;
  std::atomic<bool> armed{false};

  /// A collective failed: find out which ranks are gone, and say so.
  [[noreturn]] void lost(const std::string& what, const std::string& detail) {
    std::string gone;
    try {
      store->setTimeout(std::chrono::seconds(5));
      store->set("sinkgate/alive/" + std::to_string(env.rank), "1");
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
      std::vector<int64_t> missing;
      do {
        missing.clear();
        for (int64_t r = 0; r < env.world_size; ++r)
          if (r != env.rank && !store->check({"sinkgate/alive/" + std::to_string(r)})) missing.push_back(r);
        if (missing.empty()) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      } while (std::chrono::steady_clock::now() < deadline);
      for (const auto r : missing) gone += (gone.empty() ? "rank " : ", rank ") + std::to_string(r);
      if (!gone.empty()) gone += missing.size() == 1 ? " is gone (exited, crashed or stuck)" : " are gone (exited, crashed or stuck)";
    } catch (const std::exception&) {
      gone = "rank 0, which serves the store at " + env.master_addr + ":" + std::to_string(env.master_port) + ", is gone";
    }
    throw DistributedError("rank " + std::to_string(env.rank) + ": " + what + " failed" +
                               (gone.empty() ? "" : ": " + gone) + " (" + detail.substr(0, detail.find('\n')) + ")",
                           "a run stops when one of its ranks is lost; resume it from its last checkpoint with --resume");
  }

  template <typename F>
  void guarded(const std::string& what, F&& body) {
    try {
      body();
    } catch (const DistributedError&) {
      throw;
    } catch (const std::exception& error) {
      lost(what, error.what());
    }
  }

  void launch(Bucket& bucket) {
    std::vector<torch::Tensor> tensors{bucket.flat};
    bucket.work = group->allreduce(tensors);
  }
};

Communicator::Communicator(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Communicator::~Communicator() = default;

std::unique_ptr<Communicator> Communicator::connect(const DistributedEnv& env, const torch::Device& device,
                                                    double timeout_seconds) {
  auto impl = std::make_unique<Impl>();
  impl->env = env;
  const auto timeout = std::chrono::milliseconds(static_cast<int64_t>(timeout_seconds * 1000));
  const std::string where = env.master_addr + ":" + std::to_string(env.master_port);
  try {
    c10d::TCPStoreOptions options;
    options.port = static_cast<uint16_t>(env.master_port);
    options.isServer = env.rank == 0;
    options.numWorkers = static_cast<int>(env.world_size);
    options.waitWorkers = true;
    options.timeout = timeout;
    impl->store = c10::make_intrusive<c10d::TCPStore>(env.master_addr, options);
  } catch (const std::exception& error) {
    const std::string detail = std::string(error.what()).substr(0, std::string(error.what()).find('\n'));
    throw DistributedError(
        env.rank == 0 ? "rank 0 could not serve the store on " + where + " or not every one of the " +
                            std::to_string(env.world_size) + " ranks joined within " +
                            std::to_string(static_cast<int64_t>(timeout_seconds)) + " s (" + detail + ")"
                      : "rank " + std::to_string(env.rank) + " could not reach rank 0's store at " + where + " within " +
                            std::to_string(static_cast<int64_t>(timeout_seconds)) + " s (" + detail + ")",
        "check MASTER_ADDR and MASTER_PORT (from " + env.launcher + "), that rank 0 runs, and that the port is free");
  }
  try {
    if (device.is_cuda()) {
#ifdef SG_WITH_NCCL
      auto options = c10d::ProcessGroupNCCL::Options::create();
      options->timeout = timeout;
      impl->group = c10::make_intrusive<c10d::ProcessGroupNCCL>(impl->store, static_cast<int>(env.rank),
                                                                 static_cast<int>(env.world_size), options);
      impl->device = device;
#else
      throw DistributedError("this build has no NCCL: data-parallel training on CUDA needs it");
#endif
    } else {
      auto options = c10d::ProcessGroupGloo::Options::create(timeout);
      const char* interface = std::getenv("GLOO_SOCKET_IFNAME");
      options->devices.push_back(interface && *interface ? c10d::ProcessGroupGloo::createDeviceForInterface(interface)
                                                         : c10d::ProcessGroupGloo::createDefaultDevice());
      impl->group = c10::make_intrusive<c10d::ProcessGroupGloo>(impl->store, static_cast<int>(env.rank),
                                                                 static_cast<int>(env.world_size), options);
    }
  } catch (const DistributedError&) {
    throw;
  } catch (const std::exception& error) {
    throw DistributedError("rank " + std::to_string(env.rank) + " could not build the " +
                               (device.is_cuda() ? "NCCL" : "Gloo") + " process group through " + where + " (" +
                               std::string(error.what()).substr(0, std::string(error.what()).find('\n')) + ")",
                           device.is_cuda() ? "" : "on a machine with several interfaces set GLOO_SOCKET_IFNAME");
  }
  log::debug("distributed: " + env.describe() + " connected");
  return std::unique_ptr<Communicator>(new Communicator(std::move(impl)));
}

int64_t Communicator::rank() const { return impl_->env.rank; }
int64_t Communicator::world_size() const { return impl_->env.world_size; }

void Communicator::all_reduce_sum(std::vector<torch::Tensor>& tensors, const std::string& what) {
  impl_->guarded(what, [&] { impl_->group->allreduce(tensors)->wait(); });
}

double Communicator::all_reduce_max(double value, const std::string& what) {
  std::vector<torch::Tensor> tensors{torch::full({1}, value, torch::TensorOptions().dtype(torch::kFloat64).device(impl_->device))};
  c10d::AllreduceOptions options;
  options.reduceOp = c10d::ReduceOp::MAX;
  impl_->guarded(what, [&] { impl_->group->allreduce(tensors, options)->wait(); });
  return tensors[0].item<double>();
}

void Communicator::broadcast(std::vector<torch::Tensor>& tensors, const std::string& what) {
  impl_->guarded(what, [&] {
    for (auto& tensor : tensors) {
      std::vector<torch::Tensor> one{tensor};
      impl_->group->broadcast(one)->wait();
    }
  });
}

void Communicator::barrier(const std::string& what) {
  // An all-reduce of one number: a barrier every backend runs on the tensors' own device.
  std::vector<torch::Tensor> tensors{torch::zeros({1}, torch::TensorOptions().device(impl_->device))};
  impl_->guarded(what, [&] { impl_->group->allreduce(tensors)->wait(); });
}

void Communicator::check_same(const std::string& digest, const std::string& what) {
  // Four 64-bit words of the digest; equal everywhere iff their maximum equals their minimum.
  std::vector<int64_t> words(4, 0);
  for (size_t i = 0; i < digest.size(); ++i) words[i % 4] = words[i % 4] * 131 + static_cast<unsigned char>(digest[i]);
  const auto options = torch::TensorOptions().dtype(torch::kInt64).device(impl_->device);
  std::vector<torch::Tensor> high{torch::tensor(words, torch::kInt64).to(options)};
  std::vector<torch::Tensor> low{high[0].clone()};
  c10d::AllreduceOptions max, min;
  max.reduceOp = c10d::ReduceOp::MAX;
  min.reduceOp = c10d::ReduceOp::MIN;
  impl_->guarded(what, [&] {
    impl_->group->allreduce(high, max)->wait();
    impl_->group->allreduce(low, min)->wait();
  });
  if (!torch::equal(high[0], low[0]))
    throw DistributedError("the ranks disagree: " + what + " differs between ranks",
                           "every rank must start from the same run file and configuration");
}

void Communicator::install_gradient_hooks(const std::vector<torch::Tensor>& parameters, int64_t bucket_bytes) {
  auto& impl = *impl_;
  impl.parameters = parameters;
  impl.bucket_of.assign(parameters.size(), 0);
  impl.slot_of.assign(parameters.size(), 0);
  impl.ready.assign(parameters.size(), 0);
  // Reverse order: the last layers' gradients are computed first.
  int64_t bytes = 0;
  for (size_t k = parameters.size(); k-- > 0;) {
    const auto& p = parameters[k];
    const int64_t size = p.numel() * static_cast<int64_t>(p.element_size());
    const bool fits = !impl.buckets.empty() && bytes + size <= bucket_bytes &&
                      impl.parameters[impl.buckets.back()->members.front()].scalar_type() == p.scalar_type() &&
                      impl.parameters[impl.buckets.back()->members.front()].device() == p.device();
    if (!fits) {
      impl.buckets.push_back(std::make_unique<Impl::Bucket>());
      bytes = 0;
    }
    auto& bucket = *impl.buckets.back();
    impl.bucket_of[k] = impl.buckets.size() - 1;
    impl.slot_of[k] = bucket.members.size();
    bucket.offsets.push_back(bucket.members.empty() ? 0 : bucket.offsets.back() + parameters[bucket.members.back()].numel());
    bucket.members.push_back(k);
    bytes += size;
  }
  for (auto& bucket : impl.buckets) {
    int64_t total = 0;
    for (const auto k : bucket->members) total += parameters[k].numel();
    const auto& first = parameters[bucket->members.front()];
    bucket->flat = torch::zeros({total}, first.options().requires_grad(false));
  }
  for (size_t k = 0; k < parameters.size(); ++k) {
    auto parameter = parameters[k];
    parameter.register_hook([this, k, parameter](const torch::Tensor& gradient) {
      auto& impl = *impl_;
      if (!impl.armed.load()) return;
      auto& bucket = *impl.buckets[impl.bucket_of[k]];
      const int64_t offset = bucket.offsets[impl.slot_of[k]];
      auto slot = bucket.flat.narrow(0, offset, parameter.numel());
      torch::NoGradGuard no_grad;
      // The gradient of this backward pass plus what earlier passes accumulated (autograd adds
      // this one to .grad after the hook; finish() overwrites .grad with the sum over ranks).
      if (parameter.grad().defined()) torch::add_out(slot, parameter.grad().reshape({-1}), gradient.reshape({-1}));
      else slot.copy_(gradient.reshape({-1}));
      impl.ready[k] = 1;
      if (bucket.pending.fetch_sub(1) == 1) impl.launch(bucket);
    });
  }
}

void Communicator::arm() {
  auto& impl = *impl_;
  for (auto& bucket : impl.buckets) {
    bucket->pending.store(static_cast<int64_t>(bucket->members.size()));
    bucket->work.reset();
  }
  std::fill(impl.ready.begin(), impl.ready.end(), 0);
  impl.armed.store(true);
}

void Communicator::finish() {
  auto& impl = *impl_;
  impl.armed.store(false);
  torch::NoGradGuard no_grad;
  impl.guarded("the gradient all-reduce", [&] {
    // Parameters the pass gave no gradient: their accumulated .grad (or zero) goes in as it is.
    for (auto& bucket : impl.buckets) {
      if (bucket->work) continue;
      for (size_t s = 0; s < bucket->members.size(); ++s) {
        const auto k = bucket->members[s];
        if (impl.ready[k]) continue;
        auto slot = bucket->flat.narrow(0, bucket->offsets[s], impl.parameters[k].numel());
        if (impl.parameters[k].grad().defined()) slot.copy_(impl.parameters[k].grad().reshape({-1}));
        else slot.zero_();
      }
      impl.launch(*bucket);
    }
    for (auto& bucket : impl.buckets) bucket->work->wait();
  });
  for (auto& bucket : impl.buckets)
    for (size_t s = 0; s < bucket->members.size(); ++s) {
      auto& parameter = impl.parameters[bucket->members[s]];
      const auto summed = bucket->flat.narrow(0, bucket->offsets[s], parameter.numel()).view(parameter.sizes());
      if (parameter.grad().defined()) parameter.mutable_grad().copy_(summed);
      else parameter.mutable_grad() = summed.clone();
    }
}

}  // namespace sg
