"""``etrt inspect``: what a ``.pte`` holds, seen from the TensorRT delegate.

:func:`inspect_program` returns a JSON-able report: the file, its methods
(inputs, outputs), every delegate (backend id, position, storage, arguments)
and, for TensorRT delegates, the blob header fields, IO bindings matched to
the program tensors they are called with, the profile count and bounds from
the signature, the engine's own profiles when it is a GPU-free NvInfer engine, and
the validation verdict (:mod:`etrt.validate`). :func:`format_report` renders
it as text.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from .analysis import (WEIGHT_STREAMING_BUDGET, DelegateInfo, describe_aliases, describe_states, parse_byte_count, printable,
                       program_placement)
from .pte import describe_value
from .signature import Signature, format_shape
from .validate import ValidationResult, validate_program

__all__ = ["SCHEMA_VERSION", "format_report", "inspect_program", "report_from_result"]

#: The version of the report's layout, its ``"schema_version"`` (docs/export.md, "etrt inspect"). A report without
#: one is version 1, which called a GPU-free NvInfer engine ``"kind": "reference"`` under an ``"engine"."reference"``
#: key; version 2 says ``"gpufree"`` for both. Raised when a key is renamed or removed or its meaning changes, not
#: when one is added.
SCHEMA_VERSION = 2


def inspect_program(source: Any) -> Dict[str, Any]:
    """Reads and validates ``source`` (anything :func:`etrt.analysis.load_program`
    takes) and returns the report. Raises :class:`etrt.pte.PteError` when the
    file is not a readable ``.pte``."""
    return report_from_result(validate_program(source))


def _value(v: Dict[str, Any], index: int) -> Dict[str, Any]:
    if v["kind"] == "tensor":
        return {"value": index, "kind": "tensor", "dtype": v["dtype"], "sizes": v["sizes"],
                "dynamism": v["dynamism"], "planned": v["planned"], "nbytes": v["nbytes"], "device": v["device"]}
    return {"value": index, "kind": v["kind"], "value_of": v.get("value")}


def _text(b: bytes) -> Any:
    try:
        s = b.decode("utf-8")
        if s.isprintable():
            return s
    except UnicodeDecodeError:
        pass
    return {"hex": b.hex()}


def _signature_dict(sig: Optional[Signature]) -> Optional[Dict[str, Any]]:
    return sig.to_dict() if sig is not None else None


def _delegate(d: DelegateInfo, plan: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    out: Dict[str, Any] = {
        "method": d.ref.method,
        "delegate_index": d.ref.delegate_index,
        "instruction": d.ref.instruction,
        "backend_id": d.ref.backend_id,
        "is_tensorrt": d.is_tensorrt,
        "storage": {"location": d.location, "index": d.storage_index} if d.location else None,
        "size": len(d.data),
        "compile_specs": {k: _text(v) for k, v in d.compile_specs.items()},
        "calls": [{"chain": c.chain, "instruction": c.instruction, "args": c.args} for c in d.calls],
    }
    values = (plan or {}).get("values") or []
    if d.calls:
        out["args"] = [_value(describe_value(values[vi]), vi) if 0 <= vi < len(values) else {"value": vi}
                       for vi in d.calls[0].args]
    if not d.is_tensorrt:
        return out
    out["blob"] = d.header
    out["blob_error"] = d.blob_error
    if d.metadata is None:
        return out
    md = d.metadata
    out["blob"] = dict(d.header or {})
    out["blob"].update({
        "hardware_compatible": md.hardware_compatible,
        "device_id": md.device_id,
        "target_platform": md.target_platform,
        "serialized_metadata_size": len(md.serialized_metadata),
        "aliased_io": [{"output": a.output, "input": a.input, "kind": a.kind} for a in md.aliased_io],
        "has_profile_signature": md.profile_signature is not None,
    })
    # The call's tensors meet the bindings as the runtime pairs them: inputs,
    # then outputs, aliased outputs possibly left out (bound_to None).
    pairs = d.match_args(d.tensor_args) if d.tensor_args is not None else None
    bound = {b.name: a for b, a in pairs or []}
    states = describe_states(d)
    # A delegate-owned state's input and output: the delegate keeps them (the call passes neither).
    owned = {s[role]: {"name": s["name"], "in_place": s["in_place"]} for s in states for role in ("input", "output")}

    def binding(b) -> Dict[str, Any]:
        e: Dict[str, Any] = {"name": b.name, "is_input": b.is_input, "dtype": b.dtype, "shape": b.shape}
        if b.name in bound:
            a = bound[b.name]
            e["bound_to"] = None if a is None else {"value": a.value_index, "dtype": a.value["dtype"],
                                                    "sizes": a.value["sizes"], "dynamism": a.value["dynamism"],
                                                    "device": a.value.get("device", "cpu")}
        if b.name in owned:
            e["state"] = owned[b.name]
        return e

    out["io_bindings"] = [binding(b) for b in md.io_bindings]
    arguments = d.arguments()
    out["arguments"] = [binding(b) for b in arguments] if arguments is not None else None
    out["io_from_engine"] = not md.io_bindings
    out["aliases"] = [v.to_dict() for v in describe_aliases(d)]
    out["delegate_state"] = states
    sig = d.signature
    out["profiles"] = {
        "count": sig.num_profiles if sig is not None else None,
        "source": d.signature_source,
        "signature": _signature_dict(d.blob_signature),
        "regimes": sig.describe() if sig is not None else None,
        "signature_error": d.signature_error,
    }
    eng: Dict[str, Any] = {"kind": d.engine_kind, "size": d.engine_span[1] if d.engine_span is not None else 0}
    if d.gpufree_engine is not None:
        r = d.gpufree_engine
        eng["gpufree"] = {
            "label": r.label, "version": r.version, "switch_cost_ns": r.switch_cost_ns,
            "requested_device_memory": r.requested_device_memory, "tracing": r.tracing,
            "cuda_mode": r.cuda_mode, "streamable_weights": r.streamable_weights,
            "ops": [{"kind": op.kind_name, "operands": [r.tensor_name(x) for x in (op.a, op.b, op.c, op.d) if x >= 0],
                     "out": r.tensor_name(op.out)} for op in r.ops],
            "aliases": r.aliases(),
            "io": [{"name": t.name, "is_input": t.is_input, "dtype": t.dtype, "shape": list(t.shape),
                    "is_shape_tensor": t.is_shape_tensor, "on_host": t.on_host,
                    "data_dependent": t.data_dependent} for t in r.io],
            "num_profiles": r.num_profiles,
            "profiles": [[{"input": t.name, **b.to_dict()} for t, b in zip(r.inputs, prof)] for prof in r.profiles],
        }
        if d.blob_signature is not None:
            try:
                eng["agrees_with_signature"] = _agrees(d.blob_signature, d.engine_signature())
            except Exception:  # an engine the signature type refuses; already a finding
                eng["agrees_with_signature"] = False
    if d.engine_error is not None:
        eng["error"] = d.engine_error
    out["engine"] = eng
    return out


def _agrees(sig: Signature, engine_sig: Signature) -> bool:
    if sig.num_profiles != engine_sig.num_profiles:
        return False
    names = set(engine_sig.input_names)
    return all(i.name in names and engine_sig.input(i.name).profiles == i.profiles for i in sig.inputs)  # O(1) each


def report_from_result(result: ValidationResult) -> Dict[str, Any]:
    """The inspect report for an already computed validation result of a .pte."""
    pte = result.pte or {}
    program = pte.get("program") or {}
    plans = program.get("execution_plan") or []
    methods = []
    placements = program_placement(pte)
    for mi, plan in enumerate(plans):
        values = plan.get("values") or []
        placement = placements[mi]

        def io(indices: List[int]) -> List[Dict[str, Any]]:
            return [_value(describe_value(values[i]), i) if 0 <= i < len(values) else {"value": i}
                    for i in indices]

        methods.append({
            "name": plan.get("name"),
            "index": mi,
            "values": len(values),
            "inputs": io(plan.get("inputs") or []),
            "outputs": io(plan.get("outputs") or []),
            "non_const_buffer_sizes": plan.get("non_const_buffer_sizes"),
            # Where each planned buffer lives (non_const_buffer_device; CPU where absent), the tensors on a
            # device, and the host/device copies ExecuTorch inserted around device-placed delegate calls.
            "buffers": [{"index": b.index, "size": b.size, "device": b.device} for b in placement.buffers],
            "device_values": {str(k): v for k, v in sorted(placement.device_values.items())},
            "copies": [{"chain": c.chain, "instruction": c.instruction, "op": c.op, "direction": c.direction,
                        "source": c.source, "destination": c.destination} for c in placement.copies],
            "delegates": [_delegate(d, plan) for d in result.delegates if d.ref.method_index == mi],
        })
    return {
        "schema_version": SCHEMA_VERSION,
        "file": result.source,
        "size": pte.get("file_size"),
        "identifier": pte.get("identifier"),
        "extended_header": pte.get("extended_header"),
        "methods": methods,
        "tensorrt_delegates": len(result.tensorrt_delegates),
        "validation": result.to_dict(),
    }


# --------------------------------------------------------------------------
# Text


def _size(n: Optional[int]) -> str:
    if n is None:
        return "?"
    if n < 10 * 1024:
        return f"{n} bytes"
    for unit in ("KiB", "MiB", "GiB"):
        n /= 1024
        if n < 1024 or unit == "GiB":
            return f"{n:.1f} {unit}"
    return f"{n}"  # pragma: no cover


def _tensor_text(v: Dict[str, Any]) -> str:
    if v.get("kind") != "tensor":
        return f"v{v['value']} {v.get('kind', '?')}" + (f" = {v['value_of']}" if v.get("value_of") is not None else "")
    dyn = {"DYNAMIC_BOUND": " (upper bound)", "DYNAMIC_UNBOUND": " (unbound)"}.get(v["dynamism"], "")
    on = f" on {v['device']}" if v.get("device", "cpu") != "cpu" else ""
    return f"v{v['value']} {v['dtype']} {format_shape(v['sizes'])}{dyn}{on}"


def _binding_text(b: Dict[str, Any]) -> str:
    arrow = "<-" if b["is_input"] else "->"
    text = f"{b['name']} {b['dtype'] or '?'} {format_shape(b['shape']) if b['shape'] else '[?]'}"
    if "bound_to" in b:
        t = b["bound_to"]
        state = b.get("state")
        if t is None and state is not None:
            # Worded as the state's own line: the new value written in place, or copied back.
            if b["is_input"]:
                return text + f"  {arrow} the delegate's state '{state['name']}' (not passed: the delegate keeps it)"
            how = "written in place into" if state["in_place"] else "copied back into"
            return text + f"  {arrow} {how} the delegate's state '{state['name']}'"
        if t is None:
            return text + f"  {arrow} no tensor (written in place into its input only)"
        dyn = " (upper bound)" if t["dynamism"] == "DYNAMIC_BOUND" else ""
        on = f" on {t['device']}" if t.get("device", "cpu") != "cpu" else ""
        text += f"  {arrow} v{t['value']} {t['dtype']} {format_shape(t['sizes'])}{dyn}{on}"
    return text


def _spec_text(key: str, value: Any) -> str:
    shown = f"'{value}'" if isinstance(value, str) else f"hex {value['hex']}"
    if key != WEIGHT_STREAMING_BUDGET:
        return f"{key} = {shown}"
    n = parse_byte_count(value.encode() if isinstance(value, str) else bytes.fromhex(value["hex"]))
    if n is None:
        return f"{key} = {shown} (not a byte count: the runtime refuses this delegate)"
    return f"{key} = {shown} (TensorRT's weight-streaming budget, {n} bytes, applied before the first context)"


def _alias_lines(d: Dict[str, Any]) -> List[str]:
    lines = []
    for a in d["aliases"]:
        if a["status"] == "refused":
            lines.append(f"aliased: output {a['output']} -> input {a['input']}: {a['detail']}")
        else:
            lines.append(f"aliased: output {a['output']} is written in place into input {a['input']} ({a['detail']})")
    live = [a for a in d["aliases"] if a["status"] != "refused"]
    if live:
        text = ("at execute: an aliased output is bound to its input's memory; ExecuTorch may pass a write-back "
                "tensor for it (it then receives a copy) or none (the buffer is the delegate's)")
        by_name = {b["name"]: b for b in d.get("arguments") or []}
        passed = [by_name[a["output"]].get("bound_to", False) for a in live if a["output"] in by_name]
        if passed and all(p is None for p in passed):
            text += "; this call passes none"
        elif passed and all(p for p in passed):
            text += "; this call passes write-back tensors"
        lines.append(text)
    return lines


def format_report(report: Dict[str, Any], infos: bool = True) -> str:
    """The human-readable form of :func:`inspect_program`'s report."""
    lines = []
    methods = report["methods"]
    n_del = sum(len(m["delegates"]) for m in methods)
    lines.append(f"{report['file'] or '<bytes>'}: ExecuTorch program ({report['identifier']}), "
                 f"{_size(report['size'])}, {len(methods)} method(s), {n_del} delegate(s) "
                 f"({report['tensorrt_delegates']} TensorRT)")
    for m in methods:
        lines.append("")
        lines.append(f"method '{m['name']}': {len(m['inputs'])} input(s), {len(m['outputs'])} output(s), "
                     f"{len(m['delegates'])} delegate(s)")
        lines.append("  inputs:  " + ("; ".join(_tensor_text(v) for v in m["inputs"]) or "none"))
        lines.append("  outputs: " + ("; ".join(_tensor_text(v) for v in m["outputs"]) or "none"))
        lines.append("  memory:  " + ("; ".join(f"buffer {b['index']} {_size(b['size'])} on {b['device']}"
                                                for b in m["buffers"]) or "no planned buffers"))
        if m["device_values"]:
            by_device: Dict[str, List[str]] = {}
            for vi, dev in m["device_values"].items():
                by_device.setdefault(dev, []).append(f"v{vi}")
            lines.append("  device tensors: " + "; ".join(f"{dev}: {', '.join(vs)}" for dev, vs in by_device.items()))
        for c in m["copies"]:
            lines.append(f"  copy: instruction {c['instruction']} {c['op']} ({c['direction']}) "
                         f"v{c['source']} -> v{c['destination']}")
        for d in m["delegates"]:
            where = f"instruction {d['instruction']}" if d["instruction"] is not None else "never called"
            storage = d["storage"]
            stored = f", {storage['location'].lower()} {storage['index']}" if storage else ""
            lines.append(f"  delegate {d['delegate_index']}: {d['backend_id']} ({where}{stored}, {_size(d['size'])})")
            if not d["is_tensorrt"]:
                lines.append("      not a TensorRT delegate; arguments: "
                             + (", ".join(_tensor_text(a) for a in d.get("args", [])) or "none"))
                continue
            if d.get("blob_error"):
                lines.append(f"      unreadable blob: {d['blob_error']}")
                continue
            b = d["blob"]
            lines.append(f"      blob: {b['magic']}, metadata {b['metadata_size']} bytes at {b['metadata_offset']}, "
                         f"engine {_size(b['engine_size'])} at {b['engine_offset']}; hardware_compatible "
                         f"{str(b['hardware_compatible']).lower()}, device_id {b['device_id']}"
                         + (f", target_platform '{b['target_platform']}'" if b["target_platform"] else ""))
            if d["compile_specs"]:
                specs = "; ".join(_spec_text(k, v) for k, v in d["compile_specs"].items())
                lines.append(f"      compile specs: {specs}")
            if d["io_from_engine"]:
                lines.append("      io_bindings: none; the runtime takes the engine's IO tensors (inputs, then outputs)"
                             + ("" if d["arguments"] is not None else ", which an opaque TensorRT plan hides here"))
            arguments = d["arguments"] or []
            ins = [x for x in arguments if x["is_input"]]
            outs = [x for x in arguments if not x["is_input"]]
            for title, group in (("inputs: ", ins), ("outputs:", outs)):
                for k, x in enumerate(group):
                    lines.append(f"      {title if k == 0 else ' ' * len(title)} {_binding_text(x)}")
            lines += [f"      {line}" for line in _alias_lines(d)]
            for st in d.get("delegate_state", []):
                size = _size(st["bytes"]) if st["bytes"] is not None else "size unknown"
                how = "written in place" if st["in_place"] else f"new value from '{st['output']}', copied back"
                init = f"named data '{st['initial_value']}'" if st["initial_value"] else "zeros"
                lines.append(f"      state '{st['name']}': input '{st['input']}' ({st['dtype']} {st['shape']}, {size}), "
                             f"owned by the delegate (the call passes neither it nor its new value), {how}; starts "
                             f"from {init}" + (f"; REFUSED: {st['problem']}" if st["problem"] else ""))
            p = d["profiles"]
            eng = d["engine"]
            if p["count"] is None:
                lines.append("      profiles: unknown (no profile_signature, opaque TensorRT plan)")
            else:
                src = "signature" if p["source"] == "blob" else "GPU-free NvInfer engine"
                lines.append(f"      profiles: {p['count']} (from the {src})")
                for r in p["regimes"]:
                    lines.append(f"        {r}")
            ref = eng.get("gpufree")
            if ref is not None:
                agree = eng.get("agrees_with_signature")
                note = ("" if agree is None else
                        ", its profiles agree with the signature" if agree else
                        ", its profiles DISAGREE with the signature")
                extras = "".join((", CUDA mode" if ref["cuda_mode"] else "",
                                  ", streamable weights" if ref["streamable_weights"] else ""))
                lines.append(f"      engine: GPU-free NvInfer engine '{ref['label']}' (ETRF v{ref['version']}, "
                             f"{ref['num_profiles']} profile(s), switch cost {ref['switch_cost_ns']} ns{extras}){note}")
                if agree is False:
                    for pi, prof in enumerate(ref["profiles"]):
                        lines.append(f"        engine profile {pi}: " + "; ".join(
                            f"{x['input']} min {format_shape(x['min'])} opt {format_shape(x['opt'])} max "
                            f"{format_shape(x['max'])}" for x in prof))
            elif eng.get("error"):
                lines.append(f"      engine: unreadable GPU-free NvInfer engine: {eng['error']}")
            else:
                lines.append(f"      engine: TensorRT plan, {_size(eng['size'])}")
    v = report["validation"]
    lines.append("")
    lines.append(f"validation: {v['verdict']}")
    for sev in ("errors", "warnings", "infos") if infos else ("errors", "warnings"):
        for f in v[sev]:
            lines.append(f"  {f['severity']}: {f['message']}")
    # Each entry is one line; a control character in one came from a name in the file.
    return "\n".join(printable(line) for line in lines)
