"""Checks across the multi-profile delegates of one method: that profile
index ``i`` means the same regime in each (counts, shared symbols, shared
inputs), and that one-profile delegates beside them can honor pins."""

from __future__ import annotations

from typing import Dict, List, Mapping, Tuple

from ..analysis import DelegateInfo
from ..signature import format_bounds, format_range
from .result import ERROR, INFO, WARNING


class _CrossChecks:
    """The checks across the usable delegates of one method; mixed into
    :class:`etrt.validate.checker._Checker`, whose ``add`` records a finding."""

    def check_cross(self, usable: List[DelegateInfo]) -> None:
        multi = [d for d in usable if d.signature.num_profiles > 1]
        single = [d for d in usable if d.signature.num_profiles == 1]
        if multi:
            counts = {d.signature.num_profiles for d in multi}
            if len(counts) > 1:
                detail = ", ".join(f"{d.ref.label} has {d.signature.num_profiles}" for d in multi)
                self.add(ERROR, "profile-count-mismatch",
                         f"multi-profile TensorRT delegates disagree on the number of profiles ({detail}). A pinned "
                         "profile index applies to every delegate of the method, so it must mean the same regime "
                         "in each: rebuild them with the same profiles in the same order (one-profile static "
                         "delegates may stay as they are)", *multi)
            else:
                self.check_regimes(multi)
        for d in single:
            sig = d.signature
            if sig.is_static:
                self.add(INFO, "static-single-profile",
                         f"{d.ref.label} is static (one profile, fixed shapes): it stays on profile 0 and ignores "
                         "profile pins", d)
                continue
            dyn = ", ".join(f"'{n}' dim {k}: {format_range(lo, hi)}" for n, k, lo, hi in sig.dynamic_dims())
            if multi:
                n = multi[0].signature.num_profiles
                self.add(WARNING, "dynamic-single-profile",
                         f"{d.ref.label} has one profile but dynamic inputs ({dyn}). It runs on profile 0 under "
                         "automatic selection and under OptimizationProfileGuard(0), but a pin of profile N > 0 makes "
                         "it return an error at run time, because it cannot honor N (docs/design.md, decision 4). "
                         f"Build it with the same {n} profiles as the multi-profile delegates, or make its inputs "
                         "static", d)
            else:
                self.add(INFO, "dynamic-single-profile",
                         f"{d.ref.label} has one profile with dynamic inputs ({dyn}); pins of profile N > 0 fail "
                         "on it at run time (docs/design.md, decision 4)", d)

    def check_regimes(self, multi: List[DelegateInfo]) -> None:
        """Same count everywhere: compare shared symbols and shared input tensors index by index."""
        links: Dict[int, set] = {i: set() for i in range(len(multi))}
        flagged = set()
        # Named symbolic dimensions.
        symbols: Dict[str, List[int]] = {}
        for i, d in enumerate(multi):
            for name in d.signature.symbol_names():
                symbols.setdefault(name, []).append(i)
        for name, owners in symbols.items():
            first = owners[0]
            ref_ranges = multi[first].signature.symbol_ranges(name)
            for j in owners[1:]:
                links[first].add(j)
                links[j].add(first)
                other = multi[j].signature.symbol_ranges(name)
                bad = [p for p in range(len(ref_ranges)) if ref_ranges[p] != other[p]]
                if bad:
                    flagged.add((first, j))
                    a, b = multi[first], multi[j]
                    detail = "; ".join(f"profile {p}: {format_range(*ref_ranges[p])} in {a.ref.short}, "
                                       f"{format_range(*other[p])} in {b.ref.short}" for p in bad)
                    self.add(ERROR, "regime-mismatch",
                             f"profile index {', '.join(map(str, bad))} means different regimes in {a.ref.label} and "
                             f"{b.ref.label}: symbolic dim '{name}' differs ({detail}). Equal profile counts are "
                             f"not enough: rebuild the engines so that each profile index covers the same "
                             f"'{name}' range in every delegate (e.g. give every partition the same "
                             "Input(profiles=[...]))", a, b)
        # Input tensors read by several delegates.
        readers: Dict[Tuple[int, int], List[Tuple[int, str]]] = {}
        for i, d in enumerate(multi):
            if d.tensor_args is None:
                continue
            described = set(d.signature.input_names)
            for b in d.input_bindings():
                arg = d.bound_value(b.name)
                if arg is not None and b.name in described:
                    readers.setdefault((d.ref.method_index, arg.value_index), []).append((i, b.name))
        for (mi, vi), owners in readers.items():
            if len(owners) < 2:
                continue
            first, first_name = owners[0]
            a = multi[first]
            ia = a.signature.input(first_name)
            for j, name in owners[1:]:
                if j == first:
                    continue
                links[first].add(j)
                links[j].add(first)
                b = multi[j]
                ib = b.signature.input(name)
                if ia.rank != ib.rank or (first, j) in flagged:
                    continue
                bad = [p for p in range(len(ia.profiles))
                       if (ia.profiles[p].min, ia.profiles[p].max) != (ib.profiles[p].min, ib.profiles[p].max)]
                if bad:
                    flagged.add((first, j))
                    detail = "; ".join(f"profile {p}: {format_bounds(ia.profiles[p])} vs "
                                       f"{format_bounds(ib.profiles[p])}" for p in bad)
                    self.add(ERROR, "regime-mismatch",
                             f"profile index {', '.join(map(str, bad))} means different regimes in {a.ref.label} and "
                             f"{b.ref.label}: both read value {vi} (as '{first_name}' and '{name}') but admit "
                             f"different shapes ({detail}). Rebuild the engines with the same min/max for this "
                             "input at every profile index", a, b)
        # Anything not linked to the rest cannot be shown to agree.
        components = _components(links)
        if len(components) > 1:
            groups = [" + ".join(multi[i].ref.label for i in sorted(c)) for c in components]
            self.add(WARNING, "unlinked-regimes",
                     f"{len(multi)} multi-profile TensorRT delegates all have {multi[0].signature.num_profiles} "
                     "profiles, but equal profile counts prove nothing and these groups share no named symbolic "
                     f"dimension and no input tensor: {'; '.join(groups)}. Validation cannot show that each "
                     "profile index means the same regime in all of them; name the symbolic dimensions (e.g. "
                     "'seq_len') in every delegate's profile_signature", *multi)


def _components(links: Mapping[int, set]) -> List[List[int]]:
    seen, out = set(), []
    for start in sorted(links):
        if start in seen:
            continue
        stack, comp = [start], []
        seen.add(start)
        while stack:
            n = stack.pop()
            comp.append(n)
            for m in links[n]:
                if m not in seen:
                    seen.add(m)
                    stack.append(m)
        out.append(sorted(comp))
    return out
