"""Sliding-window KV cache (CONCEPTS.md §12): widgets and layout only; numbers come from lib/."""
import streamlit as st

from lib.ui import runtime
from lib.core.cache import policy as cp
from lib.concepts.sliding_window import fact_distance
from lib.reference import policy_checks
from lib.concepts.sliding_window import checks, ring_check
from lib.concepts.model_check import foundation
from lib.model.long_text import long_text
from lib.concepts.sliding_window import figures as plots
from lib.ui.page import ConceptPage

WINDOWS = (16, 32, 64, 128, 256, 512)
LENGTHS = tuple(2 ** k for k in range(6, 16))          # 64 .. 32,768 tokens
FACT = "Remember this: the secret password is tulip."
NEUTRAL = "Remember this: the weather today is mild."
QUESTION = "\nQuestion: What is the secret password?\nAnswer: The secret password is"
ANSWER = " tulip"
PARITY_TOKENS, PARITY_WINDOW = 24, 8                    # eviction-vs-mask check: small and quick
RING_CHUNK = 64                                          # the ring check feeds the long text 64 tokens at a time

page = ConceptPage("sliding-window")
t = page.t
m = page.model()
spec = m.spec
local = [w for w in spec.windows if w is not None]
w_local = max(local) if local else None
layer_names = [t("layer_global", l=l) if spec.windows[l] is None else t("layer_local", l=l)
               for l in range(spec.n_layers)]

page.section("controls")
c1, c2 = st.columns(2)
step_t = page.state.number_slider("t", t("t_label"), 16, 4096, 700, help=t("t_help"), container=c1)
W = page.state.select("W", t("w_label"), WINDOWS, 64, help=t("w_help"), container=c2)

own_name = t("layout_own", w_local=w_local or "∞")
all_name = t("layout_all", w=W)
hybrid_name = t("layout_hybrid", w=W)

# ---- 1. who can read what at step t (pure geometry of the policies) ------------------------
maps = {own_name: cp.visibility_map(cp.dense(), spec, step_t).numpy(),
        all_name: cp.visibility_map(cp.window(W), spec, step_t).numpy()}
fig = plots.visibility_figure(maps, layer_names, {"title": t("vis_title", t=step_t), "x": t("vis_x"),
                                                  "y": t("vis_y"), "hover": t("vis_hover")})
page.figure(fig, "visibility", {"layer": layer_names,
                                **{f"{k}: readable positions": v.sum(1).tolist() for k, v in maps.items()}})
total = spec.n_layers * (step_t + 1)
own_n, all_n = int(maps[own_name].sum()), int(maps[all_name].sum())
st.caption(t("vis_caption", t=step_t, own=own_n, total=total, own_pct=own_n / total, w=W, all=all_n,
             all_pct=all_n / total))

# ---- 2. memory ----------------------------------------------------------------------------
bpe = m.engine.dtype.itemsize                  # the K/V cache's bytes per value
series = {t("layout_dense"): cp.dense()}
if w_local:
    series[own_name] = cp.window(w_local, "local")
    series[t("layout_all", w=w_local)] = cp.window(w_local)
series[all_name] = cp.window(W)
data = {name: [cp.kv_bytes(p, spec, n, bpe) for n in LENGTHS] for name, p in series.items()}
per_token = 2 * spec.n_kv_heads * spec.head_dim * bpe
fig = plots.bytes_figure(LENGTHS, data, {"title": t("bytes_title", dtype=str(m.engine.dtype).replace("torch.", ""),
                                                                   per_token=per_token),
                                         "x": t("bytes_x"), "y": t("bytes_y")}, fmt=t.num)
page.figure(fig, "kv_bytes", {"tokens": list(LENGTHS), **{f"{k} (bytes)": v for k, v in data.items()}})
mib = {k: v[-1] / 2**20 for k, v in data.items()}
if w_local:
    st.caption(t("bytes_caption", n=LENGTHS[-1], dense=mib[t("layout_dense")], own=mib[own_name], w_local=w_local,
                 all_local=mib[t("layout_all", w=w_local)], w=W, all_w=mib[all_name]))

# ---- 3. a fact at distance d --------------------------------------------------------------
st.subheader(t("fact_section"))
probe = fact_distance.build_probe(m.tokenizer, FACT, long_text()[:30000], QUESTION, ANSWER)
q_len = len(probe.question_ids)
d_near = q_len + 4
distances = tuple(sorted({d for d in (d_near, W // 2, W - 8, W + 8, 2 * W, 3 * W) if d >= d_near}))
st.markdown(t("fact_intro", fact=FACT, source="GPL-3", question=QUESTION.strip().replace("\n", " "),
              answer=ANSWER.strip()))
layouts = {own_name: cp.dense(), hybrid_name: cp.window(W, "local"), all_name: cp.window(W)}
far = max(distances)
fact_q = t("predict_fact_q", d=far, w=W, answer=ANSWER.strip())     # asked below the probe; stated while it runs
ahead = st.info(page.c("predict_ahead", q=fact_q), icon="🤔")
bar = st.progress(0.0, text=t("fact_running", n=len(distances)))
results = {}
for i, (name, policy) in enumerate(layouts.items()):
    if name == hybrid_name and w_local and W >= w_local:
        # a window on the local layers no narrower than their own masks nothing the model does not
        # mask itself: the model's own numbers, bit for bit (tests/unit/test_cache_policies.py)
        results[name] = results[own_name]
        continue

    def progress(done, n, i=i):
        bar.progress((i + done / n) / len(layouts), text=t("fact_running", n=len(distances)))
    results[name] = runtime.cached(fact_distance.answer_prob)(m.engine, probe, distances, policy, progress)
neutral = tuple(m.tokenizer(NEUTRAL, add_special_tokens=True)["input_ids"])
p_ctrl, r_ctrl = runtime.cached(fact_distance.answer_prob_without_fact)(m.engine, probe, neutral, d_near)
bar.empty()
ahead.empty()
marks = {t("fact_mark_w", w=W): W}
if w_local and w_local <= max(distances):
    marks[t("fact_mark_local", w_local=w_local)] = w_local
hyb_rank = int(results[hybrid_name].rank[-1])
ranks = {k: int(r.rank[-1]) + 1 for k, r in results.items()}
if page.predict("fact", fact_q, ("top", "not_top"),
                "top" if hyb_rank == 0 else "not_top",
                t("predict_fact_why", d=far, own=ranks[own_name], hyb=ranks[hybrid_name], all=ranks[all_name],
                  p_own=float(results[own_name].prob[-1]), p_hyb=float(results[hybrid_name].prob[-1]),
                  p_all=float(results[all_name].prob[-1]), p0=p_ctrl),
                format_func=lambda o: t(f"predict_fact_{o}")):
    fig = plots.fact_figure(distances, {k: r.prob.tolist() for k, r in results.items()}, p_ctrl, marks,
                            {"title": t("fact_title", answer=ANSWER.strip()), "x": t("fact_x"), "y": t("fact_y"),
                             "control": t("fact_control")}, fmt=t.num)
    table = {t("fact_table_distance"): list(distances)}
    table.update({t("fact_table_p", name=k): r.prob.tolist() for k, r in results.items()})
    table.update({t("fact_table_rank", name=k): (r.rank + 1).tolist() for k, r in results.items()})
    page.figure(fig, "fact_distance", table)
    short = {own_name: t("short_own"), hybrid_name: t("short_hybrid"), all_name: t("short_all")}   # fits 1280 px
    shown = {t("fact_table_distance"): [t.num(d) for d in distances]}
    shown.update({t("col_p_rank", name=short[k]): [f"{t.num(p, '.3f')} (#{t.num(int(x) + 1, ',')})"
                                                 for p, x in zip(r.prob, r.rank)] for k, r in results.items()})
    st.dataframe(shown, hide_index=True, width="stretch")
    st.caption(t("fact_caption", p=p_ctrl, rank=r_ctrl + 1))
    fit = fact_distance.agreement(probe, [r.prob for r in results.values()], distances, W)
    if fit.last_fit is not None:
        st.caption(t("fact_fit", d=fit.last_fit, n=fit.fit_tokens, w=W, diff=fit.fit_spread))
    if fit.first_out is not None:
        ps = fit.out_probs
        st.caption(t("fact_out_same" if max(ps) - min(ps) <= checks.SAME_TOL else "fact_out_differ",
                     d=fit.first_out, n=len(probe.fact_ids) + fit.first_out, w=W, p0=ps[0], p1=ps[1], p2=ps[2]))
else:
    fit = fact_distance.agreement(probe, [r.prob for r in results.values()], distances, W)

page.notice()

# ---- live checks --------------------------------------------------------------------------
zero_ids = probe.fact_ids + probe.filler_ids[:fact_distance.filler_for(probe, W + 8)] + probe.question_ids
zero = runtime.cached(policy_checks.evicted_attention)(m.engine, zero_ids, cp.window(W))
par_policy = cp.window(PARITY_WINDOW, "local" if w_local else "all")
par = runtime.cached(policy_checks.eviction_matches_mask)(m.engine, zero_ids[:PARITY_TOKENS], par_policy)
if w_local:
    ring_ids = (probe.fact_ids + probe.filler_ids)[:w_local + RING_CHUNK]
    with st.spinner(t("ring_running", n=len(ring_ids), slots=w_local + RING_CHUNK - 1)):
        ring = runtime.cached(ring_check.ring_matches_dense)(m.engine, ring_ids, RING_CHUNK)
    layer_ref = None
    if foundation.available(m):      # the first local layer on those tokens against transformers'
        first_local = foundation.global_and_local(m.config)[1]
        layer_ref = runtime.cached(foundation.layer_checks)(m, ring_ids, (first_local,))[0]
    page.checks(checks.page_checks(zero, par, ring, fit, W, PARITY_WINDOW, PARITY_TOKENS, spec, bpe, t, layer_ref)
                + page.spec_checks(m, "window"))
else:
    page.checks(checks.page_checks(zero, par, None, fit, W, PARITY_WINDOW, PARITY_TOKENS, spec, bpe, t)
                + page.spec_checks(m, "window"))
page.try_this()
page.code(cp.visible, cp.kv_bytes, fact_distance.answer_prob, ring_check.ring_matches_dense)
page.sources()
page.finish()
