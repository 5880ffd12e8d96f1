#!/usr/bin/env python3
"""Checks that every #include in src/, include/ and nvinfer/ runs in an allowed direction between layers.

    check_layers.py [--root DIR] [--rules FILE] [--list]

The layers and the allow-list are in tools/layers.txt (--rules names another file). Every quoted include
("...") is resolved as the compiler would: beside the including file, then under src/, include/,
nvinfer/include/ and nvinfer/src/. An angle include (<...>) counts only when it names a header under include/ or
nvinfer/include/ (<NvInfer.h>, <etrt/options.h>); any other is a system or third-party header and is skipped.

Prints one line per violation,

    file:line: <layer> may not include <layer> (<header>)

and exits 1 when there is any; exits 2 when the rules file is malformed. --list prints each file's layer instead.
Python 3 standard library only.
"""

import argparse
import fnmatch
import pathlib
import re
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
            else:
                raise RulesError(f"{where}: expected 'layer <name> <dir>', 'allow <from> <to> [<glob>]' "
                                 f"or 'known <file> <header>', got: {raw.strip()}")
        for where, args in pending:
            for name in args[:2]:
                if name not in names:
                    raise RulesError(f"{where}: unknown layer '{name}'")
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


def main(argv=None):
    here = pathlib.Path(__file__).resolve().parent
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=pathlib.Path, default=here.parent, help="the source tree (default: %(default)s)")
    parser.add_argument("--rules", type=pathlib.Path, default=here / "layers.txt", help="default: %(default)s")
    parser.add_argument("--list", action="store_true", help="print each scanned file's layer and exit")
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
    violations = check(root, rules, sys.stdout)
    if violations:
        print(f"check_layers: {violations} include(s) against {args.rules}", file=sys.stdout)
        return 1
    print(f"check_layers: every include in {', '.join(SCANNED)} follows {args.rules}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
