#!/usr/bin/env python3
"""Finishes the man pages swift-argument-parser's generate-manual wrote (`make man`).

    python3 Scripts/finish-man-pages.py DIRECTORY

- A blank line inside a page (the generator's paragraph break) becomes `.Pp`: groff's
  mdoc warns "Empty input line" for each, and `man --warnings` (CI) fails on any warning.
- `reachability.help.1` goes: `help` is argument-parser's own subcommand, and its page
  says nothing the others don't. The SEE ALSO lists lose it.
- `reachability.1` gets a COMMANDS section: each subcommand with its one-line summary
  (the `.Nd` of its page), where a reader of the top-level page looks for them.
Idempotent: running it twice changes nothing more.
"""
import os
import re
import sys


def summary(page_text):
    match = re.search(r'^\.Nd "?(.*?)"?$', page_text, re.M)
    return match.group(1) if match else ""


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    folder = sys.argv[1]
    help_page = os.path.join(folder, "reachability.help.1")
    if os.path.exists(help_page):
        os.remove(help_page)
    pages = sorted(name for name in os.listdir(folder) if name.endswith(".1"))
    if "reachability.1" not in pages:
        sys.exit(f"finish-man-pages: no reachability.1 in {folder}")
    texts = {}
    for name in pages:
        with open(os.path.join(folder, name), encoding="utf-8") as page:
            text = page.read()
        lines = []
        for line in text.split("\n"):
            if re.match(r"^\.Xr reachability\.help 1", line):
                continue
            lines.append(".Pp" if line.strip() == "" else line)
        # The file's final newline, not a blank line.
        while lines and lines[-1] == ".Pp":
            lines.pop()
        # The SEE ALSO list ends without a comma once its last entry is gone.
        for index in range(len(lines) - 1, -1, -1):
            if lines[index].startswith(".Xr "):
                lines[index] = re.sub(r" ,$", "", lines[index])
                break
        texts[name] = "\n".join(lines) + "\n"
    top = texts["reachability.1"]
    if ".Sh COMMANDS" not in top:
        entries = [".Sh COMMANDS", ".Bl -tag -width 11n"]
        for name in pages:
            if name == "reachability.1":
                continue
            command = name[len("reachability."):-len(".1")]
            entries += [f".It Cm {command}", summary(texts[name]), f".Xr reachability.{command} 1"]
        entries.append(".El")
        top = top.replace('.Sh "EXIT STATUS"', "\n".join(entries) + '\n.Sh "EXIT STATUS"', 1)
        texts["reachability.1"] = top
    for name, text in texts.items():
        with open(os.path.join(folder, name), "w", encoding="utf-8") as page:
            page.write(text)


if __name__ == "__main__":
    main()
