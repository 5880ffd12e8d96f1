"""docs/python.md's table of load options lists every load option libetrt reads (include/etrt/options.h's kOption*
keys), so that a Python user meets each option where the Python API is described."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_python_md_lists_every_load_option_of_options_h():
    header = (ROOT / "include" / "etrt" / "options.h").read_text()
    keys = re.findall(r'inline constexpr char kOption\w+\[\] = "([a-z_]+)";', header)
    assert len(keys) >= 9, keys  # the pattern still reads the header
    rows = set(re.findall(r"^\| `([a-z_]+)` \|", (ROOT / "docs" / "python.md").read_text(), re.MULTILINE))
    assert [k for k in keys if k not in rows] == []
