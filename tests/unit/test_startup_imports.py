"""Start-of-server imports (issue 12): after them, every name that lib/ and pages/ import from
transformers is already resolved on the `transformers` module that sys.modules holds, so a
session thread's `from transformers import X` is a dictionary lookup, never a racing import."""
import sys

from lib.ui import startup


def test_every_transformers_name_is_resolved_on_the_final_module():
    startup._heavy_imports()
    assert startup._lazy_imports() == []
    final = sys.modules["transformers"]
    names = {n for m, n in startup.imported_names() if m == "transformers" and n}
    assert {"Gemma3TextConfig", "GenerationConfig", "AutoTokenizer"} <= names
    assert not [n for n in names if n not in vars(final)]


def test_the_module_swap_that_made_this_necessary_is_done_first():
    """transformers.processing_utils replaces sys.modules['transformers'] when it is imported:
    the start imports it before resolving names, so no later import swaps the module again."""
    startup._heavy_imports()
    before = sys.modules["transformers"]
    import transformers.processing_utils  # noqa: F401
    import transformers.models.gemma3.modeling_gemma3  # noqa: F401
    assert sys.modules["transformers"] is before


def test_every_page_starts_the_server_before_its_own_imports():
    """On a fresh server Streamlit runs a deep-linked page FILE directly (pages-folder mode) before
    app.py ever runs. Importing lib.ui runs startup.once() (lib/ui/__init__.py), so a page's
    first lib import must be from lib.ui: nothing of lib (torch, transformers behind it) is
    imported before the start's lock. And the ritual is gone from the pages."""
    import ast
    from pathlib import Path

    import lib.ui

    assert startup._done or startup.once() is None
    assert "_startup.once()" in Path(lib.ui.__file__).read_text()
    late = []
    for path in sorted((Path(__file__).resolve().parents[2] / "pages").glob("*.py")):
        src = path.read_text(encoding="utf-8")
        mods = [n.module if isinstance(n, ast.ImportFrom) else n.names[0].name
                for n in ast.parse(src).body if isinstance(n, (ast.Import, ast.ImportFrom))]
        first_lib = next((m for m in mods if m and (m == "lib" or m.startswith("lib."))), "")
        if not first_lib.startswith("lib.ui") or "startup.once()" in src:
            late.append(f"{path.name}: first lib import {first_lib!r}")
    assert not late, late


def test_ast_parse_is_one_at_a_time_and_still_parses_from_many_threads():
    """lib.ui.startup wraps ast.parse in one lock (CPython 3.11's converter is not thread-safe:
    gh-106905); the wrapper returns the same trees, from 8 threads at once."""
    import ast
    import sys
    from concurrent.futures import ThreadPoolExecutor
    from pathlib import Path

    import lib.ui.startup  # noqa: F401

    if sys.version_info < (3, 13):
        assert getattr(ast.parse, "one_at_a_time", False)
    source = Path(lib.ui.startup.__file__).read_text()
    with ThreadPoolExecutor(8) as ex:
        trees = list(ex.map(lambda _: ast.dump(ast.parse(source)), range(40)))
    assert len(set(trees)) == 1
