// model.cpp — the GPT-2-style decoder.
#include "lib/model/model.h"

#include <cmath>
#include <stdexcept>
#include <string>

#include "lib/base/error.h"
#include "lib/kernels/loss.h"

namespace sg {

namespace F = torch::nn::functional;

MLPImpl::MLPImpl(int64_t n_embd, int64_t n_layer) {
  c_fc = register_module("c_fc", torch::nn::Linear(torch::nn::LinearOptions(n_embd, 4 * n_embd).bias(false)));
  c_proj = register_module("c_proj", torch::nn::Linear(torch::nn::LinearOptions(4 * n_embd, n_embd).bias(false)));
  torch::NoGradGuard no_grad;
  c_fc->weight.normal_(0.0, 0.02);
  c_proj->weight.normal_(0.0, 0.02 / std::sqrt(2.0 * static_cast<double>(n_layer)));
}

torch::Tensor MLPImpl::forward(const torch::Tensor& x) { return c_proj(F::gelu(c_fc(x))); }

BlockImpl::BlockImpl(const AttentionOptions& options) {
  ln_1 = register_module("ln_1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({options.n_embd})));
  attn = register_module("attn", Attention(options));
  ln_2 = register_module("ln_2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({options.n_embd})));
  mlp = register_module("mlp", MLP(options.n_embd, options.n_layer));
}

torch::Tensor BlockImpl::forward(const torch::Tensor& x, KVCache* cache, ForwardObserver* observer) {
  auto h = x + attn->forward(ln_1(x), cache, observer);
  return h + mlp(ln_2(h));
}

GPTImpl::GPTImpl(const ModelConfig& config) : config_(config) {
  config.validate();
  // Sparse lookup gradient: the tied head already gives wte a dense (V, C) gradient, to which
  // autograd then adds the few looked-up rows in place, instead of adding a second dense (V, C)
  // tensor that is zero outside those rows.
  wte = register_module("wte", torch::nn::Embedding(torch::nn::EmbeddingOptions(config.vocab_size, config.n_embd).sparse(true)));
  wpe = register_module("wpe", torch::nn::Embedding(config.block_size, config.n_embd));
  {
    torch::NoGradGuard no_grad;
    wte->weight.normal_(0.0, 0.02);
    wpe->weight.normal_(0.0, 0.02);
  }
  for (const auto& parameter : arm_parameters(config.arm))  // the arm's own, once per model: the sink token
    if (!parameter.per_layer) {
      if (std::string(parameter.name) != "sink_token")
        throw std::logic_error(std::string("the model has no place for the arm parameter ") + parameter.name);
      sink_token = register_parameter(parameter.name, initial_arm_parameter(parameter, parameter.shape_of(
                                                          config.n_head, config.head_dim(), config.n_embd), config.gate_beta));
    }
  blocks = register_module("blocks", torch::nn::ModuleList());
  for (int64_t layer = 0; layer < config.n_layer; ++layer) {
    AttentionOptions options;
    options.n_embd = config.n_embd;
    options.n_head = config.n_head;
    options.layer = layer;
    options.n_layer = config.n_layer;
    options.arm = config.arm;
    options.gate_beta = config.gate_beta;
    blocks->push_back(Block(options));
  }
  ln_f = register_module("ln_f", torch::nn::LayerNorm(torch::nn::LayerNormOptions({config.n_embd})));
}

torch::Tensor GPTImpl::hidden(const torch::Tensor& idx, ModelCache* cache) {
  TORCH_CHECK(idx.dim() == 2, "idx must be (B, T)");
  const int64_t batch = idx.size(0), length = idx.size(1);
  const int64_t start = cache ? cache->tokens : 0;
  if (start + length > config_.block_size)
    throw UsageError("sequence of " + std::to_string(start + length) + " tokens exceeds the context length " +
                     std::to_string(config_.block_size));
  const auto positions = torch::arange(start, start + length, torch::TensorOptions().dtype(torch::kLong).device(idx.device()));
  auto x = wte(idx) + wpe(positions);  // (B, T, C)
  const bool add_sink = sink_token.defined() && start == 0;
  if (add_sink) x = torch::cat({sink_token.view({1, 1, -1}).expand({batch, 1, config_.n_embd}).to(x.dtype()), x}, 1);
  if (cache && cache->layers.size() != blocks->size()) cache->layers.resize(blocks->size());
  if (observer_) observer_->residual(-1, x);
  for (size_t layer = 0; layer < blocks->size(); ++layer) {
    x = blocks[layer]->as<Block>()->forward(x, cache ? &cache->layers[layer] : nullptr, observer_);
    if (observer_) observer_->residual(static_cast<int64_t>(layer), x);
  }
  if (add_sink) x = x.narrow(1, 1, length);
  if (cache) cache->tokens += length;
  return ln_f(x);
}

torch::Tensor GPTImpl::forward(const torch::Tensor& idx, ModelCache* cache) {
  return F::linear(hidden(idx, cache), wte->weight);  // (B, T, V), tied head
}

torch::Tensor GPTImpl::loss(const torch::Tensor& idx, const torch::Tensor& targets) {
  const auto h = hidden(idx);
  return linear_cross_entropy(h.reshape({-1, h.size(-1)}), wte->weight, targets.reshape({-1}), loss_plan_);
}

void GPTImpl::set_hooks(std::shared_ptr<const AttentionHooks> hooks) {
  for (const auto& block : *blocks) block->as<Block>()->attn->set_hooks(hooks);
}

void GPTImpl::set_backend(AttentionBackend backend) {
  for (const auto& block : *blocks) block->as<Block>()->attn->set_backend(backend);
}

int64_t GPTImpl::parameter_count() const {
  int64_t total = 0;
  for (const auto& p : parameters()) total += p.numel();
  return total;
}

GPT build_model(const ModelConfig& config, int64_t seed) {
  config.validate();
  torch::manual_seed(static_cast<uint64_t>(seed));
  return GPT(config);
}

}  // namespace sg
