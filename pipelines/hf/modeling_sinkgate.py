"""modeling_sinkgate.py — the sinkgate attention arms as transformers GPT-2 classes.

sg-export writes this file, unchanged, into every folder of an arm other than the baseline. The
classes subclass transformers' GPT-2 classes, so everything but the attention is GPT-2's own
(embeddings, blocks, MLP, LayerNorms, the tied head, generation). The attention follows sinkgate's
explicit path (lib/model/attention.cpp; the exact rules are in docs/arms.md):

- logits s_ij = q_i.k_j / sqrt(d) in float32, a causal mask (and the padding mask transformers
  gives);
- the filter: a gate g_j from each read v_j, in float32 — norm gate sigma(beta(|v_j|/sqrt(d) - tau_h)),
  projection gate sigma(w_h.v_j + b_h) — multiplying the read (normgate, projgate), or log g_j added
  to s_ij (renorm, the routing-slot control); or from each key k_j, the key gate
  sigma(w_h.k_j/sqrt(d) + b_h), multiplying the read (keygate);
- the zero option: a phantom column of value zero and logit 0 (offbyone) or b_h (sinklogit) in the
  softmax; or a learned sink token, one d_model vector before every sequence with no position of
  its own. Its keys and reads do not depend on the input (it sees only itself), so they are
  computed once per forward pass and put before every layer's keys; its output position does not
  exist here, as in sinkgate, where it is removed before the final LayerNorm;
- the output gate (Qiu et al. 2025): each head's output y_i times sigma(x_i W_theta^T) before the
  output projection, x_i the block's input after ln_1 at the query, in float32; W_theta (H, C) gives
  one gate per head (outgate), (C, C) one per head dimension (outgate-elem).

The arm's parameters (names, shapes, initialisation) are those of sinkgate's arm table
(lib/run/arm.cpp, docs/arms.md "The table of options"); sinkgate's tests build this model for every
arm and compare its parameters with the table.

The key-value cache holds the keys and the raw reads; the gates are recomputed from them (each
depends on its own read or key alone; the output gate on the current query alone), so incremental
decoding gives the full pass's logits.
Attention weights (output_attentions=True, attn_implementation="eager") are those on the real
keys: (B, H, T, T) like GPT-2's; each row sums to one minus the phantom's (or the sink token's)
mass.

Written for transformers 5 (tested with 5.24); loaded with trust_remote_code=True.
"""
import math

import torch
from torch import nn
from torch.nn import functional as F
from transformers import initialization as init
from transformers.modeling_layers import GradientCheckpointingLayer
from transformers.models.gpt2.modeling_gpt2 import (
    GPT2Attention,
    GPT2Block,
    GPT2LMHeadModel,
    GPT2MLP,
    GPT2Model,
    GPT2PreTrainedModel,
)

from .configuration_sinkgate import SinkgateConfig


class SinkgateAttention(GPT2Attention):
    """GPT-2 self-attention with a zero option, a filter and an output gate (the arm's parameters
    per layer: sink_logit (H), gate_tau (H), gate_w (H, d), gate_b (H), out_gate (H or C, C), as the
    arm has them)."""

    def __init__(self, config, layer_idx=None):
        super().__init__(config, is_cross_attention=False, layer_idx=layer_idx)
        config.validate_arm()
        heads, dim = self.num_heads, self.head_dim
        self.zero_option = config.zero_option
        self.filter = config.filter
        self.output_gate = getattr(config, "output_gate", "none")
        self.gate_beta = float(config.gate_beta)
        if self.zero_option == "sinklogit":
            self.sink_logit = nn.Parameter(torch.zeros(heads))
        if self.filter in ("normgate", "renorm"):
            self.gate_tau = nn.Parameter(torch.full((heads,), -4.0 / self.gate_beta))
        if self.filter in ("projgate", "keygate"):
            self.gate_w = nn.Parameter(torch.zeros(heads, dim))
            self.gate_b = nn.Parameter(torch.full((heads,), 4.0))
        if self.output_gate != "none":
            rows = heads if self.output_gate == "outgate" else self.embed_dim
            self.out_gate = nn.Parameter(torch.zeros(rows, self.embed_dim))
        # The sink token's key and read at this layer, (1, H, 1, d): set by SinkgateModel.forward.
        self.sink_key = None
        self.sink_read = None

    def gate_logits(self, keys, reads):
        """The gate's pre-sigmoid argument (B, H, T) in float32 from keys and reads (B, H, T, d); None
        without a gate."""
        values = reads.float()
        heads, dim = self.num_heads, self.head_dim
        if self.filter in ("normgate", "renorm"):
            norms = values.pow(2).sum(-1).sqrt() / math.sqrt(dim)
            return self.gate_beta * (norms - self.gate_tau.float().view(1, heads, 1))
        if self.filter == "projgate":
            return (values * self.gate_w.float().view(1, heads, 1, dim)).sum(-1) + self.gate_b.float().view(1, heads, 1)
        if self.filter == "keygate":
            return ((keys.float() * self.gate_w.float().view(1, heads, 1, dim)).sum(-1) / math.sqrt(dim) +
                    self.gate_b.float().view(1, heads, 1))
        return None

    def filtered(self, keys, reads):
        """(reads after a value-slot gate, log g_j for the routing slot or None)."""
        logits = self.gate_logits(keys, reads)
        if logits is None:
            return reads, None
        if self.filter == "renorm":
            return reads, F.logsigmoid(logits)
        gates = torch.sigmoid(logits)
        return (reads.to(gates.dtype) * gates.unsqueeze(-1)).to(reads.dtype), None

    def gated_output(self, hidden_states, output):
        """The heads' output (B, H, T, d) times the output gate sigma(x W_theta^T) of the queries'
        inputs hidden_states (B, T, C), in float32; unchanged without an output gate."""
        if self.output_gate == "none":
            return output
        batch, length, _ = hidden_states.shape
        gates = torch.sigmoid(torch.matmul(hidden_states.float(), self.out_gate.float().t()))  # (B, T, H or C)
        if self.output_gate == "outgate":
            gates = gates.transpose(1, 2).unsqueeze(-1)  # (B, H, T, 1)
        else:
            gates = gates.view(batch, length, self.num_heads, self.head_dim).transpose(1, 2)  # (B, H, T, d)
        return (output.float() * gates).to(output.dtype)

    @staticmethod
    def allowed_keys(attention_mask, batch, queries, keys, device):
        """Which keys each query sees, (B or 1, 1, Tq, Tk) bool, from transformers' mask or causally."""
        if attention_mask is None:
            offset = keys - queries
            rows = torch.arange(queries, device=device).view(-1, 1)
            columns = torch.arange(keys, device=device).view(1, -1)
            return (columns <= rows + offset).view(1, 1, queries, keys)
        if attention_mask.dtype == torch.bool:
            return attention_mask[..., -keys:]
        return attention_mask[..., -keys:] > torch.finfo(attention_mask.dtype).min / 2

    def forward(self, hidden_states, cache=None, attention_mask=None, encoder_hidden_states=None,
                encoder_attention_mask=None, output_attentions=False, **kwargs):
        if encoder_hidden_states is not None:
            raise ValueError("sinkgate models have no cross-attention")
        if cache is None:
            cache = kwargs.pop("past_key_values", None) or kwargs.pop("past_key_value", None)
        batch, length, _ = hidden_states.shape
        heads, dim = self.num_heads, self.head_dim
        query, key, read = self.c_attn(hidden_states).split(self.split_size, dim=2)
        query = query.view(batch, length, heads, dim).transpose(1, 2)  # (B, H, T, d)
        key = key.view(batch, length, heads, dim).transpose(1, 2)
        read = read.view(batch, length, heads, dim).transpose(1, 2)
        if cache is not None:
            key, read = cache.update(key, read, self.layer_idx)  # raw reads: gates are recomputed
        keys_length = key.shape[2]
        allowed = self.allowed_keys(attention_mask, batch, length, keys_length, query.device)
        reads, key_bias = self.filtered(key, read)
        if self.sink_key is not None:  # the sink token: one more key, visible to every query
            sink_reads, sink_bias = self.filtered(self.sink_key.to(key.dtype), self.sink_read.to(read.dtype))
            key = torch.cat([self.sink_key.to(key.dtype).expand(batch, -1, -1, -1), key], dim=2)
            reads = torch.cat([sink_reads.expand(batch, -1, -1, -1), reads], dim=2)
            if key_bias is not None:
                key_bias = torch.cat([sink_bias.expand(batch, -1, -1), key_bias], dim=2)
            allowed = torch.cat([torch.ones_like(allowed[..., :1]), allowed], dim=-1)
        logits = torch.matmul(query, key.transpose(-1, -2)).float() * (1.0 / math.sqrt(dim))  # (B, H, Tq, Tk)
        if key_bias is not None:
            logits = logits + key_bias.unsqueeze(2)
        # A finite floor rather than -inf: a query that sees nothing (left padding) gets finite rows.
        logits = logits.masked_fill(~allowed, torch.finfo(logits.dtype).min)
        if self.zero_option in ("offbyone", "sinklogit"):
            phantom = torch.zeros(heads, device=logits.device) if self.zero_option == "offbyone" else self.sink_logit
            column = phantom.float().view(1, heads, 1, 1).expand(logits.shape[0], heads, length, 1)
            weights = torch.softmax(torch.cat([logits, column], dim=-1), dim=-1)[..., :-1]
        else:
            weights = torch.softmax(logits, dim=-1)
        output = torch.matmul(weights.to(reads.dtype), reads)  # (B, H, Tq, d)
        if self.sink_key is not None:
            weights = weights[..., 1:]
        output = self.gated_output(hidden_states, output)
        output = output.transpose(1, 2).reshape(batch, length, heads * dim)
        output = self.resid_dropout(self.c_proj(output))
        return output, weights


class SinkgateBlock(GPT2Block):
    """GPT2Block with SinkgateAttention."""

    def __init__(self, config, layer_idx=None):
        GradientCheckpointingLayer.__init__(self)
        hidden = config.hidden_size
        inner = config.n_inner if config.n_inner is not None else 4 * hidden
        self.ln_1 = nn.LayerNorm(hidden, eps=config.layer_norm_epsilon)
        self.attn = SinkgateAttention(config, layer_idx=layer_idx)
        self.ln_2 = nn.LayerNorm(hidden, eps=config.layer_norm_epsilon)
        self.mlp = GPT2MLP(inner, config)


class SinkgatePreTrainedModel(GPT2PreTrainedModel):
    config_class = SinkgateConfig
    config: SinkgateConfig
    base_model_prefix = "transformer"
    _no_split_modules = ["SinkgateBlock"]
    # The attention is sinkgate's own explicit computation, whatever attn_implementation says.
    _supports_sdpa = False
    _supports_flash_attn = False
    _supports_flex_attn = False
    _supports_attention_backend = False

    def _init_weights(self, module):
        """GPT-2's initialisation, and the arm's parameters as sinkgate initialises them."""
        super()._init_weights(module)
        if isinstance(module, SinkgateAttention):
            if getattr(module, "sink_logit", None) is not None:
                init.zeros_(module.sink_logit)
            if getattr(module, "gate_tau", None) is not None:
                init.constant_(module.gate_tau, -4.0 / module.gate_beta)
            if getattr(module, "gate_w", None) is not None:
                init.zeros_(module.gate_w)
                init.constant_(module.gate_b, 4.0)
            if getattr(module, "out_gate", None) is not None:
                init.normal_(module.out_gate, mean=0.0, std=0.02)
        if isinstance(module, SinkgateModel) and module.sink_token is not None:
            init.normal_(module.sink_token, mean=0.0, std=self.config.initializer_range)


class SinkgateModel(SinkgatePreTrainedModel, GPT2Model):
    """GPT2Model with SinkgateBlocks and, for the sink-token arms, the sink token (d_model)."""

    def __init__(self, config):
        SinkgatePreTrainedModel.__init__(self, config)
        config.validate_arm()
        self.embed_dim = config.hidden_size
        self.wte = nn.Embedding(config.vocab_size, self.embed_dim)
        self.wpe = nn.Embedding(config.max_position_embeddings, self.embed_dim)
        self.drop = nn.Dropout(config.embd_pdrop)
        self.h = nn.ModuleList([SinkgateBlock(config, layer_idx=i) for i in range(config.num_hidden_layers)])
        self.ln_f = nn.LayerNorm(self.embed_dim, eps=config.layer_norm_epsilon)
        self.sink_token = nn.Parameter(torch.zeros(self.embed_dim)) if config.zero_option == "sinktoken" else None
        self.gradient_checkpointing = False
        self._attn_implementation = config._attn_implementation
        self.post_init()

    def set_sink_states(self):
        """Runs the sink token through the blocks alone (it attends to itself only) and gives each
        attention layer the sink's key and read there."""
        state = self.sink_token.view(1, 1, -1).to(self.wte.weight.dtype)
        for block in self.h:
            attention = block.attn
            heads, dim = attention.num_heads, attention.head_dim
            normed = block.ln_1(state)
            _, key, read = attention.c_attn(normed).split(attention.split_size, dim=2)
            attention.sink_key = key.view(1, 1, heads, dim).transpose(1, 2)
            attention.sink_read = read.view(1, 1, heads, dim).transpose(1, 2)
            own, _ = attention.filtered(attention.sink_key, attention.sink_read)  # its only key: weight one on its own read
            own = attention.gated_output(normed, own)
            state = state + attention.c_proj(own.transpose(1, 2).reshape(1, 1, heads * dim))
            state = state + block.mlp(block.ln_2(state))

    def forward(self, *args, **kwargs):
        if self.sink_token is not None:
            self.set_sink_states()
        return GPT2Model.forward(self, *args, **kwargs)


class SinkgateForCausalLM(SinkgatePreTrainedModel, GPT2LMHeadModel):
    """GPT2LMHeadModel over SinkgateModel: the head tied to the token embedding; generate() and the
    key-value cache as GPT-2's."""

    def __init__(self, config):
        SinkgatePreTrainedModel.__init__(self, config)
        self.transformer = SinkgateModel(config)
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.post_init()


__all__ = ["SinkgateForCausalLM", "SinkgateModel", "SinkgatePreTrainedModel"]
