#!/usr/bin/env python3
"""Seed corpora for the fuzz harnesses, from what the build already made.

    make_seeds.py --out DIR [--max-bytes N] --from SRC [--from SRC]...

searches each SRC recursively and writes
    DIR/blob/    every *.blob: the backend fixtures' TR01/TR02 blobs (engines from the GPU-free builder,
                 tests/backend/make_fixtures.cpp) and the blob test vectors (tests/vectors/blob, invalid/ included)
    DIR/engine/  every *.engine (tests/vectors/engine), and the engine bytes inside each blob with a well-formed
                 header
    DIR/module/  every *.pte (the fixtures packed by etrt's packer, tests/adversarial)
and DIR/.stamp. Files over --max-bytes (default 65536) are left out: libFuzzer's inputs grow to the largest seed,
and large inputs only slow it down. The directories are emptied first, so the corpora follow their sources.
"""

import argparse
import pathlib
import shutil
import struct
import sys


def engine_of(blob: bytes):
    if len(blob) < 32 or blob[:4] not in (b"TR01", b"TR02"):
        return None
    engine_offset, = struct.unpack_from("<I", blob, 12)
    engine_size, = struct.unpack_from("<Q", blob, 16)
    if engine_size == 0 or engine_offset < 32 or engine_offset + engine_size > len(blob):
        return None
    return blob[engine_offset:engine_offset + engine_size]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, type=pathlib.Path)
    parser.add_argument("--from", dest="sources", action="append", default=[], type=pathlib.Path)
    parser.add_argument("--max-bytes", type=int, default=65536)
    args = parser.parse_args()

    dirs = {name: args.out / name for name in ("blob", "engine", "module")}
    for d in dirs.values():
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir(parents=True)

    counts = {name: 0 for name in dirs}
    for root in args.sources:
        if not root.is_dir():
            print(f"make_seeds: {root} is not a directory", file=sys.stderr)
            return 1
        prefix = root.name
        for path in sorted(root.rglob("*")):
            if not path.is_file() or path.suffix not in (".blob", ".engine", ".pte"):
                continue
            if path.stat().st_size > args.max_bytes:
                continue
            stem = prefix + "_" + "_".join(path.relative_to(root).with_suffix("").parts)
            if path.suffix == ".blob":
                data = path.read_bytes()
                (dirs["blob"] / (stem + ".blob")).write_bytes(data)
                counts["blob"] += 1
                engine = engine_of(data)
                if engine is not None:
                    (dirs["engine"] / (stem + ".engine")).write_bytes(engine)
                    counts["engine"] += 1
            elif path.suffix == ".engine":
                shutil.copyfile(path, dirs["engine"] / (stem + ".engine"))
                counts["engine"] += 1
            elif path.suffix == ".pte":
                shutil.copyfile(path, dirs["module"] / (stem + ".pte"))
                counts["module"] += 1
    for name, n in counts.items():
        if n == 0:
            print(f"make_seeds: no seeds for {name}", file=sys.stderr)
            return 1
    (args.out / ".stamp").write_text(" ".join(f"{k}={v}" for k, v in counts.items()) + "\n")
    print("make_seeds: " + ", ".join(f"{v} {k} seeds" for k, v in counts.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
