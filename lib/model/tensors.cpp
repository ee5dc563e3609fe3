// tensors.cpp — tensor adapters over the HDF5, safetensors and sampler interfaces of sg_core.
#include "lib/model/tensors.h"

#include "lib/base/error.h"

namespace sg {

torch::ScalarType torch_dtype(h5::Dtype dtype) {
  switch (dtype) {
    case h5::Dtype::float32: return torch::kFloat;
    case h5::Dtype::float64: return torch::kDouble;
    case h5::Dtype::bfloat16: return torch::kBFloat16;
    case h5::Dtype::int8: return torch::kChar;
    case h5::Dtype::int16: return torch::kShort;
    case h5::Dtype::int32: return torch::kInt;
    case h5::Dtype::int64: return torch::kLong;
    case h5::Dtype::uint8: return torch::kByte;
    case h5::Dtype::uint16: return torch::kUInt16;
    case h5::Dtype::boolean: return torch::kBool;
    case h5::Dtype::string: break;
  }
  throw Error("h5: strings are not tensors");
}

h5::Dtype h5_dtype(torch::ScalarType type, const std::string& file, const std::string& path) {
  switch (type) {
    case torch::kFloat: return h5::Dtype::float32;
    case torch::kDouble: return h5::Dtype::float64;
    case torch::kBFloat16: return h5::Dtype::bfloat16;
    case torch::kChar: return h5::Dtype::int8;
    case torch::kShort: return h5::Dtype::int16;
    case torch::kInt: return h5::Dtype::int32;
    case torch::kLong: return h5::Dtype::int64;
    case torch::kByte: return h5::Dtype::uint8;
    case torch::kUInt16: return h5::Dtype::uint16;
    case torch::kBool: return h5::Dtype::boolean;
    default: break;
  }
  throw OutputError(file + ": cannot store " + path + ": unsupported tensor dtype " + std::string(c10::toString(type)));
}

h5::Dataset write_tensor(h5::Group& group, const std::string& path, const torch::Tensor& tensor) {
  const h5::Dtype dtype = h5_dtype(tensor.scalar_type(), group.file(), path);
  const auto data = tensor.detach().to(torch::kCPU).contiguous();
  // torch's bool is one byte of 0 or 1, bfloat16 two bytes: the layouts h5.h stores.
  return group.write_array(path, dtype, data.sizes().vec(), data.data_ptr());
}

torch::Tensor read_tensor(const h5::Dataset& dataset) {
  const h5::Dtype stored = dataset.dtype();
  if (stored == h5::Dtype::string)
    throw InputError(dataset.file() + ": dataset " + dataset.path() + " holds strings, not numbers");
  if (stored == h5::Dtype::boolean) {  // read the bytes, then compare: a damaged byte is still a bool
    auto bytes = torch::empty(dataset.shape(), torch::kByte);
    dataset.read_array(h5::Dtype::uint8, bytes.data_ptr());
    return bytes.ne(0);
  }
  auto tensor = torch::empty(dataset.shape(), torch::TensorOptions().dtype(torch_dtype(stored)));
  dataset.read_array(stored, tensor.data_ptr());
  return tensor;
}

torch::Tensor read_tensor(const h5::Group& group, const std::string& path) { return read_tensor(group.dataset(path)); }

bool all_finite(const torch::Tensor& tensor) { return torch::isfinite(tensor).all().item<bool>(); }

torch::ScalarType torch_dtype(SafetensorsDtype dtype) {
  switch (dtype) {
    case SafetensorsDtype::F64: return torch::kFloat64;
    case SafetensorsDtype::F32: return torch::kFloat32;
    case SafetensorsDtype::F16: return torch::kFloat16;
    case SafetensorsDtype::BF16: return torch::kBFloat16;
    case SafetensorsDtype::I64: return torch::kInt64;
    case SafetensorsDtype::I32: return torch::kInt32;
    case SafetensorsDtype::I16: return torch::kInt16;
    case SafetensorsDtype::I8: return torch::kInt8;
    case SafetensorsDtype::U8: return torch::kUInt8;
    case SafetensorsDtype::BOOL: return torch::kBool;
  }
  return torch::kFloat32;
}

torch::Tensor load_tensor(const SafetensorsFile& file, const std::string& name) {
  const auto& entry = file.entry(name);
  auto tensor = torch::empty(entry.shape, torch::TensorOptions().dtype(torch_dtype(entry.dtype)));
  file.read(name, tensor.data_ptr());  // the header check made bytes() = numel × element size
  return tensor;
}

torch::Tensor load_tensor(const SafetensorsFolder& folder, const std::string& name) {
  return load_tensor(folder.file_of(name), name);
}

torch::Tensor map_tensor(const SafetensorsFolder& folder, const std::string& name) {
  const auto& entry = folder.entry(name);
  const auto dtype = torch_dtype(entry.dtype);
  if (entry.bytes() == 0) return torch::empty(entry.shape, torch::TensorOptions().dtype(dtype));
  auto bytes = folder.map(name);
  if (reinterpret_cast<uintptr_t>(bytes.get()) % static_cast<uintptr_t>(element_size(entry.dtype)) != 0)
    return load_tensor(folder, name);
  auto* owner = new std::shared_ptr<const char>(std::move(bytes));
  return torch::from_blob(const_cast<char*>(owner->get()), entry.shape, [owner](void*) { delete owner; },
                          torch::TensorOptions().dtype(dtype));
}

Batch sample_batch(const TokenFile& tokens, Split split, int64_t seed, int64_t first, int64_t count,
                   int64_t context) {
  auto windows = sample_windows(tokens, split, seed, first, count, context);
  const auto all = torch::from_blob(windows.tokens.data(), {count, windows.length}, torch::kLong).clone();
  return {all.narrow(1, 0, context), all.narrow(1, 1, context)};
}

}  // namespace sg
