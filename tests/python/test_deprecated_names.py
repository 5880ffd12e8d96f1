"""The deprecated old names of etrt.gpufree: the shim etrt.reference_engine still imports, warns, and hands back
etrt.gpufree's objects under the old names and submodule paths; DelegateInfo.reference_engine still reads, warns,
and is DelegateInfo.gpufree_engine."""

import importlib
import sys
import warnings

import pytest

import etrt.gpufree as gpufree


def test_the_old_package_imports_with_a_deprecation_warning_that_names_the_new_one():
    sys.modules.pop("etrt.reference_engine", None)
    with pytest.warns(DeprecationWarning, match="import etrt.gpufree instead"):
        old = importlib.import_module("etrt.reference_engine")
    assert old.ReferenceEngine is gpufree.GpufreeEngine
    assert old.ReferenceEngineError is gpufree.GpufreeEngineError
    assert old.ReferenceOp is gpufree.GpufreeOp and old.ReferenceTensor is gpufree.GpufreeTensor
    assert old.read_reference_engine is gpufree.read_gpufree_engine
    assert old.try_read_reference_engine is gpufree.try_read_gpufree_engine
    assert old.is_reference_engine is gpufree.is_gpufree_engine
    assert old.MAGIC == gpufree.MAGIC and old.checksum is gpufree.checksum


def test_the_old_submodule_paths_are_the_new_submodules():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from etrt.reference_engine import engine, format  # noqa: A004
        old_format = importlib.import_module("etrt.reference_engine.format")
    assert engine is importlib.import_module("etrt.gpufree.engine")
    assert format is importlib.import_module("etrt.gpufree.format")
    assert old_format is format


def test_the_old_delegate_attribute_warns_and_is_the_gpufree_engine():
    from etrt.analysis import DelegateInfo, DelegateRef
    from etrt.gpufree import GpufreeEngine

    engine = object.__new__(GpufreeEngine)
    d = DelegateInfo(DelegateRef("forward", 0, 0, 0, "TensorRTBackend"), b"", gpufree_engine=engine)
    with pytest.warns(DeprecationWarning, match="read DelegateInfo.gpufree_engine"):
        assert d.reference_engine is engine
