"""Every pointer in the code and the docs resolves inside the repository.

- A path under docs/, scripts/, lab/, conf/, tests/, flashsac_bench/ or hydra_plugins/ named in
  a tracked text file exists (placeholders such as `<run dir>` or globs are not pointers).
- A markdown link of the README or docs/ reaches its file.
- No file cites a study that does not ship: a `<name>.md §<section>` must be a file here.
- A `../shared/...` path (the development setup's reference data, beside the clone) exists
  where ../shared is there; a user's clone has none, and nothing in the product points there.

The result folders under docs/results/ are records of past runs (their commands name the files
of their day): only their README is read. In docs/results.md a command may name a file that is
gone where it names its commit (on its line or the two before): the record of that tree.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SUFFIXES = {".py", ".md", ".yaml", ".sh", ".toml", ".cfg", ".txt"}
SKIP_DIRS = {".git", "outputs", "multirun", "build", "dist", "__pycache__", ".whl", ".warp", ".gl"}
TOP = ("docs/", "scripts/", "lab/", "conf/", "tests/", "flashsac_bench/", "hydra_plugins/")
# A path-like token, whole: placeholders (<run dir>), globs, braces and $VARS make it no pointer.
TOKEN = re.compile(r"[\w./{},*<>$-]+")
PLACEHOLDER = re.compile(r"[{},*<>$]")
COMMIT = re.compile(r"\b[0-9a-f]{7,40}\b")
RECORDS = Path("docs/results.md")
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
SECTION = re.compile(r"([\w./-]+\.md) §")
SHARED = re.compile(r"\.\./shared/[\w./-]*[\w/]")
# Made by a command, not kept in the tree: the lent GPU machine's link to conf/.
MADE = {"flashsac_bench/conf"}


def _candidates() -> list[Path]:
    """The files git tracks or would track (ignored ones, such as a venv or a scratch copy of
    an older tree inside the clone, are not the repository's); every file where git is absent."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=ROOT,
            capture_output=True,
            check=True,
        ).stdout.decode()
    except (OSError, subprocess.CalledProcessError):
        return list(ROOT.rglob("*"))
    return [ROOT / name for name in listed.split("\0") if name]


def _files() -> list[Path]:
    out = []
    for path in _candidates():
        rel = path.relative_to(ROOT)
        skip = SKIP_DIRS & set(rel.parts) or any(p.endswith(".egg-info") for p in rel.parts)
        if not path.is_file() or path.suffix not in SUFFIXES or skip:
            continue
        if rel.parts[:2] == ("docs", "results") and rel != Path("docs/results/README.md"):
            continue
        out.append(path)
    return sorted(out)


def _exists(token: str) -> bool:
    return token in MADE or (ROOT / token.rstrip("./")).exists()


def _pointers(line: str) -> list[str]:
    out = []
    for token in TOKEN.findall(line):
        token = token.strip(".,-")
        if token.startswith(TOP) and not PLACEHOLDER.search(token):
            out.append(token)
    return out


def test_every_named_path_exists() -> None:
    missing = []
    for path in _files():
        lines = path.read_text(errors="replace").splitlines()
        for n, line in enumerate(lines, 1):
            for token in _pointers(line):
                if _exists(token):
                    continue
                recorded = path.relative_to(ROOT) == RECORDS and any(
                    COMMIT.search(x) for x in lines[max(n - 3, 0) : n]
                )
                if not recorded:
                    missing.append(f"{path.relative_to(ROOT)}:{n}: {token}")
    assert not missing, "\n".join(missing)


def test_every_markdown_link_reaches_its_file() -> None:
    broken = []
    docs = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    for path in [*docs, ROOT / "docs/results/README.md"]:
        for n, line in enumerate(path.read_text().splitlines(), 1):
            for target in LINK.findall(line):
                if re.match(r"[a-z]+://|mailto:", target):
                    continue
                if not (path.parent / target).exists():
                    broken.append(f"{path.relative_to(ROOT)}:{n}: {target}")
    assert not broken, "\n".join(broken)


def test_no_citation_of_a_study_that_does_not_ship() -> None:
    cited = []
    for path in _files():
        for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            for name in SECTION.findall(line):
                here = [p for p in (path.parent / name, ROOT / name) if p.exists()]
                if not here:
                    cited.append(f"{path.relative_to(ROOT)}:{n}: {name}")
    assert not cited, "\n".join(cited)


def test_the_product_points_nowhere_outside_the_repository() -> None:
    product = [p for p in _files() if p.relative_to(ROOT).parts[0] in ("flashsac_bench", "conf")]
    outside = [
        f"{p.relative_to(ROOT)}: {m}" for p in product for m in SHARED.findall(p.read_text())
    ]
    assert not outside, "\n".join(outside)


@pytest.mark.shared
def test_every_shared_path_exists_beside_the_clone(shared_reference: Path) -> None:
    missing = []
    for path in _files():
        for token in SHARED.findall(path.read_text(errors="replace")):
            if not (ROOT / token).exists():
                missing.append(f"{path.relative_to(ROOT)}: {token}")
    assert not missing, "\n".join(missing)
