"""Every relative link in the project's Markdown (README.md, docs/, nvinfer/README.md, ...) resolves: the file or
folder exists inside the repository, and a `#fragment` names a heading of the Markdown file it points at (GitHub's
anchors). Links with a scheme (https:, mailto:) are not followed. Links inside code spans and fenced code blocks are
not links."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Dict, List, Set, Tuple

ROOT = Path(__file__).resolve().parents[2]

# Folders that are not the project's own Markdown: build trees, virtual environments, fetched sources, caches.
_SKIPPED_TOP = re.compile(r"^(\..*|build.*|third_party|gpu-bundle|node_modules)$")

_FENCE = re.compile(r"^\s*(```|~~~)")
_CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")
_INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_REFERENCE_LINK = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def markdown_files(root: Path) -> List[Path]:
    files = []
    for path in sorted(root.rglob("*.md")):
        rel = path.relative_to(root)
        if _SKIPPED_TOP.match(rel.parts[0]) or any(part in ("__pycache__", ".pytest_cache") for part in rel.parts):
            continue
        files.append(path)
    return files


def _prose_lines(text: str, keep_code_spans: bool = False) -> List[Tuple[int, str]]:
    """The lines outside fenced code blocks, with code spans blanked out unless kept."""
    lines, fenced = [], False
    for number, line in enumerate(text.splitlines(), 1):
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            lines.append((number, line if keep_code_spans else _CODE_SPAN.sub("", line)))
    return lines


def github_anchor(heading: str) -> str:
    """GitHub's anchor for a heading's text: Markdown emphasis and code marks dropped, lower case, every character
    that is not a letter, digit, space, hyphen or underscore removed, spaces turned into hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link in a heading keeps its text
    text = text.replace("`", "").replace("*", "").lower()
    text = "".join(c for c in text if c.isalnum() or c in " -_")
    return text.replace(" ", "-")


def anchors(path: Path, cache: Dict[Path, Set[str]]) -> Set[str]:
    if path not in cache:
        seen: Dict[str, int] = {}
        found = set()
        for _, line in _prose_lines(path.read_text(encoding="utf-8"), keep_code_spans=True):
            match = _HEADING.match(line)
            if not match:
                continue
            base = github_anchor(match.group(2))
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f"{base}-{count}")
        # Explicit HTML anchors (<a id="..."> / name="...").
        found.update(re.findall(r"<a\s+(?:id|name)=\"([^\"]+)\"", path.read_text(encoding="utf-8")))
        cache[path] = found
    return cache[path]


def broken_links(root: Path, files: List[Path]) -> List[str]:
    """One line per link that does not resolve: `file:line: target: why`."""
    root = root.resolve()
    cache: Dict[Path, Set[str]] = {}
    problems = []
    for path in files:
        for number, line in _prose_lines(path.read_text(encoding="utf-8")):
            targets = [m.group(1) for m in _INLINE_LINK.finditer(line)]
            reference = _REFERENCE_LINK.match(line)
            if reference:
                targets.append(reference.group(1))
            for target in targets:
                if _SCHEME.match(target) or target.startswith("//"):
                    continue
                where = f"{path.relative_to(root)}:{number}: {target}"
                file_part, _, fragment = target.partition("#")
                resolved = (path.parent / file_part).resolve() if file_part else path.resolve()
                if root not in resolved.parents and resolved != root:
                    problems.append(f"{where}: points outside the repository")
                    continue
                if not resolved.exists():
                    problems.append(f"{where}: no such file or folder")
                    continue
                if fragment and resolved.is_file() and resolved.suffix == ".md":
                    if fragment.lower() not in anchors(resolved, cache):
                        problems.append(f"{where}: no heading with the anchor #{fragment} in {resolved.name}")
    return problems


def test_every_relative_link_in_the_documents_resolves():
    files = markdown_files(ROOT)
    names = {str(path.relative_to(ROOT)) for path in files}
    assert {"README.md", "docs/architecture.md", "docs/gpu-testing.md", "nvinfer/README.md"} <= names
    problems = broken_links(ROOT, files)
    assert not problems, "broken links (fix the target, or the link):\n" + "\n".join(problems)


def test_the_check_reports_a_missing_file_a_missing_anchor_and_a_link_out_of_the_repository(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "runs").mkdir()
    (tmp_path / "docs" / "a.md").write_text(
        "# A title\n\n## Second `part`: here\n\n## Second `part`: here\n\n"
        "[ok](b.md) [ok anchor](b.md#the-heading) [ok folder](runs/) [ok own](#a-title)\n"
        "[ok duplicate](#second-part-here-1) [web](https://example.com/x.md)\n"
        "[missing](c.md)\n"
        "[bad anchor](b.md#no-such-heading)\n"
        "[outside](../../elsewhere.md)\n"
        "`[in a code span](nowhere.md)`\n"
        "```\n[in a fence](nowhere.md)\n```\n"
        "[ref]: missing-ref.md\n",
        encoding="utf-8",
    )
    (tmp_path / "docs" / "b.md").write_text("# The heading\n", encoding="utf-8")
    problems = broken_links(tmp_path, markdown_files(tmp_path))
    assert [p.split(": ", 1)[0] + ": " + p.split(": ")[1] for p in problems] == [
        "docs/a.md:9: c.md",
        "docs/a.md:10: b.md#no-such-heading",
        "docs/a.md:11: ../../elsewhere.md",
        "docs/a.md:16: missing-ref.md",
    ]
    assert "no such file" in problems[0] and "#no-such-heading" in problems[1] and "outside" in problems[2]


def test_github_anchors():
    assert github_anchor("18. Delegate-owned state (`delegate_state`)") == "18-delegate-owned-state-delegate_state"
    assert github_anchor("14. Upstream's runtime options keep their meaning") == (
        "14-upstreams-runtime-options-keep-their-meaning"
    )
    assert github_anchor("NVIDIA's TensorRT 8.6") == "nvidias-tensorrt-86"
