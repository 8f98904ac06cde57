#!/usr/bin/env python3
"""Type-checks the Swift examples of the documentation against the built library
modules, as a user of the package sees them (public API only):

- every ```swift block of a /// comment in Sources/ReachabilityCore, Sources/Reachability,
  Sources/Connectivity and Sources/ReachabilityCompat, and of their DocC articles, each as the body of an async
  throwing function (names an example takes from its surroundings, such as
  `connectivity`, are declared first: CONTEXT);
- README.md's ```swift blocks, in order, as one script (main.swift);
- README.md's manifest excerpt, inside a manifest that `swift package dump-package`
  evaluates;
- docs/MIGRATING.md's "After" examples (a ```swift block whose paragraph above
  starts with "After"), each as a program of its own (main.swift). The "Before"
  ones are written for Apple platforms and are not compiled.

Run it after `swift build` (debug): it reads the module search flags SwiftPM used
for ReachabilityExample, a client of both modules, from .build/debug.yaml.

Usage: python3 Scripts/check-doc-examples.py   (exit 1 when an example does not compile)
"""
import json, os, re, subprocess, sys, tempfile

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
SOURCES = [
    "Sources/ReachabilityCore", "Sources/Reachability", "Sources/Connectivity", "Sources/ConnectivityURLSession", "Sources/ReachabilityCompat"]

# Names an example uses from its surroundings, declared before it.
CONTEXT = {
    "token": 'let token = "secret"',
    "connectivity": "let connectivity = Connectivity()",
}


def fenced_blocks(path, text_of):
    """The ```swift blocks of a file whose lines `text_of` maps to their text
    (None: not part of the text, e.g. a line that is no doc comment)."""
    blocks, current, start = [], None, 0
    for number, line in enumerate(open(path, encoding="utf-8"), 1):
        body = text_of(line)
        if body is None:
            continue
        if current is None and body.strip() == "```swift":
            current, start = [], number
        elif current is not None and body.strip() == "```":
            blocks.append((start, "".join(current)))
            current = None
        elif current is not None:
            current.append(body)
    return blocks


def doc_comment_text(line):
    text = line.strip()
    if not text.startswith("///"):
        return None
    body = text[3:]
    return (body[1:] if body.startswith(" ") else body) + "\n"


def comment_blocks(path):
    return [(start, text.rstrip("\n")) for start, text in fenced_blocks(path, doc_comment_text)]


def markdown_blocks(path):
    return fenced_blocks(path, lambda line: line)


def doc_examples():
    """docs.swift and docs-urlsession.swift: one function per example of a /// comment
    or a DocC article. Module ConnectivityURLSession's examples import it alone (it
    re-exports Connectivity): a file importing both modules by name sees both
    modules' `ConnectivityResponseValidator` and must qualify it."""
    functions = {False: [], True: []}
    for folder in SOURCES:
        for directory, _, names in sorted(os.walk(os.path.join(ROOT, folder))):
            for name in sorted(names):
                path = os.path.join(directory, name)
                if name.endswith(".swift"):
                    blocks = comment_blocks(path)
                elif name.endswith(".md"):
                    blocks = markdown_blocks(path)
                else:
                    continue
                relative = os.path.relpath(path, ROOT)
                for line, code in blocks:
                    context = [declaration for word, declaration in CONTEXT.items()
                               if re.search(rf"\b{word}\b", code) and not re.search(rf"\blet {word}\b", code)]
                    body = "\n".join("    " + text for text in context + code.split("\n"))
                    name_part = re.sub(r"\W", "_", relative)
                    functions[folder == "Sources/ConnectivityURLSession"].append(
                        f"// {relative}:{line}\nfunc example_{name_part}_{line}() async throws {{\n{body}\n}}\n")
    common = "import Dispatch\nimport Foundation\nimport Reachability\nimport ReachabilityCompat\n"
    header = {False: "import Connectivity\n" + common + "\n",
              True: "import ConnectivityURLSession\nimport FoundationNetworking\n" + common + "\n"}
    files = [(f"docs{'-urlsession' if urlsession else ''}.swift", header[urlsession] + "\n".join(found))
             for urlsession, found in functions.items()]
    return files, sum(len(found) for found in functions.values())


def readme_examples():
    """main.swift (README's Swift blocks as one script, imports first) and the manifest excerpt."""
    blocks = [code for _, code in markdown_blocks(os.path.join(ROOT, "README.md"))]
    manifest = [code for code in blocks if ".package(url:" in code]
    script = [code for code in blocks if ".package(url:" not in code]
    imports = sorted({line for code in script for line in code.split("\n") if line.startswith("import ")})
    lines = [line for code in script for line in code.split("\n") if not line.startswith("import ")]
    return "\n".join(imports + ["import Dispatch", ""] + lines) + "\n", len(script), manifest


def migration_examples():
    """The "After" programs of docs/MIGRATING.md: (line, code) each."""
    path = os.path.join(ROOT, "docs", "MIGRATING.md")
    lines = open(path, encoding="utf-8").read().split("\n")
    programs = []
    for start, code in markdown_blocks(path):
        # The paragraph above the block: from the last blank line before it.
        end = start - 1
        while end > 0 and not lines[end - 1].strip():
            end -= 1
        first = end
        while first > 1 and lines[first - 2].strip():
            first -= 1
        if end > 0 and lines[first - 1].startswith("After"):
            programs.append((start, code))
    return programs


def module_flags():
    """The -I and -Xcc flags SwiftPM passed when it compiled ReachabilityExample."""
    plan = os.path.join(ROOT, ".build", "debug.yaml")
    if not os.path.exists(plan):
        sys.exit("check-doc-examples: no .build/debug.yaml: run `swift build` first")
    text = open(plan, encoding="utf-8").read()
    command = re.search(r'"C\.ReachabilityExample-[^"]*-debug\.module":', text)
    match = re.search(r"args: (\[.*\])", text[command.end():]) if command else None
    if not match:
        sys.exit("check-doc-examples: ReachabilityExample's compile command is not in .build/debug.yaml")
    args = json.loads(match.group(1))
    flags, index = [], 0
    while index < len(args) - 1:
        if args[index] in ("-Xcc", "-I"):
            flags += args[index:index + 2]
            index += 2
        else:
            index += 1
    return flags


def manifest_check(excerpts, scratch):
    """Evaluates each manifest excerpt inside a manifest of its own."""
    failures = 0
    for number, excerpt in enumerate(excerpts):
        lines = [line.strip() for line in excerpt.split("\n") if line.strip() and not line.strip().startswith("//")]
        dependencies = [line for line in lines if line.startswith(".package(")]
        targets = [line.rstrip(",") for line in lines if line.startswith(".target(")]
        package = os.path.join(scratch, f"manifest{number}")
        os.makedirs(os.path.join(package, "Sources", "MyApp"))
        open(os.path.join(package, "Sources", "MyApp", "main.swift"), "w").write("")
        open(os.path.join(package, "Package.swift"), "w").write(
            "// swift-tools-version: 6.1\nimport PackageDescription\n\nlet package = Package(\n"
            f'    name: "MyApp",\n    dependencies: [\n        {" ".join(dependencies)}\n    ],\n'
            f'    targets: [\n        {", ".join(targets)}\n    ]\n)\n')
        result = subprocess.run(["swift", "package", "--package-path", package, "dump-package"],
                                capture_output=True, text=True)
        if result.returncode != 0:
            failures += 1
            print(f"check-doc-examples: README's manifest excerpt does not evaluate:\n{result.stderr}")
    return failures


def main():
    flags = module_flags()
    docs, doc_count = doc_examples()
    script, readme_count, manifests = readme_examples()
    failures = 0
    with tempfile.TemporaryDirectory(prefix="check-doc-examples-") as scratch:
        cache = os.path.join(scratch, "ModuleCache")
        migrations = migration_examples()
        programs = docs + [("main.swift", script)]
        programs += [(f"migrating-{line}/main.swift", code) for line, code in migrations]
        for name, text in programs:
            path = os.path.join(scratch, name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            open(path, "w").write(text)
            command = ["swiftc", "-typecheck", "-swift-version", "6", "-module-cache-path", cache] + flags + [path]
            result = subprocess.run(command, capture_output=True, text=True)
            if result.returncode != 0:
                failures += 1
                numbered = "\n".join(f"{n:4} {line}" for n, line in enumerate(text.split("\n"), 1))
                print(f"check-doc-examples: {name} does not compile:\n{result.stderr}\n{numbered}")
        failures += manifest_check(manifests, scratch)
    if failures:
        sys.exit(1)
    print(f"check-doc-examples: {doc_count} doc examples, {readme_count} README blocks, "
          f"{len(migrations)} migration examples and {len(manifests)} manifest excerpt(s) compile")


if __name__ == "__main__":
    main()
