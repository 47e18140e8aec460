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


def test_every_page_runs_the_start_before_its_own_imports():
    """On a fresh server Streamlit runs a deep-linked page FILE directly (pages-folder mode) before
    app.py ever runs, so each page must call startup.once() before it imports anything else."""
    import ast
    from pathlib import Path

    late = []
    for path in sorted((Path(__file__).resolve().parents[2] / "pages").glob("*.py")):
        body = ast.parse(path.read_text(encoding="utf-8")).body
        if isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            body = body[1:]
        first, call = body[0], body[1]
        ok = (isinstance(first, ast.ImportFrom) and first.module == "lib.ui"
              and [a.name for a in first.names] == ["startup"]
              and ast.unparse(call) == "startup.once()")
        if not ok:
            late.append(path.name)
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
