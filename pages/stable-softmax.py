"""Stable softmax (CONCEPTS.md §3): widgets and layout only; the numbers come from lib/."""
import numpy as np
import streamlit as st

from lib.ui import runtime
from lib.decoding import generate
from lib.concepts.stable_softmax import checks, stable_softmax as ss
from lib.concepts.stable_softmax import figures as plots
from lib.model.tokens import token_texts
from lib.ui.page import ConceptPage

GRID = tuple(np.linspace(-150.0, 150.0, 31).tolist())   # offsets of the sweep figure (plus the edges)
EDGE = 0.6                                              # sweep points this far inside/outside each predicted edge

page = ConceptPage("stable-softmax")
t = page.t
m = page.model()

left, right = page.controls()
prompt = page.prompt(container=left)
dtype = page.state.select("dtype", t("dtype_label"), tuple(ss.DTYPES), "fp16", help=t("dtype_help"),
                          horizontal=True, radio=True, container=right)
scale = page.state.number_slider("scale", t("scale_label"), 0.5, 10.0, 1.0, step=0.25, help=t("scale_help"),
                                 container=right)
offset = page.state.number_slider("offset", t("offset_label"), -150.0, 150.0, 0.0, step=1.0,
                                  help=t("offset_help"), container=right)

logits = runtime.cached(generate.next_token_logits)(m.engine, prompt.ids)          # (V,)
# Milliseconds of arithmetic on the logits, no model: called directly, not queued for the server's
# compute slots (under a class each queued call waits its turn; this page's first figure waited eight).
reports = {name: ss.report(logits, scale, offset, name) for name in ss.DTYPES}
r = reports[dtype]

# ---- predict, then reveal -------------------------------------------------------------------
st.markdown(t("formula"))
revealed = page.predict("naive", t("q_naive", d=dtype, s=scale, c=offset), ("ok", "overflow", "underflow"),
                        r.naive_status,
                        t(f"q_naive_why_{r.naive_status}" + ("_sum" if r.naive_status == "overflow" and not r.exp_inf else ""),
                          d=dtype, zmax=r.z_max, hi=r.overflow_at, lo=r.underflow_at,
                          lse=r.lse64, n=r.exp_inf, V=len(logits)),
                        format_func=lambda k: t(f"status_{k}"))

# ---- the chosen dtype: where the logits sit against its limits ------------------------------
if revealed:
    edges, counts = ss.histogram(logits, scale, offset, dtype)
    L = {k: t(f"hist_{k}") for k in ("count", "tokens", "max", "x", "y")}
    L["overflow"] = t("hist_overflow", v=r.overflow_at)
    L["underflow"] = t("hist_underflow", v=r.underflow_at)
    if r.exp_inf:
        L["title"] = t("hist_title", n=r.exp_inf, V=len(logits), d=dtype, v=r.overflow_at)
    elif r.naive_status == "overflow":
        L["title"] = t("hist_title_sum", d=dtype, v=r.overflow_at, lse=r.lse64)
    elif r.naive_status == "underflow":
        L["title"] = t("hist_title_under", d=dtype, v=r.underflow_at, zmax=r.z_max)
    else:
        L["title"] = t("hist_title_ok", d=dtype, v=r.overflow_at, zmax=r.z_max)
    page.figure(plots.histogram_figure(edges, counts, r.overflow_at, r.underflow_at, r.z_max, L, fmt=t.num), "logit_histogram",
                {"bin_left": edges[:-1].tolist(), "bin_right": edges[1:].tolist(), "count": counts.tolist()})

    tp = ss.top_probs(logits, scale, offset, dtype)
    tokens = token_texts(m.tokenizer, tp.ids)
    L = {k: t(f"probs_{k}") for k in ("naive", "stable", "torch", "y")}
    if r.naive_nan:
        L["title"] = t("probs_title_nan", d=dtype, nan=r.naive_nan, snan=r.stable_nan)
    elif r.naive_status != "ok":
        L["title"] = t("probs_title_zero", d=dtype, sum=r.naive_sum, snan=r.stable_nan)
    else:
        L["title"] = t("probs_title_ok", d=dtype, e=r.stable_vs_torch)
    page.figure(plots.probs_figure(tokens, tp.naive, tp.stable, tp.reference, L), "naive_vs_stable",
                {"token": tokens, "naive": tp.naive.tolist(), "stable": tp.stable.tolist(),
                 "torch_softmax": tp.reference.tolist()})

status_word = {s_: t(f"status_{s_}") for s_ in ("ok", "overflow", "underflow")}
st.markdown(f"**{t('table_title', s=scale, c=offset)}**")
table = {      # the limits and the largest logit: what a prediction reasons from
    t("col_dtype"): list(reports),
    t("col_limits"): [f"{t.num(x.underflow_at, '.2f')} … {t.num(x.overflow_at, '.2f')}" for x in reports.values()],
    t("col_max"): [t.num(x.z_max, ".3f") for x in reports.values()],
}
if revealed:   # what happened: the answer
    table |= {
        t("col_inf"): [f"{t.num(x.exp_inf, ',')} / {t.num(x.exp_inf_predicted, ',')}" for x in reports.values()],
        t("col_zero"): [f"{t.num(x.exp_zero, ',')} / {t.num(x.exp_zero_predicted, ',')}" for x in reports.values()],
        t("col_naive"): [t("cell_naive", s=status_word[x.naive_status], n=x.naive_nan) for x in reports.values()],
        t("col_stable"): [t("cell_stable", n=x.stable_nan, sum=x.stable_sum) for x in reports.values()],
    }
st.dataframe(table, hide_index=True, width="stretch")
if revealed:
    st.caption(t("table_caption"))

# ---- every dtype across offsets: where the naive form bites ---------------------------------
windows = {name: ss.safe_window(logits, scale, name) for name in ss.DTYPES}
edges_pts = [e + d for w in windows.values() for e in w for d in (-EDGE, EDGE) if -150 <= e + d <= 150]
offsets = tuple(sorted(set(GRID + tuple(round(x, 3) for x in edges_pts))))   # not your c: no recompute per c
with st.spinner(t("sweep_running", n=len(offsets) * len(ss.DTYPES))):
    sweep = runtime.cached(ss.offset_sweep)(logits, scale, offsets)       # the checks use it too
if revealed:   # the sweep marks your c inside or outside each dtype's window: the answer
    L = {k: t(f"sweep_{k}") for k in ("window", "ok", "overflow", "underflow", "yours", "x", "y", "stable_row",
                                       "stable_ok", "stable_bad")}
    L["title"] = t("sweep_title", s=scale)
    page.figure(plots.sweep_figure(sweep, windows, offset, L), "offset_sweep",
                {"offset": sweep.offsets.tolist(),
                 **{f"naive_{n}": v for n, v in sweep.measured.items()},
                 **{f"predicted_{n}": v for n, v in sweep.predicted.items()}})
    st.caption(" · ".join(t("window_line", d=n, lo=a, hi=b) if a < b else t("window_none", d=n)
                          for n, (a, b) in windows.items()))
    sum_at, single_at = ss.fp32_overflow_points(logits, scale)
    st.caption(t("fp32_line", c1=sum_at, c2=single_at, g=single_at - sum_at))

page.notice()

# ---- live checks (lib/concepts/stable_softmax/checks.py) ---------------------------------
shift = ss.shift_report(logits, scale, offset, dtype)
page.checks(checks.page_checks(reports, dtype, sweep, shift, t))
page.try_this()
page.code(ss.naive_softmax, ss.stable_softmax, ss.stable_logsumexp, ss.overflow_threshold, ss.predicted_status)
page.sources()
page.finish()
