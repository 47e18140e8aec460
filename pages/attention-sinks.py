"""Attention sinks (CONCEPTS.md §13): widgets and layout only; numbers come from lib/."""
import numpy as np
import streamlit as st

from lib.ui import predict_reveal, runtime
from lib.concepts.attention_sinks import attention_mass
from lib.core.cache import policy as cp
from lib.reference import policy_checks
from lib.decoding import policy_generation
from lib.decoding import streaming_eval
from lib.concepts.attention_sinks import checks
from lib.model.long_text import long_text
from lib.concepts.attention_sinks import figures as plots
from lib.ui.page import ConceptPage
from lib.ui.token_view import tokens_html

WINDOWS = (16, 32, 64, 128, 256, 512, 1024)
STRIDES = (1, 2, 4, 8, 16, 32)
SINKS = (1, 2, 4)
DEFAULT_N = 4096         # the spec asks for >= 4,000 tokens of human-written text (computed once, cached)
FIRST = 4                # "first positions" for the attention-mass figures
MASS_TOKENS, MASS_FROM = 160, 32
PARITY_TOKENS, PARITY_SINKS, PARITY_RECENT = 28, 2, 6
POLICY_KEYS = ("dense", "window", "s1", "s2", "s4", "recompute")
DEFAULT_POLICIES = ("dense", "window", "s4")   # the rest on request: each one runs the whole text
PAPER = {"window": 5158.0, "sinks": 5.40}   # Xiao et al. 2023, Llama-2-13B, PG19, cache 1,024

page = ConceptPage("attention-sinks")
t = page.t
m = page.model()
spec = m.spec
layer_names = [t("layer_global", l=l) if spec.windows[l] is None else t("layer_local", l=l) for l in range(spec.n_layers)]

# ---- controls -----------------------------------------------------------------------------
page.section("controls")
c1, c2, c3 = st.columns(3)
src = page.state.select("src", t("text_label"), ("gpl", "own"), "gpl", radio=True, container=c1,
                        format_func=lambda s: t("text_gpl") if s == "gpl" else t("text_own"))
W = page.state.select("W", t("w_label"), WINDOWS, 32, format_func=lambda w: t.num(w, ","), help=t("w_help"),
                     container=c2)
pos_mode = page.state.select("pos", t("pos_label"), ("cache", "text"), "cache", radio=True, help=t("pos_help"),
                             format_func=lambda s: t("pos_cache") if s == "cache" else t("pos_text"), container=c3)
N = page.state.number_slider("N", t("n_label"), 128, 4096, DEFAULT_N, step=64, help=t("n_help"), container=c1)
stride = page.state.select("k", t("stride_label"), STRIDES, 16, help=t("stride_help"), container=c2)
n_gen = page.state.number_slider("gen", t("ngen_label"), 4, 48, 8, container=c3)
chosen = page.state.multiselect("P", t("policies_label"), POLICY_KEYS, DEFAULT_POLICIES, help=t("policies_help"),
                                format_func=lambda k: t(f"key_{k}")) or list(DEFAULT_POLICIES)
own = page.state.text("text", t("own_label"), "", max_chars=20000, height=120) if src == "own" else ""

need = W + 32
text, source_name = long_text(), "GNU GPL v3"
if src == "own":
    n_own = len(m.tokenizer(own)["input_ids"]) if own.strip() else 0
    if n_own >= need:
        text, source_name = own, t("text_own").lower()
    else:
        st.warning(t("own_short", n=n_own, need=need))
whole = tuple(m.tokenizer(text, add_special_tokens=True)["input_ids"][:DEFAULT_N])   # the most the slider asks
ids = whole[:N]
N = len(ids)
reassign = pos_mode == "cache"


def policy_name(p: cp.CachePolicy) -> str:
    if p.kind == "dense":
        return t("policy_dense")
    if p.kind == "window":
        return t("policy_window", w=p.window)
    if p.kind == "recompute":
        return t("policy_recompute", w=p.window)
    return t("policy_sink_one", r=p.window) if p.sinks == 1 else t("policy_sinks_many", s=p.sinks, r=p.window)


ALL = dict(zip(POLICY_KEYS, [cp.dense(), cp.window(W)] + [cp.sinks(s, W - s, reassign) for s in SINKS]
               + [cp.recompute(W)]))
policies = [ALL[k] for k in POLICY_KEYS if k in chosen]

# ---- 1. attention mass on the first positions ---------------------------------------------
st.subheader(t("mass_section"))
mass_ids = ids[:MASS_TOKENS]
with st.spinner(t("mass_running", n=len(mass_ids))):
    mass = runtime.cached(attention_mass.sink_mass)(m.engine, mass_ids, FIRST, MASS_FROM)
per_head = mass.per_head                                                      # (L, H)
fig = plots.mass_heatmap(per_head, layer_names, {"title": t("mass_title", k=FIRST, q0=MASS_FROM, q1=len(mass_ids) - 1),
                                                 "head": t("mass_head"), "share": t("mass_share")})
page.figure(fig, "attention_mass", {"layer": layer_names,
                                    **{f"head {h}": per_head[:, h].tolist() for h in range(per_head.shape[1])},
                                    "even share": mass.uniform.tolist()})
l_max, h_max = np.unravel_index(per_head.argmax(), per_head.shape)
lo, hi = float(mass.uniform.min()), float(mass.uniform.max())
st.caption(t("mass_caption_one" if round(lo, 3) == round(hi, 3) else "mass_caption", n=mass.n_queries, k=FIRST,
             lo=lo, hi=hi, mx=float(per_head.max()), where=f"{layer_names[l_max]}, {t('mass_head')} {h_max}"))
fig = plots.position_figure(mass.mass, mass.uniform, layer_names,
                            {"title": t("pos_title"), "pos": t("pos_pos"), "uniform": t("pos_uniform"),
                             "share": t("mass_share")})
page.figure(fig, "attention_by_position", {"layer": layer_names,
                                           **{f"position {j}": mass.mass.mean(1)[:, j].tolist() for j in range(FIRST)}})

# ---- 2. streaming evaluation: its place kept here, computed last (below) -------------------
# Everything that does not depend on it (the generations, the notes, the parity check) is drawn
# first; the evaluation runs over the whole text (>= 1,000 tokens) with a progress bar.
st.subheader(t("eval_section"))
eval_box = st.container()
sinks_q = t("predict_sinks_q", w=W, r=W - 4, n=N)      # asked below the scores; stated while they run
asks = "window" in chosen and "s4" in chosen           # it compares these two policies
ahead = eval_box.info(page.c("predict_ahead", q=sinks_q), icon="🤔") if asks else None
bar = eval_box.progress(0.0, text=t("eval_waiting", n=len(policies), N=N))
st.subheader(t("paper_section"))
paper_box = st.container()

# ---- 3. generation under each policy ------------------------------------------------------
st.subheader(t("gen_section"))
gen_box = st.container()     # window only's text collapses where the sinks' does not: with the answer
P = min(N, W + 32)
prompt_ids = ids[:P]
labels = {"model": t("lbl_model"), "final": t("lbl_final"), "rank": t("lbl_rank"),
          "stage_temperature": t("lbl_stage_temperature")}
eos = spec.eos_ids
with st.spinner(t("gen_running", n=n_gen, k=len(policies))):
    gens = {policy_name(p): runtime.cached(policy_generation.greedy_under)(m.engine, prompt_ids, p, n_gen, eos)
            for p in policies}
tail = m.tokenizer.decode(list(prompt_ids[-40:]), skip_special_tokens=True)


def draw_generations() -> None:
    st.caption(t("gen_caption", p=P))
    st.markdown(t("gen_prompt", tail=tail.replace("\n", " ")))
    cols = st.columns(2)
    for i, (k, g) in enumerate(gens.items()):
        box = cols[i % 2]
        box.markdown(f"**{k}**")
        box.html(tokens_html(m.tokenizer, "", g.steps, labels, fmt=t.num))


early = predict_reveal.answered_before(page, "sinks")     # answered already: drawn now, before the evaluation
if early:
    with gen_box:
        draw_generations()

page.notice()

# ---- live checks --------------------------------------------------------------------------
par_policy = cp.sinks(PARITY_SINKS, PARITY_RECENT, reassign)
par = runtime.cached(policy_checks.masked_matches_evicting)(m.engine, ids[:PARITY_TOKENS], par_policy)
checks_box = st.container()
page.try_this()
page.code(cp.kept, streaming_eval.nll_masked, streaming_eval.nll_evicting, streaming_eval.nll_recompute,
          attention_mass.sink_mass)
page.sources()

# ---- the streaming evaluation, last: every policy over the whole text ------------------------
def scored(p: cp.CachePolicy, progress) -> tuple[streaming_eval.StreamResult, bool]:
    """p's evaluation of the first N tokens, and whether it is a slice of the whole text's
    evaluation this server already has (every score reads only the tokens before it, so the
    first N tokens' scores are the same). Only recompute reads the stride."""
    evaluate, k = runtime.cached(streaming_eval.evaluate), stride if p.kind == "recompute" else 1
    done = evaluate.peek(m.engine, whole, p, 128, k) if N < len(whole) else None
    if done is not None:
        return done.upto(N), True
    return evaluate(m.engine, ids, p, 128, k, _progress=progress), False


results, sliced = {}, False
for i, p in enumerate(policies):
    name = policy_name(p)

    def progress(done, total, i=i, name=name):
        bar.progress((i + done / max(total, 1)) / len(policies),
                     text=t("eval_running", i=i + 1, n=len(policies), name=name, done=done, total=total))
    results[name], cut = scored(p, progress)
    sliced |= cut
bar.empty()
if ahead is not None:
    ahead.empty()
with eval_box:
    st.caption(t("eval_sliced", n=N, total=len(whole), source=source_name, w=W) if sliced
               else t("eval_caption", n=N, source=source_name, w=W))

    rec = results.get(policy_name(ALL["recompute"]))
    shared = rec.positions[rec.positions >= W] if rec is not None else None       # positions every policy scored
    full = {k: r for k, r in results.items() if len(r.nll) == N - 1}              # policies scored at every t
    rw, rs = results.get(policy_name(ALL["window"])), results.get(policy_name(ALL["s4"]))
    show = True
    if rw is not None and rs is not None:
        pw_, ps_ = rw.perplexity(rw.positions >= W), rs.perplexity(rs.positions >= W)
        show = page.predict("sinks", sinks_q, ("window", "sinks", "same"),
                            "sinks" if pw_ > 1.1 * ps_ else "window" if ps_ > 1.1 * pw_ else "same",
                            t("predict_sinks_why", pw=pw_, ps=ps_, r=W - 4), format_func=lambda o: t(f"predict_sinks_{o}"))
    if show:
        fig = plots.curves_figure({k: (r.positions, streaming_eval.running_perplexity(r.nll)) for k, r in results.items()},
                                  W, {"title": t("ppl_title"), "x": t("curve_x"), "y": t("ppl_y"), "window": t("curve_window")},
                                  fmt=t.num)
        page.figure(fig, "running_perplexity", {"position": list(range(N - 1)),
                                                **{k: streaming_eval.running_perplexity(r.nll).tolist() for k, r in full.items()}})
        ROLL = 32   # each policy's loss along the text: the lower one answers "sinks"
        fig = plots.curves_figure({k: (r.positions, streaming_eval.rolling_mean(r.nll, ROLL if k in full else max(1, ROLL // stride)))
                                   for k, r in results.items()}, W,
                                  {"title": t("nll_title", k=ROLL), "x": t("curve_x"), "y": t("nll_y"),
                                   "window": t("curve_window")}, log_y=False)
        page.figure(fig, "token_nll", {"position": list(range(N - 1)), **{k: r.nll.tolist() for k, r in full.items()}})

    table = {t("table_policy"): [], t("table_ppl"): [], t("table_ppl_shared"): [], t("table_ppl_all"): [],
             t("table_entries"): [], t("table_seconds"): []}
    if shared is None:
        del table[t("table_ppl_shared")]
    ppl_after = {}
    for p, (k, r) in zip(policies, results.items()):
        after = r.positions >= W
        ppl_after[k] = r.perplexity(after)
        row = [k, ppl_after[k]] + ([r.perplexity(np.isin(r.positions, shared))] if shared is not None else [])
        cells = [row[0]] + [t.num(v, ",.2f") for v in row[1:]] + [t.num(r.perplexity(), ",.2f"),
                                                                  t.num(max(cp.entries_per_layer(p, spec, N)), ",d"),
                                                                  t.num(r.seconds, ",.1f")]
        for col, v in zip(table, cells):
            table[col].append(v)
    if show:
        st.dataframe(table, hide_index=True)

with paper_box:
    if show:          # our window and sinks perplexities, and the verdict: the answer
        ours = {key: ppl_after.get(policy_name(ALL[key])) for key in ("window", "s4", "dense")}
        fmt = lambda v: t.num(v, ",.2f") if v is not None else "—"  # noqa: E731
        st.dataframe({t("paper_model"): [t("paper_row"), t("ours_row", source=source_name, n=N, w=W)],
                      t("paper_window"): [t.num(PAPER["window"], ",.0f"), fmt(ours["window"])],
                      t("paper_sinks"): [t.num(PAPER["sinks"], ",.2f"), fmt(ours["s4"])]}, hide_index=True)
        st.caption(t("paper_caption", w=W))
        pw, ps, pd = ours["window"], ours["s4"], ours["dense"]
        if None not in (pw, ps, pd):
            ratio = pw / ps
            verdict = (t("verdict_helps", x=ratio) if ratio > 1.1 else t("verdict_hurts", x=ps / pw) if ratio < 1 / 1.1
                       else t("verdict_small"))
            st.info(t("measured_summary", pw=pw, r=W - 4, ps=ps, pd=pd, verdict=verdict))
        else:
            st.caption(t("paper_need"))
    else:
        st.caption(page.c("predict_hidden"))

if not early:
    with gen_box:
        if show:
            draw_generations()
        else:
            st.caption(page.c("predict_hidden"))

with checks_box:
    page.checks(checks.page_checks(par, par_policy, mass, rec, results.get(policy_name(ALL["dense"])), W, t,
                                   policy_name))
page.finish()
