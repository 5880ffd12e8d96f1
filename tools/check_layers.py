#!/usr/bin/env python3
"""Checks that every #include in src/, include/ and nvinfer/ runs in an allowed direction between layers, and with
--build that every symbol a layer's object files use is defined in a layer it may include.

    check_layers.py [--root DIR] [--rules FILE] [--list] [--build DIR [--nm NM] [--library LIB ...]]

The layers and the allow-list are in tools/layers.txt (--rules names another file). Every quoted include
("...") is resolved as the compiler would: beside the including file, then under src/, include/,
nvinfer/include/ and nvinfer/src/. An angle include (<...>) counts only when it names a header under include/ or
nvinfer/include/ (<NvInfer.h>, <etrt/options.h>); any other is a system or third-party header and is skipped.

Prints one line per violation,

    file:line: <layer> may not include <layer> (<header>)

and exits 1 when there is any; exits 2 when the rules file is malformed. --list prints each file's layer instead.

With --build, the link-level check follows: an include check cannot see a function declared in a lower layer's
header and defined in a higher layer's source file, yet that is a call upward. The build directory's
compile_commands.json names every compiled source and its object file; each source under src/, include/ or nvinfer/
puts its object in the source's layer. `nm` lists what each object defines (any global symbol, weak ones included)
and what it uses (undefined). A symbol one layer uses and does not define itself must be defined in a layer it may
include (with the same globs as includes, matched against the using source), or in a layer that `implements` one it
may include. Otherwise it prints

    file: <layer> uses <symbol>, defined only in <layer>[, <layer>...] (link level)

Symbols defined nowhere in the tree (the C++ library, ExecuTorch, CUDA) are not checked. Objects that are not built
yet are skipped and counted in a note, so run it after the build (the CTest etrt_check_layers does).

With --library (a production shared library of the build, e.g. libetrt; repeatable), what it exports (`nm -D
--defined-only`) is checked against the layers the rules mark `tools-only`: a symbol only objects of such layers
define (not a template instance other objects define too) must not be exported by a production library, which holds
production code only. Otherwise it prints

    lib: exports <symbol>, tool-only code (<layer>: <file>)
Python 3 standard library only.
"""

import argparse
import collections
import fnmatch
import json
import pathlib
import re
import subprocess
import sys

SCANNED = ("src", "include", "nvinfer")
SOURCE_SUFFIXES = {".h", ".hh", ".hpp", ".inc", ".c", ".cc", ".cpp", ".cxx", ".cu", ".cuh"}
QUOTE_ROOTS = ("src", "include", "nvinfer/include", "nvinfer/src")
ANGLE_ROOTS = ("include", "nvinfer/include")
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


class RulesError(Exception):
    pass


class Rules:
    def __init__(self, path):
        self.layers = []  # (dir, name), longest dir first
        self.allow = {}   # (from, to) -> [glob or None]
        self.known = {}   # (file, header) -> rules line
        self.implements = {}  # implementation layer -> the layer whose headers it implements
        self.tools_only = set()  # layers whose code exists only for the tools
        names = set()
        pending = []
        for number, raw in enumerate(path.read_text().splitlines(), 1):
            words = raw.split("#", 1)[0].split()
            if not words:
                continue
            where = f"{path}:{number}"
            kind, args = words[0], words[1:]
            if kind == "layer" and len(args) == 2:
                names.add(args[0])
                self.layers.append((args[1].strip("/"), args[0]))
            elif kind == "allow" and len(args) in (2, 3):
                pending.append((where, args))
            elif kind == "known" and len(args) == 2:
                self.known[(args[0], args[1])] = where
            elif kind == "implements" and len(args) == 2:
                pending.append((where, ["implements"] + args))
            elif kind == "tools-only" and len(args) == 1:
                pending.append((where, ["tools-only"] + args))
            else:
                raise RulesError(f"{where}: expected 'layer <name> <dir>', 'allow <from> <to> [<glob>]', "
                                 f"'implements <layer> <layer>', 'tools-only <layer>' or 'known <file> <header>', "
                                 f"got: {raw.strip()}")
        for where, args in pending:
            kind = args[0] if args[0] in ("implements", "tools-only") else "allow"
            if kind != "allow":
                args = args[1:]
            for name in args[:2]:
                if name not in names:
                    raise RulesError(f"{where}: unknown layer '{name}'")
            if kind == "tools-only":
                self.tools_only.add(args[0])
            elif kind == "implements":
                self.implements[args[0]] = args[1]
            else:
                self.allow.setdefault((args[0], args[1]), []).append(args[2] if len(args) == 3 else None)
        self.layers.sort(key=lambda entry: len(entry[0]), reverse=True)

    def layer_of(self, rel):
        for directory, name in self.layers:
            if rel == directory or rel.startswith(directory + "/"):
                return name
        return None

    def allows(self, source_layer, rel, target_layer):
        if source_layer == target_layer:
            return True
        return any(glob is None or fnmatch.fnmatchcase(rel, glob)
                   for glob in self.allow.get((source_layer, target_layer), ()))


def sources(root):
    for top in SCANNED:
        base = root / top
        if base.is_dir():
            for path in sorted(base.rglob("*")):
                if path.is_file() and path.suffix in SOURCE_SUFFIXES:
                    yield path


def resolve(root, path, delimiter, header):
    candidates = [path.parent / header] if delimiter == '"' else []
    candidates += [root / base / header for base in (QUOTE_ROOTS if delimiter == '"' else ANGLE_ROOTS)]
    for candidate in candidates:
        if candidate.is_file():
            try:
                return candidate.resolve().relative_to(root).as_posix()
            except ValueError:  # outside the tree, e.g. through ".."
                return None
    return None


def check(root, rules, out):
    """Prints violations and notes to `out`; returns the number of violations."""
    violations = 0
    seen_known = set()
    for path in sources(root):
        rel = path.relative_to(root).as_posix()
        layer = rules.layer_of(rel)
        if layer is None:
            print(f"{rel}:1: in no layer (add a 'layer' line for its directory to the rules)", file=out)
            violations += 1
            continue
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            match = INCLUDE.match(line)
            if not match:
                continue
            delimiter, header = match.groups()
            target = resolve(root, path, delimiter, header)
            if target is None:
                if delimiter == '"':
                    print(f"{rel}:{number}: {layer} includes \"{header}\", which is in no layer "
                          f"(not found under {', '.join(QUOTE_ROOTS)}; use <...> for outside headers)", file=out)
                    violations += 1
                continue
            target_layer = rules.layer_of(target)
            if target_layer is None:
                print(f"{rel}:{number}: {layer} includes {header}, which is in no layer ({target})", file=out)
                violations += 1
            elif not rules.allows(layer, rel, target_layer):
                message = f"{rel}:{number}: {layer} may not include {target_layer} ({header})"
                if (rel, header) in rules.known:
                    seen_known.add((rel, header))
                    print(f"note: known wrong-way include, still to fix: {message}", file=out)
                else:
                    print(message, file=out)
                    violations += 1
    for (rel, header), where in sorted(rules.known.items()):
        if (rel, header) not in seen_known:
            print(f"{where}: known wrong-way include {rel} -> {header} is gone: delete the line", file=out)
            violations += 1
    return violations


def objects(build, root, rules):
    """(source, layer, object path) for every compiled source of the tree that is in a layer."""
    commands = build / "compile_commands.json"
    try:
        entries = json.loads(commands.read_text())
    except (OSError, ValueError) as error:
        raise RulesError(f"{commands}: {error} (configure with CMAKE_EXPORT_COMPILE_COMMANDS=ON)")
    for entry in entries:
        if "output" not in entry:
            raise RulesError(f"{commands}: entries name no 'output' (CMake 3.20 or newer writes it)")
        directory = pathlib.Path(entry["directory"])
        try:
            rel = (directory / entry["file"]).resolve().relative_to(root).as_posix()
        except ValueError:  # a source outside the tree
            continue
        layer = rules.layer_of(rel)
        if layer is not None and rel.split("/", 1)[0] in SCANNED:
            yield rel, layer, directory / entry["output"]


def symbols(nm, path):
    """(defined, undefined) global symbol names of one object file, mangled."""
    done = subprocess.run([nm, "-P", str(path)], capture_output=True, text=True)
    if done.returncode != 0:
        raise RulesError(f"{nm} {path}: {done.stderr.strip()}")
    defined, undefined = set(), set()
    for line in done.stdout.splitlines():
        fields = line.split()
        if len(fields) < 2:
            continue
        name, kind = fields[0], fields[1]
        if kind == "U":
            undefined.add(name)
        elif kind.isupper() or kind in "uvw":  # global, unique or weak: another object may link against it
            defined.add(name)
    return defined, undefined


def demangle(names):
    try:
        done = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True)
        lines = done.stdout.splitlines()
        if done.returncode == 0 and len(lines) == len(names):
            return dict(zip(names, lines))
    except OSError:
        pass
    return {name: name for name in names}


def check_links(root, rules, build, nm, out):
    """Prints link-level violations to `out`; returns their number."""
    definers = collections.defaultdict(set)  # symbol -> layers whose objects define it
    uses = []  # (source, layer, symbols it uses)
    missing = 0
    for rel, layer, path in objects(build, root, rules):
        if not path.is_file():
            missing += 1
            continue
        defined, undefined = symbols(nm, path)
        for name in defined:
            definers[name].add(layer)
        uses.append((rel, layer, undefined))
    found = []
    for rel, layer, undefined in uses:
        for name in sorted(undefined):
            layers = definers.get(name)
            if not layers or layer in layers:
                continue
            if any(rules.allows(layer, rel, other) or rules.allows(layer, rel, rules.implements.get(other, other))
                   for other in layers):
                continue
            found.append((rel, layer, name, sorted(layers)))
    names = demangle(sorted({name for _, _, name, _ in found}))
    for rel, layer, name, layers in sorted(found):
        print(f"{rel}: {layer} uses {names[name]}, defined only in {', '.join(layers)} (link level)", file=out)
    if missing:
        print(f"note: {missing} object file(s) of the tree's sources are not built in {build}; "
              "their symbols were not checked", file=out)
    return len(found)


def exported(nm, library):
    """The dynamic symbols `library` defines (what another module can bind to), mangled."""
    done = subprocess.run([nm, "-D", "-P", "--defined-only", str(library)], capture_output=True, text=True)
    if done.returncode != 0:
        raise RulesError(f"{nm} -D {library}: {done.stderr.strip()}")
    return {fields[0] for fields in (line.split() for line in done.stdout.splitlines())
            if len(fields) >= 2 and (fields[1].isupper() or fields[1] in "uvw")}


def check_exports(root, rules, build, nm, libraries, out):
    """Prints each tool-only symbol a production library exports to `out`; returns their number."""
    tool_symbols = {}  # symbol -> (layer, source) of the tool-only object that defines it
    shared = set()  # defined by other objects too (a template's instance, say): not the tools' own
    for rel, layer, path in objects(build, root, rules):
        if not path.is_file():
            continue
        for name in symbols(nm, path)[0]:
            if layer in rules.tools_only:
                tool_symbols.setdefault(name, (layer, rel))
            else:
                shared.add(name)
    tool_symbols = {name: where for name, where in tool_symbols.items() if name not in shared}
    found = []
    for library in libraries:
        if not library.is_file():
            raise RulesError(f"{library}: no such library (build it first)")
        for name in sorted(exported(nm, library) & tool_symbols.keys()):
            found.append((library, name, *tool_symbols[name]))
    names = demangle(sorted({name for _, name, _, _ in found}))
    for library, name, layer, rel in found:
        print(f"{library}: exports {names[name]}, tool-only code ({layer}: {rel}); production libraries hold "
              "production code only", file=out)
    return len(found)


def main(argv=None):
    here = pathlib.Path(__file__).resolve().parent
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=pathlib.Path, default=here.parent, help="the source tree (default: %(default)s)")
    parser.add_argument("--rules", type=pathlib.Path, default=here / "layers.txt", help="default: %(default)s")
    parser.add_argument("--list", action="store_true", help="print each scanned file's layer and exit")
    parser.add_argument("--build", type=pathlib.Path, help="a build directory: also check its object files' symbols")
    parser.add_argument("--nm", default="nm", help="the nm to read object files with (default: %(default)s)")
    parser.add_argument("--library", type=pathlib.Path, action="append", default=[],
                        help="with --build: a production shared library, which may export no tool-only symbol")
    args = parser.parse_args(argv)
    root = args.root.resolve()
    try:
        rules = Rules(args.rules)
    except (OSError, RulesError) as error:
        print(f"check_layers: {error}", file=sys.stderr)
        return 2
    if args.list:
        for path in sources(root):
            rel = path.relative_to(root).as_posix()
            print(f"{rel}: {rules.layer_of(rel) or '(no layer)'}")
        return 0
    if args.library and args.build is None:
        print("check_layers: --library needs --build (the objects that say which code is tool-only)", file=sys.stderr)
        return 2
    violations = check(root, rules, sys.stdout)
    links = exports = 0
    if args.build is not None:
        try:
            links = check_links(root, rules, args.build.resolve(), args.nm, sys.stdout)
            exports = check_exports(root, rules, args.build.resolve(), args.nm, args.library, sys.stdout)
        except (OSError, RulesError) as error:
            print(f"check_layers: {error}", file=sys.stderr)
            return 2
    if violations or links or exports:
        print(f"check_layers: {violations} include(s), {links} symbol use(s) and {exports} tool-only export(s) against "
              f"{args.rules}", file=sys.stdout)
        return 1
    checked = " and every symbol their objects in " + str(args.build) + " use" if args.build is not None else ""
    if args.library:
        checked += ", and no tool-only symbol exported by " + ", ".join(str(lib) for lib in args.library)
    print(f"check_layers: every include in {', '.join(SCANNED)}{checked} follows {args.rules}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
