"""Top-k and top-p (CONCEPTS.md §2): widgets and layout only; the numbers come from lib/."""
import numpy as np
import streamlit as st

from lib.ui import runtime
from lib.decoding import generate
from lib.concepts.top_k_top_p import checks, top_k_top_p as tkp
from lib.concepts.top_k_top_p import figures as plots
from lib.decoding.sampling import InvalidSamplingParameter, SamplingConfig, top_p_mask
from lib.decoding.step_record import generated_ids
from lib.model.tokens import token_texts
from lib.ui.page import ConceptPage
from lib.ui.token_view import steps_table, tokens_html

ORDER_TEMPS = tuple(np.geomspace(0.25, 4.0, 13).round(3).tolist())  # T axis of the stage-order figure

page = ConceptPage("top-k-top-p")
t = page.t
m = page.model()

left, right = page.controls()
prompt = page.prompt(container=left)
p = page.state.number_slider("p", t("p_label"), 0.05, 1.0, 0.9, step=0.01, help=t("p_help"), container=right)
k = page.state.number_slider("k", t("k_label"), 1, 200, 40, help=t("k_help"), container=right)
T = page.state.number_slider("T", t("t_label"), 0.1, 3.0, 1.0, step=0.05, help=t("t_help"), container=right)
c1, c2 = right.columns(2)
seed = page.state.integer("seed", t("seed_label"), 0, 2**31 - 1, 0, container=c1)
n_new = page.state.number_slider("n", t("n_label"), 4, 32, 16, container=c2)

try:
    SamplingConfig(T, top_k=k, top_p=p)
except InvalidSamplingParameter as e:
    st.error(t("bad_setting", msg=str(e)))
    page.finish()
    st.stop()

# ---- one distribution: where each filter cuts ---------------------------------------------
logits = runtime.cached(generate.next_token_logits)(m.engine, prompt.ids)          # (V,)
# the continuation (n_new forward steps) starts now and is drawn in its place below once it is
# done: the figures of this one distribution do not wait for it (issue 29)
later = runtime.start(lambda: runtime.cached(tkp.nucleus_trace)(m.engine, prompt.ids, T, p, seed, n_new, m.spec.eos_ids))
curve = tkp.cut_curve(logits, T, k, p)          # milliseconds, no model: not queued for a compute slot
curve_tokens = token_texts(m.tokenizer, curve.ids)
tail = m.tokenizer.decode(list(prompt.ids[-4:]), skip_special_tokens=True)
L = {k_: t(f"cut_{k_}") for k_ in ("prob", "cum", "p_cut", "k_cut", "x")}
L["title"] = t("cut_title", tail=tail, p=p, n=curve.nucleus, k=curve.k_kept, mass=curve.k_mass)
BUCKETS = ((1, 1), (2, 5), (6, 50), (51, None))
bucket = next(b for b in BUCKETS if b[0] <= curve.nucleus and (b[1] is None or curve.nucleus <= b[1]))
q1 = page.predict("nucleus", t("q_nucleus", p=p, tail=tail), BUCKETS, bucket,
                  t("q_nucleus_why", n=curve.nucleus, pm=curve.nucleus_mass, p=p, top=curve_tokens[0],
                    p1=float(curve.probs[0])),
                  format_func=lambda b: t("bucket_one") if b[1] == 1 else
                  t("bucket_range", lo=b[0], hi=b[1]) if b[1] else t("bucket_more", lo=b[0] - 1))
if q1:
    page.figure(plots.cut_curve_figure(curve, curve_tokens, p, curve.k_kept, L, fmt=t.num), "cumulative_curve",
                {"rank": list(range(1, len(curve.ids) + 1)), "token": curve_tokens, "token_id": curve.ids.tolist(),
                 "prob": curve.probs.tolist(), "cumulative": curve.cumulative.tolist()})
    st.caption(t("cut_caption", V=curve.vocab, n=curve.nucleus, pm=curve.nucleus_mass, k=curve.k_kept,
                 km=curve.k_mass))

# ---- a real continuation: nucleus size per step (its place; drawn below, once computed) -------
gen_box = st.container()
gen_box.subheader(t("gen_title"))
gen_bar = gen_box.progress(0.0, text=t("gen_running", n=n_new))

# ---- top-k vs top-p on the same distribution; stage order -----------------------------------
sets = tkp.kept_sets(logits, T, k, p)
set_tokens = token_texts(m.tokenizer, sets.ids)
L = {k_: t(f"sets_{k_}") for k_ in ("both", "only_k", "only_p", "neither", "y")}
L["x"] = t("sets_x", n=len(sets.ids))          # the title counts the vocabulary; the bars are the first n
L["title"] = t("sets_title", both=sets.both, ok=sets.only_k, op=sets.only_p)
if q1:       # both + only top-p = the nucleus: the answer to "nucleus"
    page.figure(plots.kept_sets_figure(sets, set_tokens, L, fmt=t.num), "kept_sets",
                {"rank": list(range(1, len(sets.ids) + 1)), "token": set_tokens, "prob": sets.probs.tolist(),
                 "top_k_keeps": sets.in_k.tolist(), "top_p_keeps": sets.in_p.tolist()})

effect = runtime.cached(tkp.order_effect)(logits, p, ORDER_TEMPS)                  # fixed T axis
at_T = runtime.cached(tkp.order_effect)(logits, p, (T,))                           # your T
L = {k_: t(f"order_{k_}") for k_ in ("t_first", "t_after", "x", "y")}
L["title"] = t("order_title", p=p)
if q1:       # the count temperature → top-p keeps at your T is the nucleus
    page.figure(plots.order_figure(effect, T, L, fmt=t.num), "stage_order",
                {"T": effect.temperatures.tolist(), "kept_T_before_top_p": effect.t_first.tolist(),
                 "kept_T_after_top_p": effect.t_after.tolist()})
    st.caption(t("order_caption", T=T, a=int(at_T.t_first[0]), b=int(at_T.t_after[0])))

# ---- the continuation, into its place ---------------------------------------------------------
[trace] = later.results()
gen_bar.empty()
with gen_box:
    k_mass = tkp.top_k_mass(trace, k)
    labels = [f"{i + 1}·{s}" for i, s in enumerate(token_texts(m.tokenizer, generated_ids(trace.steps)))]
    L = {k_: t(f"steps_{k_}") for k_ in ("nucleus", "tokens", "k_line", "p_mass", "k_mass", "y_count", "y_mass", "x")}
    L["title"] = t("steps_title", p=p, lo=int(trace.nucleus.min()), hi=int(trace.nucleus.max()))
    spread = int(trace.nucleus.max()) / max(1, int(trace.nucleus.min()))
    q2 = page.predict("spread", t("q_spread", p=p, n=len(trace.steps)), ("steady", "varies"),
                      "varies" if spread >= 10 else "steady",
                      t("q_spread_why", lo=int(trace.nucleus.min()), hi=int(trace.nucleus.max()), r=spread, p=p),
                      format_func=lambda k: t(f"q_spread_{k}"))
    if q1 and q2:        # its first bar is the nucleus ("nucleus"), all of them the spread ("spread")
        page.figure(plots.nucleus_steps_figure(labels, trace.nucleus.tolist(), trace.p_mass, k_mass, p, k, L, fmt=t.num),
                    "nucleus_per_step", {"step_token": labels, "top_p_kept": trace.nucleus.tolist(),
                                         "top_p_mass": trace.p_mass.tolist(), "top_k_mass": k_mass.tolist()})
    view_labels = {key: t(f"lbl_{key}") for key in ("model", "final", "rank", "kept", "step", "token",
                                                     "stage_temperature", "stage_top_p")}
    if q1 and q2:        # the tokens' hover and the table's "kept" columns count the nucleus at every step
        st.markdown(f"**{t('gen_view', T=T, p=p, seed=seed)}**")
        st.html(tokens_html(m.tokenizer, prompt.text[-200:], trace.steps, view_labels, fmt=t.num))
        st.caption(t("gen_caption"))
        with st.expander(t("gen_table")):
            st.dataframe(steps_table(m.tokenizer, trace.steps, view_labels, fmt=t.num), hide_index=True)

page.notice()

# ---- live checks (lib/concepts/top_k_top_p/checks.py) ------------------------------------
inputs = runtime.cached(checks.check_inputs)(logits, T, k, p)
page.checks(checks.page_checks(inputs, trace, effect, t))
if q2:
    st.caption(t("spread_line", lo=int(trace.nucleus.min()), hi=int(trace.nucleus.max()), r=spread, p=p))
page.try_this()
page.code(top_p_mask, tkp.cut_curve, tkp.nucleus_trace, tkp.order_effect)
page.sources()
page.finish()
