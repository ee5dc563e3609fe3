#!/usr/bin/env python3
"""tests/claim_rule.py — pipelines/claim_rule.py on hand-made seed-pair tables, against numbers worked
out by hand here.

    python3 tests/claim_rule.py pipelines/claim_rule.py

Each table is one paired difference per seed pair, oriented so that the claim predicts it positive:

- noise only: +0.30, -0.25, +0.20, -0.15 -> mean +0.025, SD 0.2661, SE 0.1331; two of four agree:
  not shown (nor would a comparison of the means show it: 0.025 < 0.1);
- means pass, one pair disagrees: +0.50, +0.50, +0.50, -0.01 -> mean 0.3725, SE 0.1275; the mean
  clears the 0.1 threshold by 0.2725 > 2 SE = 0.2550, but the fourth pair has the other sign: not
  shown;
- a true effect: +0.40, +0.45, +0.50, +0.55 -> mean 0.475, SE 0.0323; 0.375 > 0.0645: holds;
- one pair: +5.0 -> no standard error: not shown;
- within 0.02: +0.001, -0.002, +0.001 -> mean 0, SE 0.0010: holds; +0.014, +0.019 (mean 0.0165,
  SE 0.0025): both within, but 0.0035 < 2 SE = 0.005: not shown.
"""
import importlib.util
import math
import sys


def fail(what, got):
    print(f"FAIL: {what}: {got}")
    sys.exit(1)


def main():
    spec = importlib.util.spec_from_file_location("claim_rule", sys.argv[1])
    rule = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(rule)

    cases = [
        ("noise only", rule.exceeds([0.30, -0.25, 0.20, -0.15], 0.1), False, 0.025, 0.1331, 4, 2,
         "mean +0.0250, SE 0.1331 (4 pairs, 2 of 4 agree; threshold 0.1)"),
        ("means pass, one pair disagrees", rule.exceeds([0.50, 0.50, 0.50, -0.01], 0.1), False, 0.3725, 0.1275, 4, 3,
         "mean +0.3725, SE 0.1275 (4 pairs, 3 of 4 agree; threshold 0.1)"),
        ("a true effect", rule.exceeds([0.40, 0.45, 0.50, 0.55], 0.1), True, 0.475, 0.0323, 4, 4,
         "mean +0.4750, SE 0.0323 (4 pairs, 4 of 4 agree; threshold 0.1)"),
        ("one pair", rule.exceeds([5.0, math.nan]), False, 5.0, math.nan, 1, 1,
         "mean +5.0000, no SE (1 pair, 1 of 1 agree; threshold 0)"),
        ("within, a match", rule.within([0.001, -0.002, 0.001], 0.02), True, 0.0, 0.0010, 3, 3,
         "mean +0.0000, SE 0.0010 (3 pairs, 3 of 3 agree; tolerance 0.02)"),
        ("within, too close to the tolerance", rule.within([0.014, 0.019], 0.02), False, 0.0165, 0.0025, 2, 2,
         "mean +0.0165, SE 0.0025 (2 pairs, 2 of 2 agree; tolerance 0.02)"),
    ]
    for what, evidence, holds, mean, se, pairs, agree, text in cases:
        if evidence.holds != holds:
            fail(f"{what}: holds", evidence)
        if abs(evidence.mean - mean) > 1e-9 or (math.isnan(se) != math.isnan(evidence.se)) or \
                (not math.isnan(se) and abs(evidence.se - se) > 5e-5):
            fail(f"{what}: mean and SE", evidence)
        if (evidence.pairs, evidence.agree) != (pairs, agree):
            fail(f"{what}: pairs and agreeing pairs", evidence)
        if evidence.text() != text:
            fail(f"{what}: text", evidence.text())
        expected = "holds" if holds else "not shown"
        if rule.verdict(evidence) != expected:
            fail(f"{what}: verdict", rule.verdict(evidence))
    if rule.verdict(None) != "untested" or rule.verdict(False) != "not shown" or rule.verdict(True) != "holds":
        fail("verdict of None / False / True", (rule.verdict(None), rule.verdict(False), rule.verdict(True)))
    print("claim rule: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
