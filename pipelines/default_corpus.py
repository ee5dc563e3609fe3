"""The built-in default corpus, as Makefile.experiments defines it (DEFAULT_CORPUS), for the
Python scripts of pipelines/ and tests/: one definition for make, CMake and Python.

SINKGATE_TEST_CORPUS (set by ctest for every test: the corpus's tutorial/ folder) wins where a
script wants the tests' corpus.
"""
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def default_corpus():
    """The DEFAULT_CORPUS folder of Makefile.experiments."""
    with open(os.path.join(ROOT, "Makefile.experiments"), encoding="utf-8") as makefile:
        for line in makefile:
            match = re.match(r"^DEFAULT_CORPUS\s*\?=\s*(\S+)\s*$", line)
            if match:
                return match.group(1)
    raise SystemExit("Makefile.experiments defines no DEFAULT_CORPUS")


def test_corpus():
    """The folder the tests tokenise: $SINKGATE_TEST_CORPUS, else the default corpus's tutorial/."""
    return os.environ.get("SINKGATE_TEST_CORPUS") or os.path.join(default_corpus(), "tutorial")
