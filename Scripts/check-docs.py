#!/usr/bin/env python3
"""Checks that every public declaration of the library modules has a `///` doc
comment: declarations marked `public` or `open` (SPI ones included), the cases of
a public enum, the requirements of a public protocol and the members of a
`public extension`. `public import` lines are not declarations. Attribute lines
and plain `//` comments between the doc comment and the declaration are allowed.

Also, with no FOLDER (or with --links alone), that every relative link of README.md,
CONTRIBUTING.md and docs/*.md resolves: the file or folder exists, and a `#fragment` names
a heading of the Markdown file it points to (GitHub's anchors).

Usage: python3 Scripts/check-docs.py [FOLDER...] | --links   (default: the library modules'
folders and the links; exit 1 when a declaration lacks a doc comment or a link is broken)
"""
import os, re, sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
DEFAULT_FOLDERS = ["Sources/ReachabilityCore", "Sources/Reachability", "Sources/Connectivity", "Sources/ConnectivityURLSession",
                   "Sources/ReachabilityCompat", "Sources/ReachabilityMetrics", "Sources/ReachabilityServiceLifecycle",
                   "Sources/ReachabilityTestKit", "Sources/ReachabilityObservable"]

# An attribute, its arguments may hold strings with parentheses (`renamed: "stop()"`).
ATTRIBUTE = r'@\w+(?:\((?:[^()"]|"(?:\\.|[^"\\])*"|\([^()]*\))*\))?\s+'
MODIFIER = (r"(?:public|open|package|internal|private|fileprivate|final|static|class|override|mutating|"
            r"nonmutating|nonisolated|convenience|required|indirect|lazy|weak|unowned|dynamic|optional|"
            r"prefix|postfix|infix|consuming|borrowing|distributed)(?:\(set\))?\s+")
KIND = r"(struct|enum|class|protocol|actor|typealias|extension|func|init|deinit|var|let|case|subscript|associatedtype)\b"
DECL = re.compile(rf"^\s*((?:{ATTRIBUTE})*)((?:{MODIFIER})*){KIND}")
ACCESS = re.compile(r"\b(public|open|package|internal|private|fileprivate)\b(?!\(set\))")
TYPE_KINDS = {"struct", "enum", "class", "protocol", "actor", "extension"}


def code_lines(text):
    """The lines with comments and string literals blanked (line count kept)."""
    out, i, n = [], 0, len(text)
    line = []
    state = None  # None, "block", "string", "multistring"
    depth = 0
    while i < n:
        c = text[i]
        if c == "\n":
            out.append("".join(line))
            line = []
            i += 1
            continue
        if state is None:
            if text.startswith("//", i):
                j = text.find("\n", i)
                i = n if j < 0 else j
                continue
            if text.startswith("/*", i):
                state, depth = "block", 1
                i += 2
                continue
            if text.startswith('"""', i):
                state = "multistring"
                line.append('""')
                i += 3
                continue
            if c == '"':
                state = "string"
                line.append('""')
                i += 1
                continue
            line.append(c)
            i += 1
        elif state == "block":
            if text.startswith("/*", i):
                depth += 1
                i += 2
            elif text.startswith("*/", i):
                depth -= 1
                i += 2
                if depth == 0:
                    state = None
            else:
                i += 1
        elif state == "string":
            if c == "\\":
                i += 2
            elif c == '"':
                state = None
                i += 1
            else:
                i += 1
        else:  # multistring
            if c == "\\":
                i += 2
            elif text.startswith('"""', i):
                state = None
                i += 3
            else:
                i += 1
    out.append("".join(line))
    return out


def documented(raw, index):
    """Whether the declaration on line `index` has a doc comment above it."""
    j = index - 1
    while j >= 0:
        line = raw[j].strip()
        if line.startswith("///"):
            return True
        if line.endswith("*/"):  # A block comment: a doc comment when it opens with "/**".
            while j >= 0 and "/*" not in raw[j]:
                j -= 1
            return j >= 0 and "/**" in raw[j]
        attribute_only = line.startswith("@") and not re.sub(rf"^(?:{ATTRIBUTE})*", "", line + " ").strip()
        if attribute_only or line.startswith("//"):
            j -= 1
            continue
        return False
    return False


def check(path):
    raw = open(path, encoding="utf-8").read().split("\n")
    code = code_lines("\n".join(raw))
    missing = []
    scopes = []  # one entry per open brace: (kind, public, spi)
    pending = None  # the scope the next "{" opens
    for index, line in enumerate(code):
        match = DECL.match(line)
        if match and not re.match(r"^\s*(public|package|internal)\s+import\b", line):
            attributes, modifiers, kind = match.group(1), match.group(2), match.group(3)
            access = ACCESS.search(modifiers)
            explicit = access.group(1) if access else None
            top = scopes[-1] if scopes else ("file", False, False)
            if explicit in ("public", "open"):
                is_public = True
            elif explicit is not None:
                is_public = False
            elif top[0] == "enum" and kind == "case":
                is_public = top[1]
            elif top[0] == "protocol":
                is_public = top[1]
            elif top[0] == "extension":
                is_public = top[1]
            else:
                is_public = False
            spi = "@_spi" in attributes or top[2]
            if top[0] not in ("file", "enum", "struct", "class", "actor", "protocol", "extension"):
                is_public = is_public and explicit in ("public", "open")  # Inside a body: locals.
            if is_public and kind != "deinit" and not (kind == "extension") and not documented(raw, index):
                missing.append((index + 1, raw[index].strip()))
            if kind in TYPE_KINDS:
                public_scope = explicit in ("public", "open") or (kind != "extension" and is_public)
                pending = (kind, public_scope, spi)
            else:
                pending = ("body", False, spi)
        for c in line:
            if c == "{":
                scopes.append(pending or ("body", False, scopes[-1][2] if scopes else False))
                pending = None
            elif c == "}":
                if scopes:
                    scopes.pop()
    return missing


LINKED_DOCUMENTS = ["README.md", "CONTRIBUTING.md", "docs"]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def anchors(path):
    """GitHub's anchors for the headings of a Markdown file: lower case, punctuation
    dropped, spaces as hyphens, repeats numbered."""
    found, seen, fenced = set(), {}, False
    for line in open(path, encoding="utf-8"):
        if line.startswith("```"):
            fenced = not fenced
        if fenced or not re.match(r"#{1,6} ", line):
            continue
        slug = re.sub(r"[^\w\- ]", "", line.lstrip("#").strip().lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def broken_links():
    """(file, line, link) for each relative link that doesn't resolve."""
    documents = []
    for entry in LINKED_DOCUMENTS:
        path = os.path.join(ROOT, entry)
        if os.path.isdir(path):
            documents += sorted(os.path.join(path, name) for name in os.listdir(path) if name.endswith(".md"))
        else:
            documents.append(path)
    broken = []
    for document in documents:
        fenced = False
        for number, line in enumerate(open(document, encoding="utf-8"), 1):
            if line.startswith("```"):
                fenced = not fenced
            if fenced:
                continue
            for link in LINK.findall(re.sub(r"`[^`]*`", "", line)):
                if re.match(r"[a-z][a-z0-9+.-]*:", link):
                    continue  # https:, mailto:: not checked here (no network)
                target, _, fragment = link.partition("#")
                path = os.path.normpath(os.path.join(os.path.dirname(document), target)) if target else document
                if not os.path.exists(path) or (fragment and (not path.endswith(".md") or fragment not in anchors(path))):
                    broken.append((os.path.relpath(document, ROOT), number, link))
    return broken


def main():
    if sys.argv[1:] == ["--links"] or not sys.argv[1:]:
        broken = broken_links()
        for document, number, link in broken:
            print(f"check-docs: {document}:{number}: the link {link} does not resolve")
        if broken:
            print(f"check-docs: {len(broken)} relative link(s) that don't resolve", file=sys.stderr)
            sys.exit(1)
        if sys.argv[1:]:
            return
    folders = sys.argv[1:] or DEFAULT_FOLDERS
    failures = 0
    for folder in folders:
        base = os.path.join(ROOT, folder)
        for directory, _, names in sorted(os.walk(base)):
            for name in sorted(names):
                if not name.endswith(".swift"):
                    continue
                path = os.path.join(directory, name)
                for number, text in check(path):
                    failures += 1
                    print(f"check-docs: {os.path.relpath(path, ROOT)}:{number}: no doc comment: {text}")
    if failures:
        print(f"check-docs: {failures} public declaration(s) without a /// doc comment", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
