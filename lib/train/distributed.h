// distributed.h — data-parallel training over c10d process groups (NCCL on GPUs, Gloo on CPUs),
// launched as PyTorch users launch: torchrun (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR,
// MASTER_PORT) or Slurm's srun (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID; MASTER_ADDR from the
// environment or the first host of SLURM_JOB_NODELIST, MASTER_PORT default 29500).
//
// The split: an optimizer step's batch of micro_batch × accumulation windows (s·b … s·b + b − 1
// of the run's stream) is cut into W equal consecutive shares, rank r taking share r in chunks of
// at most micro_batch windows, each chunk's mean loss weighted by its share of b; gradients are
// summed across ranks. A run on W ranks therefore takes the step of one process over the same
// windows, and paired seeds stay paired whatever the hardware (up to the order of float sums).
// Gradients are summed in flat buckets (about 25 MB, in the reverse order of the parameters,
// the order the backward pass produces them), each launched as soon as its last gradient is
// computed — a hook on every parameter — so that communication overlaps the rest of the
// backward pass; the clip norm is then computed on the summed gradients and every rank takes
// the same AdamW step.
//
// Failures: every collective carries the process group's timeout; a collective that fails is
// reported as a DistributedError naming the ranks that are gone (each live rank checks in to the
// store; the ones that do not within a few seconds are named) or, when the store itself is gone,
// rank 0 and its address.
//
// Not here: the training loop (train.h), which calls these.
#pragma once
#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "lib/run/config.h"

namespace sg {

struct DistributedEnv {
  int64_t rank = 0, world_size = 1, local_rank = 0;
  std::string master_addr;
  int64_t master_port = 0;
  std::string launcher;  // "torchrun" (RANK/WORLD_SIZE), "slurm", or "" (one process, as before)
  bool distributed() const { return !launcher.empty(); }
  /// "rank 1 of 2 (torchrun, MASTER_ADDR 10.0.0.1, MASTER_PORT 29500)", for messages.
  std::string describe() const;
};

/// The launch environment read through `lookup` (std::getenv by default). Throws UsageError
/// naming the variable for a malformed or missing value (a WORLD_SIZE without RANK, a rank
/// outside the world, no MASTER_ADDR, …).
DistributedEnv distributed_env(const std::function<const char*(const char*)>& lookup = {});

/// The first host of a Slurm node list ("gpu[03-05,09],cpu1" → "gpu03").
std::string first_slurm_host(const std::string& nodelist);

/// The chunks (first window, count) of optimizer step `step` that rank `rank` of `world`
/// computes, in order; with world 1 the micro-batches of one process. UsageError when the batch
/// does not divide by the world size.
std::vector<std::pair<int64_t, int64_t>> rank_chunks(const TrainConfig& train, int64_t step, int64_t rank,
                                                     int64_t world);

/// The validation sequences [first, first + count) that rank `rank` scores of `sequences`.
std::pair<int64_t, int64_t> rank_share(int64_t sequences, int64_t rank, int64_t world);

/// A c10d process group with the training loop's collectives.
class Communicator {
 public:
  /// Connects every rank (rank 0 serves the TCPStore) and builds the process group: NCCL when
  /// `device` is CUDA, Gloo otherwise. Throws DistributedError naming the address, port and
  /// variables when a rank cannot connect within `timeout_seconds`.
  static std::unique_ptr<Communicator> connect(const DistributedEnv& env, const torch::Device& device,
                                               double timeout_seconds);
  ~Communicator();

  int64_t rank() const;
  int64_t world_size() const;

  /// Sums the tensors across ranks, in place.
  void all_reduce_sum(std::vector<torch::Tensor>& tensors, const std::string& what);
  /// The largest of the ranks' values.
  double all_reduce_max(double value, const std::string& what);
  /// Rank 0's tensors to every rank, in place.
  void broadcast(std::vector<torch::Tensor>& tensors, const std::string& what);
  void barrier(const std::string& what);
  /// Throws DistributedError when the ranks' digests differ (e.g. of the weights after a step).
  void check_same(const std::string& digest, const std::string& what);

  /// Sums gradients in buckets during backward passes (file comment). Install once; then, for
  /// the backward pass whose gradients are to be summed, call arm() before it and finish() after
  /// it: the parameters' .grad then hold the sums over ranks (of everything accumulated so far).
  void install_gradient_hooks(const std::vector<torch::Tensor>& parameters, int64_t bucket_bytes = 25 << 20);
  void arm();
  void finish();

  struct Impl;

 private:
  explicit Communicator(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace sg
