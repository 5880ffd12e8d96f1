"""A delegate's in-place aliases as the runtime resolves them at load
(:func:`describe_aliases`, :class:`AliasView`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence

from .. import blob as _blob
from .. import dtypes
from ..signature import format_shape
from .delegates import DelegateInfo


@dataclass(frozen=True)
class AliasView:
    """One output the runtime writes in place into an input, as the runtime
    treats it (see :func:`describe_aliases`)."""

    output: str
    input: str
    kind: str
    #: the blob's aliased_io entry, or None for an alias only the engine declares
    index: Optional[int]
    #: "ok" (checked here, the runtime accepts it), "unchecked" (the runtime
    #: checks it against an opaque engine) or "refused" (the runtime refuses the delegate)
    status: str
    #: what was checked, for ``etrt inspect`` ("the engine agrees", "shapes match", ...)
    detail: str
    #: for a refused alias: the finding's code and message (without the delegate label)
    code: Optional[str] = None
    problem: Optional[str] = None

    def to_dict(self) -> Dict[str, Any]:
        return {"output": self.output, "input": self.input, "kind": self.kind, "index": self.index,
                "source": "blob" if self.index is not None else "engine", "status": self.status,
                "detail": self.detail}


def _typed_shape(dtype: str, shape: Sequence[int]) -> str:
    return f"{dtype or '?'} {format_shape(list(shape))}"


def describe_aliases(d: "DelegateInfo") -> List[AliasView]:
    """The delegate's in-place aliases as the runtime resolves them at load:
    each ``aliased_io`` entry (its kind must be ``kv_cache_update``, whose pair
    must be the engine's own, or ``user``, whose output and input must have one
    shape and type), then each alias the engine declares that the blob leaves
    out (the runtime applies those too). A kv_cache_update pair is compared
    with a reference engine's op table; a user pair with the engine's declared
    IO shapes (``-1`` dims included, exactly) when the engine is readable, else
    with the io_bindings shapes when both are given."""
    md, eng = d.metadata, d.reference_engine
    if md is None:
        return []
    views: List[AliasView] = []
    by_name = {b.name: b for b in md.io_bindings}
    for k, a in enumerate(md.aliased_io):
        what = f"aliased_io[{k}] (output '{a.output}', input '{a.input}', kind '{a.kind}')"

        def view(status: str, detail: str, code: Optional[str] = None, problem: Optional[str] = None) -> None:
            views.append(AliasView(a.output, a.input, a.kind, k, status, detail, code, problem))

        if a.kind not in _blob.ALIAS_KINDS:
            view("refused", f"unknown kind '{a.kind}': the runtime refuses this delegate", "alias-unknown-kind",
                 f"{what} has an unknown kind; the runtime knows '{_blob.ALIAS_KIND_KV_CACHE_UPDATE}' and "
                 f"'{_blob.ALIAS_KIND_USER}' and refuses this delegate at load (InvalidProgram). Re-export the "
                 "model with one of them")
        elif a.kind == _blob.ALIAS_KIND_USER:
            out_t = eng.tensor(a.output) if eng is not None else None
            in_t = eng.tensor(a.input) if eng is not None else None
            ob, ib = by_name.get(a.output), by_name.get(a.input)
            if out_t is not None and in_t is not None:
                found = (out_t.dtype, list(out_t.shape), in_t.dtype, list(in_t.shape), "the engine declares")
            elif ob is not None and ib is not None and ob.shape and ib.shape:
                found = (dtypes.normalize(ob.dtype) if ob.dtype else "", list(ob.shape),
                         dtypes.normalize(ib.dtype) if ib.dtype else "", list(ib.shape), "the io_bindings give")
            else:
                view("unchecked", "user; the shapes are not known here, the runtime compares the engine's at load")
                continue
            odt, oshape, idt, ishape, source = found
            if oshape == ishape and (not odt or not idt or odt == idt):
                view("ok", "user; shapes match" + ("" if source == "the engine declares" else " in the io_bindings"))
            else:
                view("refused",
                     f"user; the output is {_typed_shape(odt, oshape)} but the input is {_typed_shape(idt, ishape)}: "
                     "the runtime refuses this delegate", "alias-shape-mismatch",
                     f"{what}: {source} the output as {_typed_shape(odt, oshape)} but the input as "
                     f"{_typed_shape(idt, ishape)}; a user alias writes the output into the input's memory, so the "
                     "runtime refuses this delegate at load unless both have one shape (every dim, -1 included) and "
                     "one type. Re-export the model with matching shapes, or without the alias")
        elif eng is None:
            view("unchecked", "kv_cache_update; the runtime checks it against the engine's getAliasedInputTensor at "
                              "load")
        else:
            target = eng.aliased_input(a.output)
            if target == a.input:
                view("ok", "kv_cache_update; the engine agrees")
            else:
                says = "none (no kv_cache_update op writes it)" if target is None else f"'{target}'"
                view("refused",
                     f"kv_cache_update; the engine DISAGREES, its alias for '{a.output}' is {says}: the runtime "
                     "refuses this delegate", "alias-engine-mismatch",
                     f"{what} disagrees with the engine, whose alias for output '{a.output}' is {says}; the runtime "
                     "refuses this delegate at load (InvalidProgram). The blob and its engine do not belong "
                     "together: re-export the model")
    if eng is not None:
        listed = {a.output for a in md.aliased_io}
        names = {b.name for b in d.arguments() or []}
        for out, inp in eng.aliases().items():
            if out in listed or out not in names or inp not in names:
                continue  # a binding the engine lacks is an engine-mismatch finding already
            views.append(AliasView(out, inp, _blob.ALIAS_KIND_KV_CACHE_UPDATE, None, "ok",
                                   "kv_cache_update, declared by the engine; the blob's aliased_io does not list it, "
                                   "the runtime applies it anyway"))
    return views
