"""configuration_sinkgate.py — the configuration of a sinkgate model in a Hugging Face folder.

sg-export writes this file, unchanged, into every folder of an arm other than the baseline (the
baseline is a plain GPT-2 folder). A sinkgate model is GPT-2 with one attention module that has
three axes (docs/arms.md): a zero option (none, offbyone, sinklogit, sinktoken), a filter (none,
normgate, renorm, projgate, keygate) and an output gate (none, outgate, outgate-elem: Qiu et al.
2025); the paper's nine arms are named pairs of the first two. Every other GPT-2 field
keeps its meaning (sinkgate models use exact GELU, "gelu", no biases that are not zero, and no
dropout).

Written for transformers 5 (tested with 5.24); loaded with trust_remote_code=True.
"""
from transformers.models.gpt2.configuration_gpt2 import GPT2Config

ZERO_OPTIONS = ("none", "offbyone", "sinklogit", "sinktoken")
FILTERS = ("none", "normgate", "renorm", "projgate", "keygate")
OUTPUT_GATES = ("none", "outgate", "outgate-elem")


class SinkgateConfig(GPT2Config):
    """GPT2Config plus the attention arm: `arm` (its name, e.g. "combo2" or "sinktoken+projgate"),
    `zero_option`, `filter`, `output_gate` and `gate_beta` (the norm gate's fixed slope beta, 8 in
    the paper)."""

    model_type = "sinkgate"

    arm: str = "baseline"
    zero_option: str = "none"
    filter: str = "none"
    output_gate: str = "none"
    gate_beta: float = 8.0

    def validate_arm(self):
        """Refuses an arm this code does not compute (an export of a newer sinkgate, say)."""
        if self.zero_option not in ZERO_OPTIONS:
            raise ValueError(f"sinkgate: unknown zero_option {self.zero_option!r}; this modeling code knows "
                             f"{', '.join(ZERO_OPTIONS)} (export the run again with the sinkgate that trained it)")
        if self.filter not in FILTERS:
            raise ValueError(f"sinkgate: unknown filter {self.filter!r}; this modeling code knows "
                             f"{', '.join(FILTERS)} (export the run again with the sinkgate that trained it)")
        if self.output_gate not in OUTPUT_GATES:
            raise ValueError(f"sinkgate: unknown output_gate {self.output_gate!r}; this modeling code knows "
                             f"{', '.join(OUTPUT_GATES)} (export the run again with the sinkgate that trained it)")


__all__ = ["SinkgateConfig"]
