"""The rules metadata must follow beyond its types (``validate_metadata`` of
``src/blob/metadata.cpp``, in its order): limits, name lengths, unique
bindings, aliases and the profile signature."""

from __future__ import annotations

from typing import Dict, Tuple

from .format import (ALIAS_KIND_KV_CACHE_UPDATE, ALIAS_KIND_USER, MAX_ALIASES, MAX_IO_BINDINGS, MAX_NAME_LENGTH,
                     MAX_PROFILE_ENTRIES, MAX_PROFILES, MAX_SIGNATURE_RANK, MAX_STATES, MAX_SYMBOLIC_DIMS, IoBinding, Metadata,
                     ProfileSignature, SignatureInput, _fail, _quoted, _too_many_entries, _too_many_profile_entries)


def _validate_limits(m: Metadata) -> None:
    if len(m.io_bindings) > MAX_IO_BINDINGS:
        raise _too_many_entries("io_bindings", len(m.io_bindings), MAX_IO_BINDINGS)
    if len(m.aliased_io) > MAX_ALIASES:
        raise _too_many_entries("aliased_io", len(m.aliased_io), MAX_ALIASES)
    if len(m.delegate_state) > MAX_STATES:
        raise _too_many_entries("delegate_state", len(m.delegate_state), MAX_STATES)
    sig = m.profile_signature
    if sig is None:
        return
    if len(sig.inputs) > MAX_IO_BINDINGS:
        raise _too_many_entries("profile_signature.inputs", len(sig.inputs), MAX_IO_BINDINGS)
    if len(sig.symbolic_dims) > MAX_SYMBOLIC_DIMS:
        raise _too_many_entries("profile_signature.symbolic_dims", len(sig.symbolic_dims), MAX_SYMBOLIC_DIMS)


def _validate_name_lengths(m: Metadata) -> None:
    """Name-like strings in the order the JSON holds them (UTF-8 was checked as they were read)."""
    def check(value: str, path: str) -> None:
        n = len(value.encode("utf-8", "surrogatepass"))
        if n > MAX_NAME_LENGTH:
            raise _fail(f"{path} is {n} bytes long, above the limit of {MAX_NAME_LENGTH}; re-export the model")

    for i, b in enumerate(m.io_bindings):
        check(b.name, f"io_bindings[{i}].name")
        check(b.dtype, f"io_bindings[{i}].dtype")
    for i, a in enumerate(m.aliased_io):
        check(a.output, f"aliased_io[{i}].output")
        check(a.input, f"aliased_io[{i}].input")
        check(a.kind, f"aliased_io[{i}].kind")
    sig = m.profile_signature
    if sig is not None:
        for i, inp in enumerate(sig.inputs):
            check(inp.name, f"profile_signature.inputs[{i}].name")
        for i, s in enumerate(sig.symbolic_dims):
            check(s.name, f"profile_signature.symbolic_dims[{i}].name")
            check(s.input, f"profile_signature.symbolic_dims[{i}].input")
    for i, st in enumerate(m.delegate_state):
        for key in ("name", "input", "output", "initial_value"):
            check(getattr(st, key), f"delegate_state[{i}].{key}")


def _validate_bindings(m: Metadata) -> Dict[str, IoBinding]:
    """Names to bindings (every later lookup is O(1)). Inputs and outputs may
    interleave: the delegate's arguments are the inputs in their listed order,
    then the outputs in theirs (arguments())."""
    seen: Dict[str, int] = {}
    by_name: Dict[str, IoBinding] = {}
    for i, b in enumerate(m.io_bindings):
        if not b.name:
            raise _fail(
                f"io_bindings[{i}].name is empty; every engine input and output needs its TensorRT tensor name, "
                "re-export the model"
            )
        if "\x00" in b.name:
            raise _fail(
                f"io_bindings[{i}].name {_quoted(b.name)} contains a NUL byte; TensorRT tensor names are C strings, "
                "so no engine tensor has this name, re-export the model"
            )
        if b.name in seen:
            raise _fail(
                f"io_bindings[{seen[b.name]}] and io_bindings[{i}] are both named {_quoted(b.name)}; "
                "binding names must be unique, re-export the model"
            )
        seen[b.name] = i
        by_name[b.name] = b
    return by_name


def _validate_aliases(m: Metadata, by_name: Dict[str, IoBinding]) -> None:
    seen: Dict[str, int] = {}
    for i, a in enumerate(m.aliased_io):
        out = by_name.get(a.output)
        if out is None or out.is_input:
            raise _fail(f"aliased_io[{i}].output {_quoted(a.output)} is not an output in io_bindings; re-export the "
                        "model")
        inp = by_name.get(a.input)
        if inp is None or not inp.is_input:
            raise _fail(f"aliased_io[{i}].input {_quoted(a.input)} is not an input in io_bindings; re-export the model")
        if not a.kind:
            raise _fail(f"aliased_io[{i}].kind is empty; use '{ALIAS_KIND_KV_CACHE_UPDATE}' or '{ALIAS_KIND_USER}'")
        if a.output in seen:
            raise _fail(
                f"aliased_io[{seen[a.output]}] and aliased_io[{i}] both alias output {_quoted(a.output)}; "
                "an output aliases one input at most, re-export the model"
            )
        seen[a.output] = i


def _validate_signature_input(sig: ProfileSignature, i: int) -> None:
    inp = sig.inputs[i]
    what = f"profile_signature.inputs[{i}] {_quoted(inp.name)}"
    if len(inp.profiles) != sig.num_profiles:
        raise _fail(
            f"{what} has {len(inp.profiles)} profiles but num_profiles is {sig.num_profiles}; re-export the model"
        )
    rank = len(inp.profiles[0].min)
    for p, b in enumerate(inp.profiles):
        if len(b.opt) != len(b.min) or len(b.max) != len(b.min):
            raise _fail(
                f"{what} profile {p} has min of rank {len(b.min)}, opt of rank {len(b.opt)} and max of rank "
                f"{len(b.max)}; they must have the same rank, re-export the model"
            )
        if p == 0 and rank > MAX_SIGNATURE_RANK:
            raise _fail(f"{what} has rank {rank}; TensorRT tensors have at most 8 dimensions, re-export the model")
        if len(b.min) != rank:
            raise _fail(
                f"{what} has rank {len(b.min)} in profile {p} but rank {rank} in profile 0; "
                "an input has one rank in every profile, re-export the model"
            )
        for d in range(rank):
            if b.min[d] < 0 or b.min[d] > b.opt[d] or b.opt[d] > b.max[d]:
                raise _fail(
                    f"{what} profile {p} dim {d} has min {b.min[d]}, opt {b.opt[d]}, max {b.max[d]}; "
                    "bounds must satisfy 0 <= min <= opt <= max, re-export the model"
                )


def _validate_symbolic_dim(m: Metadata, by_name: Dict[str, IoBinding], described: Dict[str, SignatureInput],
                           dims: Dict[Tuple[str, int], int], i: int) -> None:
    sig = m.profile_signature
    s = sig.symbolic_dims[i]
    path = f"profile_signature.symbolic_dims[{i}]"
    if not s.name:
        raise _fail(f"{path}.name is empty; re-export the model")
    what = f"{path} {_quoted(s.name)}"
    binding = by_name.get(s.input)
    if binding is None or not binding.is_input:
        raise _fail(f"{what} refers to {_quoted(s.input)}, which is not an input in io_bindings; re-export the model")
    inp = described.get(s.input)
    if inp is None:
        raise _fail(
            f"{what} refers to input {_quoted(s.input)}, which has no bounds in profile_signature.inputs; "
            "re-export the model"
        )
    rank = len(inp.profiles[0].min)
    if s.dim < 0 or s.dim >= rank:
        raise _fail(f"{what} is dim {s.dim} of input {_quoted(s.input)}, which has rank {rank}; re-export the model")
    if len(s.ranges) != sig.num_profiles:
        raise _fail(f"{what} has {len(s.ranges)} ranges but num_profiles is {sig.num_profiles}; re-export the model")
    for p, (lo, hi) in enumerate(s.ranges):
        if lo < 0 or lo > hi:
            raise _fail(f"{what} range {p} is [{lo}, {hi}]; a range must satisfy 0 <= lo <= hi, re-export the model")
    key = (s.input, s.dim)
    if key in dims:
        raise _fail(
            f"profile_signature.symbolic_dims[{dims[key]}] and {path} both describe dim {s.dim} of input "
            f"{_quoted(s.input)}; re-export the model"
        )
    dims[key] = i


def _validate_signature(m: Metadata, by_name: Dict[str, IoBinding]) -> None:
    sig = m.profile_signature
    if sig.num_profiles < 1:
        raise _fail(
            f"profile_signature.num_profiles is {sig.num_profiles}; an engine has at least one optimization profile, "
            "re-export the model"
        )
    if sig.num_profiles > MAX_PROFILES:
        raise _fail(f"profile_signature.num_profiles is {sig.num_profiles}, above the limit of {MAX_PROFILES}; "
                    "re-export the model")
    if len(sig.inputs) * sig.num_profiles > MAX_PROFILE_ENTRIES:
        raise _too_many_profile_entries("inputs", len(sig.inputs), sig.num_profiles)
    if len(sig.symbolic_dims) * sig.num_profiles > MAX_PROFILE_ENTRIES:
        raise _too_many_profile_entries("symbolic dims", len(sig.symbolic_dims), sig.num_profiles)
    seen: Dict[str, int] = {}
    described: Dict[str, SignatureInput] = {}
    for i, inp in enumerate(sig.inputs):
        binding = by_name.get(inp.name)
        if binding is None or not binding.is_input:
            raise _fail(
                f"profile_signature.inputs[{i}] {_quoted(inp.name)} is not an input in io_bindings; re-export the "
                "model"
            )
        if inp.name in seen:
            raise _fail(
                f"profile_signature.inputs[{seen[inp.name]}] and profile_signature.inputs[{i}] both describe "
                f"input {_quoted(inp.name)}; re-export the model"
            )
        seen[inp.name] = i
        _validate_signature_input(sig, i)
        described[inp.name] = inp
    dims: Dict[Tuple[str, int], int] = {}
    for i in range(len(sig.symbolic_dims)):
        _validate_symbolic_dim(m, by_name, described, dims, i)


def _validate_states(m: Metadata, by_name: Dict[str, IoBinding]) -> None:
    """Each state names an input and an output binding no other state uses, under a name no other state has."""
    seen: Dict[str, Dict[str, int]] = {"name": {}, "input": {}, "output": {}}
    for i, s in enumerate(m.delegate_state):
        if not s.name:
            raise _fail(f"delegate_state[{i}].name is empty; a state needs a name (the mutable buffer's) for delegates "
                        "to share it by, re-export the model")
        b = by_name.get(s.input)
        if b is None or not b.is_input:
            raise _fail(f"delegate_state[{i}] {_quoted(s.name)}: input {_quoted(s.input)} is not an input in "
                        "io_bindings; re-export the model")
        b = by_name.get(s.output)
        if b is None or b.is_input:
            raise _fail(f"delegate_state[{i}] {_quoted(s.name)}: output {_quoted(s.output)} is not an output in "
                        "io_bindings; re-export the model")
        for what in ("name", "input", "output"):
            value = getattr(s, what)
            if value in seen[what]:
                raise _fail(f"delegate_state[{seen[what][value]}] and delegate_state[{i}] have the same {what} "
                            f"{_quoted(value)}; each state has its own name, input and output, re-export the model")
            seen[what][value] = i


def _validate_semantics(m: Metadata) -> None:
    """validate_metadata's rules in src/blob/metadata.cpp's order; linear in the metadata."""
    _validate_limits(m)
    _validate_name_lengths(m)
    by_name = _validate_bindings(m)
    _validate_aliases(m, by_name)
    if m.profile_signature is not None:
        _validate_signature(m, by_name)
    _validate_states(m, by_name)
