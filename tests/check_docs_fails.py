#!/usr/bin/env python3
"""check_docs_fails.py — tests/check_docs.py fails, naming the fault, on a deliberately short
option list (marked or not), a marked list with a name too many, a stale time or ratio (anywhere
in the log, or in the section its link names), a marker that Markdown would print raw and an sh
block that writes into a folder it does not make, and passes on the pages as they are.

Each case runs check_docs.py on a scratch copy of the source tree: README.md and docs/ copied,
every other top-level entry a symbolic link to the source, one page edited. Plain Python 3.

Usage: python3 tests/check_docs_fails.py SOURCE_DIR BIN_DIR SCRATCH_DIR
       (BIN_DIR: the build's tools, option_tables among them)
"""
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def scratch_tree(source, scratch):
    """A copy of the source tree that check_docs.py reads; returns its root."""
    root = os.path.join(scratch, "tree")
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)
    for name in os.listdir(source):
        if name in ("README.md", "docs"):
            continue
        os.symlink(os.path.join(source, name), os.path.join(root, name))
    shutil.copy(os.path.join(source, "README.md"), root)
    shutil.copytree(os.path.join(source, "docs"), os.path.join(root, "docs"))
    return root


def run(root, bin_dir):
    result = subprocess.run([sys.executable, os.path.join(HERE, "check_docs.py"), "--bin", bin_dir, root],
                            capture_output=True, text=True)
    return result.returncode, result.stdout + result.stderr


def drop_a_marked_name(root):
    """Removes the last name of the first marked list of docs/tools.md; returns (table, name)."""
    path = os.path.join(root, "docs", "tools.md")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    match = re.search(r"<!--\s*list:\s*([a-z0-9-]+)\s*-->(.*?)<!--\s*/list\s*-->", text, re.S)
    if not match:
        sys.exit("check_docs_fails: docs/tools.md has no marked list to shorten")
    names = list(re.finditer(r"`([^`\s]+)`", match.group(2)))
    last = names[-1]
    begin, end = match.start(2) + last.start(), match.start(2) + last.end()
    with open(path, "w", encoding="utf-8") as f:
        f.write(text[:begin] + text[end:])
    return match.group(1), last.group(1)


def append(root, page, text):
    with open(os.path.join(root, page), "a", encoding="utf-8") as f:
        f.write("\n" + text + "\n")


def main():
    source, bin_dir, scratch = (os.path.abspath(argument) for argument in sys.argv[1:4])
    tiers = subprocess.run([os.path.join(bin_dir, "option_tables")], capture_output=True, text=True, check=True).stdout
    tiers = next(line.split(":", 1)[1].split() for line in tiers.splitlines() if line.startswith("tiers:"))
    cases = []

    def short_marked_list(root):
        table, name = drop_a_marked_name(root)
        return f"the list of {table} lacks `{name}`"
    cases.append(("a marked list one name short", short_marked_list))

    def long_marked_list(root):
        path = os.path.join(root, "docs", "tools.md")
        with open(path, encoding="utf-8") as f:
            text = f.read()
        match = re.search(r"<!--\s*list:\s*([a-z0-9-]+)\s*-->", text)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text[:match.end()] + "`no-such-name`, " + text[match.end():])
        return f"the list of {match.group(1)} names `no-such-name`, which is not in the table"
    cases.append(("a marked list with a name the table lacks", long_marked_list))

    def short_unmarked_list(root):
        append(root, "docs/tools.md", "The tiers are " + ", ".join(f"`{t}`" for t in tiers[:-1]) + ".")
        return f"names {len(tiers) - 1} of the {len(tiers)} tiers ({tiers[-1]} not)"
    cases.append(("an unmarked list of the tiers one short", short_unmarked_list))

    def stale_figure(root):
        append(root, "docs/performance.md", "A step of the loss ran 7.77 times as fast, in 4 min 59 s.")
        return "'7.77 times as fast' is not in docs/measurements.md"
    cases.append(("a speed ratio the log does not have", stale_figure))

    def stale_time(root):
        append(root, "docs/performance.md", "A step of the loss ran in 4 min 59 s.")
        return "'4 min 59 s' is not in docs/measurements.md"
    cases.append(("a time the log does not have", stale_time))

    def stale_linked_figure(root):
        append(root, "docs/stability.md", "It took [33 minutes](measurements.md#the-tools-one-at-a-time).")
        return "'33 minutes' is not in the log's section #the-tools-one-at-a-time"
    cases.append(("a linked time its section does not have", stale_linked_figure))

    def marker_beginning_a_line(root):
        append(root, "docs/tools.md", "<!-- subset: tiers -->The quick tier `quick`.")
        return "a line that begins with an HTML comment is an HTML block to Markdown"
    cases.append(("a marker that begins a line of text", marker_beginning_a_line))

    def missing_folder(root):
        append(root, "docs/data.md", "```sh\nbuild/bin/sg-info data/x.h5 > nowhere-made/info.txt\n```")
        return "writes nowhere-made/info.txt into nowhere-made/"
    cases.append(("an sh block writing into a folder it does not make", missing_folder))

    failures = 0
    code, output = run(scratch_tree(source, scratch), bin_dir)
    if code != 0:
        print(f"check_docs_fails: the pages as they are do not pass:\n{output}")
        failures += 1
    for what, edit in cases:
        root = scratch_tree(source, scratch)
        expected = edit(root)
        code, output = run(root, bin_dir)
        if code == 1 and expected in output:
            print(f"check_docs_fails: {what}: fails as it should: "
                  + next(line for line in output.splitlines() if expected in line))
        else:
            print(f"check_docs_fails: {what}: expected exit 1 and '{expected}', got exit {code}:\n{output}")
            failures += 1
    shutil.rmtree(os.path.join(scratch, "tree"), ignore_errors=True)
    print("check_docs_fails: ok" if not failures else f"check_docs_fails: {failures} case(s) wrong")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
