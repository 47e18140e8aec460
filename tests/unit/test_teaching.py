"""Teaching infrastructure (issue 14): the life-of-a-token trace on a tiny random Gemma 3, the
glossary's term list and links, the lessons' catalog and texts (fast; no real weights)."""
import re
import string

import numpy as np
import pytest
import torch

from lib.concepts.catalog import CONCEPTS, PAGES_DIR
from lib.concepts.lessons.answers import ANSWERS
from lib.concepts.lessons.catalog import LESSONS
from lib.concepts.life_of_a_token.trace import stage_views, trace_token
from lib.decoding.generate import next_token_logits
from lib.decoding.sampling import SamplingConfig
from lib.model.from_transformers import engine_from_hf
from lib.ui import glossary
from lib.ui.i18n import load_texts
from lib.ui.shell import TEACHING_PAGES
from tests.conftest import tiny_gemma3

SLUGS = {c.slug for c in CONCEPTS} | {s for s, _ in TEACHING_PAGES}


@pytest.fixture(scope="module")
def tiny():
    torch.set_num_threads(1)
    return engine_from_hf(tiny_gemma3(window=4))


# ---- the life of a token ------------------------------------------------------------------
def test_trace_records_the_same_forward_the_engine_runs(tiny):
    ids = (1, 5, 9, 14, 3, 7)
    tr = trace_token(tiny, ids, SamplingConfig(temperature=0.7, top_k=10, top_p=0.8), seed=0)
    torch.testing.assert_close(tr.logits, next_token_logits(tiny, ids), atol=1e-5, rtol=0)
    spec = tiny.spec
    assert tr.embed.shape == (len(ids), spec.hidden)
    assert len(tr.layers) == spec.n_layers
    for lay in tr.layers:
        assert lay.attn.shape == (spec.n_heads, len(ids), len(ids))
        np.testing.assert_allclose(lay.attn.sum(-1), 1.0, atol=1e-5)          # rows are distributions
        assert np.allclose(np.triu(lay.attn, 1), 0)                            # causal
        if lay.window is not None:                                             # window 4: older keys get 0
            assert np.allclose(lay.attn[:, -1, : len(ids) - lay.window], 0)


def test_cache_grows_layer_by_layer_then_by_one_entry(tiny):
    ids = (1, 5, 9, 14, 3)
    tr = trace_token(tiny, ids, SamplingConfig(temperature=1.0), seed=1)
    s = tiny.spec
    per_layer = 2 * s.n_kv_heads * s.head_dim * len(ids) * tiny.dtype.itemsize
    assert [lay.cache_bytes_total for lay in tr.layers] == [per_layer * (l + 1) for l in range(s.n_layers)]
    assert tr.cache_len_decode == len(ids) + 1
    assert tr.cache_bytes_decode == per_layer * s.n_layers * (len(ids) + 1) // len(ids)


def test_sampled_token_is_allowed_and_stage_views_follow_the_pipeline(tiny):
    ids = (1, 5, 9, 14, 3)
    tr = trace_token(tiny, ids, SamplingConfig(temperature=0.8, top_k=5, top_p=0.7, bias=((9, -3.0),)), seed=2)
    assert tr.pipeline.probs[tr.token] > 0
    shown, views = stage_views(tr, 6, extra=[9, tr.token])
    assert [v.name for v in views] == ["input", "bias", "temperature", "top_k", "top_p"]
    assert views[0].kept == tr.logits.shape[0] and views[3].kept <= 5 and views[4].kept <= views[3].kept
    # the bias stage multiplies token 9's odds against any other token by e^-3
    i9, j = shown.index(9), next(i for i, t in enumerate(shown) if t != 9)
    before = views[0].probs[i9] / views[0].probs[j]
    after = views[1].probs[i9] / views[1].probs[j]
    assert after / before == pytest.approx(np.exp(-3.0), rel=1e-4)


def test_same_seed_same_token(tiny):
    cfg = SamplingConfig(temperature=1.5)
    ids = (1, 2, 3, 4)
    assert trace_token(tiny, ids, cfg, 7).token == trace_token(tiny, ids, cfg, 7).token


# ---- the glossary -------------------------------------------------------------------------
def test_glossary_has_forty_terms_in_both_languages_with_real_pages():
    texts, terms = load_texts("glossary"), load_texts("terms")
    assert len(glossary.TERMS) >= 40
    assert len({t.anchor for t in glossary.TERMS}) == len(glossary.TERMS)
    for t in glossary.TERMS:
        for lang in ("en", "id"):
            assert terms[lang][t.key] and texts[lang][f"def_{t.key}"]
        assert t.pages and set(t.pages) <= SLUGS, t.key
        assert all((PAGES_DIR / f"{s}.py").exists() for s in t.pages), t.key
    keys = {k for k in terms["en"] if not k.startswith("word_")}
    assert keys == {t.key for t in glossary.TERMS}
    assert {k[4:] for k in texts["en"] if k.startswith("def_")} == keys


def test_glossary_link_points_at_the_anchor_and_keeps_the_language():
    assert glossary.link("kv_cache", lang="en") == "[KV cache](/glossary#kv-cache)"
    assert glossary.link("entropy", lang="id") == "[entropi (dalam bit)](/glossary?lang=id#entropy)"
    assert glossary.link("ttft", "time to first token", lang="en") == "[time to first token](/glossary#ttft)"
    with pytest.raises(KeyError):
        glossary.link("no_such_term", lang="en")


def test_required_terms_are_there():
    for key in ("logit", "entropy", "nucleus", "tv_distance", "chi_square", "kv_cache", "mib", "log_scale",
                "ttft", "tbt", "sqnr", "copy_on_write", "ring_buffer", "attention_sink"):
        assert key in glossary.BY_KEY


# ---- lessons ------------------------------------------------------------------------------
def test_three_lessons_with_their_durations_and_real_pages():
    by_id = {x.id: x for x in LESSONS}
    assert {k: by_id[k].minutes for k in ("decoding", "speculative", "serving")} == \
        {"decoding": 45, "speculative": 30, "serving": 45}
    for lesson in LESSONS:
        assert len(lesson.steps) >= 3
        for step in lesson.steps:
            assert (PAGES_DIR / f"{step.slug}.py").exists(), step.slug
            assert step.answer in ANSWERS


def test_every_step_has_its_texts_in_both_languages():
    texts = load_texts("lessons")
    for lesson in LESSONS:
        for lang in ("en", "id"):
            assert texts[lang][f"lesson_{lesson.id}_title"] and texts[lang][f"lesson_{lesson.id}_summary"]
            for n in range(1, len(lesson.steps) + 1):
                for part in ("q", "title", "notice", "answer"):
                    assert texts[lang][f"{lesson.key(n)}_{part}"], (lesson.id, n, part)
        extra = [k for k in texts["en"] if re.fullmatch(rf"{lesson.id}_(\d+)_q", k)
                 and int(k.split("_")[1]) > len(lesson.steps)]
        assert not extra


def test_step_titles_differ_within_a_lesson():
    """Two steps on one page (top-k-top-p twice, speculative-acceptance three times) get titles of
    their own, so no list or header repeats the same line."""
    from lib.ui.i18n import Texts
    from lib.ui.lessons import step_title

    for lang in ("en", "id"):
        t = Texts("lessons", lang)
        for lesson in LESSONS:
            titles = [step_title(t, lesson, n) for n in range(1, len(lesson.steps) + 1)]
            assert len(set(titles)) == len(titles), (lang, lesson.id, titles)


def test_steps_sharing_an_answer_function_ask_for_the_same_values():
    """Each answer template may only use names its answer function returns; steps that share a
    function must use a consistent set of names (checked fully on the real model)."""
    texts = load_texts("lessons")["en"]
    fields = {}
    for lesson in LESSONS:
        for n, step in enumerate(lesson.steps, 1):
            names = {f for _, f, _, _ in string.Formatter().parse(texts[f"{lesson.key(n)}_answer"]) if f}
            fields.setdefault(step.answer, set()).update(names)
    assert all(fields.values())


def test_peak_and_first_token_share(tiny):
    from lib.concepts.life_of_a_token.trace import first_token_share, last_token_attention, peak

    p = peak(np.array([0.1, -0.2, 5.0, 0.3, -0.1]))
    assert (p.channel, p.value) == (2, 5.0) and p.ratio == pytest.approx(5.0 / 0.2)
    tr = trace_token(tiny, (1, 5, 9, 14), SamplingConfig(temperature=1.0), seed=0)
    rows = last_token_attention(tr)
    assert rows.shape == (tiny.spec.n_layers, 4)
    np.testing.assert_allclose(rows.sum(1), 1.0, atol=1e-5)
    assert first_token_share(tr) == pytest.approx(float(rows[:, 0].mean()))


def test_every_concept_page_links_its_terms_to_the_glossary():
    """Each concept page's "What to notice" ends with its terms, each a link to its entry."""
    from lib.concepts.catalog import CONCEPTS

    for c in CONCEPTS:
        if not c.exists:
            continue
        line = glossary.page_terms_line(c.slug, lang="id")
        assert "(/glossary?lang=id#" in line, c.slug
        assert line.count("](") == len(glossary.terms_of(c.slug)) >= 1


def test_home_map_numbers_concepts_in_reading_order():
    """Issue 33: the home page's map read 1..11, 17, 18, 19, 12..16 (a column held quantization
    under attention). Read column by column, the numbers count 1..N, every group once, in the
    sidebar's group order."""
    from lib.concepts.catalog import CONCEPTS, GROUPS, HOME_COLUMNS, home_order

    assert [g for groups in HOME_COLUMNS for g in groups] == list(GROUPS)
    assert [x.number for x in home_order()] == list(range(1, len(CONCEPTS) + 1))
