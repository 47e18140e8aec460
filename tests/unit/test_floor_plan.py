"""The floor plan holds: lib/ is layered, imports only point down, modules stay small.

    core <- model <- decoding <- reference <- concepts <- classroom <- serving <- ui <- pages

(classroom: the live class's database, lib/classroom; pure Python, no Streamlit.
serving: the server's machinery, lib/serving: shared results, jobs, cancellation, background
pre-computation; Streamlit only in its one adapter, and the wire protocol's messages in the
client that visits the server's own pages.)

A module may import its own layer and the layers to its left, never one to its right.
These tests read the source (ast), so they hold for code that is never executed in a test."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from lib.concepts.catalog import CONCEPTS

ROOT = Path(__file__).resolve().parents[2]
LAYERS = ("core", "model", "decoding", "reference", "concepts", "classroom", "serving", "ui")
SERVING_ADAPTER = ROOT / "lib" / "serving" / "streamlit_adapter.py"      # the one Streamlit adapter
SERVING_CLIENT = ROOT / "lib" / "serving" / "page_visit.py"              # streamlit.proto only
MAX_LINES = 300


def python_files(*folders):
    for folder in folders:
        yield from sorted(p for p in (ROOT / folder).rglob("*.py") if "__pycache__" not in p.parts)


def layer_of(path: Path) -> int:
    """Index of the layer a file belongs to; pages and app.py sit above every lib layer."""
    rel = path.relative_to(ROOT).parts
    if rel[0] == "lib" and len(rel) > 2 and rel[1] in LAYERS:
        return LAYERS.index(rel[1])
    return len(LAYERS)


def imported_modules(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.append(node.module)
            out += [f"{node.module}.{a.name}" for a in node.names]
    return out


def lib_layer(module: str) -> int | None:
    parts = module.split(".")
    if parts[0] == "lib" and len(parts) > 1 and parts[1] in LAYERS:
        return LAYERS.index(parts[1])
    return None


def test_every_lib_module_sits_in_a_layer():
    loose = [p.relative_to(ROOT).as_posix() for p in (ROOT / "lib").glob("*.py") if p.name != "__init__.py"]
    assert loose == [], "modules directly under lib/ belong in a layer folder"


def test_imports_point_only_down_the_layers():
    wrong = []
    for path in python_files("lib", "pages"):
        mine = layer_of(path)
        for module in imported_modules(path):
            theirs = lib_layer(module)
            if theirs is not None and theirs > mine:
                wrong.append(f"{path.relative_to(ROOT)} imports {module}")
    assert wrong == []


def test_only_lib_ui_and_the_serving_adapter_import_streamlit():
    def allowed(path: Path, module: str) -> bool:
        if layer_of(path) == LAYERS.index("ui") or path == SERVING_ADAPTER:
            return True
        return path == SERVING_CLIENT and module.startswith("streamlit.proto")

    offenders = [f"{p.relative_to(ROOT)}: {m}" for p in python_files("lib") for m in imported_modules(p)
                 if (m == "streamlit" or m.startswith("streamlit.")) and not allowed(p, m)]
    assert offenders == []


@pytest.mark.parametrize("folder", ["lib", "pages"])
def test_no_module_over_the_line_limit(folder):
    long = {str(p.relative_to(ROOT)): n for p in python_files(folder)
            if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert long == {}, f"split these by what they teach (limit {MAX_LINES} lines)"


def test_every_slug_has_its_concept_folder():
    missing = [c.slug for c in CONCEPTS if not (ROOT / "lib/concepts" / c.slug.replace("-", "_")).is_dir()]
    assert missing == []


def test_no_import_cycles_between_lib_modules():
    graph: dict[str, set[str]] = {}
    for path in python_files("lib"):
        name = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        graph[name] = {m for m in imported_modules(path) if m.startswith("lib.")}
    modules = set(graph)
    graph = {k: {m for m in v if m in modules and m != k} for k, v in graph.items()}
    state: dict[str, int] = {}
    cycle: list[str] = []

    def visit(node, stack):
        state[node] = 1
        for nxt in graph[node]:
            if state.get(nxt) == 1:
                cycle.extend(stack[stack.index(nxt):] + [nxt])
                return True
            if state.get(nxt) is None and visit(nxt, stack + [nxt]):
                return True
        state[node] = 2
        return False

    for n in sorted(graph):
        if state.get(n) is None and visit(n, [n]):
            break
    assert cycle == [], " -> ".join(cycle)


def test_pages_only_display_checks():
    """Checks live in lib/concepts/<slug>/checks.py, where tests assert on the same functions."""
    builders = [p.name for p in python_files("pages") if "CheckResult(" in p.read_text()]
    assert builders == []


def test_lib_concepts_holds_one_folder_per_page_and_nothing_else():
    """Issue 31: a folder under lib/concepts is a page's (its slug, hyphens -> underscores);
    shared mechanisms live in the layer they belong to, under a name that says what they are."""
    from lib.ui.shell import TEACHING_PAGES

    pages = {c.slug.replace("-", "_") for c in CONCEPTS} | {s.replace("-", "_") for s, _ in TEACHING_PAGES}
    folders = {p.name for p in (ROOT / "lib" / "concepts").iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert folders - pages == set()
    assert {c.slug.replace("-", "_") for c in CONCEPTS} <= folders
