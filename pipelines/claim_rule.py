"""pipelines/claim_rule.py — the one rule by which every claim printer says that a comparison holds.

    from claim_rule import exceeds, within, verdict
    evidence = exceeds([0.21, 0.05], threshold=0.1)   # one difference per seed pair
    print(f"**{verdict(evidence)}** — {evidence.text()}")

A comparison claim predicts something of a paired difference: one difference per seed pair (the
same seed, two arms, rates or sets), oriented so that the claim predicts it positive.

- exceeds(differences, threshold): the claim "the difference is above the threshold" holds only
  when every pair agrees in sign (each difference above zero) and the mean difference exceeds the
  threshold by more than two standard errors of the differences (SE = sample standard deviation /
  √pairs).
- within(differences, tolerance): the claim "the two coincide" holds only when every pair is within
  the tolerance and the mean's magnitude is below it by more than two standard errors.

Anything else is "not shown", printed with its numbers: the mean, its SE, the pairs and how many
agree. One pair has no standard error, so one pair never shows a claim. Pairs with a non-finite
value are left out (and not counted). Used by pipelines/stability.py and pipelines/toy_claims.py;
tested by tests/claim_rule.py. It is not a significance test: two seeds that agree and stand two
standard errors clear are the least a printed "holds" needs, not a p-value.
"""
import math
from typing import NamedTuple

HOLDS, NOT_SHOWN, UNTESTED = "holds", "not shown", "untested"


class Evidence(NamedTuple):
    kind: str          # "exceeds" or "within"
    mean: float        # mean paired difference (NaN without pairs)
    se: float          # its standard error (NaN with fewer than two pairs)
    pairs: int         # seed pairs with finite values
    agree: int         # pairs that agree with the claim (above zero; within the tolerance)
    threshold: float   # the threshold (exceeds) or the tolerance (within)
    holds: bool

    def text(self, digits=4):
        """The numbers, e.g. "mean +0.1300, SE 0.0700 (2 pairs, 2 of 2 agree; threshold 0.1)"."""
        what = "threshold" if self.kind == "exceeds" else "tolerance"
        se = "no SE" if not math.isfinite(self.se) else f"SE {self.se:.{digits}f}"
        mean = "NaN" if not math.isfinite(self.mean) else f"{round(self.mean, digits) + 0.0:+.{digits}f}"
        return (f"mean {mean}, {se} ({self.pairs} pair{'' if self.pairs == 1 else 's'}, "
                f"{self.agree} of {self.pairs} agree; {what} {self.threshold:g})")


def mean_se(values):
    """(mean, standard error) of finite values; NaN where undefined."""
    values = [v for v in values if math.isfinite(v)]
    if not values:
        return math.nan, math.nan
    mean = sum(values) / len(values)
    if len(values) < 2:
        return mean, math.nan
    variance = sum((v - mean) ** 2 for v in values) / (len(values) - 1)
    return mean, math.sqrt(variance) / math.sqrt(len(values))


def exceeds(differences, threshold=0.0):
    """Evidence for "the paired difference is above `threshold`" (see the module comment)."""
    values = [d for d in differences if d is not None and math.isfinite(d)]
    mean, se = mean_se(values)
    agree = sum(d > 0 for d in values)
    holds = len(values) >= 2 and agree == len(values) and mean - threshold > 2 * se
    return Evidence("exceeds", mean, se, len(values), agree, threshold, holds)


def within(differences, tolerance):
    """Evidence for "the paired difference is within ±`tolerance`" (see the module comment)."""
    values = [d for d in differences if d is not None and math.isfinite(d)]
    mean, se = mean_se(values)
    agree = sum(abs(d) < tolerance for d in values)
    holds = len(values) >= 2 and agree == len(values) and tolerance - abs(mean) > 2 * se
    return Evidence("within", mean, se, len(values), agree, tolerance, holds)


def verdict(evidence):
    """"holds", "not shown", or "untested" (evidence None: the grid cannot test the claim)."""
    if evidence is None:
        return UNTESTED
    return HOLDS if (evidence.holds if isinstance(evidence, Evidence) else evidence) else NOT_SHOWN
