#!/usr/bin/env python3
"""function_length.py — no function in lib/ or cmd/ is longer than LIMIT lines, counted as a reader
counts them: from the line of the signature (where Universal Ctags places the function's name) to
its closing brace, both included. Lambdas count with the function that holds them; a function in a
class body counts like any other.

Usage: function_length.py SOURCE_DIR [--limit 80]
Prints the longest functions and every one over the limit; exits 1 when there is one.
"""
import json
import os
import subprocess
import sys

LIMIT = 80


def functions(root):
    """(length, path, name, first line) of every function defined in lib/ and cmd/."""
    files = []
    for top in ("lib", "cmd"):
        for folder, _, names in os.walk(os.path.join(root, top)):
            files += [os.path.join(folder, n) for n in names if n.endswith((".cpp", ".h", ".cu"))]
    result = subprocess.run(["ctags", "--output-format=json", "--fields=+ne", "--kinds-c++=f", "--language-force=c++",
                             "-o", "-", *sorted(files)], capture_output=True, text=True, check=True)
    found = []
    for line in result.stdout.splitlines():
        tag = json.loads(line)
        if tag.get("_type") != "tag" or tag.get("kind") != "function" or "end" not in tag:
            continue
        found.append((tag["end"] - tag["line"] + 1, os.path.relpath(tag["path"], root), tag["name"], tag["line"]))
    return found


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
    limit = int(sys.argv[sys.argv.index("--limit") + 1]) if "--limit" in sys.argv else LIMIT
    found = sorted(functions(root), reverse=True)
    if len(found) < 100:
        print(f"function_length: only {len(found)} functions found: is Universal Ctags' C++ parser working?")
        return 1
    for length, path, name, line in found[:5]:
        print(f"function_length: {length:4d} lines  {path}:{line} {name}")
    over = [f for f in found if f[0] > limit]
    for length, path, name, line in over:
        print(f"function_length: error: {path}:{line}: {name} is {length} lines, over {limit}: split it along its steps")
    print(f"function_length: {len(found)} functions in lib/ and cmd/, {len(over)} over {limit} lines")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
