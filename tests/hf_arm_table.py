#!/usr/bin/env python3
"""hf_arm_table.py — checks pipelines/hf/ (the transformers code sg-export copies into its folders)
against sinkgate's arm table (lib/run/arm.h), which tests/run/test_arm_config.cpp writes as JSON.

Usage: hf_arm_table.py TABLE.json PIPELINES_HF_DIR

TABLE.json: {"axes": {"zero_option": [names], "filter": [...], "output_gate": [...]},
             "heads": H, "width": C, "layers": L, "gate_beta": beta,
             "arms": [{"arm": name, "zero_option": z, "filter": f, "output_gate": g,
                       "parameters": [{"name": export tensor name, "shape": [...],
                                       "init": "zeros"|"constant"|"minus_4_over_beta"|"normal",
                                       "value": v}]}]}

For every arm it builds SinkgateForCausalLM from a SinkgateConfig of that arm and compares the
parameters it has beyond those of the arm with no option (names and shapes) with the table's, and
their initial values with the table's initialisation; and the configuration's tuples of known
options with the table's axes. Prints "hf arm table: ok (N arms)" or raises.
"""
import importlib
import json
import os
import shutil
import sys
import tempfile

import torch


def load_package(folder):
    """pipelines/hf/ as a package (its modelling file imports the configuration relatively)."""
    root = tempfile.mkdtemp(prefix="sg-hf-arm-table-")
    package = os.path.join(root, "sinkgate_hf")
    os.mkdir(package)
    for name in ("configuration_sinkgate.py", "modeling_sinkgate.py"):
        shutil.copy(os.path.join(folder, name), package)
    open(os.path.join(package, "__init__.py"), "w").close()
    sys.path.insert(0, root)
    configuration = importlib.import_module("sinkgate_hf.configuration_sinkgate")
    modeling = importlib.import_module("sinkgate_hf.modeling_sinkgate")
    return root, configuration, modeling


def build(configuration, modeling, table, arm):
    config = configuration.SinkgateConfig(
        vocab_size=64, n_positions=16, n_embd=table["width"], n_layer=table["layers"], n_head=table["heads"],
        activation_function="gelu", resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, tie_word_embeddings=True,
        arm=arm["arm"], zero_option=arm["zero_option"], filter=arm["filter"], output_gate=arm["output_gate"],
        gate_beta=table["gate_beta"])
    torch.manual_seed(0)
    return modeling.SinkgateForCausalLM(config)


def check_init(name, tensor, parameter, beta):
    init, value = parameter["init"], parameter["value"]
    if init == "zeros":
        assert torch.all(tensor == 0), f"{name}: not zeros at init"
    elif init in ("constant", "minus_4_over_beta"):
        expected = value if init == "constant" else -4.0 / beta
        assert torch.allclose(tensor, torch.full_like(tensor, expected)), f"{name}: not {expected} at init"
    elif init == "normal":
        std = tensor.float().std().item()
        assert 0.5 * value < std < 1.5 * value, f"{name}: standard deviation {std}, the table's {value}"
    else:
        raise AssertionError(f"{name}: unknown initialisation {init}")


def main():
    with open(sys.argv[1]) as f:
        table = json.load(f)
    root, configuration, modeling = load_package(sys.argv[2])
    try:
        known = {"zero_option": configuration.ZERO_OPTIONS, "filter": configuration.FILTERS,
                 "output_gate": configuration.OUTPUT_GATES}
        for field, names in table["axes"].items():
            assert list(known[field]) == names, f"configuration_sinkgate.py knows {field} {known[field]}, the table {names}"
        plain = next(a for a in table["arms"] if not a["parameters"])
        base = {n for n, _ in build(configuration, modeling, table, plain).named_parameters()}
        for arm in table["arms"]:
            model = build(configuration, modeling, table, arm)
            own = {n: p for n, p in model.named_parameters() if n not in base}
            expected = {p["name"]: p for p in arm["parameters"]}
            assert set(own) == set(expected), f"{arm['arm']}: modeling_sinkgate.py has {sorted(own)}, the table {sorted(expected)}"
            for name, parameter in expected.items():
                assert list(own[name].shape) == parameter["shape"], \
                    f"{arm['arm']}: {name} of shape {list(own[name].shape)}, the table's {parameter['shape']}"
                check_init(f"{arm['arm']}: {name}", own[name].detach(), parameter, table["gate_beta"])
        print(f"hf arm table: ok ({len(table['arms'])} arms)")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
