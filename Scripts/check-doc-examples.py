#!/usr/bin/env python3
"""Checks the documentation's Swift examples, after `swift build --build-tests` (debug):

- README.md's programs (its ```swift blocks but the manifest excerpt) and docs/MIGRATING.md's
  "After" ones (a ```swift block whose paragraph above starts with "After"; the "Before"
  ones are written for Apple platforms): each is, byte for byte, the file of an example
  target, Examples/Docs/NAME/main.swift, which the build compiled and linked as
  NAMEExample (Package.swift), and each of those files is one of them. Each is run in a
  network namespace of its own (`unshare -rn`, loopback only: see run_all) and must print
  its expected output: a ```text block right after it (between them, at most a
  one-paragraph caption ending in a colon), one printed line each, `…` for any text (a
  name, a time). One that runs until stopped must have printed it all within RUN_SECONDS.
- README.md's manifest excerpt, inside a manifest that `swift package dump-package`
  evaluates.
- Every ```swift block of a /// comment in the library modules of SOURCES and of their
  DocC articles: a fragment, compiled as the body of an async throwing function against
  the modules the build made (public API only) through SIL and code generation (a
  type-check alone missed a compiler crash). Names an example takes from its
  surroundings, such as `connectivity`, are declared first (CONTEXT); its leading `import`
  lines name modules it needs beyond the common header (`import ServiceLifecycle`), and
  it is compiled in a file of their own.

Usage: python3 Scripts/check-doc-examples.py   (exit 1 when an example differs from its
file, does not compile, does not run, or does not print its expected output)
"""
import concurrent.futures, difflib, glob, os, re, subprocess, sys, tempfile

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
SOURCES = [
    "Sources/ReachabilityCore", "Sources/Reachability", "Sources/Connectivity", "Sources/ConnectivityURLSession", "Sources/ReachabilityCompat",
    "Sources/ReachabilityTestKit", "Sources/ReachabilityObservable"]

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
    functions = {}
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
                    # An article's example may name the modules it needs (`import ServiceLifecycle`):
                    # those go to the file's header, and the example to a file of its own kind.
                    lines = code.split("\n")
                    imports = tuple(sorted(text.strip() for text in lines if text.startswith("import ")))
                    code = "\n".join(text for text in lines if not text.startswith("import ")).strip("\n")
                    context = [declaration for word, declaration in CONTEXT.items()
                               if re.search(rf"\b{word}\b", code) and not re.search(rf"\blet {word}\b", code)]
                    body = "\n".join("    " + text for text in context + code.split("\n"))
                    name_part = re.sub(r"\W", "_", relative)
                    functions.setdefault((folder == "Sources/ConnectivityURLSession", imports), []).append(
                        f"// {relative}:{line}\nfunc example_{name_part}_{line}() async throws {{\n{body}\n}}\n")
    common = "import Dispatch\nimport Foundation\nimport Reachability\nimport ReachabilityCompat\n"
    header = {False: "import Connectivity\n" + common + "\n",
              True: "import ConnectivityURLSession\nimport FoundationNetworking\n" + common + "\n"}
    files = [(f"docs{'-urlsession' if urlsession else ''}-{number}.swift",
              header[urlsession] + "".join(line + "\n" for line in imports) + "\n".join(found))
             for number, ((urlsession, imports), found) in enumerate(sorted(functions.items()))]
    return files, sum(len(found) for found in functions.values())


def expected_output(path, start):
    """The ```text block that follows the ```swift block opened at line `start` (1-based)
    with nothing between but blank lines and at most one paragraph ending in a colon (its
    caption): what the program prints, one line each; None without one."""
    lines = open(path, encoding="utf-8").read().split("\n")
    index = start  # the line after the opening fence, 0-based
    while index < len(lines) and lines[index].strip() != "```":
        index += 1
    index += 1
    while index < len(lines) and not lines[index].strip():
        index += 1
    caption = index
    while index < len(lines) and lines[index].strip() and not lines[index].startswith("```"):
        index += 1
    if index > caption:
        if not lines[index - 1].rstrip().endswith(":"):
            return None
        while index < len(lines) and not lines[index].strip():
            index += 1
    if index >= len(lines) or lines[index].strip() != "```text":
        return None
    expected = []
    index += 1
    while index < len(lines) and lines[index].strip() != "```":
        expected.append(lines[index])
        index += 1
    return expected


def readme_examples():
    """README.md's Swift blocks, each a program of its own (line, code, expected
    output) as a user pastes it, and its manifest excerpt(s)."""
    path = os.path.join(ROOT, "README.md")
    blocks = markdown_blocks(path)
    manifest = [code for _, code in blocks if ".package(url:" in code]
    programs = [(line, code, expected_output(path, line)) for line, code in blocks if ".package(url:" not in code]
    return programs, manifest


def migration_examples():
    """The "After" programs of docs/MIGRATING.md: (line, code, expected output) each."""
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
            programs.append((start, code, expected_output(path, start)))
    return programs


def module_flags():
    """What a fragment needs to import the built modules: their .swiftmodule files, and the
    C modules they import (CNetlink, SwiftPM's module maps for the dependencies' C targets
    and those targets' own), as Scripts/check-docc.sh finds them."""
    modules = os.path.join(ROOT, ".build", "debug", "Modules")
    if not os.path.isdir(modules):
        sys.exit("check-doc-examples: no .build/debug/Modules: run `swift build --build-tests` first")
    maps = [os.path.join(ROOT, "Sources", "CNetlink", "module.modulemap")]
    maps += sorted(glob.glob(os.path.join(ROOT, ".build", "debug", "*.build", "module.modulemap")))
    maps += sorted(glob.glob(os.path.join(ROOT, ".build", "checkouts", "*", "Sources", "*", "include", "module.modulemap")))
    return ["-I", modules] + [flag for path in maps for flag in ("-Xcc", f"-fmodule-map-file={path}")]


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


def compile_fragments(name, text, scratch, flags):
    """Compiles a file of fragments to an object file; False after printing why it failed.
    Without warnings: a fragment's values are used by the text around it, not in its function."""
    source = os.path.join(scratch, name)
    open(source, "w").write(text)
    command = ["swiftc", "-c", "-g", "-Onone", "-swift-version", "6", "-suppress-warnings", "-module-name", "Example",
               "-module-cache-path", os.path.join(scratch, "ModuleCache")] + flags + [source, "-o", source + ".o"]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        numbered = "\n".join(f"{n:4} {line}" for n, line in enumerate(text.split("\n"), 1))
        print(f"check-doc-examples: {name} does not compile:\n{result.stderr}\n{numbered}")
    return result.returncode == 0


# README's and MIGRATING's programs: Examples/Docs/NAME/main.swift, built as NAMEExample.
PROGRAMS = os.path.join(ROOT, "Examples", "Docs")


def program_executables(programs):
    """Each program's executable (name, executable, expected) from the example target whose
    file it is; None for one that is no file, and one for a file that is no program."""
    files = {os.path.join(PROGRAMS, name, "main.swift"): name for name in sorted(os.listdir(PROGRAMS))}
    texts = {path: open(path, encoding="utf-8").read() for path in files}
    found, shown = [], set()
    for name, code, expected in programs:
        path = next((path for path, text in texts.items() if text == code), None)
        if path is None:
            closest = max(texts, key=lambda path: difflib.SequenceMatcher(None, texts[path], code).ratio())
            diff = "".join(difflib.unified_diff(
                texts[closest].splitlines(True), code.splitlines(True), os.path.relpath(closest, ROOT), name))
            print(f"check-doc-examples: {name} is no file of Examples/Docs byte for byte (each is one, which "
                  f"the build compiles); the closest:\n{diff}")
            found.append(None)
            continue
        shown.add(path)
        found.append((name, os.path.join(ROOT, ".build", "debug", files[path] + "Example"), expected))
    for path in sorted(set(files) - shown):
        print(f"check-doc-examples: {os.path.relpath(path, ROOT)} is no program of README.md or docs/MIGRATING.md")
        found.append(None)
    return found


# How long a program may run: one that ends (most) must end by then; one that runs until
# stopped (a notifier, a monitor loop, dispatchMain(), a service group) is stopped with
# SIGTERM, which must not be a crash.
RUN_SECONDS = 5


def output_mismatch(expected, printed):
    """Why what a program printed is not its expected output, or None. Each expected line
    is a pattern, `…` standing for any text (an interface's name, a time), and matches one
    printed line whole; the order is free (closures run on the library's queue, beside
    the main thread), and no printed line may be left over."""
    left = [line.rstrip() for line in printed.split("\n") if line.strip()]
    for pattern in expected:
        regex = re.compile("".join(".*" if part == "…" else re.escape(part)
                                   for part in re.split("(…)", pattern.rstrip())) + r"\Z")
        match = next((line for line in left if regex.match(line)), None)
        if match is None:
            return f"printed no line like {pattern!r}"
        left.remove(match)
    if left:
        return f"printed {left[0]!r}, which its expected output doesn't have"
    return None


def run_all(programs):
    """Runs each built program in a network namespace of its own with only loopback up
    (nothing leaves the machine; no route, so each sees an offline host), all at once;
    returns the number that failed. One that ends must exit 0; one still running after
    RUN_SECONDS gets SIGTERM and must not crash; and what each printed on stdout by then
    must be its expected output (the ```text block after it: output_mismatch)."""
    # Line-buffered output (stdbuf): what a program printed before its SIGTERM is kept.
    script = 'ip link set lo up && exec timeout -s TERM -k 5 "$0" stdbuf -oL "$1"'
    running = []
    for name, executable, expected in programs:
        process = subprocess.Popen(
            ["unshare", "-rn", "sh", "-c", script, str(RUN_SECONDS), executable],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=os.path.dirname(executable))
        running.append((name, expected, process))
    failures = 0
    for name, expected, process in running:
        out, err = process.communicate(timeout=RUN_SECONDS + 30)
        status = process.returncode
        problem = None
        if status not in (0, 124):
            problem = f"exited with status {status}"
        elif expected is None:
            problem = "has no expected output (a ```text block right after it)"
        else:
            problem = output_mismatch(expected, out)
        if problem:
            failures += 1
            print(f"check-doc-examples: {name} {problem}:\n{out[-2000:]}{err[-2000:]}")
    return failures


def main():
    flags = module_flags()
    docs, doc_count = doc_examples()
    readme, manifests = readme_examples()
    migrations = migration_examples()
    programs = [(f"README.md:{line}", code, expected) for line, code, expected in readme]
    programs += [(f"docs/MIGRATING.md:{line}", code, expected) for line, code, expected in migrations]
    found = program_executables(programs)
    failures = found.count(None)
    with tempfile.TemporaryDirectory(prefix="check-doc-examples-") as scratch:
        with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
            compiled = pool.map(lambda doc: compile_fragments(doc[0], doc[1], scratch, flags), docs)
            failures += run_all([program for program in found if program])
            failures += list(compiled).count(False)
        failures += manifest_check(manifests, scratch)
    if failures:
        sys.exit(1)
    print(f"check-doc-examples: {doc_count} doc examples compile; {len(readme)} README and {len(migrations)} "
          f"migration programs are their example targets' files and print their expected output; "
          f"{len(manifests)} manifest excerpt(s) evaluate")


if __name__ == "__main__":
    main()
