"""Shared fixtures: tiny random models (fast, no weights needed) and the real bundled model.

Real-model fixtures are session-scoped: the model is prepared (once per machine) and loaded
once per test run."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
# Under `pytest -n 2` (make test) each of the two workers computes on one core: two OpenMP teams
# of two on two cores make every forward of both wait on the other (a test took 5x as long).
torch.set_num_threads(1 if os.environ.get("PYTEST_XDIST_WORKER") else min(2, os.cpu_count() or 1))


def randomize(model, seed: int = 0):
    """Random weights everywhere, norms included (transformers inits Gemma norms to 0)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * 0.2)
    return model.eval()


def tiny_gemma3(seed: int = 0, window: int = 8):
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig

    cfg = Gemma3TextConfig(vocab_size=97, hidden_size=64, intermediate_size=96, num_hidden_layers=6,
                           num_attention_heads=4, num_key_value_heads=1, head_dim=16,
                           query_pre_attn_scalar=16, sliding_window=window, max_position_embeddings=256,
                           attn_implementation="eager")
    return randomize(Gemma3ForCausalLM(cfg), seed)


def tiny_llama(kind: str = "llama", seed: int = 0):
    from transformers import AutoModelForCausalLM, LlamaConfig, Qwen2Config, Qwen3Config

    common = dict(vocab_size=97, hidden_size=64, intermediate_size=96, num_hidden_layers=3,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                  attn_implementation="eager")
    cfg = {"llama": LlamaConfig, "qwen2": Qwen2Config, "qwen3": Qwen3Config}[kind](**common)
    if kind == "llama":
        cfg.tie_word_embeddings = False
    return randomize(AutoModelForCausalLM.from_config(cfg), seed)


@pytest.fixture(scope="session")
def real_folder():
    from lib.model import bundled_model

    return bundled_model.prepare()


@pytest.fixture(scope="session")
def real_hf(real_model):
    """The bundled model through stock transformers (eager attention): the reference. Its
    config is the model's config; its weights are dequantized from the GGUF by `gguf`
    (lib/reference/gguf_weights.py), never read through the app's own writer (weights_stream
    writes the folder's safetensors with the app's Q8_0 reader): issue 32."""
    from lib.reference import gguf_weights, layer_reference

    return layer_reference.hf_model(real_model.config, gguf_weights.bundled())


@pytest.fixture(scope="session")
def real_model():
    """The bundled model as the app loads it (LoadedModel with our engine)."""
    from lib.model import model_loader

    return model_loader.load("bundled", "cpu")


@pytest.fixture(scope="session")
def real_engine_with_hf(real_hf):
    """Our engine on a copy of the reference model's weights (the reference stays intact)."""
    from lib.model.from_transformers import engine_from_hf

    return engine_from_hf(real_hf)


@pytest.fixture(scope="session")
def gpl_text() -> str:
    """A long human-written text every Debian machine ships (and a fallback if it does not)."""
    p = Path("/usr/share/common-licenses/GPL-3")
    if p.exists():
        return p.read_text()
    from lib.model.long_text import long_text

    return long_text()


# ---- two test processes at once (`make test`: pytest -n 2) -------------------------------------
# Half the suite waits (a browser drawing, a server starting, a class of sockets) while the other
# half computes, so `make test` runs two pytest-xdist workers. A worker takes whole work units:
# - "pages": every page's cold default state rendered by the app tests (and the app tests that
#   open the same default states again), then the browser tests, which read those results from
#   the shared results folder and share one server (in this order, on one worker: a cold page is
#   never rendered twice; on the other worker a default state could be computed a second time
#   at once, before its first computation is on disk);
# - every other module on its own, so its module-scoped fixtures are computed once (the live
#   class's browser test too: it starts a server of its own).
# Units go out in the order below (the pages chain first: it is the longest), the many small
# unit-test modules last, to fill the gaps. (xdist's own `--dist loadgroup` cannot do this under
# pytest 9.2: it renames node ids through an attribute pytest no longer reads.)
PAGES_CHAIN = tuple(f"tests/app/test_pages_apptest.py::{name}" for name in (
    "test_page_runs_in_both_languages",                                   # every page's cold default,
    "test_attention_sinks_answers_another_stride_and_a_shorter_text_from_its_default_evaluation",
    "test_bad_url_parameters_give_notes_not_crashes",                     # then tests that open the
    "test_an_english_default_prompt_says_why_under_indonesian",           # same default states
    "test_float_sliders_show_the_same_decimals_in_both_languages")) + (
    "tests/browser/test_browser.py", "tests/browser/test_language_browser.py", "tests/browser/test_teaching_browser.py")
UNIT_ORDER = ("pages", "tests/mutation/", "tests/model/", "tests/load/", "tests/browser/", "tests/app/", "tests/unit/")


def work_unit(nodeid: str) -> str:
    """The work unit of a test: "pages" for the chain above, else its module's path."""
    return "pages" if nodeid.startswith(PAGES_CHAIN) else nodeid.split("::")[0]


def _rank(nodeid: str) -> int:
    unit = work_unit(nodeid)
    return next(i for i, p in enumerate(UNIT_ORDER + ("",)) if unit.startswith(p))


def pytest_collection_modifyitems(config, items):
    """The units in the order above; the tests of a unit keep their collection order (a stable
    sort). The same order without -n."""
    items.sort(key=lambda item: _rank(item.nodeid))


try:
    from xdist.scheduler import LoadScopeScheduling
except ImportError:              # pytest without pytest-xdist (requirements-dev.txt installs it)
    pass
else:
    class ByWorkUnit(LoadScopeScheduling):
        """xdist's scope scheduler, its scopes our work units."""

        def _split_scope(self, nodeid: str) -> str:
            return work_unit(nodeid)

    def pytest_xdist_make_scheduler(config, log):
        """Our work units, sent out in collection order (not xdist's largest-first)."""
        config.option.loadscopereorder = False
        return ByWorkUnit(config, log)
