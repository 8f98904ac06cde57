#!/usr/bin/env python3
"""Checks that the folders of Sources/ReachabilityCore form layers with no upward
references: a file may use what its own folder or a folder below it declares, never
what one above declares. The order, bottom to top, is LAYERS; a folder nested in a
layer's folder belongs to that layer; files directly in Sources/ReachabilityCore (the
public API) are the top layer. (The `Reachability` module above it, Sources/Reachability,
is NotificationCenter and Compat/ only.)

What a layer declares, and how a use of it is found:
- types (struct, enum, class, protocol, actor; typealias at top level): the name; a type
  nested in a type or an extension, `A.B`, or B in a body of A;
- globals (`func`, `let`, `var` at brace depth 0; a function's locals are not globals):
  the bare name (not `x.name`, not a `name:` label);
- members (`func`, `let`, `var`, static or not) and initializers written directly in an
  `extension T {` where T is declared in a lower layer or outside the module (members of
  a type of the same or a higher layer travel with the type): `x.name`, `T.name`, `.name`,
  the bare name in a body of T; an initializer by its labels, `T(a: ...)`, `T.init(a: ...)`.
A use is not reported when a type, global or member of that name is also declared in the
user's layer or below (`description` in Values and in Monitor), nor, for a bare name,
when the file binds a parameter or local of that name. A small tokenizer reads the code
without comments and string literals (interpolations stay code) and tracks braces.
Operators are not checked.

Usage: python3 Scripts/check-layers.py [--graph | --self-test]   (exit 1 on a violation)
"""
import os, re, shutil, sys, tempfile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Sources", "ReachabilityCore")
LAYERS = ["System", "Values", "Support", "Netlink", "Model", "Evaluation", "Resolution", "Monitor", "."]

TOKEN = re.compile(r"`[^`\n]+`|[A-Za-z_]\w*|\d\w*(?:\.\d\w*)*|\.\.+|\n|\S")
LITERAL = re.compile(r'(#*)("""|")')
IDENT = re.compile(r"[A-Za-z_]\w*$")
KEYWORDS = set("""associatedtype class deinit enum extension func import init inout let operator
    protocol struct subscript typealias var actor case for in where is as self Self super static
    final public private fileprivate internal package open override mutating nonmutating
    convenience required indirect nonisolated""".split())  # never the name of a declared type

def strip(src):
    """The code without comments and string contents; an interpolation stays code."""
    out, i, n, interps = [], 0, len(src), []  # interps: [parentheses open, hashes, triple]

    def string_body(i, hashes, triple):  # from inside a literal to its end or an interpolation
        close = ('"""' if triple else '"') + hashes
        while i < n and not src.startswith(close, i):
            if src.startswith("\\" + hashes + "(", i):
                interps.append([0, hashes, triple])
                out.append('" + (')
                return i + len(hashes) + 2
            out.append("\n" if src[i] == "\n" else "")
            i += 2 if src[i] == "\\" and not hashes else 1
        out.append('"')
        return i + len(close)

    while i < n:
        literal = LITERAL.match(src, i)
        if src.startswith("//", i):
            i = src.find("\n", i) % (n + 1)  # the newline, or the end
        elif src.startswith("/*", i):  # comments nest
            depth, i = 1, i + 2
            while i < n and depth:
                depth += src.startswith("/*", i) - src.startswith("*/", i)
                out.append("\n" if src[i] == "\n" else "")
                i += 2 if src[i:i + 2] in ("/*", "*/") else 1
        elif literal:
            out.append('"')
            i = string_body(literal.end(), literal.group(1), literal.group(2) == '"""')
        elif interps and src[i] == ")" and not interps[-1][0]:
            out.append(') + "')
            i = string_body(i + 1, *interps.pop()[1:])
        else:
            if interps:
                interps[-1][0] += (src[i] == "(") - (src[i] == ")")
            out.append(src[i])
            i += 1
    return "".join(out)

def parse(code):
    """(declarations, uses, local names) of one file's stripped code. A declaration is (kind,
    name, owner type, extra): "type", "global", "member" or "local" (extra: written directly
    in an extension), or "init" (extra: (parameters, directly in an extension)). A use is
    (kind, name, extra): "type", "member" (`.name`), "bare" (extra: the enclosing type), or
    "init" (extra: argument labels)."""
    toks, lines, line = [], [], 0
    for m in TOKEN.finditer(code):
        line += m.group() == "\n"
        if m.group() != "\n":
            toks.append(m.group().strip("`"))
            lines.append(line)
    at = lambda k: toks[k] if 0 <= k < len(toks) else ""
    is_name = lambda t: bool(IDENT.match(t)) and t not in KEYWORDS
    decls, uses, local, skip = [], [], set(), set()  # local: parameters, locals, closure variables
    stack, pending = [], None  # the open braces: (kind, name), kind "type", "ext" or "code"

    def params(k, declared):  # the list from the "(" at k: [(label or "_", has a default)]
        result, depth, start = [], 0, k + 1
        for j in range(k, len(toks)):
            depth += (toks[j] in "([{") - (toks[j] in ")]}")
            if depth == 0 or (depth == 1 and toks[j] == ","):
                segment = toks[start:j]
                names = segment[:segment.index(":")] if ":" in segment[:3] else []
                names = names if all(IDENT.match(x) for x in names) else []
                if declared and names:  # labels and parameter names are no uses
                    skip.update(range(start, start + len(names)))
                    local.add(names[-1])
                result += [(names[0] if names else "_", "=" in segment)] if segment else []
                start = j + 1
                if depth == 0:
                    return result
        return result

    def after_generics(k):  # the generic parameters from the "<" at k are local; the index past
        if at(k) != "<":
            return k
        end = toks.index(">", k)
        local.update(t for j, t in enumerate(toks[k + 1:end]) if toks[k + j] in "<," and is_name(t))
        return end + 1

    def bound_before_in(i, stops):  # `{ a, b in`, `for (a, b) in`: the names, on the line of i
        j = i + 1
        while j < len(toks) and lines[j] == lines[i] and toks[j] not in stops + ("in",):
            j += 1
        if at(j) == "in" and lines[j] == lines[i]:
            local.update(x for x in toks[i + 1:j] if is_name(x))

    for i, t in enumerate(toks):
        nxt, prev = at(i + 1), at(i - 1)
        in_body = all(kind != "code" for kind, _ in stack)  # at top level or in type bodies
        owner = next((name for kind, name in reversed(stack) if kind != "code"), None)
        scope = "global" if not stack else "member" if in_body else "local"
        if i in skip:
            continue
        if t == "{":
            bound_before_in(i, ("{", "}", "=", "for"))
            stack.append(pending or ("code", None))
            pending = None
        elif t == "}":
            stack = stack[:-1]
        elif prev == ".":
            if t != "init":
                uses.append(("type" if t[:1].isupper() else "member", t, "."))
            elif nxt == "(" and at(i - 2)[:1].isupper():
                uses.append(("init", at(i - 2), [label for label, _ in params(i + 1, False)]))
        elif t in ("struct", "enum", "class", "protocol", "actor", "typealias", "associatedtype") \
                and is_name(nxt):
            skip.add(i + 1)
            alias = t in ("typealias", "associatedtype")  # in a type: for a conformance, a member
            kind = "local" if not in_body else "member" if alias and stack else "type"
            decls.append((kind, nxt, owner, False))
            local.update([nxt] if kind == "local" else [])
            pending = pending if alias else ("type", nxt)
            after_generics(i + 2)
        elif t == "extension" and is_name(nxt):
            j = i + 1
            while at(j + 1) == "." and is_name(at(j + 2)):
                j += 2
            skip.update(range(i + 1, j + 1))
            pending = ("ext", at(j))
        elif t in ("func", "let", "var") and IDENT.match(nxt):
            skip.add(i + 1)
            decls.append((scope, nxt, owner, stack == [("ext", owner)]))
            local.update([nxt] if scope == "local" else [])
            pending = ("code", None)
            if t == "func":
                params(after_generics(i + 2), True)
        elif t in ("let", "var"):  # a pattern: `let (a, b)`, `case let .some(a)`
            local.update(toks[i + 1:toks.index(")", i)] if ")" in toks[i:i + 12] else [])
        elif t == "for":
            bound_before_in(i, ("=", "{"))
        elif t in ("init", "subscript"):
            j = after_generics(i + 1 + (nxt in ("?", "!")))
            sig = params(j, True) if at(j) == "(" else []
            if t == "init" and in_body and owner:
                decls.append(("init", owner, owner, (sig, stack == [("ext", owner)])))
            pending = ("code", None)
        elif t == "case" and stack and stack[-1][0] == "type":  # enum cases are members
            j, depth = i + 1, 0
            while j < len(toks) and lines[j] == lines[i]:
                depth += (toks[j] in "([") - (toks[j] in ")]")
                if depth == 0 and at(j - 1) in ("case", ",") and is_name(toks[j]):
                    decls.append(("member", toks[j], owner, False))
                    skip.add(j)
                j += 1
        elif is_name(t):
            if t[:1].isupper():
                uses.append(("type", t, {name for kind, name in stack if kind != "code"}))
                if nxt == "(":
                    uses.append(("init", t, [label for label, _ in params(i + 1, False)]))
            elif nxt != ":":
                uses.append(("bare", t, owner))
    return decls, uses, local

def files_by_layer(root):
    layout = {}
    for layer in LAYERS:
        folder = os.path.join(root, layer)
        if os.path.isdir(folder):  # a layer's nested folders are that layer
            walk = [(folder, [], os.listdir(folder))] if layer == "." else os.walk(folder)
            layout[layer] = sorted(os.path.join(d, f) for d, _, names in walk for f in names if f.endswith(".swift"))
    # Every folder must be a known layer.
    for entry in os.listdir(root):
        if os.path.isdir(os.path.join(root, entry)) and entry not in LAYERS and not entry.endswith(".docc"):
            sys.exit(f"check-layers: folder {entry} is in no layer; add it to LAYERS")
    return layout

def fits(labels, params):
    """Whether a call's argument labels fit a declaration's parameters (a parameter with a
    default may be left out; the last may be a trailing closure)."""
    k = 0
    for n, (label, has_default) in enumerate(params):
        if k < len(labels) and labels[k] == label:
            k += 1
        elif not has_default and n < len(params) - 1:
            return False
    return k == len(labels)

def check(root):
    """(violations, edges, number of files, declaration counts) for the tree at root."""
    parsed = {}
    for layer, paths in files_by_layer(root).items():
        for path in paths:
            parsed[path] = (LAYERS.index(layer),) + parse(strip(open(path, encoding="utf-8").read()))
    types, anydecl, globals_, members, inits = {}, {}, {}, {}, []
    lowest = lambda table, name, level: table.__setitem__(name, min(level, table.get(name, level)))
    for level, decls, _, _ in parsed.values():
        for kind, name, owner, _ in decls:
            if kind in ("type", "global", "member"):
                lowest(anydecl, name, level)
            if kind == "global":
                lowest(globals_, name, level)
            elif kind == "type":
                types.setdefault(name, []).append((level, owner))
    # What extensions add to a type of a lower layer or of no layer ("fresh" members and inits).
    fresh = lambda owner, level: owner not in types or min(types[owner])[0] < level
    for level, decls, _, _ in parsed.values():
        for kind, name, owner, extra in decls:
            if kind == "member" and extra and fresh(owner, level):
                members.setdefault(name, []).append((level, owner))
            elif kind == "init":
                inits.append((owner, extra[0], level, extra[1] and fresh(owner, level)))
    violations, edges = [], set()
    for path, (level, _, uses, local) in parsed.items():
        for kind, name, extra in uses:
            if kind == "init":  # T(label:): declared at this layer or below, or added above
                found = [(lv, new) for owner, params, lv, new in inits if owner == name and fits(extra, params)]
                if not any(new for _, new in found):
                    continue
                owner, what = min(lv for lv, new in found if new), f"init {name}({''.join(l + ':' for l in extra)})"
                if owner > level and min(found)[0] <= level:
                    continue  # also declared in this layer or below
            else:
                owner, what = globals_.get(name) if kind == "bare" else None, name
                if kind == "type":  # a nested type: qualified (`A.B`), or in a body of its type
                    owner = min((lv for lv, on in types.get(name, []) if not on or extra == "." or on in extra),
                                default=None)
                added = [lv for lv, on in members.get(name, []) if kind == "member" or (kind == "bare" and on == extra)]
                if added and (owner is None or min(added) < owner):
                    owner, what = min(added), f".{name}" if kind == "member" else f"{extra}.{name}"
                if owner is None or (kind != "member" and name in local):
                    continue
                if owner > level and anydecl.get(name, owner) <= level:
                    continue  # also declared in this layer or below
            if owner != level:
                edges.add((level, owner))
            line = f"{os.path.relpath(path, root)} ({LAYERS[level]}) uses {what} from {LAYERS[owner]}"
            if owner > level and line not in violations:
                violations.append(line)
    counts = (len(types), len(globals_), sum(map(len, members.values())), sum(1 for i in inits if i[3]))
    return violations, edges, len(parsed), counts

# --self-test: a tree of these files (''' stands for a Swift """), then each case written
# in Netlink (reported), in Monitor (the same layer) and at the top (higher: not reported).
FIXTURE = r"""
== Values/Address.swift
public struct IPAddress {
    var raw: UInt32
    public var description: String { "" }
    init(raw: UInt32) { self.raw = raw }
}
== Monitor/High.swift
func quotedHigh(_ text: String) -> String { text }
let highLimit = 3
var highCounter = 0
enum HighOuter { struct HighInner {}; struct Result {} }
extension IPAddress {
    var highMember: Int { 1 }
    static let highStatic = IPAddress(raw: 1)
    init(highLabel: Int, scope: Int = 0) { self.init(raw: 0) }
    init(raw: Int) { self.init(raw: UInt32(raw)) }
    struct HighNested {}
    public var description: String { "high" }
    func helper() -> Int { let highLocal = 1; return highLocal }
}
== Monitor/Sub/Deep.swift
struct DeepThing {}
extension IPAddress { var deepMember: Int { 2 } }
== Values/Deep/Nested.swift
func deep() -> Int { highLimit }
== Values/Quiet.swift
func quiet(address: IPAddress, highLimit: Int) -> String {
    // quotedHigh(address.highMember) HighOuter
    /* highCounter /* nested */ DeepThing */
    let text = '''
        quotedHigh(highLimit) \(address.raw) IPAddress.highStatic
        '''
    _ = highLocal + highLimit + IPAddress(raw: 1).raw + (nil as Result<Int, Error>?).map { _ in 1 }!
    return address.description + text + #"\(highCounter) "# + "\\(DeepThing())"
}
"""
CASES = [  # (kind, code using it in a function, what is reported when it is upward)
    ("type in a nested folder", "_ = DeepThing()", ["DeepThing"]),
    ("free function", '_ = quotedHigh("a")', ["quotedHigh"]),
    ("global let", "_ = [highLimit]", ["highLimit"]),
    ("global var, in an interpolation", r'_ = "n: \(highCounter + 1)"', ["highCounter"]),
    ("extension instance member", "_ = address.highMember", [".highMember"]),
    ("extension member in a nested folder", "_ = address.deepMember", [".deepMember"]),
    ("extension static member", "_ = IPAddress.highStatic", [".highStatic"]),
    ("extension static member, implicit", "let a: IPAddress = .highStatic", [".highStatic"]),
    ("extension init", "_ = IPAddress(highLabel: 2)", ["init IPAddress(highLabel:)"]),
    ("nested type", "let a: HighOuter.HighInner? = nil", ["HighOuter", "HighInner"]),
    ("nested type of an extension", "let a: IPAddress.HighNested? = nil", ["HighNested"]),
    ("extension member, implicit self", "}\nextension IPAddress {\n    func low() -> Int { highMember }",
     ["IPAddress.highMember"]),
]

def self_test():
    root, failures = tempfile.mkdtemp(prefix="check-layers-"), 0
    files = dict(block.split("\n", 1) for block in FIXTURE.split("\n== ")[1:])
    for n, (kind, code, _) in enumerate(CASES):
        for folder in ("Netlink/", "Monitor/", ""):
            files[f"{folder}Case{n}.swift"] = f"func use{n}(address: IPAddress) {{\n    {code}\n}}\n"
    expected = {f"Netlink/Case{n}.swift": (kind, what) for n, (kind, _, what) in enumerate(CASES)}
    expected["Values/Deep/Nested.swift"] = ("file in a nested folder of a layer", ["highLimit"])
    expected["Values/Quiet.swift"] = ("names declared below too, a nested name unqualified, comments, strings, locals",
                                      [])
    try:
        for relative, text in files.items():
            os.makedirs(os.path.dirname(os.path.join(root, relative)), exist_ok=True)
            open(os.path.join(root, relative), "w", encoding="utf-8").write(text.replace("'''", '"' * 3))
        found = {}
        for line in check(root)[0]:
            path, what = re.match(r"(\S+) \(\S+\) uses (.+) from \S+$", line).groups()
            found.setdefault(path, []).append(what)
    finally:
        shutil.rmtree(root)
    for path in list(expected) + sorted(set(found) - set(expected)):
        kind, what = expected.get(path, ("the same or a higher layer", []))
        got, ok = found.get(path, []), sorted(found.get(path, [])) == sorted(what)
        failures += not ok
        print(f"check-layers --self-test: {'ok  ' if ok else 'FAIL'} {kind}: {path} reports "
              + (", ".join(got) or "nothing") + ("" if ok else f" (expected {', '.join(what) or 'nothing'})"))
    print(f"check-layers --self-test: {failures} failure(s); each case also written in Monitor/ and at the top")
    return 1 if failures else 0

def main():
    if "--self-test" in sys.argv:
        return self_test()
    violations, edges, files, counts = check(ROOT)
    if "--graph" in sys.argv:
        for a, b in sorted(edges):
            print(f"{LAYERS[a]} -> {LAYERS[b]}" + ("   UPWARD" if b > a else ""))
    for v in violations:
        print("check-layers:", v)
    print(f"check-layers: {len(violations)} upward reference(s) among {files} files (declared: {counts[0]} types,"
          f" {counts[1]} globals, {counts[2]} extension members and {counts[3]} initializers on lower types)")
    return 1 if violations else 0

if __name__ == "__main__":
    sys.exit(main())
