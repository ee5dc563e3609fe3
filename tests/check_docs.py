#!/usr/bin/env python3
"""check_docs.py — the manual's links resolve and the README stays the front door.

Checks README.md, CHANGELOG.md and every docs/**/*.md of the source tree:
  - every relative Markdown link, [text](path) or [text](path#anchor) (and a bare (#anchor) into
    the same page), names a file or folder that exists; where it has an anchor and the target is
    a Markdown file, the anchor is one of that file's headings, slugged as GitHub slugs them
    (lowercase; punctuation dropped except '-', '_' and spaces; spaces to '-'; a repeated
    heading gets -1, -2, …). Links inside code blocks and inline code are not links;
  - README.md is at most 25,000 bytes, and holds the two commands CI runs, verbatim;
  - no page cites an issue number ("issue 19"): the manual is reference, history goes to
    CHANGELOG.md.
Plain Python 3, no third-party package. Prints what it checked; exits 1 naming every failure.

Usage: python3 tests/check_docs.py [SOURCE_DIR]   (default: the folder above this script)
"""
import os
import re
import sys

README_LIMIT = 25_000
README_COMMANDS = [
    "./setup.sh && make -f Makefile.experiments -j 2 quick",
    "./setup.sh && ctest --test-dir build --output-on-failure -j 2",
]
ISSUE = re.compile(r"\bissue \d+", re.IGNORECASE)
# [text](target) with an optional "title"; images ![alt](src) too. Nested brackets in the text
# are rare in this manual; the text may hold backticks.
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
FENCE = re.compile(r"^\s*(```|~~~)")
INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1")


def pages(root):
    """The Markdown files checked, relative to root, in a stable order."""
    found = [name for name in ("README.md", "CHANGELOG.md") if os.path.isfile(os.path.join(root, name))]
    docs = os.path.join(root, "docs")
    for folder, subfolders, files in os.walk(docs):
        subfolders.sort()
        for name in sorted(files):
            if name.endswith(".md"):
                found.append(os.path.relpath(os.path.join(folder, name), root))
    return found


def prose_lines(text, blank_code=True):
    """(line number, line) of the lines outside fenced code blocks; inline code blanked unless
    blank_code is false (a heading's inline code is part of its anchor)."""
    inside = None
    for number, line in enumerate(text.splitlines(), 1):
        fence = FENCE.match(line)
        if fence:
            if inside is None:
                inside = fence.group(1)
            elif fence.group(1) == inside:
                inside = None
            continue
        if inside is None:
            yield number, INLINE_CODE.sub(lambda m: " " * len(m.group(0)), line) if blank_code else line


def slug(heading):
    """GitHub's anchor for a heading's text."""
    text = re.sub(r"<[^>]+>", "", heading)                        # inline HTML
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)         # links keep their text
    text = text.strip().lower()
    text = "".join(c for c in text if c.isalnum() or c in "-_ ")  # drops punctuation, backticks, emphasis
    return text.replace(" ", "-")


def anchors(path, cache={}):
    """The anchors of a Markdown file's headings."""
    if path not in cache:
        seen, result = {}, set()
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for _, line in prose_lines(text, blank_code=False):
            match = re.match(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$", line)
            if not match:
                continue
            base = slug(match.group(2))
            count = seen.get(base, 0)
            seen[base] = count + 1
            result.add(base if count == 0 else f"{base}-{count}")
        for name in re.findall(r"<a\s+(?:name|id)=\"([^\"]+)\"", text):
            result.add(name)
        cache[path] = result
    return cache[path]


def check_links(root, page, text, problems):
    """Every relative link of one page; returns how many were checked."""
    checked = 0
    here = os.path.dirname(os.path.join(root, page))
    for number, line in prose_lines(text):
        for match in LINK.finditer(line):
            target = match.group(1)
            if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target) or target.startswith("//"):
                continue  # https:, mailto:, …: not a file of this tree
            checked += 1
            path, _, anchor = target.partition("#")
            resolved = os.path.normpath(os.path.join(here, path)) if path else os.path.join(root, page)
            where = f"{page}:{number}: ({target})"
            if not os.path.exists(resolved):
                problems.append(f"{where}: no such file {os.path.relpath(resolved, root)}")
                continue
            if anchor and resolved.endswith(".md") and os.path.isfile(resolved):
                if anchor not in anchors(resolved):
                    problems.append(f"{where}: {os.path.relpath(resolved, root)} has no heading with the anchor #{anchor}")
    return checked


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
    problems = []
    total = 0
    checked_pages = pages(root)
    if "README.md" not in checked_pages:
        problems.append("README.md: missing")
    for page in checked_pages:
        with open(os.path.join(root, page), encoding="utf-8") as f:
            text = f.read()
        links = check_links(root, page, text, problems)
        total += links
        for number, line in enumerate(text.splitlines(), 1):
            if ISSUE.search(line):
                problems.append(f"{page}:{number}: cites an issue number ('{ISSUE.search(line).group(0)}'): "
                                "say what is true now; history goes to CHANGELOG.md")
        size = len(text.encode("utf-8"))
        print(f"check_docs: {page}: {size:,} bytes, {links} relative links")
    readme = os.path.join(root, "README.md")
    if os.path.isfile(readme):
        size = os.path.getsize(readme)
        if size > README_LIMIT:
            problems.append(f"README.md: {size:,} bytes, more than {README_LIMIT:,}: move reference material into docs/")
        with open(readme, encoding="utf-8") as f:
            text = f.read()
        for command in README_COMMANDS:
            if command not in text:
                problems.append(f"README.md: the command CI runs is missing or changed: {command}")
    print(f"check_docs: {len(checked_pages)} pages, {total} relative links, README.md within {README_LIMIT:,} bytes: "
          + ("ok" if not problems else f"{len(problems)} problem(s)"))
    for problem in problems:
        print(f"check_docs: error: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
