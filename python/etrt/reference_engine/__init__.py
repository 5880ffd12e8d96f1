"""Deprecated: the old name of :mod:`etrt.gpufree`.

"reference engine" was the old name of the GPU-free NvInfer. This module
re-exports :mod:`etrt.gpufree` under its old names (``ReferenceEngine``,
``ReferenceEngineError``, ``read_reference_engine``, ...) and keeps
``etrt.reference_engine.format`` and ``etrt.reference_engine.engine``
importable, so code written against it keeps working; import
:mod:`etrt.gpufree` instead.
"""

import sys
import warnings

from .. import gpufree as _gpufree
from ..gpufree import *  # noqa: F401,F403
from ..gpufree import __all__ as _gpufree_all
from ..gpufree import engine as _engine
from ..gpufree import format as _format

warnings.warn("etrt.reference_engine is deprecated; import etrt.gpufree instead "
              "(ReferenceEngine is GpufreeEngine, read_reference_engine is read_gpufree_engine, ...)",
              DeprecationWarning, stacklevel=2)

# The old names, as they were.
ReferenceEngine = _gpufree.GpufreeEngine
ReferenceEngineError = _gpufree.GpufreeEngineError
ReferenceOp = _gpufree.GpufreeOp
ReferenceTensor = _gpufree.GpufreeTensor
read_reference_engine = _gpufree.read_gpufree_engine
try_read_reference_engine = _gpufree.try_read_gpufree_engine
is_reference_engine = _gpufree.is_gpufree_engine

# The submodules, under their old paths.
sys.modules[__name__ + ".engine"] = _engine
sys.modules[__name__ + ".format"] = _format
engine = _engine
format = _format  # noqa: A001

__all__ = sorted(set(_gpufree_all) | {
    "ReferenceEngine", "ReferenceEngineError", "ReferenceOp", "ReferenceTensor",
    "is_reference_engine", "read_reference_engine", "try_read_reference_engine",
})
