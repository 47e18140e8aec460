"""Beam search length normalization (CONCEPTS.md §5): widgets and layout only; numbers from lib/."""
import time

import numpy as np
import streamlit as st

from lib.ui import runtime
from lib.concepts.beam_search import beam_rerank, beam_search, beam_steps, checks
from lib.decoding import generate
from lib.concepts.beam_search.beam_search_hf import generate_beam_search
from lib.concepts.beam_search.replay import replays, search_record
from lib.concepts.beam_search import figures as plots
from lib.decoding.sampling import SamplingConfig
from lib.decoding.stop_tokens import STOP_KINDS, end_token_ids
from lib.model.tokens import token_texts
from lib.ui.page import ConceptPage

SWEEP = np.round(np.linspace(-1.0, 3.0, 81), 3)   # the alpha axis of the re-ranking figure
ES_OPTIONS = ("false", "true", "never")
ES_VALUE = {"false": False, "true": True, "never": "never"}
PRESETS = {  # name -> (prompt, stop kinds, max new tokens); texts are model inputs, never translated
    "france": ("The capital of France is", ("sentence",), 16),
    "qa": ("Q: What is the capital of France?\nA:", ("newline",), 20),
    "language": ("The best way to learn a new language is", ("sentence",), 16),
    "weather": ("The weather today is", ("sentence",), 20),
    "ibukota": ("Ibu kota Indonesia adalah", ("sentence",), 20),
}

page = ConceptPage("beam-search")
t = page.t
m = page.model()


def _use_preset():
    name = st.session_state.get("beam-search.preset_choice")
    if name in PRESETS:
        text, kinds, n = PRESETS[name]
        st.session_state["preset_prompt"] = text
        st.session_state[page.state._key("stop")] = list(kinds)
        st.session_state[page.state._key("n")] = n
        st.session_state["beam-search.preset_choice"] = None


# ---- controls ----------------------------------------------------------------------------
left, right = page.controls()
left.selectbox(t("preset_label"), (None,) + tuple(PRESETS), key="beam-search.preset_choice",
               format_func=lambda k: t("preset_none") if k is None else t(f"preset_{k}"), on_change=_use_preset)
prompt = page.prompt(default=PRESETS["france"][0], max_tokens=64, container=left)
stops = page.state.multiselect("stop", t("stop_label"), STOP_KINDS, ("sentence",),
                               format_func=lambda k: t(f"stop_{k}"), help=t("stop_help"), container=left)
c1, c2 = right.columns(2)
num_beams = page.state.number_slider("beams", t("beams_label"), 1, 6, 4, container=c1)
n_new = page.state.number_slider("n", t("n_label"), 4, 24, 16, container=c2)
alpha = page.state.number_slider("alpha", t("alpha_label"), -1.0, 3.0, 1.0, step=0.05,
                                 help=t("alpha_help"), container=right)
es_key = page.state.select("es", t("es_label"), ES_OPTIONS, "false", format_func=lambda k: t(f"es_{k}"),
                           help=t("es_help"), horizontal=True, radio=True, container=right)
early_stopping = ES_VALUE[es_key]
c3, c4 = right.columns(2)
T = page.state.number_slider("T", t("t_label"), 0.1, 2.0, 1.0, step=0.1, container=c3)
seed = page.state.integer("seed", t("seed_label"), 0, 2**31 - 1, 0, container=c4)

ends = end_token_ids(m.tokenizer, m.spec.eos_ids, stops)
st.caption(t("ends_caption", ids=", ".join(f"{i} ({s})" for i, s in zip(ends, token_texts(m.tokenizer, ends)))))
if num_beams == 1:
    st.info(t("one_beam"))

tree_labels = {k: t(f"tree_{k}") for k in ("x", "y", "winner", "prompt", "after_stop")}
tree_labels.update({f"fate_{k}": t(f"fate_{k}") for k in ("kept", "finished", "cut", "pruned")})
tree_labels.update(hover=lambda **kw: t("tree_hover", **kw), hover_score=lambda **kw: t("tree_hover_score", **kw))

# ---- the model call: one search to max_new_tokens (cached), then everything is re-ranking --
growing, drawn_at = st.empty(), [0.0]      # the tree while the search grows it; emptied once it is done


def draw_so_far(r):
    """After each step of a search this run computes: the tree so far, at most twice a second."""
    if r.n_steps == n_new or time.perf_counter() - drawn_at[0] < 0.5:
        return
    drawn_at[0] = time.perf_counter()
    with growing.container():
        st.progress(r.n_steps / n_new, text=t("growing", s=r.n_steps, n=n_new, b=num_beams))
        labels = dict(tree_labels, title=t("growing_title", b=num_beams, s=r.n_steps, n=n_new))
        page.figure(plots.tree_figure(r, token_texts(m.tokenizer, [c.token for c in r.candidates]), {}, None,
                                      r.n_steps - 1, labels), "beam_tree", wide=True, so_far=True)


with st.spinner(t("running", b=num_beams, n=n_new)):
    rec = runtime.cached(search_record)(m.engine, prompt.ids, num_beams, n_new, ends, _on_step=draw_so_far)
growing.empty()
sel = beam_search.select(rec, alpha, early_stopping)
sweep = beam_rerank.sweep(rec, SWEEP, early_stopping)
# Started now, collected where they are shown: the figures below need only the record (issue 29).
# The greedy and sampled continuations run one after the other in one thread (each alone, as
# before: no batched rows that could move a logit's last bits); the checks' inputs (the replays on
# the search's logits, transformers' generate at this alpha, the winners re-scored) run meanwhile.
compare = runtime.start(lambda: (
    runtime.cached(generate.continuation)(m.engine, prompt.ids, SamplingConfig(0.0), 0, n_new, ends),
    runtime.cached(generate.continuation)(m.engine, prompt.ids, SamplingConfig(T), seed, n_new, ends)))
winners = checks.winners_over_alpha(rec, sweep)
later = runtime.start(
    lambda: runtime.cached(replays)(m.engine, prompt.ids, num_beams, n_new, ends, checks.PARITY_ALPHAS,
                                    checks.PARITY_MODES),
    lambda: runtime.cached(generate_beam_search)(m.engine, prompt.ids, num_beams, n_new, ends, alpha,
                                                 early_stopping),
    lambda: runtime.cached(beam_search.sequence_logprobs)(m.engine, prompt.ids, winners))
hyps = rec.hypotheses
texts = [m.tokenizer.decode(list(h.tokens)) for h in hyps]
shown = [s.replace("\n", "⏎") for s in texts]
short = [f"#{i + 1} L={h.length} “{s if len(s) <= 30 else beam_steps.clip_words(s, 12, 'start') + beam_steps.clip_words(s, 16)[1:]}”"
         for i, (h, s) in enumerate(zip(hyps, shown))]

# ---- predict, then reveal --------------------------------------------------------------------
sel0 = beam_search.select(rec, 0.0, early_stopping)
shortest = min(h.length for h in hyps)
w0 = hyps[sel0.best]
q1 = page.predict("alpha0", t("q_short"), ("shortest", "longer"), "shortest" if w0.length == shortest else "longer",
                  t("q_short_why", text=shown[sel0.best], L=w0.length, S=w0.sum_logprob, Lmin=shortest,
                    Lmax=max(h.length for h in hyps), n=len(hyps)),
                  format_func=lambda k: t(f"q_short_{k}"))
flips_02 = [f for f in sweep.flips if 0.0 < f.alpha < 2.0]
q2 = page.predict("flip", t("q_flip"), ("same", "changes"), "changes" if flips_02 else "same",
                  (t("q_flip_why_yes", n=len(flips_02), a=flips_02[0].alpha, before=shown[flips_02[0].before],
                     after=shown[flips_02[0].after]) if flips_02 else t("q_flip_why_no", text=shown[sel0.best])),
                  format_func=lambda k: t(f"q_flip_{k}"))

if q1:
    st.subheader(t("result_title", a=alpha))
    st.markdown(t("result_line", text=shown[sel.best], L=hyps[sel.best].length,
                  S=hyps[sel.best].sum_logprob, score=sel.score, stop=sel.stop_step + 1))
    for f in sweep.flips:
        st.caption(t("flip_line", a=f.alpha, before=f"#{f.before + 1} “{shown[f.before]}”",
                     after=f"#{f.after + 1} “{shown[f.after]}”"))
    if not sweep.flips:
        st.caption(t("no_flip"))

# ---- the beam tree -------------------------------------------------------------------------
st.subheader(t("steps_title"))
cand_tokens = token_texts(m.tokenizer, [c.token for c in rec.candidates])
node_scores = {h.node: s for h, s in zip(hyps, sel.scores)}
step_key = page.state._key("step")
if st.session_state.get(step_key, 1) > rec.n_steps:       # a shorter search than the one the slider last saw
    st.session_state[step_key] = rec.n_steps
step = (page.state.number_slider("step", t("step_label"), 1, rec.n_steps, rec.n_steps, help=t("step_help"))
        if rec.n_steps > 1 else 1)
tree_labels["title"] = t("tree_title", b=num_beams, K=len(rec.candidates) // max(rec.n_steps, 1), s=step, n=rec.n_steps)
fig = plots.tree_figure(rec, cand_tokens, node_scores, sel.best, sel.stop_step, tree_labels, upto=step - 1)
page.figure(fig, "beam_tree", {
    "step": [c.step + 1 for c in rec.candidates], "rank": [c.rank + 1 for c in rec.candidates],
    "parent": [c.parent for c in rec.candidates], "token_id": [c.token for c in rec.candidates],
    "token": cand_tokens, "logprob": [c.logprob for c in rec.candidates],
    "cum_logprob": [c.cum_logprob for c in rec.candidates], "fate": [c.fate for c in rec.candidates]},
    caption=t("tree_caption"), wide=True)      # a label at every node: a phone scrolls the tree sideways
events = beam_steps.step_events(rec, step - 1)
n_fate = {k: sum(e.fate == k for e in events) for k in (beam_search.KEPT, beam_search.FINISHED, beam_search.PRUNED)}
st.markdown(t("step_head", s=step, B=beam_steps.running_beams(rec, step - 1), K=len(events),
              kept=n_fate[beam_search.KEPT], fin=n_fate[beam_search.FINISHED], pruned=n_fate[beam_search.PRUNED],
              total=beam_steps.finished_by(rec, step - 1)))
fate_word = {beam_search.KEPT: t("fate_kept"), beam_search.PRUNED: t("fate_pruned")}
lines = []
for e in events:
    prefix = m.tokenizer.decode(list(e.prefix)).replace("\n", "⏎")
    word = fate_word.get(e.fate) or (t("fate_finished") if e.ends else t("fate_cut"))
    lines.append(t("step_event", r=e.rank, prefix=beam_steps.clip_words(prefix, 40),
                   tok=token_texts(m.tokenizer, [e.token])[0], lp=e.logprob, cum=e.cum_logprob, fate=word))
st.markdown("\n".join(f"- {x}" for x in lines))
if step == rec.n_steps and sel.stop_step < rec.n_steps - 1:
    st.caption(t("step_after_stop", s=sel.stop_step + 1, a=alpha))

# ---- finished hypotheses, re-ranked at alpha -----------------------------------------------
pv = beam_rerank.probability_view(rec, alpha)
order = sorted(range(len(hyps)), key=lambda i: -sel.scores[i])
cols = {k: t(f"col_{k}") for k in ("text", "L", "S", "score", "end", "status")}
if q1:
    st.subheader(t("table_title", a=alpha))
    rows = []
    for i in order:                                   # best score first; "#i" in the text names the hypothesis
        h = hyps[i]
        status = (t("status_winner") if i == sel.best else t("status_pool") if i in sel.pool
                  else t("status_late") if h.step > sel.stop_step else t("status_out"))
        tail = beam_steps.clip_words(shown[i], 32)                           # the hypotheses differ at the end
        rows.append({cols["text"]: f"#{i + 1} “{tail}”", cols["L"]: h.length,
                     cols["S"]: t.num(h.sum_logprob, ".4f"), cols["score"]: t.num(sel.scores[i], ".4f"),
                     cols["status"]: status,
                     cols["end"]: t("end_cut" if h.by_length else "end_token", s=h.step + 1)})
    st.dataframe(rows, hide_index=True, width="stretch",
                 column_config={cols["text"]: st.column_config.TextColumn(width="medium")})   # fits 1280 px
    st.caption(t("table_caption", L=t("length_rule")))

# ---- score against alpha ---------------------------------------------------------------------
show = beam_rerank.lines_to_draw(sweep)
if q2:
    fig = plots.score_vs_alpha_figure(SWEEP, sweep.scores, short, sweep.winners, show, alpha, sweep.flips,
                                      {k: t(f"sweep_{k}") for k in ("title", "x", "y", "flip", "now")}, fmt=t.num)
    drawn = plots.drawn_lines(fig)                    # the sentence counts what the figure draws
    page.figure(fig, "score_vs_alpha", {"alpha": SWEEP.tolist(), "winner": [short[int(w)] for w in sweep.winners],
                                        **{short[h]: sweep.scores[h].tolist() for h in show}},
                caption=t("sweep_caption") + " " + (t("sweep_drawn_all", n=drawn) if drawn == len(hyps)
                                                    else t("sweep_drawn_some", k=drawn, n=len(hyps))))

# ---- not a probability (its tallest e^(Σ log p) bar is the α = 0 winner: after the answer) ----
if q1:
    st.subheader(t("prob_title"))
    fig = plots.probability_figure([short[i] for i in order], pv.seq_prob[order], pv.exp_score[order],
                                   {"title": t("prob_fig_title", a=alpha), "p": t("prob_p"), "q": t("prob_q", a=alpha),
                                    "y": t("prob_y")}, fmt=t.num)
    page.figure(fig, "probability_vs_score", {"hypothesis": [short[i] for i in order],
                                              "sequence_prob": pv.seq_prob[order].tolist(),
                                              "exp_score": pv.exp_score[order].tolist()})
    st.markdown(t("prob_line", n=len(hyps), P=pv.total_prob, Q=pv.total_exp_score, a=alpha))

# ---- greedy and sampling on the same prompt -------------------------------------------------
st.subheader(t("compare_title"))
with st.spinner(t("running_compare", n=n_new)):
    (greedy, sampled), = compare.results()
cmp_rows = []
for name, toks, S in ((t("cmp_beam", b=num_beams, a=alpha), hyps[sel.best].tokens, hyps[sel.best].sum_logprob),
                      (t("cmp_greedy"), tuple(s.token for s in greedy), beam_rerank.steps_logprob(greedy)),
                      (t("cmp_sampled", T=T, seed=seed), tuple(s.token for s in sampled),
                       beam_rerank.steps_logprob(sampled))):
    cmp_rows.append({t("col_method"): name, cols["text"]: m.tokenizer.decode(list(toks)).replace("\n", "⏎"),
                     cols["L"]: len(toks), cols["S"]: t.num(S, ".4f"),
                     cols["score"]: t.num(beam_search.normalized_score(S, len(toks), alpha), ".4f")})
st.dataframe(cmp_rows, hide_index=True, width="stretch")
st.caption(t("compare_caption"))

page.notice()

# ---- live checks (lib/concepts/beam_search/checks.py) -------------------------------------
with st.spinner(t("running_generate", b=num_beams, a=alpha)):
    parity, theirs, rescored = later.results()
page.checks(checks.page_checks(rec, sel, theirs, parity, sweep, rescored, t))
page.try_this()
page.code(beam_search.beam_search, beam_search.select, beam_search.FinishedPool, beam_rerank.crossing_alpha,
          generate_beam_search)
page.sources()
page.finish()
