"""The ``etrt`` command line: inspect, validate and pack ``.pte`` files.

::

    etrt inspect model.pte [--json] [--no-infos]
    etrt validate model.pte [--json] [--strict] [--quiet]
    etrt pack io.json -o model.pte [--plan engine.plan ...] [--delegate-storage segment|inline] [--force]

Exit status: 0 success; 1 the program fails validation (``validate``, and
``pack``, which then writes nothing); 2 bad input -- a file that is not a
``.pte``, is truncated, holds no TensorRT delegate, carries a blob or engine
that cannot be read, a bad IO description -- or a missing toolchain. Errors
are one line on stderr (``etrt: error: ...``), never a traceback (set
``ETRT_DEBUG=1`` to get one for an unexpected failure).

Also available as ``python -m etrt`` (and ``python -m etrt.cli``). See docs/export.md.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import traceback
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from . import dtypes

EXIT_OK = 0
EXIT_INVALID = 1
EXIT_BAD_INPUT = 2


class UsageError(Exception):
    """Bad input the user can fix; the message is printed as one line."""


def _one_line(msg: str) -> str:
    from .analysis import printable

    return printable(" ".join(str(msg).split()))


def _err(msg: str) -> None:
    print(f"etrt: error: {_one_line(msg)}", file=sys.stderr)


def _load(path: str, runtime: str = "unknown"):
    """validate_program on a path, mapping unreadable input to UsageError."""
    from .pte import PteError
    from .validate import validate_program

    p = Path(path)
    if not p.exists():
        raise UsageError(f"{path}: no such file")
    if p.is_dir():
        raise UsageError(f"{path}: is a directory, expected a .pte file")
    try:
        return validate_program(path, runtime)
    except PteError as e:
        raise UsageError(f"{path}: {e}") from None


def _bad_input_messages(path: str, result) -> List[str]:
    """One-line reasons why ``result`` describes unusable input ([] if none)."""
    msgs = [f"{path}: {f.message}" for f in result.bad_input]
    if not result.tensorrt_delegates:
        ids = sorted({d.ref.backend_id for d in result.delegates})
        found = f"it has only {', '.join(ids)} delegates" if ids else "it has no delegates"
        msgs.append(f"{path}: no TensorRTBackend delegate to check ({found}); etrt inspects and validates "
                    "TensorRT delegates")
    return msgs


# --------------------------------------------------------------------------
# inspect / validate


def cmd_inspect(args: argparse.Namespace) -> int:
    from .inspect_pte import format_report, report_from_result

    result = _load(args.pte)
    report = report_from_result(result)
    if args.json:
        json.dump(report, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print(format_report(report, infos=not args.no_infos))
    bad = _bad_input_messages(args.pte, result)
    for m in bad:
        _err(m)
    return EXIT_BAD_INPUT if bad else EXIT_OK


def cmd_validate(args: argparse.Namespace) -> int:
    from .validate import BAD_INPUT_CODES

    result = _load(args.pte, args.runtime)
    bad = _bad_input_messages(args.pte, result)
    failed = bool(result.errors) or (args.strict and bool(result.warnings))
    if args.json:
        out = result.to_dict()
        out["file"] = args.pte
        out["bad_input"] = bad
        json.dump(out, sys.stdout, indent=2)
        sys.stdout.write("\n")
    elif not bad:
        if args.quiet:
            if failed:
                print(result.format(infos=False))
        else:
            print(f"{args.pte}: " + result.format(infos=args.verbose))
    for m in bad:
        _err(m)
    if bad:
        # Errors that are not about damaged input (e.g. a program the runtime
        # refuses) are still worth knowing.
        if not args.json:
            for f in result.errors:
                if f.code not in BAD_INPUT_CODES:
                    _err(f"{args.pte}: {f.message}")
        return EXIT_BAD_INPUT
    return EXIT_INVALID if failed else EXIT_OK


# --------------------------------------------------------------------------
# pack

_TENSOR_KEYS = {"name", "dtype", "shape", "dynamic", "dynamic_dims", "planned", "comment"}
_ENGINE_KEYS = {"plan", "inputs", "outputs", "profiles", "symbolic_dims", "hardware_compatible", "device_id",
                "target_platform", "serialized_metadata", "backend_id", "compile_specs", "comment"}
_TOP_KEYS = {"method", "inputs", "outputs", "intermediates", "engines", "delegate_storage", "comment"}
_SINGLE_ENGINE_KEYS = _ENGINE_KEYS - {"inputs", "outputs", "comment"}


def _expect(cond: bool, msg: str) -> None:
    if not cond:
        raise UsageError(msg)


def _tensor_decl(t: Any, where: str) -> Dict[str, Any]:
    _expect(isinstance(t, Mapping), f"{where} must be an object {{name, dtype, shape}}")
    unknown = set(t) - _TENSOR_KEYS
    _expect(not unknown, f"{where} has unknown keys {sorted(unknown)} (known: {sorted(_TENSOR_KEYS)})")
    for k in ("name", "dtype", "shape"):
        _expect(k in t, f"{where} needs '{k}'")
    _expect(isinstance(t["name"], str) and t["name"], f"{where}.name must be a non-empty string")
    _expect(isinstance(t["shape"], list) and all(isinstance(d, int) and not isinstance(d, bool) and d >= 0
                                                 for d in t["shape"]),
            f"{where}.shape must be a list of non-negative integers (the upper-bound shape), got {t['shape']!r}")
    if "dynamic" in t:
        _expect(isinstance(t["dynamic"], bool), f"{where}.dynamic must be true or false")
    if "planned" in t:
        _expect(isinstance(t["planned"], bool), f"{where}.planned must be true or false")
    if "dynamic_dims" in t:
        dd = t["dynamic_dims"]
        _expect(isinstance(dd, list) and all(isinstance(d, int) and 0 <= d < len(t["shape"]) for d in dd),
                f"{where}.dynamic_dims must list dimension indices of its shape")
    return dict(t)


def _engine_io(entry: Any, where: str, tensors: Mapping[str, Dict[str, Any]]) -> Tuple[str, str]:
    """(program tensor name, engine binding name)."""
    if isinstance(entry, str):
        tensor, binding = entry, entry
    else:
        _expect(isinstance(entry, Mapping) and "tensor" in entry,
                f"{where} must be a tensor name or {{\"tensor\": ..., \"binding\": ...}}")
        tensor = entry["tensor"]
        binding = entry.get("binding", tensor)
        _expect(isinstance(tensor, str) and isinstance(binding, str) and binding,
                f"{where}: 'tensor' and 'binding' must be non-empty strings")
    _expect(tensor in tensors, f"{where}: '{tensor}' is not declared in inputs, outputs or intermediates")
    return tensor, binding


def _read_plan(path: Path, where: str) -> bytes:
    try:
        data = path.read_bytes()
    except OSError as e:
        raise UsageError(f"{where}: cannot read engine plan {str(path)!r}: {e.strerror}") from None
    _expect(len(data) > 0, f"{where}: engine plan {str(path)!r} is empty")
    _expect(data[:4] not in (b"TR01", b"TR02"),
            f"{where}: {str(path)!r} is already a TensorRT delegate blob (TR01/TR02); give the serialized engine "
            "it wraps, or put the blob in a .pte with 'python -m etrt.pte --spec'")
    _expect(data[4:8] != b"ET12", f"{where}: {str(path)!r} is a .pte, not an engine plan")
    return data


def build_from_description(desc: Any, base_dir: Path, plans: Sequence[str] = (),
                           delegate_storage: Optional[str] = None):
    """Builds a :class:`etrt.pte.Program` from an IO description (format in
    docs/export.md) through the JSON spec front door
    (:func:`etrt.pte.program_from_spec`). Returns ``(program, notes)``; raises
    UsageError, or PteError for what the program builder refuses."""
    from .pte import program_from_spec

    spec, notes = spec_from_description(desc, base_dir, plans, delegate_storage)
    return program_from_spec(spec, base_dir), notes


def spec_from_description(desc: Any, base_dir: Path, plans: Sequence[str] = (),
                          delegate_storage: Optional[str] = None) -> Tuple[Dict[str, Any], List[str]]:
    """The packer spec (docs/pte-packer.md) of an IO description: its tensors
    as values, one delegate call per engine with the TensorRT blob built here
    (as ``blob`` bytes). Returns ``(spec, notes)``; raises UsageError, or
    PteError for an unknown dtype."""
    from . import blob
    from .pte import PteError, compile_specs
    from .gpufree import GpufreeEngineError, is_gpufree_engine, read_gpufree_engine
    from .signature import Signature, SignatureError

    _expect(isinstance(desc, Mapping), "the IO description must be a JSON object")
    single = "engines" not in desc
    allowed = _TOP_KEYS | (_SINGLE_ENGINE_KEYS if single else set())
    unknown = set(desc) - allowed
    _expect(not unknown, f"the IO description has unknown keys {sorted(unknown)} (known: {sorted(allowed)})")
    for k in ("inputs", "outputs"):
        _expect(isinstance(desc.get(k), list) and desc[k], f"the IO description needs a non-empty '{k}' list")
    decls: Dict[str, Dict[str, Any]] = {}
    roles: Dict[str, str] = {}
    for role in ("inputs", "outputs", "intermediates"):
        items = desc.get(role, [])
        _expect(isinstance(items, list), f"'{role}' must be a list")
        for i, t in enumerate(items):
            t = _tensor_decl(t, f"{role}[{i}]")
            _expect(t["name"] not in decls, f"tensor '{t['name']}' is declared twice")
            _expect(role != "intermediates" or t.get("planned", True),
                    f"{role}[{i}] '{t['name']}': an intermediate is planned memory (no caller gives it); drop "
                    "'planned': false")
            decls[t["name"]] = t
            roles[t["name"]] = role
    if single:
        engine_specs = [dict({k: desc[k] for k in _SINGLE_ENGINE_KEYS if k in desc},
                             inputs=[t["name"] for t in desc["inputs"]],
                             outputs=[t["name"] for t in desc["outputs"]])]
    else:
        engine_specs = desc["engines"]
        _expect(isinstance(engine_specs, list) and engine_specs, "'engines' must be a non-empty list")
    _expect(not plans or len(plans) == len(engine_specs),
            f"--plan was given {len(plans)} time(s) but the description has {len(engine_specs)} engine(s); give "
            "one --plan per engine, in order")

    engines = []
    notes: List[str] = []
    for ei, spec in enumerate(engine_specs):
        where = "the engine" if single else f"engines[{ei}]"
        _expect(isinstance(spec, Mapping), f"{where} must be an object")
        unknown = set(spec) - _ENGINE_KEYS
        _expect(not unknown, f"{where} has unknown keys {sorted(unknown)} (known: {sorted(_ENGINE_KEYS)})")
        if plans:
            plan_path = Path(plans[ei])
        else:
            _expect("plan" in spec, f"{where} needs 'plan' (the engine file, relative to the description) or --plan")
            _expect(isinstance(spec["plan"], str), f"{where}.plan must be a path")
            plan_path = Path(spec["plan"])
            if not plan_path.is_absolute():
                plan_path = base_dir / plan_path
        engine = _read_plan(plan_path, where)
        for k in ("inputs", "outputs"):
            _expect(isinstance(spec.get(k), list) and spec[k], f"{where} needs a non-empty '{k}' list")
        ins = [_engine_io(e, f"{where}.inputs[{i}]", decls) for i, e in enumerate(spec["inputs"])]
        outs = [_engine_io(e, f"{where}.outputs[{i}]", decls) for i, e in enumerate(spec["outputs"])]
        names = [b for _, b in ins + outs]
        dup = sorted({n for n in names if names.count(n) > 1})
        _expect(not dup, f"{where}: binding name(s) {dup} used twice; give each engine tensor its own name")
        for t, _ in outs:
            _expect(roles[t] != "inputs", f"{where}: '{t}' is a program input and cannot be an engine output")

        gpufree_eng = None
        if is_gpufree_engine(engine):
            try:
                gpufree_eng = read_gpufree_engine(engine)
            except GpufreeEngineError as e:
                raise UsageError(f"{where}: {plan_path}: {e}") from None
        binding_inputs = [b for _, b in ins]
        sig = None
        try:
            if "profiles" in spec:
                profiles = spec["profiles"]
                _expect(isinstance(profiles, list) and profiles and all(isinstance(p, Mapping) for p in profiles),
                        f"{where}.profiles must be a non-empty list with one {{binding: bounds}} object per profile")
                filled = []
                for pi, prof in enumerate(profiles):
                    prof = dict(prof)
                    for t, b in ins:
                        if b not in prof and not decls[t].get("dynamic", False):
                            prof[b] = {"shape": decls[t]["shape"]}  # a static input needs no bounds
                    filled.append(prof)
                sig = Signature.from_torch_trt(filled, spec.get("symbolic_dims"), input_order=binding_inputs)
            elif gpufree_eng is not None:
                by_name = {t.name: k for k, t in enumerate(gpufree_eng.inputs)}
                missing = [b for b in binding_inputs if b not in by_name]
                _expect(not missing, f"{where}: the GPU-free NvInfer engine has no input(s) {missing}; its inputs are "
                                     f"{list(by_name)}")
                sig = Signature.from_bounds(
                    [(b, [prof[by_name[b]] for prof in gpufree_eng.profiles]) for b in binding_inputs],
                    spec.get("symbolic_dims"), num_profiles=gpufree_eng.num_profiles)
                notes.append(f"{where}: profile signature taken from the GPU-free NvInfer engine ({sig.num_profiles} "
                             "profile(s))")
            else:
                _expect("symbolic_dims" not in spec, f"{where}: 'symbolic_dims' needs 'profiles'")
                notes.append(f"{where}: no 'profiles' given, so the blob carries no profile signature and its "
                             "profiles cannot be validated")
        except SignatureError as e:
            raise UsageError(f"{where}: {e}") from None
        engines.append((spec, engine, ins, outs, sig))

    # Dynamism: explicit, else inferred from the profiles.
    dynamic_in: Dict[str, bool] = {}
    for spec, _, ins, outs, sig in engines:
        eng_dynamic = False
        if sig is not None:
            for t, b in ins:
                if sig.input(b).dynamic_dims():
                    dynamic_in[t] = True
                    eng_dynamic = True
        for t, _ in outs:
            dynamic_in[t] = dynamic_in.get(t, False) or eng_dynamic

    def is_dynamic(name: str) -> bool:
        t = decls[name]
        return t["dynamic"] if "dynamic" in t else dynamic_in.get(name, False)

    storage = delegate_storage or desc.get("delegate_storage", "segment")
    _expect(storage in ("segment", "inline"), "delegate_storage must be 'segment' or 'inline'")
    method_name = desc.get("method", "forward")
    _expect(isinstance(method_name, str) and method_name, "'method' must be a non-empty string")
    dtype_of = {}
    for name, t in decls.items():
        dtype_of[name] = dtypes.canonical(t["dtype"])
        if dtype_of[name] is None:
            raise PteError(dtypes.unknown_dtype(t["dtype"]))
    values = [{"name": name, "dtype": dtype_of[name], "sizes": t["shape"], "dynamic": is_dynamic(name),
               "planned": t.get("planned", True)} for name, t in decls.items()]
    calls = []
    for ei, (spec, engine, ins, outs, sig) in enumerate(engines):
        bindings = []
        for t, b in ins:
            if sig is not None:
                dyn = set(sig.input(b).dynamic_dims())
                shape = [-1 if k in dyn else d for k, d in enumerate(sig.input(b).profiles[0].max)]
            else:
                shape = _binding_shape(decls[t])
            bindings.append(blob.IoBinding(b, dtype_of[t], shape, True))
        for t, b in outs:
            bindings.append(blob.IoBinding(b, dtype_of[t], _binding_shape(decls[t]), False))
        try:
            md = blob.Metadata(
                io_bindings=bindings,
                hardware_compatible=bool(spec.get("hardware_compatible", False)),
                device_id=int(spec.get("device_id", 0)),
                serialized_metadata=str(spec.get("serialized_metadata", "")),
                target_platform=str(spec.get("target_platform", "")),
                profile_signature=sig.to_blob() if sig is not None else None,
            )
            data = blob.write_blob(md, engine)
        except (blob.BlobError, TypeError, ValueError) as e:
            raise UsageError(f"engines[{ei}]: {e}") from None
        backend = spec.get("backend_id", "TensorRTBackend")
        where = "the engine" if single else f"engines[{ei}]"
        specs = spec.get("compile_specs")
        _expect(specs is None or isinstance(specs, Mapping),
                f"{where}.compile_specs must be an object {{key: string or {{\"hex\": ...}}}}")
        try:
            pairs = compile_specs(specs, where)
        except PteError as e:
            raise UsageError(str(e)) from None
        calls.append({"backend_id": backend, "blob": data, "args": [t for t, _ in ins] + [t for t, _ in outs],
                      "compile_specs": [{"key": k, "value": v} for k, v in pairs]})
    program_spec = {"delegate_storage": storage, "name": method_name, "values": values,
                    "inputs": [t["name"] for t in desc["inputs"]], "outputs": [t["name"] for t in desc["outputs"]],
                    "delegate_calls": calls}
    return program_spec, notes


def _binding_shape(t: Mapping[str, Any]) -> List[int]:
    dd = set(t.get("dynamic_dims", []))
    return [-1 if k in dd else d for k, d in enumerate(t["shape"])]


def cmd_pack(args: argparse.Namespace) -> int:
    from .pte import PteError, write_atomic
    from .validate import validate_program

    desc_path = Path(args.io)
    try:
        desc = json.loads(desc_path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"{args.io}: no such file") from None
    except OSError as e:
        raise UsageError(f"{args.io}: cannot read the IO description: {e.strerror}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise UsageError(f"{args.io}: the IO description is not valid JSON: {e}") from None
    try:
        prog, notes = build_from_description(desc, desc_path.parent, args.plan or (), args.delegate_storage)
        data = prog.to_bytes()
    except PteError as e:
        raise UsageError(f"{args.io}: {e}") from None
    result = validate_program(data)
    for n in notes:
        print(f"note: {n}", file=sys.stderr)
    if result.errors and not args.force:
        print(result.format(infos=False), file=sys.stderr)
        _err(f"{args.out} not written: the packed program fails validation; fix the IO description or the "
             "engines (or pass --force to write it anyway)")
        return EXIT_INVALID
    write_atomic(args.out, data)
    n = len(result.tensorrt_delegates)
    print(f"wrote {args.out} ({len(data)} bytes): {n} TensorRT delegate(s); validation {result.verdict()}")
    for f in result.sorted_findings(infos=False):
        print(f"  {f}")
    return EXIT_INVALID if result.errors else EXIT_OK


# --------------------------------------------------------------------------
# main


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="etrt",
        description="Inspect, validate and pack ExecuTorch .pte files with TensorRT delegates (etrt).",
        epilog="Exit status: 0 ok, 1 validation errors, 2 bad input. See docs/export.md.")
    sub = ap.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    p = sub.add_parser("inspect", help="show methods, delegates, blobs, IO bindings and profiles of a .pte",
                       description="Show methods, delegates (backend id, position), and for TensorRT delegates the "
                                   "blob header, IO bindings, profiles and the validation verdict.")
    p.add_argument("pte", help="the .pte file")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("--no-infos", action="store_true", help="leave informational findings out of the text report")
    p.set_defaults(func=cmd_inspect)

    p = sub.add_parser("validate", help="check that every profile index means one regime across the program",
                       description="Validate the TensorRT delegates of a .pte: profile counts, shared symbolic "
                                   "dimensions index by index, planned input bounds. Exit 0 ok, 1 errors, 2 bad "
                                   "input.")
    p.add_argument("pte", help="the .pte file")
    p.add_argument("--json", action="store_true", help="print the findings as JSON")
    p.add_argument("--strict", action="store_true", help="treat warnings as errors (exit 1)")
    p.add_argument("--runtime", choices=("unknown", "cpu", "cuda"), default="unknown",
                   help="the runtime the program will meet: cpu = a CPU build of etrt (memory on CUDA, as "
                        "Torch-TensorRT's exports have, CUDA-mode engines and TensorRT plans are errors), cuda = a "
                        "CUDA build of etrt (or ExecuTorch's CUDA backend's allocator); default: warnings for what "
                        "needs CUDA. Host engines behind CUDA-placed arguments and legacy device planning are errors "
                        "for every runtime")
    g = p.add_mutually_exclusive_group()
    g.add_argument("-q", "--quiet", action="store_true", help="print nothing when the program passes")
    g.add_argument("-v", "--verbose", action="store_true", help="also print informational findings")
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser("pack", help="wrap engine plans and an IO description into a .pte",
                       description="Wrap serialized engines (e.g. from trtexec, with several profiles) and an IO "
                                   "description JSON into a .pte with TensorRT delegates. The result is validated "
                                   "before it is written. Format: docs/export.md.")
    p.add_argument("io", help="the IO description (JSON)")
    p.add_argument("-o", "--out", required=True, help="the .pte to write")
    p.add_argument("--plan", action="append", metavar="FILE",
                   help="engine plan file; once per engine, in order, overriding the description's 'plan'")
    p.add_argument("--delegate-storage", choices=("segment", "inline"),
                   help="where the blobs go (default: segment, after the program)")
    p.add_argument("--force", action="store_true", help="write the .pte even if it fails validation (exit 1)")
    p.set_defaults(func=cmd_pack)
    return ap


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point of the ``etrt`` console script; returns the exit status."""
    from .blob import BlobError
    from .pte import PteError, ToolchainError
    from .gpufree import GpufreeEngineError
    from .signature import SignatureError

    ap = _parser()
    try:
        args = ap.parse_args(argv)
    except SystemExit as e:  # argparse has printed its usage message
        return EXIT_BAD_INPUT if e.code else EXIT_OK
    try:
        return args.func(args)
    except UsageError as e:
        _err(str(e))
    except (PteError, BlobError, SignatureError, GpufreeEngineError) as e:
        _err(str(e))
    except ToolchainError as e:
        _err(f"{e} (the .pte reader needs the executorch wheel's flatc and schema)")
    except OSError as e:
        where = f"{e.filename}: " if getattr(e, "filename", None) else ""
        _err(f"{where}{e.strerror or e}")
    except KeyboardInterrupt:
        _err("interrupted")
    except MemoryError:
        # Every count a .pte, blob or engine declares is checked against its limit (docs/limits.md) before anything
        # is built for it, so this means the process's own memory limit is below what the input legitimately needs.
        _err("ran out of memory; the input is within etrt's limits (docs/limits.md) but needs more memory than this "
             "process may use")
    except Exception as e:  # never a traceback for the user; ETRT_DEBUG=1 shows it
        if os.environ.get("ETRT_DEBUG"):
            traceback.print_exc()
        _err(f"unexpected {type(e).__name__}: {e} -- this is a bug in etrt; rerun with ETRT_DEBUG=1 and report it")
    return EXIT_BAD_INPUT


if __name__ == "__main__":
    sys.exit(main())
