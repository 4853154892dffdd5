#!/usr/bin/env python3
"""Every relative link in README.md and docs/*.md leads to a file that exists, and an #anchor to a heading in it.

check_links.py REPO_DIR: prints each broken link as FILE:LINE: TARGET: WHY and exits 1, else prints the count.
"""
import os
import re
import sys

LINK = re.compile(r"\]\(([^)\s]+)\)")


def slug(heading):
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip()).lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def lines_outside_code(path):
    fenced = False
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if line.lstrip().startswith("```"):
                fenced = not fenced
                continue
            if fenced or line.startswith("    "):
                continue
            yield number, line


def anchors(path):
    found, seen = set(), {}
    for _, line in lines_outside_code(path):
        m = re.match(r"#{1,6} (.*)", line)
        if not m:
            continue
        base = slug(m.group(1))
        n = seen.get(base, 0)
        seen[base] = n + 1
        found.add(base if n == 0 else f"{base}-{n}")
    return found


def main():
    repo = sys.argv[1]
    pages = [os.path.join(repo, "README.md")]
    docs = os.path.join(repo, "docs")
    pages += sorted(os.path.join(docs, name) for name in os.listdir(docs) if name.endswith(".md"))
    broken, checked = [], 0
    for page in pages:
        for number, line in lines_outside_code(page):
            # Inline code is not a link.
            for target in LINK.findall(re.sub(r"`[^`]*`", "", line)):
                if re.match(r"[a-z]+:", target):
                    continue
                checked += 1
                file_part, _, anchor = target.partition("#")
                dest = page if not file_part else os.path.normpath(os.path.join(os.path.dirname(page), file_part))
                where = f"{os.path.relpath(page, repo)}:{number}: {target}"
                if not os.path.exists(dest):
                    broken.append(f"{where}: no such file")
                elif anchor and dest.endswith(".md") and anchor not in anchors(dest):
                    broken.append(f"{where}: no heading with that anchor")
    for b in broken:
        print(b, file=sys.stderr)
    if broken:
        return 1
    print(f"{checked} relative links resolve")
    return 0


if __name__ == "__main__":
    sys.exit(main())
