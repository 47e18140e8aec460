"""Top-k and top-p (CONCEPTS.md §2): widgets and layout only; the numbers come from lib/."""
import numpy as np
import streamlit as st

from lib.decoding import generate
from lib.ui import runtime
from lib.reference import sampling_reference
from lib.concepts.top_k_top_p import top_k_top_p as tkp
from lib.concepts.check_result import CheckResult
from lib.concepts.top_k_top_p import figures as plots
from lib.decoding.sampling import InvalidSamplingParameter, SamplingConfig, apply_temperature, top_p_mask
from lib.decoding.step_record import generated_ids
from lib.model.tokens import token_texts
from lib.ui.page import ConceptPage
from lib.ui.token_view import steps_table, tokens_html

ORDER_TEMPS = tuple(np.geomspace(0.25, 4.0, 13).round(3).tolist())  # T axis of the stage-order figure
CHECK_KS, CHECK_PS = (1, 5, 50, 1000), (0.5, 0.8, 0.9, 0.95, 0.99)

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
curve = runtime.cached(tkp.cut_curve)(logits, T, k, p)
curve_tokens = token_texts(m.tokenizer, curve.ids)
tail = m.tokenizer.decode(list(prompt.ids[-4:]), skip_special_tokens=True)
L = {k_: t(f"cut_{k_}") for k_ in ("prob", "cum", "p_cut", "k_cut", "x")}
L["title"] = t("cut_title", tail=tail, p=p, n=curve.nucleus, k=curve.k_kept, mass=curve.k_mass)
page.figure(plots.cut_curve_figure(curve, curve_tokens, p, curve.k_kept, L), "cumulative_curve",
            {"rank": list(range(1, len(curve.ids) + 1)), "token": curve_tokens, "token_id": curve.ids.tolist(),
             "prob": curve.probs.tolist(), "cumulative": curve.cumulative.tolist()})
st.caption(t("cut_caption", V=curve.vocab, n=curve.nucleus, pm=curve.nucleus_mass, k=curve.k_kept, km=curve.k_mass))

# ---- a real continuation: nucleus size per step -------------------------------------------
st.subheader(t("gen_title"))
with st.spinner(t("gen_running", n=n_new)):
    trace = runtime.cached(tkp.nucleus_trace)(m.engine, prompt.ids, T, p, seed, n_new, m.spec.eos_ids)
k_mass = tkp.top_k_mass(trace, k)
labels = [f"{i + 1}·{s}" for i, s in enumerate(token_texts(m.tokenizer, generated_ids(trace.steps)))]
L = {k_: t(f"steps_{k_}") for k_ in ("nucleus", "tokens", "k_line", "p_mass", "k_mass", "y_count", "y_mass", "x")}
L["title"] = t("steps_title", p=p, lo=int(trace.nucleus.min()), hi=int(trace.nucleus.max()))
page.figure(plots.nucleus_steps_figure(labels, trace.nucleus.tolist(), trace.p_mass, k_mass, p, k, L),
            "nucleus_per_step", {"step_token": labels, "top_p_kept": trace.nucleus.tolist(),
                                 "top_p_mass": trace.p_mass.tolist(), "top_k_mass": k_mass.tolist()})
view_labels = {key: t(f"lbl_{key}") for key in ("model", "final", "rank", "kept", "step", "token",
                                                 "stage_temperature", "stage_top_p")}
st.markdown(f"**{t('gen_view', T=T, p=p, seed=seed)}**")
st.html(tokens_html(m.tokenizer, prompt.text[-200:], trace.steps, view_labels))
st.caption(t("gen_caption"))
with st.expander(t("gen_table")):
    st.dataframe(steps_table(m.tokenizer, trace.steps, view_labels), hide_index=True)

# ---- top-k vs top-p on the same distribution; stage order -----------------------------------
sets = runtime.cached(tkp.kept_sets)(logits, T, k, p)
set_tokens = token_texts(m.tokenizer, sets.ids)
L = {k_: t(f"sets_{k_}") for k_ in ("both", "only_k", "only_p", "neither", "x", "y")}
L["title"] = t("sets_title", both=sets.both, ok=sets.only_k, op=sets.only_p)
page.figure(plots.kept_sets_figure(sets, set_tokens, L), "kept_sets",
            {"rank": list(range(1, len(sets.ids) + 1)), "token": set_tokens, "prob": sets.probs.tolist(),
             "top_k_keeps": sets.in_k.tolist(), "top_p_keeps": sets.in_p.tolist()})

effect = runtime.cached(tkp.order_effect)(logits, p, ORDER_TEMPS)                  # fixed T axis
at_T = runtime.cached(tkp.order_effect)(logits, p, (T,))                           # your T
L = {k_: t(f"order_{k_}") for k_ in ("t_first", "t_after", "x", "y")}
L["title"] = t("order_title", p=p)
page.figure(plots.order_figure(effect, T, L), "stage_order",
            {"T": effect.temperatures.tolist(), "kept_T_before_top_p": effect.t_first.tolist(),
             "kept_T_after_top_p": effect.t_after.tolist()})
st.caption(t("order_caption", T=T, a=int(at_T.t_first[0]), b=int(at_T.t_after[0])))

page.notice()

# ---- live checks -------------------------------------------------------------------------
scaled = apply_temperature(logits, T)                                           # what the filters see
ks = tuple(sorted(set(CHECK_KS + (k,))))
ps = tuple(sorted(set(CHECK_PS + (p,))))
bad_k = runtime.cached(sampling_reference.top_k_mismatches)(scaled, ks)
bad_p = runtime.cached(sampling_reference.top_p_mismatches)(scaled, ps)
worst_reach, worst_min = float(trace.reach_margin.min()), float(trace.minimal_margin.min())
spread = int(trace.nucleus.max()) / max(1, int(trace.nucleus.min()))
page.checks([
    CheckResult(t("check_k", V=curve.vocab), bad_k == 0, t("check_k_detail", ks=", ".join(map(str, ks)), bad=bad_k)),
    CheckResult(t("check_p"), bad_p == 0, t("check_p_detail", ps=", ".join(f"{x:g}" for x in ps), bad=bad_p)),
    CheckResult(t("check_minimal", n=len(trace.steps)), worst_reach >= -1e-6 and worst_min > -1e-6,
                t("check_minimal_detail", r=worst_reach, m=worst_min)),
    CheckResult(t("check_order"), bool(effect.t_after.min() == effect.t_after.max()
                                       and effect.t_first.min() < effect.t_first.max()),
                t("check_order_detail", n=len(effect.temperatures), lo=int(effect.t_first.min()),
                  hi=int(effect.t_first.max()), c=int(effect.t_after[0]))),
])
st.caption(t("spread_line", lo=int(trace.nucleus.min()), hi=int(trace.nucleus.max()), r=spread, p=p))
page.try_this()
page.code(top_p_mask, tkp.cut_curve, tkp.nucleus_trace, tkp.order_effect)
page.sources()
page.finish()
