#!/usr/bin/env python3
"""Fails when a relative link in a Markdown file of the repository points nowhere: a file that
does not exist, or a `#heading` that the file it names does not have (headings are matched as
GitHub turns them into anchors). Links to other sites are not followed. Run by scripts/test.sh.

    scripts/check-links.py      # every Markdown file git knows of
"""

import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote

ROOT = Path(__file__).resolve().parent.parent
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6} (.+?)\s*#*\s*$")


def markdown_files():
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "*.md"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout.split()
    return [ROOT / name for name in listed if (ROOT / name).exists()]


def prose_lines(path):
    """The file's lines outside fenced code blocks, with inline code blanked out."""
    fenced = False
    for number, line in enumerate(path.read_text().split("\n"), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if not fenced:
            yield number, re.sub(r"`[^`]*`", "", line)


def slug(heading):
    """A heading's anchor, as GitHub makes it."""
    text = re.sub(r"`([^`]*)`", r"\1", heading)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"[^\w\- ]", "", text.lower())
    return text.replace(" ", "-")


def anchors(path):
    seen, found = {}, set()
    fenced = False
    for line in path.read_text().split("\n"):
        if line.lstrip().startswith("```"):
            fenced = not fenced
        match = None if fenced else HEADING.match(line)
        if match:
            base = slug(match.group(1))
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f"{base}-{count}")
    return found


def broken_links(path):
    for number, line in prose_lines(path):
        for target in LINK.findall(line):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):
                continue  # another site, or mailto:
            file_part, _, anchor = target.partition("#")
            linked = (path.parent / unquote(file_part)).resolve() if file_part else path
            where = f"{path.relative_to(ROOT)}:{number}: {target}"
            if not linked.exists():
                yield f"{where}: no such file"
            elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
                yield f"{where}: no heading #{anchor} in {linked.relative_to(ROOT)}"


def main():
    problems = [problem for path in markdown_files() for problem in broken_links(path)]
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        sys.exit(f"{len(problems)} broken link(s) in the Markdown files")


if __name__ == "__main__":
    main()
