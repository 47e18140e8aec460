"""Beam search on a tiny random Gemma 3 against transformers' generate, and the re-ranking math."""
import math

import numpy as np
import pytest
import torch

from lib.concepts.beam_search.beam_rerank import crossing_alpha, probability_view, score_lines, sweep
from lib.concepts.beam_search.beam_search import FINISHED, KEPT, PRUNED, BeamRecord, Hypothesis, beam_search, normalized_score, select
from lib.concepts.beam_search.beam_search_hf import transformers_beam_search
from tests.conftest import tiny_gemma3

# Prompts and end tokens picked so that hypotheses of many lengths finish (1..10 tokens) and
# the winner really changes with alpha (flips near -0.06, 0.40, 0.42, 0.52 and 1.26).
P0, E0 = (2, 37, 24, 44, 53, 42), (1,)
P1, E1 = (2, 14, 14, 15, 31, 22), (1, 45)
P2, E2 = (2, 75, 56, 92, 37, 91), (1, 91)
MAX_NEW = 10


@pytest.fixture(scope="module")
def tiny():
    """Tiny model + our engine on it. One intra-op thread while this module runs: the tiny
    matmuls gain nothing from a second thread, and on a busy 2-core machine the OpenMP
    hand-off costs ~20x the CPU time."""
    from lib.model.from_transformers import engine_from_hf

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    hf = tiny_gemma3(0)
    yield hf, engine_from_hf(hf)
    torch.set_num_threads(threads)


def hf_generate(hf, prompt, num_beams, alpha, early_stopping, eos):
    with torch.no_grad():
        out = hf.generate(torch.tensor([prompt]), num_beams=num_beams, length_penalty=alpha,
                          early_stopping=early_stopping, max_new_tokens=MAX_NEW, do_sample=False,
                          eos_token_id=list(eos), pad_token_id=0, return_dict_in_generate=True,
                          output_scores=True)
    return tuple(out.sequences[0, len(prompt):].tolist()), float(out.sequences_scores[0])


CASES = [  # prompt, end tokens, num_beams, alpha, early_stopping
    (P1, E1, 4, -1.0, False), (P1, E1, 4, 0.0, True), (P1, E1, 4, 0.5, False),
    (P1, E1, 3, 2.0, "never"), (P0, E0, 3, 0.5, True), (P0, E0, 6, 2.0, False),
    (P0, E0, 5, 1.0, True), (P2, E2, 2, 2.0, False), (P2, E2, 6, -1.0, True),
    (P1, E1, 2, 1.0, False),
]


@pytest.mark.slow  # transformers generate() for every case
def test_best_sequence_and_score_equal_transformers_generate(tiny):
    hf, eng = tiny
    lengths = set()
    for prompt, eos, nb, alpha, es in CASES:
        rec = beam_search(eng, prompt, nb, MAX_NEW, alpha, es, eos)
        s = select(rec, alpha, es)
        ours = rec.hypotheses[s.best]
        tokens, score = hf_generate(hf, prompt, nb, alpha, es, eos)
        assert ours.tokens == tokens, (prompt, nb, alpha, es)
        assert s.score == pytest.approx(score, abs=1e-4), (prompt, nb, alpha, es)
        lengths.add(ours.length)
    assert len(lengths) >= 3, lengths  # the cases really exercise different winner lengths


@pytest.mark.slow  # transformers' own beam search step by step, four cases
def test_transformers_algorithm_on_our_engine_is_bit_identical(tiny):
    _, eng = tiny
    for prompt, eos, nb, alpha, es in CASES[:4]:
        rec = beam_search(eng, prompt, nb, MAX_NEW, alpha, es, eos)
        s = select(rec, alpha, es)
        assert transformers_beam_search(eng, prompt, nb, MAX_NEW, alpha, es, eos) == \
            (rec.hypotheses[s.best].tokens, s.score)


@pytest.mark.slow  # one search per alpha (six) besides the recorded one
def test_one_run_to_max_answers_every_alpha_exactly(tiny):
    """select() on one recorded search equals a fresh search with that alpha's stopping rule."""
    _, eng = tiny
    full = beam_search(eng, P1, 4, MAX_NEW, eos_ids=E1, run_to_max=True)
    assert full.n_steps == MAX_NEW
    winners = set()
    for alpha in (-1.0, 0.0, 0.3, 0.5, 1.0, 2.0):
        for es in (False, True, "never"):
            fresh = beam_search(eng, P1, 4, MAX_NEW, alpha, es, E1)
            a, b = select(full, alpha, es), select(fresh, alpha, es)
            assert full.hypotheses[a.best].tokens == fresh.hypotheses[b.best].tokens
            assert a.score == b.score and a.stop_step == b.stop_step == fresh.n_steps - 1
            winners.add(full.hypotheses[a.best].tokens)
    assert len(winners) >= 3


def test_record_is_consistent(tiny):
    _, eng = tiny
    nb = 4
    rec = beam_search(eng, P1, nb, MAX_NEW, eos_ids=E1, run_to_max=True)
    K = max(2, 1 + len(E1)) * nb
    assert len(rec.candidates) == K * MAX_NEW
    for step in range(MAX_NEW):
        cands = rec.candidates[step * K:(step + 1) * K]
        cums = [c.cum_logprob for c in cands]
        assert cums == sorted(cums, reverse=True)
        kept = [c for c in cands if c.fate == KEPT]
        assert len(kept) == (nb if step < MAX_NEW - 1 else 0)
        assert all(c.rank < nb for c in cands if c.fate == FINISHED)
        assert all(c.fate == PRUNED for c in cands if c.ends and c.rank >= nb)
        for c in cands:
            assert c.logprob <= 0
            parent_cum = 0.0 if c.parent < 0 else rec.candidates[c.parent].cum_logprob
            assert c.cum_logprob == float(np.float32(parent_cum) + np.float32(c.logprob))
            if c.parent >= 0:
                assert rec.candidates[c.parent].fate == KEPT and rec.candidates[c.parent].step == step - 1
    for h in rec.hypotheses:
        path, node = [], h.node
        while node >= 0:
            path.append(rec.candidates[node].token)
            node = rec.candidates[node].parent
        assert tuple(reversed(path)) == h.tokens
        assert h.by_length == (h.tokens[-1] not in E1)


def test_the_tree_grows_step_by_step_before_the_search_ends(tiny):
    """on_step sees the record after every step (the page draws it as it grows): each time one
    step more, the candidates so far the first ones of the final record; the tree of a record
    still growing has no winner's path and the frame of all max_new_tokens steps."""
    from lib.concepts.beam_search.figures import tree_figure

    _, eng = tiny
    seen, figs = [], []

    def grown(r):
        seen.append((r.n_steps, list(r.candidates)))
        if r.n_steps == 2:
            labels = {"winner": "winner", "hover": "{tok}", "hover_score": "{score}", "prompt": "p", "x": "x",
                      "y": "y", "title": "t", "after_stop": "a", **{f"fate_{k}": k for k in (KEPT, FINISHED, "cut", "pruned")}}
            figs.append(tree_figure(r, [str(c.token) for c in r.candidates], {}, None, r.n_steps - 1, labels))

    rec = beam_search(eng, P1, 3, MAX_NEW, eos_ids=E1, run_to_max=True, on_step=grown)
    assert [n for n, _ in seen] == list(range(1, rec.n_steps + 1))
    assert all(cands == rec.candidates[:len(cands)] for _, cands in seen)
    fig, = figs
    assert fig.layout.xaxis.range[1] == MAX_NEW + 0.7                  # the whole search's frame, not 2 steps
    assert not [tr for tr in fig.data if tr.name == "winner" and tr.x]  # no red path while it runs
    assert max(max(x for x in tr.x if x is not None) for tr in fig.data if tr.x) == 2


def test_one_beam_with_early_stopping_is_greedy(tiny):
    from lib.decoding.generate import greedy

    _, eng = tiny
    for prompt, eos in ((P1, E1), (P2, E2)):
        rec = beam_search(eng, prompt, 1, MAX_NEW, 1.0, True, eos)
        assert rec.hypotheses[select(rec, 1.0, True).best].tokens == tuple(greedy(eng, prompt, MAX_NEW, eos).new_ids)


def test_normalized_score_rounds_like_a_float32_tensor_division():
    g = torch.Generator().manual_seed(0)
    sums = (-torch.rand(2000, generator=g) * 40).tolist()
    for L in (1, 3, 7, 24):
        for alpha in (-1.0, 0.0, 0.37, 0.5, 1.0, 2.0):
            theirs = torch.tensor(sums, dtype=torch.float32) / (L ** alpha)
            assert [normalized_score(s, L, alpha) for s in sums] == theirs.tolist()


def hand_record(hyps: list[tuple[float, int]], num_beams: int = 4, max_new: int = 8) -> BeamRecord:
    """A record with given (sum log-prob, length) hypotheses, all finished by the last step."""
    rec = BeamRecord((2,), num_beams, max_new, (1,), True)
    for S, L in hyps:
        rec.hypotheses.append(Hypothesis(tuple([5] * (L - 1) + [1]), S, L - 1, -1, False))
    rec.best_running = [-100.0] * max_new
    rec.n_steps = max_new
    return rec


def test_crossing_point_and_flips_by_hand():
    # S/L: (-2, 2) wins at alpha = 0 (-2 > -4.5); (-4.5, 6) wins at alpha = 1 (-0.75 > -1).
    a, b = Hypothesis((5, 1), -2.0, 1, -1, False), Hypothesis((5,) * 5 + (1,), -4.5, 5, -1, False)
    x = crossing_alpha(a, b)
    assert x == pytest.approx(math.log(2 / 4.5) / math.log(2 / 6))
    assert -2.0 / 2 ** x == pytest.approx(-4.5 / 6 ** x)
    assert crossing_alpha(a, Hypothesis((7, 1), -3.0, 1, -1, False)) is None   # equal lengths
    rec = hand_record([(-2.0, 2), (-4.5, 6)])
    sw = sweep(rec, np.linspace(-1, 3, 41), early_stopping=True)
    assert [(f.before, f.after) for f in sw.flips] == [(0, 1)]
    assert sw.flips[0].alpha == pytest.approx(x, abs=1e-3)
    assert sw.scores.shape == (2, 41)
    assert np.allclose(score_lines(rec, [0.0, 1.0]), [[-2.0, -1.0], [-4.5, -0.75]])


def test_score_is_not_a_probability():
    rec = hand_record([(-2.0, 2), (-4.5, 6), (-1.0, 1), (-3.0, 3)])
    v = probability_view(rec, 1.0)
    assert v.total_prob == pytest.approx(math.exp(-2) + math.exp(-4.5) + math.exp(-1) + math.exp(-3))
    assert v.total_prob <= 1 < v.total_exp_score          # 4 geometric-mean 'probabilities' sum > 1
    assert np.all(v.exp_score >= v.seq_prob)


def test_bad_settings_are_rejected(tiny):
    _, eng = tiny
    with pytest.raises(ValueError):
        beam_search(eng, P0, 0, 4)
    with pytest.raises(ValueError):
        beam_search(eng, P0, 2, 4, early_stopping="sometimes")
    partial = hand_record([(-2.0, 2)])
    partial.n_steps, partial.best_running = 3, [-0.1] * 3    # stopped early, beams still promising
    with pytest.raises(ValueError):
        select(partial, 1.0, False)


def test_generate_on_our_engine_equals_hf_generate_and_our_search(tiny):
    """generate_beam_search (transformers' whole generate on our engine's forward) returns what
    transformers' generate returns on its own model, and what our search + select return."""
    from lib.concepts.beam_search.beam_search_hf import generate_beam_search

    hf, eng = tiny
    for prompt, eos, nb, alpha, es in CASES[:5]:
        theirs = generate_beam_search(eng, prompt, nb, MAX_NEW, eos, alpha, es)
        hf_tokens, hf_score = hf_generate(hf, prompt, nb, alpha, es, eos)
        assert theirs[0] == hf_tokens, (prompt, nb, alpha, es)
        assert theirs[1] == pytest.approx(hf_score, abs=1e-4), (prompt, nb, alpha, es)
        rec = beam_search(eng, prompt, nb, MAX_NEW, eos_ids=eos, run_to_max=True)
        s = select(rec, alpha, es)
        assert (rec.hypotheses[s.best].tokens, s.score) == theirs, (prompt, nb, alpha, es)


def test_the_score_read_off_the_finished_beams_is_transformers_sequences_scores(tiny):
    """The adapters run `_beam_search` without output_scores (which would keep every step's
    log-probs) and read the finished beams' scores instead: exactly `sequences_scores` of the
    same search with output_scores=True."""
    from transformers import GenerationConfig
    from transformers.generation.logits_process import LogitsProcessorList
    from transformers.generation.stopping_criteria import EosTokenCriteria, MaxLengthCriteria, StoppingCriteriaList

    from lib.concepts.beam_search.beam_search_hf import EngineBackend, _ForGeneration

    _, eng = tiny
    for prompt, eos, nb, alpha, es in CASES[:4]:
        P = len(prompt)
        cfg = GenerationConfig(num_beams=nb, length_penalty=alpha, early_stopping=es, max_length=P + MAX_NEW,
                               do_sample=False, return_dict_in_generate=True, output_scores=True)
        cfg._eos_token_tensor, cfg._pad_token_tensor = torch.tensor(sorted(eos)), None
        model = _ForGeneration(EngineBackend(eng))
        out = model._beam_search(torch.tensor([list(prompt)] * nb), LogitsProcessorList(),
                                 StoppingCriteriaList([MaxLengthCriteria(P + MAX_NEW), EosTokenCriteria(sorted(eos))]),
                                 cfg, use_cache=True)
        assert len(out.scores) > 1                      # with output_scores it kept every step's log-probs
        assert float(model.finished_scores[0, 0]) == float(out.sequences_scores[0]), (prompt, nb, alpha, es)
    assert transformers_beam_search(eng, prompt, nb, MAX_NEW, alpha, es, eos)[1] == float(out.sequences_scores[0])


def test_step_events_tell_each_step(tiny):
    from lib.concepts.beam_search import beam_steps

    _, eng = tiny
    rec = beam_search(eng, P1, 3, MAX_NEW, eos_ids=E1, run_to_max=True)
    K = len(rec.candidates) // rec.n_steps
    for step in range(rec.n_steps):
        ev = beam_steps.step_events(rec, step)
        assert [e.rank for e in ev] == list(range(1, K + 1))
        assert sum(e.fate == KEPT for e in ev) == (3 if step < rec.n_steps - 1 else 0)
        assert beam_steps.running_beams(rec, step) == (1 if step == 0 else 3)
        assert all(len(e.prefix) == step for e in ev)
    assert beam_steps.finished_by(rec, rec.n_steps - 1) == len(rec.hypotheses)
    for h in rec.hypotheses:
        assert beam_steps.path_tokens(rec, h.node) == h.tokens
    with pytest.raises(ValueError):
        beam_steps.step_events(rec, rec.n_steps)


def test_page_checks_all_pass_on_a_tiny_search_and_fail_on_a_wrong_winner(tiny):
    from lib.concepts.beam_search import checks
    from lib.concepts.beam_search.beam_search_hf import generate_beam_search
    from lib.concepts.beam_search.replay import search_with_parity

    _, eng = tiny
    rec, replays = search_with_parity(eng, P1, 3, MAX_NEW, E1, checks.PARITY_ALPHAS, checks.PARITY_MODES)
    sel = select(rec, 1.0, False)
    sw = sweep(rec, np.linspace(-1, 3, 41), False)
    from lib.concepts.beam_search.beam_search import sequence_logprobs
    rescored = sequence_logprobs(eng, P1, checks.winners_over_alpha(rec, sw))
    theirs = generate_beam_search(eng, P1, 3, MAX_NEW, E1, 1.0, False)
    def key(text_key, /, **_):
        return text_key
    assert all(r.passed for r in checks.page_checks(rec, sel, theirs, replays, sw, rescored, key))
    wrong = (theirs[0][:-1], theirs[1])
    assert not checks.page_checks(rec, sel, wrong, replays, sw, rescored, key)[0].passed


def test_one_beam_is_greedy_search_and_its_checks_run(tiny):
    """num_beams = 1 (the slider's lowest value): transformers' generate runs greedy search and
    returns no sequences_scores (it raised AttributeError before); our search keeps one
    candidate per step, so both give the greedy continuation, for every alpha and stop mode,
    and the page's checks pass (and still fail on a wrong winner)."""
    from lib.concepts.beam_search import checks
    from lib.concepts.beam_search.beam_search import sequence_logprobs
    from lib.concepts.beam_search.beam_search_hf import generate_beam_search
    from lib.concepts.beam_search.replay import search_with_parity
    from lib.decoding.generate import greedy

    hf, eng = tiny
    for prompt, eos in ((P1, E1), (P2, E2), (P0, E0)):
        want = tuple(greedy(eng, prompt, MAX_NEW, eos).new_ids)
        rec, replays = search_with_parity(eng, prompt, 1, MAX_NEW, eos, checks.PARITY_ALPHAS, checks.PARITY_MODES)
        assert len(rec.hypotheses) == 1 and rec.hypotheses[0].tokens == want
        assert all(p.same for p in replays)
        for alpha, es in ((1.0, False), (0.0, True), (2.0, "never"), (-1.0, False)):
            theirs = generate_beam_search(eng, prompt, 1, MAX_NEW, eos, alpha, es)
            assert theirs[0] == want
            sel = select(rec, alpha, es)
            assert abs(sel.score - theirs[1]) <= checks.SCORE_TOL
            assert theirs[1] == pytest.approx(rec.hypotheses[0].sum_logprob / len(want) ** alpha, rel=1e-6)
        sw = sweep(rec, np.linspace(-1, 3, 41), False)
        rescored = sequence_logprobs(eng, prompt, checks.winners_over_alpha(rec, sw))
        sel = select(rec, 1.0, False)
        theirs = generate_beam_search(eng, prompt, 1, MAX_NEW, eos, 1.0, False)
        got = checks.page_checks(rec, sel, theirs, replays, sw, rescored, lambda k, /, **_: k)
        assert all(r.passed for r in got), [r for r in got if not r.passed]
        assert not checks.page_checks(rec, sel, (want[:-1], theirs[1]), replays, sw, rescored,
                                      lambda k, /, **_: k)[0].passed
    with torch.no_grad():                     # transformers' own generate on its own model: greedy too
        out = hf.generate(torch.tensor([P1]), num_beams=1, do_sample=False, max_new_tokens=MAX_NEW,
                          eos_token_id=list(E1), pad_token_id=0)
    want = tuple(greedy(eng, P1, MAX_NEW, E1).new_ids)
    assert tuple(out[0, len(P1):].tolist())[:len(want)] == want


def test_score_chart_draws_every_hypothesis_the_text_counts():
    """The page's sentence counts `drawn_lines(fig)`; every finished hypothesis is a line up to
    MAX_LINES (the default search has 9: the chart once drew only 8 and left out the L = 5 one)."""
    from lib.concepts.beam_search import figures
    from lib.concepts.beam_search.beam_rerank import MAX_LINES, lines_to_draw

    labels = {"title": "", "x": "", "y": "", "flip": "{a}", "now": "{a}"}
    alphas = np.linspace(-1, 3, 41)
    for n in (1, 2, 9, MAX_LINES, MAX_LINES + 5):
        rec = hand_record([(-1.0 - 0.7 * i, 1 + i % 7) for i in range(n)], max_new=8)
        sw = sweep(rec, alphas, early_stopping=False)
        show = lines_to_draw(sw)
        assert len(show) == min(n, MAX_LINES) and len(set(show)) == len(show)
        assert set(int(w) for w in sw.winners) <= set(show)          # every winner is drawn
        fig = figures.score_vs_alpha_figure(alphas, sw.scores, [f"h{i}" for i in range(n)], sw.winners, show,
                                            1.0, sw.flips, labels)
        assert figures.drawn_lines(fig) == len(show)
        assert len({tr.line.color for tr in fig.data if tr.showlegend is not False}) == len(show)


def test_clip_words_cuts_at_word_boundaries():
    from lib.concepts.beam_search.beam_steps import clip_words

    text = "The capital of France is Paris, one of the most beautiful cities in the world"
    tail = clip_words(text, 40)
    assert tail == "…the most beautiful cities in the world" and len(tail) <= 41
    assert text.endswith(tail[1:])
    head = clip_words(text, 20, keep="start")
    assert head == "The capital of…" and text.startswith(head[:-1])
    assert clip_words("short", 40) == "short"
    assert clip_words("x" * 50, 10) == "…" + "x" * 10                 # one long word: cut inside, marked
    for n in range(5, 60):
        for keep in ("end", "start"):
            c = clip_words(text, n, keep).strip("…")
            assert c in text and len(c) <= n
            words = c.split()
            if len(c) < len(text) and len(words) > 1:                # every word shown is whole
                assert all(w in text.split() for w in words), (n, keep, c)


def test_flip_labels_close_together_stack_instead_of_overlapping():
    """The default search flips at -0.06, 0.40, 0.42, 0.52 and 1.26: on a phone's chart the
    labels of the three middle flips printed into one another; now each sits on its own row."""
    from lib.concepts.beam_search import figures
    from lib.concepts.beam_search.beam_rerank import Flip

    labels = {"title": "", "x": "", "y": "", "flip": "flip {a}", "now": "{a}"}
    alphas = np.linspace(-1, 3, 41)
    rec = hand_record([(-1.0 - 0.7 * i, 1 + i) for i in range(3)], max_new=8)
    sw = sweep(rec, alphas, early_stopping=False)
    flips = [Flip(a, 0, 1, None, (3, 3)) for a in (0.40, 0.42, 2.0)]
    fig = figures.score_vs_alpha_figure(alphas, sw.scores, ["a", "b", "c"], sw.winners, [0, 1, 2], 1.0, flips, labels)
    marks = [a for a in fig.layout.annotations if a.text.startswith("flip")]
    assert [a.x for a in marks] == [0.40, 0.42, 2.0]
    assert marks[0].yshift != marks[1].yshift and marks[2].yshift == marks[0].yshift


@pytest.mark.parametrize("beams", [3, 1])
def test_record_then_replays_equal_search_with_parity(tiny, beams):
    """The page takes the record first (its figures) and the replays later, in the background
    (issue 29): the same record and the same replays as one search_with_parity, whether the
    replays find the search's logits table still held or have to run the search again."""
    from lib.concepts.beam_search import replay as H
    from lib.concepts.beam_search import checks

    _, eng = tiny
    rec0, par0 = H.search_with_parity(eng, P1, beams, MAX_NEW, E1, checks.PARITY_ALPHAS, checks.PARITY_MODES)
    rec = H.search_record(eng, P1, beams, MAX_NEW, E1)
    assert rec == rec0
    assert H.replays(eng, P1, beams, MAX_NEW, E1, checks.PARITY_ALPHAS, checks.PARITY_MODES) == par0
    assert H._table_key(eng, P1, beams, MAX_NEW, E1) not in H._TABLES        # taken, not kept
    assert H.replays(eng, P1, beams, MAX_NEW, E1, checks.PARITY_ALPHAS, checks.PARITY_MODES) == par0
    assert all(p.same for p in par0)
