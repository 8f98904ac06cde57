#!/usr/bin/env python3
"""Finishes the man pages swift-argument-parser's generate-manual wrote (`make man`).

    python3 Scripts/finish-man-pages.py DIRECTORY

- A blank line inside a page (the generator's paragraph break) becomes `.Pp`: groff's
  mdoc warns "Empty input line" for each, and `man --warnings` (CI) fails on any warning.
- `reachability.help.1` goes: `help` is argument-parser's own subcommand, and its page
  says nothing the others don't. The SEE ALSO lists lose it.
- `reachability.1` gets a COMMANDS section: each subcommand with its one-line summary
  (the `.Nd` of its page), where a reader of the top-level page looks for them.
- NAME is what `man -k`, `whatis` and lintian read (man-db's lexgrog): a subcommand's
  page names itself there (`.Nm reachability.check`, as `man reachability.check` takes it)
  instead of the command (`.Nm "reachability check"`, which lexgrog can't parse: lintian's
  bad-whatis-entry), and `.Nd` loses its quotes (lexgrog keeps them in the description).
  The command stays in SYNOPSIS and in EXIT STATUS (`.Ex -std`), which named it from
  NAME's `.Nm`.
Idempotent: running it twice changes nothing more.
"""
import os
import re
import sys


def summary(page_text):
    match = re.search(r'^\.Nd "?(.*?)"?$', page_text, re.M)
    return match.group(1) if match else ""


def whatis_ready(text, page_name):
    text = re.sub(r'^\.Nd "(.*)"$', r".Nd \1", text, flags=re.M)
    match = re.search(r'^\.Sh NAME\n\.Nm "([^"]+)"$', text, re.M)
    if not match:
        return text
    command = match.group(1)
    text = text[: match.start()] + f".Sh NAME\n.Nm {page_name}" + text[match.end() :]
    text = re.sub(r"^\.Sh SYNOPSIS\n\.Nm$", f'.Sh SYNOPSIS\n.Nm "{command}"', text, flags=re.M)
    return re.sub(r"^\.Ex -std$", f'.Ex -std "{command}"', text, flags=re.M)


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
            text = whatis_ready(page.read(), name[: -len(".1")])
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
