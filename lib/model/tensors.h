// tensors.h — torch::Tensor across sg_core's plain interfaces: HDF5 datasets (io/h5.h),
// safetensors entries (io/safetensors.h) and the sampler's token windows (text/sampler.h).
//
// sg_core holds no LibTorch; the model side reads and writes tensors only through these adapters,
// so the storage conventions (bfloat16 as uint16 bits, bool as uint8) stay defined once, in h5.h.
#pragma once
#include <torch/torch.h>

#include <cstdint>
#include <string>

#include "lib/io/h5.h"
#include "lib/io/safetensors.h"
#include "lib/text/sampler.h"

namespace sg {

/// The LibTorch dtype of a stored h5 Dtype (bool for boolean); Error for strings.
torch::ScalarType torch_dtype(h5::Dtype dtype);
/// The h5 Dtype that stores a LibTorch dtype; OutputError naming `file` and `path` for a dtype the
/// format does not store (complex, float16, …).
h5::Dtype h5_dtype(torch::ScalarType type, const std::string& file, const std::string& path);

/// Writes a CPU or device tensor of any supported dtype and any rank (0-D becomes a scalar
/// dataset) as a new dataset of `group` (checksummed, h5.h). Throws OutputError.
h5::Dataset write_tensor(h5::Group& group, const std::string& path, const torch::Tensor& tensor);
/// Reads a whole dataset as a CPU tensor of its stored dtype (bfloat16 and bool as such).
/// Throws InputError naming the file for strings or a damaged dataset.
torch::Tensor read_tensor(const h5::Dataset& dataset);
torch::Tensor read_tensor(const h5::Group& group, const std::string& path);

/// True if every element of `tensor` is finite (no NaN, no infinity).
bool all_finite(const torch::Tensor& tensor);

/// A safetensors tensor as a new CPU tensor of the file's dtype and shape. Throws InputError.
torch::ScalarType torch_dtype(SafetensorsDtype dtype);
torch::Tensor load_tensor(const SafetensorsFile& file, const std::string& name);
torch::Tensor load_tensor(const SafetensorsFolder& folder, const std::string& name);
/// The same tensor viewing the file's read-only memory map (SafetensorsFile::map) instead of a copy:
/// no memory of its own beyond the page cache, kept alive by the tensor. A tensor whose bytes are not
/// aligned to its element size is copied (load_tensor). The tensor must never be written in place.
torch::Tensor map_tensor(const SafetensorsFolder& folder, const std::string& name);

/// A batch of next-token pairs: inputs = tokens[s, s + T), targets = tokens[s + 1, s + T + 1).
struct Batch {
  torch::Tensor inputs;   // (n, T) int64
  torch::Tensor targets;  // (n, T) int64
};

/// sample_windows (text/sampler.h) as a batch: windows first … first + count - 1 of the stream
/// (seed, split), of `context` tokens. Throws InputError when the split is not longer than the context.
Batch sample_batch(const TokenFile& tokens, Split split, int64_t seed, int64_t first, int64_t count,
                   int64_t context);

}  // namespace sg
