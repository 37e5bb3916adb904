#!/bin/bash
# Every relative link in README.md and docs/*.md points to a file that
# exists, and a link to a heading (`page.md#heading`, `#heading`) to a
# heading that page has (GitHub's anchors: lower case, punctuation dropped,
# spaces as '-', repeats numbered). Links inside code (fenced blocks,
# `inline code`) are text, not links; web links are not followed.
# usage: docs_links.sh SOURCE_DIR
set -u
python3 - "$1" <<'EOF'
import os
import re
import sys

src = sys.argv[1]
pages = [os.path.join(src, "README.md")] + sorted(
    os.path.join(src, "docs", f) for f in os.listdir(os.path.join(src, "docs")) if f.endswith(".md"))

LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
SRC_ATTR = re.compile(r"""<(?:img|a)\b[^>]*?\b(?:src|href)=["']([^"']+)["']""")


def prose(text, code=False):
    """The page without its fenced blocks, and without its inline code
    (with it, backticks dropped, when code)."""
    out, fence = [], None
    for ln in text.split("\n"):
        m = re.match(r"^ {0,3}(`{3,}|~{3,})", ln)
        if fence:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = None
            out.append("")
            continue
        if m:
            fence = m.group(1)
            out.append("")
            continue
        out.append(re.sub(r"(`+)(.+?)\1", r"\2" if code else "", ln))
    return out


def anchors(path):
    seen, out = {}, set()
    for ln in prose(open(path, encoding="utf-8").read(), code=True):
        m = re.match(r"^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$", ln)
        if not m:
            continue
        # the heading's text as GitHub renders it: code spans keep their text
        slug = m.group(1)
        slug = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", slug).lower()
        slug = re.sub(r"[^\w\- ]", "", slug).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


bad, n = [], 0
cache = {}
for page in pages:
    raw = open(page, encoding="utf-8").read()
    for lineno, ln in enumerate(prose(raw), 1):
        targets = LINK.findall(ln) + SRC_ATTR.findall(ln)
        for t in targets:
            if re.match(r"^[a-z][a-z0-9+.-]*:", t, re.I):  # http:, https:, mailto:
                continue
            n += 1
            path, _, frag = t.partition("#")
            where = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
            rel = os.path.relpath(page, src)
            if not os.path.exists(where):
                bad.append(f"{rel}:{lineno}: {t}: no such file")
                continue
            if frag and where.endswith(".md"):
                if where not in cache:
                    cache[where] = anchors(where)
                if frag.lower() not in cache[where]:
                    bad.append(f"{rel}:{lineno}: {t}: {os.path.relpath(where, src)} has no heading "
                               f"with anchor #{frag}")
for b in bad:
    print("FAIL:", b)
print(f"{n} relative links in {len(pages)} pages, {len(bad)} broken")
print(f"{0 if bad else 1} passed, {1 if bad else 0} failed")
sys.exit(1 if bad else 0)
EOF
