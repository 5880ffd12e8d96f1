"""The canonical *profile signature* of a multi-profile TensorRT engine.

A TensorRT engine built with several optimization profiles accepts, under
profile ``i``, every input shape between that profile's ``min`` and ``max``.
A ``.pte`` may hold several such engines (one per partition), and a runner
pins "profile 1" for the whole ``forward()``; that only makes sense if index
``1`` means the same *regime* (say, prefill with 32..2048 tokens) in every
engine. Equal profile counts prove nothing, so etrt persists a small canonical
description of each engine's profiles in the blob metadata (key
``profile_signature``, see docs/blob-format.md and docs/design.md, decision 10) and
checks it across the program (:mod:`etrt.validate`).

The signature holds, per profile index:

* every described input's ``min``/``opt``/``max`` shape, and
* the range ``[lo, hi]`` of each *named symbolic dimension* the exporter knows
  about (``seq_len`` is dim 1 of ``input_ids`` and of ``position_ids``). Names
  are what make two independently built engines comparable: an engine's tensor
  names are its own, but ``seq_len`` means the same thing everywhere.

Building one::

    from etrt.signature import Signature

    # Torch-TensorRT style: one dict per profile (pure data, no torch).
    sig = Signature.from_torch_trt(
        [
            {"input_ids": {"min_shape": [1, 1], "opt_shape": [1, 1], "max_shape": [1, 1]}},
            {"input_ids": {"min_shape": [1, 32], "opt_shape": [1, 512], "max_shape": [1, 2048]}},
        ],
        symbolic_dims={"seq_len": [("input_ids", 1)]},
    )
    # or explicit bounds per input
    sig = Signature.from_bounds(
        {"input_ids": [([1, 1], [1, 1], [1, 1]), ([1, 32], [1, 512], [1, 2048])]},
        symbolic_dims={"seq_len": [("input_ids", 1)]},
    )
    sig.num_profiles            # 2
    sig.regime(1).describe()    # 'profile 1: seq_len 32..2048; input_ids [1, 32..2048] (opt [1, 512])'
    sig.to_json()               # canonical compact JSON bytes, exactly as etrt.blob embeds them
    metadata.profile_signature = sig.to_blob()   # for etrt.blob.write_blob

Pure standard library; :class:`SignatureError` (a ``ValueError``) for
anything that is not a valid signature.

Modules:

* :mod:`etrt.signature.core` -- :class:`Signature`;
* :mod:`etrt.signature.values` -- :class:`Bounds`, :class:`InputSignature`,
  :class:`SymbolicDim`, :class:`Regime`, the limits, the formatting helpers;
* :mod:`etrt.signature.parsing` -- what callers pass, read and checked.
"""

from .core import Signature
from .values import (MAX_RANK, Bounds, InputSignature, Regime, SignatureError, SymbolicDim, format_bounds, format_range,
                     format_shape)

# Reachable here as before the split.
from .values import MAX_PROFILES, Shape  # noqa: F401

__all__ = [
    "Bounds",
    "InputSignature",
    "MAX_RANK",
    "Regime",
    "Signature",
    "SignatureError",
    "SymbolicDim",
    "format_bounds",
    "format_range",
    "format_shape",
]
