"""Stable softmax (CONCEPTS.md §3): widgets and layout only; the numbers come from lib/."""
import numpy as np
import streamlit as st

from lib.decoding import generate
from lib.ui import runtime
from lib.concepts.stable_softmax import stable_softmax as ss
from lib.concepts.check_result import CheckResult
from lib.concepts.stable_softmax import figures as plots
from lib.model.tokens import token_texts
from lib.ui.page import ConceptPage

GRID = tuple(np.linspace(-150.0, 150.0, 31).tolist())   # offsets of the sweep figure (plus the edges)
EDGE = 0.6                                              # sweep points this far inside/outside each predicted edge
SHIFTS = (-150.0, -50.0, -1.0, 1.0, 50.0, 150.0)        # offsets of the float64 shift-invariance check

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
reports = {name: runtime.cached(ss.report)(logits, scale, offset, name) for name in ss.DTYPES}
r = reports[dtype]

# ---- the chosen dtype: where the logits sit against its limits ------------------------------
st.markdown(t("formula"))
edges, counts = runtime.cached(ss.histogram)(logits, scale, offset, dtype)
n_over = r.exp_inf
L = {k: t(f"hist_{k}") for k in ("count", "tokens", "max", "x", "y")}
L["overflow"] = t("hist_overflow", v=r.overflow_at)
L["underflow"] = t("hist_underflow", v=r.underflow_at)
L["title"] = t("hist_title", n=n_over, V=len(logits), d=dtype, v=r.overflow_at)
page.figure(plots.histogram_figure(edges, counts, r.overflow_at, r.underflow_at, r.z_max, L), "logit_histogram",
            {"bin_left": edges[:-1].tolist(), "bin_right": edges[1:].tolist(), "count": counts.tolist()})

tp = runtime.cached(ss.top_probs)(logits, scale, offset, dtype)
tokens = token_texts(m.tokenizer, tp.ids)
L = {k: t(f"probs_{k}") for k in ("naive", "stable", "torch", "y")}
L["title"] = t("probs_title", d=dtype, nan=r.naive_nan, snan=r.stable_nan)
page.figure(plots.probs_figure(tokens, tp.naive, tp.stable, tp.reference, L), "naive_vs_stable",
            {"token": tokens, "naive": tp.naive.tolist(), "stable": tp.stable.tolist(),
             "torch_softmax": tp.reference.tolist()})

status_word = {s: t(f"status_{s}") for s in ("ok", "overflow", "underflow")}
st.markdown(f"**{t('table_title', s=scale, c=offset)}**")
st.dataframe({
    t("col_dtype"): list(reports),
    t("col_over"): [round(x.overflow_at, 3) for x in reports.values()],
    t("col_under"): [round(x.underflow_at, 3) for x in reports.values()],
    t("col_max"): [round(x.z_max, 3) for x in reports.values()],
    t("col_inf"): [f"{x.exp_inf:,} / {x.exp_inf_predicted:,}" for x in reports.values()],
    t("col_zero"): [f"{x.exp_zero:,} / {x.exp_zero_predicted:,}" for x in reports.values()],
    t("col_naive"): [f"{status_word[x.naive_status]} ({x.naive_nan:,} NaN)" for x in reports.values()],
    t("col_stable"): [f"{x.stable_nan:,} NaN, Σp = {x.stable_sum:.4f}" for x in reports.values()],
    t("col_lse"): [f"{x.lse_naive:.4f} / {x.lse_stable:.4f} / {x.lse_torch:.4f}" for x in reports.values()],
}, hide_index=True)
st.caption(t("table_caption"))

# ---- every dtype across offsets: where the naive form bites ---------------------------------
windows = {name: runtime.cached(ss.safe_window)(logits, scale, name) for name in ss.DTYPES}
edges_pts = [e + d for w in windows.values() for e in w for d in (-EDGE, EDGE) if -150 <= e + d <= 150]
offsets = tuple(sorted(set(GRID + tuple(round(x, 3) for x in edges_pts))))   # not your c: no recompute per c
with st.spinner(t("sweep_running", n=len(offsets) * len(ss.DTYPES))):
    sweep = runtime.cached(ss.offset_sweep)(logits, scale, offsets)
L = {k: t(f"sweep_{k}") for k in ("window", "ok", "overflow", "underflow", "yours", "x", "y")}
L["title"] = t("sweep_title", s=scale)
page.figure(plots.sweep_figure(sweep, windows, offset, L), "offset_sweep",
            {"offset": sweep.offsets.tolist(),
             **{f"naive_{n}": v for n, v in sweep.measured.items()},
             **{f"predicted_{n}": v for n, v in sweep.predicted.items()}})
st.caption(" · ".join(t("window_line", d=n, lo=a, hi=b) if a < b else t("window_none", d=n)
                      for n, (a, b) in windows.items()))

page.notice()

# ---- live checks -------------------------------------------------------------------------
tol = ss.agreement_tolerance(dtype)
inf_bad = sum(abs(x.exp_inf - x.exp_inf_predicted) + abs(x.exp_zero - x.exp_zero_predicted) for x in reports.values())
status_bad = sum(x.naive_status != x.predicted_status for x in reports.values()) + sweep.mismatches()
n_points = len(sweep.offsets) * len(sweep.measured)
stable_bad = sum(not ok for v in sweep.stable_ok.values() for ok in v) + sum(
    x.stable_nan + x.stable_inf for x in reports.values())
shift = runtime.cached(ss.shift_invariance)(logits, SHIFTS)
lse_tol = ss.agreement_tolerance(dtype) * max(1.0, abs(r.lse_torch))
page.checks([
    CheckResult(t("check_torch", d=dtype), r.stable_vs_torch <= tol,
                t("check_torch_detail", d=r.stable_vs_torch, tol=tol, e=r.stable_vs_exact)),
    CheckResult(t("check_inf"), inf_bad == 0,
                t("check_inf_detail", inf=r.exp_inf, pinf=r.exp_inf_predicted, z=r.exp_zero, pz=r.exp_zero_predicted,
                  d=dtype, bad=inf_bad)),
    CheckResult(t("check_status", n=n_points), status_bad == 0, t("check_status_detail", bad=status_bad)),
    CheckResult(t("check_stable", n=n_points), stable_bad == 0, t("check_stable_detail", bad=stable_bad)),
    CheckResult(t("check_shift"), shift <= 1e-12, t("check_shift_detail", d=shift, c=", ".join(f"{c:g}" for c in SHIFTS))),
    CheckResult(t("check_lse", d=dtype), abs(r.lse_stable - r.lse_torch) <= lse_tol,
                t("check_lse_detail", a=r.lse_stable, b=r.lse_torch, n=r.lse_naive, tol=lse_tol)),
])
page.try_this()
page.code(ss.naive_softmax, ss.stable_softmax, ss.stable_logsumexp, ss.overflow_threshold, ss.predicted_status)
page.sources()
page.finish()
