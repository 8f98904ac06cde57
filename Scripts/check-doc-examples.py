#!/usr/bin/env python3
"""Type-checks the Swift examples of the documentation against the built library
modules, as a user of the package sees them (public API only):

- every ```swift block of a /// comment in Sources/ReachabilityCore, Sources/Reachability,
  Sources/Connectivity, Sources/ReachabilityCompat, Sources/ReachabilityTestKit and
  Sources/ReachabilityObservable, and of their DocC articles, each as the body of an async
  throwing function (names an example takes from its surroundings, such as
  `connectivity`, are declared first: CONTEXT);
- README.md's ```swift blocks, each a program of its own as a user pastes it (what it
  uses, it imports and declares);
- README.md's manifest excerpt, inside a manifest that `swift package dump-package`
  evaluates;
- docs/MIGRATING.md's "After" examples (a ```swift block whose paragraph above
  starts with "After"), each as a program of its own (main.swift). The "Before"
  ones are written for Apple platforms and are not compiled.

A README or MIGRATING program is followed by its expected output: a ```text block
right after it (between them, at most a one-paragraph caption ending in a colon), one
printed line each, `…` for any
text (a name, a time). An example that runs until stopped must have printed it all
within RUN_SECONDS.

A /// or DocC example is a function body; leading `import` lines name modules it
needs beyond the common header (`import ServiceLifecycle`), compiled in a file of
their own.

Each is compiled to an object file, through SIL and code generation (a type-check
alone missed a compiler crash); README's and MIGRATING's programs are also linked
against the library's debug objects and run, each in a network namespace of its own
(`unshare -rn`, loopback only): see run_all.

Run it after `swift build --build-tests` (debug): it reads the module search flags
SwiftPM used for ReachabilityExample and the test bundle's object list from
.build/debug.yaml.

Usage: python3 Scripts/check-doc-examples.py   (exit 1 when an example does not compile,
does not run, or does not print its expected output)
"""
import concurrent.futures, json, os, re, shutil, subprocess, sys, tempfile

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


def build_plan():
    """.build/debug.yaml, the plan of the debug build (`swift build --build-tests`)."""
    plan = os.path.join(ROOT, ".build", "debug.yaml")
    if not os.path.exists(plan):
        sys.exit("check-doc-examples: no .build/debug.yaml: run `swift build --build-tests` first")
    return open(plan, encoding="utf-8").read()


def command_args(plan, pattern):
    command = re.search(r'"(' + pattern + r')":', plan)
    match = re.search(r"args: (\[.*\])", plan[command.end():]) if command else None
    if not match:
        sys.exit(f"check-doc-examples: no command matching {pattern} in .build/debug.yaml")
    return json.loads(match.group(1))


def module_flags(plan, client="ReachabilityExample"):
    """The -I and -Xcc flags SwiftPM passed when it compiled `client` (a module that
    imports what the examples may import)."""
    args = command_args(plan, r"C\." + client + r"-[^\"]*-debug\.module")
    flags, index = [], 0
    while index < len(args) - 1:
        if args[index] in ("-Xcc", "-I"):
            flags += args[index:index + 2]
            index += 2
        else:
            index += 1
    return flags


# Modules of this package that are no library: their objects stay out of an example's link.
NOT_LIBRARIES = {
    "ReachabilityTests", "ConnectivityTests", "ReachabilityIntegrationTests", "TestSupport",
    "ReachabilityPackageTests", "ReachabilityPackageDiscoveredTests", "ReachabilityCLI", "ReachabilityFullCLI",
}


def link_inputs(plan):
    """What links an example program: every library module's objects (the test bundle's
    link list, which has them all, without the tests' and executables' own) and the
    libraries SwiftPM's link commands name (-L, -l)."""
    args = command_args(plan, r"C\.ReachabilityPackageTests-[^\"]*-debug\.test")
    listing = next(arg[1:] for arg in args if arg.startswith("@") and arg.endswith("Objects.LinkFileList"))
    objects = []
    for line in open(listing, encoding="utf-8").read().splitlines():
        path = line.strip().strip("'")
        module = re.search(r"/([^/]+)\.build/", path)
        if module and module.group(1) not in NOT_LIBRARIES:
            objects.append(path)
    flags = []
    for pattern in (r"C\.ReachabilityExample-[^\"]*-debug\.exe", r"C\.reachability-full-[^\"]*-debug\.exe"):
        args = command_args(plan, pattern)
        index = 0
        while index < len(args):
            if args[index] == "-L":
                flags += args[index:index + 2]
                index += 2
                continue
            if re.match(r"-[lL].", args[index]) and args[index] not in flags:
                flags.append(args[index])
            index += 1
    return objects, flags


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


def build(name, text, scratch, flags, link):
    """Compiles a program to an object file (through SIL and code generation, which a
    type-check never reaches) and, with `link`, links it; returns the executable's path,
    or None after printing why it failed."""
    folder = os.path.join(scratch, re.sub(r"[^\w.-]", "_", name))
    os.makedirs(folder, exist_ok=True)
    source = os.path.join(folder, "main.swift")
    open(source, "w").write(text)
    cache = os.path.join(scratch, "ModuleCache")
    obj = os.path.join(folder, "main.o")
    command = ["swiftc", "-c", "-g", "-Onone", "-swift-version", "6", "-module-name", "Example",
               "-module-cache-path", cache] + flags + [source, "-o", obj]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        numbered = "\n".join(f"{n:4} {line}" for n, line in enumerate(text.split("\n"), 1))
        print(f"check-doc-examples: {name} does not compile:\n{result.stderr}\n{numbered}")
        return None
    if not link:
        return obj
    objects, libraries = link
    listing = os.path.join(folder, "objects")
    open(listing, "w").write("\n".join(f"'{path}'" for path in objects + [obj]) + "\n")
    executable = os.path.join(folder, "example")
    # lld when there is one: a fraction of gold's time for these large debug links.
    linker = ["-use-ld=lld"] if shutil.which("ld.lld") else []
    result = subprocess.run(["swiftc", "-emit-executable", "-g", "-o", executable, "@" + listing] + linker + libraries,
                            capture_output=True, text=True)
    if result.returncode != 0:
        print(f"check-doc-examples: {name} does not link:\n{result.stderr[-4000:]}")
        return None
    return executable


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
    for name, executable, code, expected in programs:
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
    plan = build_plan()
    flags = module_flags(plan)
    link = link_inputs(plan)
    docs, doc_count = doc_examples()
    readme, manifests = readme_examples()
    migrations = migration_examples()
    failures = 0
    with tempfile.TemporaryDirectory(prefix="check-doc-examples-") as scratch:
        # The /// and DocC examples are fragments: compiled, not linked.
        for name, text in docs:
            if not build(name, text, scratch, flags, None):
                failures += 1
        # README's and MIGRATING's programs, each as a user pastes it: built and run.
        programs = [(f"README.md:{line}", code, expected) for line, code, expected in readme]
        programs += [(f"docs/MIGRATING.md:{line}", code, expected) for line, code, expected in migrations]
        built = []
        with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
            for (name, code, expected), executable in zip(
                programs, pool.map(lambda program: build(program[0], program[1], scratch, flags, link), programs)
            ):
                if executable:
                    built.append((name, executable, code, expected))
                else:
                    failures += 1
        failures += run_all(built)
        failures += manifest_check(manifests, scratch)
    if failures:
        sys.exit(1)
    print(f"check-doc-examples: {doc_count} doc examples compile; {len(readme)} README blocks and "
          f"{len(migrations)} migration examples build, run and print their expected output, each on its own; "
          f"{len(manifests)} manifest excerpt(s) evaluate")


if __name__ == "__main__":
    main()
