#!/usr/bin/env python3
"""check_docs.py — the manual's links resolve, its figures agree with the measurements log, and
the README stays the front door.

Checks README.md, CHANGELOG.md and every docs/**/*.md of the source tree:
  - every relative Markdown link, [text](path) or [text](path#anchor) (and a bare (#anchor) into
    the same page), names a file or folder that exists; where it has an anchor and the target is
    a Markdown file, the anchor is one of that file's headings, slugged as GitHub slugs them
    (lowercase; punctuation dropped except '-', '_' and spaces; spaces to '-'; a repeated
    heading gets -1, -2, …). Links inside code blocks and inline code are not links;
  - README.md is at most 25,000 bytes, and holds the two commands CI runs, verbatim;
  - no page cites an issue number ("issue 19"): the manual is reference, history goes to
    CHANGELOG.md;
  - no docs page is over 15,000 bytes, except the measurements log (docs/measurements.md);
  - the main job's and the test suite's times quoted anywhere agree with the newest row of the
    log's tables "The main job" and "The test suite" (the first row under each heading): a link
    into one of those tables whose text is a time ("9 min 47 s", "about 10 minutes") must give
    that row's time, exactly or rounded to whole minutes; and a line that speaks of the main job
    or the test suite may quote a time only inside such a link;
  - CHANGELOG.md has at most one section of each kind (Added, Changed, …) per release;
  - every variable the make files set with `?=` (Makefile.experiments, pipelines/*.mk) is named
    in docs/make.md, in backticks, by itself or by a family `PREFIX_<tier>` / `PREFIX_*`;
  - every `sh` code block that writes a file with `-o PATH` into a folder creates that folder
    first (`mkdir -p` of it or a folder under it, earlier in the block) or writes into a folder
    the source tree has (build/ counts), since the tools refuse a missing folder;
  - docs/gpu.md's account of what has been verified on a GPU names every commit of the log's
    newest GPU rows (the "gpu_check.sh" table's newest date, the "Training throughput" run), so
    that a new GPU measurement cannot be logged without the page saying what it verified.
Plain Python 3, no third-party package. Prints what it checked; exits 1 naming every failure.

Usage: python3 tests/check_docs.py [SOURCE_DIR]   (default: the folder above this script)
"""
import os
import re
import sys

README_LIMIT = 25_000
PAGE_LIMIT = 15_000
LOG = "docs/measurements.md"
# The log's tables whose newest row every quoted figure must agree with: anchor -> what it times.
LOGGED_TIMES = {"the-main-job": "the main job", "the-test-suite": "the test suite"}
# A time as the manual writes it: "9 min 47 s", "10 min 0 s", "about 10 minutes", "75 s".
TIME = re.compile(r"(?:about )?(\d+) min(?:utes)?(?: (\d+) s)?|(\d+) s\b")
# A line speaking of the main job or of the test suite (not of "quick" in general).
SPEAKS_OF = {"the-main-job": re.compile(r"main job", re.IGNORECASE),
             "the-test-suite": re.compile(r"test suite|the suite(?:'s time| takes| took| runs in| ran in)", re.IGNORECASE)}
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


def log_times(root, problems):
    """The newest time of each table of LOGGED_TIMES in the measurements log, in seconds: the
    'time' column of the first row under the table's heading."""
    path = os.path.join(root, LOG)
    if not os.path.isfile(path):
        problems.append(f"{LOG}: missing")
        return {}
    with open(path, encoding="utf-8") as f:
        text = f.read()
    newest, heading, header = {}, None, None
    for _, line in prose_lines(text, blank_code=False):
        match = re.match(r"^##\s+(.*?)\s*$", line)
        if match:
            heading, header = slug(match.group(1)), None
            continue
        if heading not in LOGGED_TIMES or heading in newest or not line.startswith("|"):
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if header is None:
            header = cells
        elif not all(re.fullmatch(r":?-+:?", cell) for cell in cells):
            if "time" not in header or len(cells) != len(header):
                problems.append(f"{LOG}: the table under #{heading} needs a 'time' column in every row")
                newest[heading] = None
                continue
            seconds = parse_time(cells[header.index("time")])
            if seconds is None:
                problems.append(f"{LOG}: #{heading}: the newest row's time '{cells[header.index('time')]}' does not parse")
            newest[heading] = seconds
    for anchor in LOGGED_TIMES:
        if anchor not in newest:
            problems.append(f"{LOG}: no table under a heading with the anchor #{anchor}")
    return {anchor: seconds for anchor, seconds in newest.items() if seconds is not None}


def parse_time(text):
    """Seconds of a time written as the manual writes it, or None."""
    match = TIME.fullmatch(text.strip())
    if not match:
        return None
    if match.group(3):
        return int(match.group(3))
    return int(match.group(1)) * 60 + int(match.group(2) or 0)


def agrees(quoted, seconds):
    """Whether a quoted time (text) agrees with the log's time: the same to the second when it
    gives seconds, else the same in whole minutes (rounded)."""
    match = TIME.fullmatch(quoted.strip())
    if not match:
        return False
    if match.group(3) or match.group(2):
        return parse_time(quoted) == seconds
    return int(match.group(1)) == round(seconds / 60)


def show(seconds):
    return f"{seconds // 60} min {seconds % 60} s (about {round(seconds / 60)} minutes)"


def check_times(page, text, newest, problems):
    """The main job's and the test suite's times quoted on one page against the log's newest rows;
    returns how many quotes were checked."""
    checked = 0
    for number, line in prose_lines(text):
        linked = []
        for match in LINK.finditer(line):
            path, _, anchor = match.group(1).partition("#")
            if not path.endswith("measurements.md") or anchor not in LOGGED_TIMES:
                continue
            linked.append(match.span())
            label = re.match(r"!?\[(.*)\]", match.group(0)).group(1)
            if not TIME.search(label) or anchor not in newest:
                continue
            checked += 1
            if not agrees(label, newest[anchor]):
                problems.append(f"{page}:{number}: '{label}' for {LOGGED_TIMES[anchor]}, where the newest row of "
                                f"{LOG}#{anchor} says {show(newest[anchor])}")
        outside = line
        for begin, end in reversed(linked):
            outside = outside[:begin] + " " * (end - begin) + outside[end:]
        for anchor, speaks in SPEAKS_OF.items():
            if not speaks.search(outside):
                continue
            stray = TIME.search(outside) or re.search(r"main job's \d+", outside)
            if stray:
                problems.append(f"{page}:{number}: a time ('{stray.group(0)}') beside {LOGGED_TIMES[anchor]} that does not "
                                f"come from the log: link it to {LOG}#{anchor}")
    return checked


def check_changelog(text, problems):
    """At most one section of each kind (### Added, …) per release (## [version])."""
    release, seen = None, set()
    for number, line in prose_lines(text, blank_code=False):
        if re.match(r"^##\s", line):
            release, seen = line[3:].strip(), set()
        elif re.match(r"^###\s", line) and release is not None:
            kind = line[4:].strip()
            if kind in seen:
                problems.append(f"CHANGELOG.md:{number}: a second '### {kind}' in {release}: one section of each kind "
                                "per release")
            seen.add(kind)


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


GPU_PAGE = "docs/gpu.md"
GPU_STATUS = "6. What has been verified on a GPU"
COMMIT = re.compile(r"\b[0-9a-f]{7,40}\b")


def section(text, heading):
    """The lines under a heading (any level) up to the next heading of the same or a higher level."""
    lines, inside, level = [], False, 0
    for line in text.splitlines():
        match = re.match(r"^(#+)\s+(.*?)\s*$", line)
        if match and inside and len(match.group(1)) <= level:
            break
        if match and match.group(2) == heading:
            inside, level = True, len(match.group(1))
            continue
        if inside:
            lines.append(line)
    return "\n".join(lines)


def check_gpu_status(root, problems):
    """The commits of the log's newest GPU measurements appear in docs/gpu.md's verification section."""
    log_path, page_path = os.path.join(root, LOG), os.path.join(root, GPU_PAGE)
    if not (os.path.isfile(log_path) and os.path.isfile(page_path)):
        return 0
    with open(log_path, encoding="utf-8") as f:
        log = f.read()
    with open(page_path, encoding="utf-8") as f:
        status = section(f.read(), GPU_STATUS)
    if not status:
        problems.append(f"{GPU_PAGE}: no section '{GPU_STATUS}'")
        return 0
    rows = [[c.strip() for c in line.strip().strip("|").split("|")] for line in section(log, "gpu_check.sh").splitlines()
            if line.startswith("|") and re.match(r"\|\s*\d{4}-\d{2}-\d{2}", line)]
    newest = max((row[0] for row in rows), default=None)
    commits = {c for row in rows if row[0] == newest for c in COMMIT.findall(row[2])}
    commits |= set(COMMIT.findall(section(log, "Training throughput").split("\n\n")[0]))
    for commit in sorted(commits):
        if commit not in status:
            problems.append(f"{GPU_PAGE}: '{GPU_STATUS}' does not name commit {commit}, which the log's newest GPU "
                            "measurements ran: say what it verified and what changed since")
    return len(commits)


MAKE_VARIABLE = re.compile(r"^([A-Z][A-Z0-9_]*)\s*\?=")
QUOTED_VARIABLE = re.compile(r"`([A-Z][A-Z0-9_]*)(<[a-z]+>|\*)?`")


def check_make_variables(root, problems):
    """Every `NAME ?=` of the make files is named in docs/make.md; returns how many were checked."""
    files = ["Makefile.experiments"] + sorted(
        os.path.join("pipelines", name) for name in os.listdir(os.path.join(root, "pipelines")) if name.endswith(".mk"))
    variables = {}
    for name in files:
        path = os.path.join(root, name)
        if not os.path.isfile(path):
            continue
        with open(path, encoding="utf-8") as f:
            for line in f:
                match = MAKE_VARIABLE.match(line)
                if match:
                    variables.setdefault(match.group(1), name)
    with open(os.path.join(root, "docs", "make.md"), encoding="utf-8") as f:
        page = f.read()
    named = {m.group(1) for m in QUOTED_VARIABLE.finditer(page) if not m.group(2)}
    families = {m.group(1) for m in QUOTED_VARIABLE.finditer(page) if m.group(2)}
    for variable, where in variables.items():
        if variable not in named and not any(variable.startswith(f) and variable != f for f in families):
            problems.append(f"docs/make.md: the variable {variable} ({where}) is not in its table")
    return len(variables)


SH_FENCE = re.compile(r"^\s*```(sh|bash|shell)\s*$")
OUTPUT = re.compile(r"(?:^|\s)(?:-o|--output)[ =]([^\s;|&)]+)")
MKDIR = re.compile(r"\bmkdir\s+-p\s+([^;|&]+)")


def check_output_folders(root, page, text, problems):
    """Each sh block's `-o DIR/FILE` has DIR made earlier in the block or present in the tree."""
    writes = 0
    inside, made, lines = False, set(), text.splitlines()
    for number, line in enumerate(lines, 1):
        if not inside:
            inside = bool(SH_FENCE.match(line))
            made = set()
            continue
        if FENCE.match(line):
            inside = False
            continue
        command = line.split("#", 1)[0] if not line.lstrip().startswith("#") else ""
        for match in MKDIR.finditer(command):
            for folder in match.group(1).split():
                folder = folder.strip("'\"").rstrip("/")
                while folder and folder != ".":
                    made.add(folder)
                    folder = os.path.dirname(folder)
        for match in OUTPUT.finditer(command):
            target = match.group(1).strip("'\"")
            folder = os.path.dirname(target.rstrip("/"))
            if target == "-" or not folder or "$" in target or target.startswith(("/tmp", "~", "<")):
                continue
            writes += 1
            top = folder.split("/")[0]
            if folder in made or os.path.isdir(os.path.join(root, folder)) or top == "build":
                continue
            problems.append(f"{page}:{number}: writes {target} into {folder}/, which the block does not create "
                            f"(add mkdir -p {folder} before it): the tools refuse a missing folder")
    return writes


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
    problems = []
    total = 0
    quotes = 0
    writes = 0
    newest = log_times(root, problems)
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
        if page.startswith("docs" + os.sep) and page != os.path.normpath(LOG) and size > PAGE_LIMIT:
            problems.append(f"{page}: {size:,} bytes, more than {PAGE_LIMIT:,}: split the page or move "
                            "measurements to the log")
        if page != os.path.normpath(LOG) and page != "CHANGELOG.md":
            quotes += check_times(page, text, newest, problems)
        if page == "CHANGELOG.md":
            check_changelog(text, problems)
        else:
            writes += check_output_folders(root, page, text, problems)
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
    variables = check_make_variables(root, problems)
    print(f"check_docs: docs/make.md names all {variables} variables of the make files; {writes} `-o` writes in sh blocks")
    gpu_commits = check_gpu_status(root, problems)
    print(f"check_docs: {GPU_PAGE}: the log's newest GPU measurements ran {gpu_commits} commit(s)")
    for anchor, seconds in newest.items():
        print(f"check_docs: {LOGGED_TIMES[anchor]}, the log's newest row: {show(seconds)}")
    print(f"check_docs: {len(checked_pages)} pages, {total} relative links, {quotes} quoted times, README.md within "
          f"{README_LIMIT:,} bytes, pages within {PAGE_LIMIT:,}: " + ("ok" if not problems else f"{len(problems)} problem(s)"))
    for problem in problems:
        print(f"check_docs: error: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
