"""Replaces a generated block of a Markdown page: the lines between `<!-- section:NAME … -->`
and `<!-- /section:NAME -->`; the rest of the page is kept. Imported by the scripts that write
measured figures into the docs."""
import pathlib
import re
import sys


def write_section(page, name, lines):
    page = pathlib.Path(page)
    text = page.read_text()
    begin = re.search(rf"<!-- section:{name}[^>]*-->\n", text)
    end = text.find(f"<!-- /section:{name} -->")
    if not begin or end < begin.end():
        sys.exit(f"{page} has no section:{name} markers to write between")
    page.write_text(text[: begin.end()] + "\n".join(lines) + "\n" + text[end:])
    print("\n".join(lines))
