"""A delegate's in-place aliases as the runtime resolves them at load
(:func:`describe_aliases`, :class:`AliasView`), read from the runtime's own
resolution (``etrt_delegate_resolve``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional

from .. import blob as _blob
from .delegates import DelegateInfo

#: The resolution's alias rules (include/etrt/c_api.h), which are also the finding codes of :mod:`etrt.validate`.
ALIAS_RULES = ("alias-unknown-kind", "alias-unknown-tensor", "alias-engine-mismatch", "alias-shape-mismatch",
               "alias-conflict")


@dataclass(frozen=True)
class AliasView:
    """One output the runtime writes in place into an input, as the runtime
    treats it (see :func:`describe_aliases`)."""

    output: str
    input: str
    kind: str
    #: the blob's aliased_io entry, or None for an alias only the engine declares
    index: Optional[int]
    #: "ok" (the runtime resolved it), "unchecked" (an opaque engine, or an entry after the load's first refusal:
    #: the runtime checks it at load) or "refused" (the runtime refuses the delegate)
    status: str
    #: what was checked, for ``etrt inspect`` ("the engine agrees", "shapes match", ...)
    detail: str
    #: for a refused alias: the finding's code and the runtime's message
    code: Optional[str] = None
    problem: Optional[str] = None

    def to_dict(self) -> Dict[str, Any]:
        return {"output": self.output, "input": self.input, "kind": self.kind, "index": self.index,
                "source": "blob" if self.index is not None else "engine", "status": self.status,
                "detail": self.detail}


_OK_DETAIL = {
    _blob.ALIAS_KIND_KV_CACHE_UPDATE: "kv_cache_update; the engine agrees",
    _blob.ALIAS_KIND_USER: "user; shapes match",
}


def describe_aliases(d: "DelegateInfo") -> List[AliasView]:
    """The delegate's in-place aliases as the runtime resolves them at load
    (``etrt_delegate_resolve``, the loader's own code): each ``aliased_io``
    entry (a ``kv_cache_update`` pair must be the engine's own, a ``user``
    pair must have one shape and type, an input takes one aliased output),
    then each alias the engine declares that the blob leaves out (the runtime
    applies those too). The first refusal stops the load, so the entries after
    it are not checked. An opaque TensorRT plan cannot be resolved here: its
    entries are "unchecked", the runtime resolves them at load."""
    md, r = d.metadata, d.resolution
    if md is None:
        return []
    refusal = r["refusal"] if r is not None else None
    refused_entry = refusal["entry"] if refusal is not None and refusal["rule"] in ALIAS_RULES else None
    resolved = {a["entry"]: a for a in r["aliases"]} if r is not None else {}
    views: List[AliasView] = []
    for k, a in enumerate(md.aliased_io):
        if k in resolved:
            views.append(AliasView(a.output, a.input, a.kind, k, "ok", _OK_DETAIL.get(a.kind, a.kind)))
        elif k == refused_entry:
            assert refusal is not None
            views.append(AliasView(a.output, a.input, a.kind, k, "refused",
                                   f"{a.kind}; the runtime refuses this delegate: {refusal['message']}",
                                   refusal["rule"], refusal["message"]))
        elif r is None:
            views.append(AliasView(a.output, a.input, a.kind, k, "unchecked",
                                   f"{a.kind}; the engine is an opaque TensorRT plan here, the runtime checks it "
                                   "against the engine at load"))
        else:
            views.append(AliasView(a.output, a.input, a.kind, k, "unchecked",
                                   f"{a.kind}; not reached: the runtime refuses this delegate before it"))
    if r is not None:
        for a in r["aliases"]:
            if a["entry"] < 0:
                views.append(AliasView(a["output"], a["input"], a["kind"], None, "ok",
                                       "kv_cache_update, declared by the engine; the blob's aliased_io does not list "
                                       "it, the runtime applies it anyway"))
        if refusal is not None and refusal["rule"] == "alias-conflict" and refusal["entry"] < 0:
            # The first alias the engine declares that neither the blob lists nor the runtime resolved: the one the
            # runtime refused.
            done = {a.output for a in md.aliased_io} | {a["output"] for a in r["aliases"]}
            eng = d.gpufree_engine
            pending = [(o, i) for o, i in (eng.aliases().items() if eng is not None else []) if o not in done]
            out, inp = pending[0] if pending else ("", "")
            views.append(AliasView(out, inp, _blob.ALIAS_KIND_KV_CACHE_UPDATE, None, "refused",
                                   f"kv_cache_update, declared by the engine; the runtime refuses this delegate: "
                                   f"{refusal['message']}", refusal["rule"], refusal["message"]))
    return views
