"""Speculative decoding: speed vs acceptance (CONCEPTS.md §7). Widgets and layout only.

Declared long: every (gamma) point is a real timed run of plain and speculative decoding,
cached per (model, workload, settings) and shown with a progress bar."""
import streamlit as st

from lib.ui import runtime
from lib.concepts.speculative_speed import speculative_speed as sp
from lib.concepts.check_result import CheckResult
from lib.concepts.speculative.drafts import frequent_tokens
from lib.model.long_text import long_text
from lib.concepts.speculative import figures as plots
from lib.model.tokens import encode_prompt
from lib.ui.page import ConceptPage

GAMMAS = (1, 2, 3, 4, 6, 8)
WORKLOADS = ("easy", "hard", "prompt")
TEMPS = (0.0, 0.7, 1.0)

page = ConceptPage("speculative-speed")
t = page.t
m = page.model()
L = m.spec.n_layers

left, right = page.controls()
workload = page.state.select("work", t("work_label"), WORKLOADS, "easy", format_func=lambda w: t(f"work_{w}"),
                             radio=True, horizontal=True, container=left)
if workload == "prompt":
    prompt = page.prompt(container=left, max_tokens=256)
else:
    prompt = encode_prompt(m.tokenizer, sp.PRESETS[workload])
    left.code(sp.PRESETS[workload], language="python" if workload == "easy" else None)
gammas = page.state.multiselect("gammas", t("gammas_label"), GAMMAS, (2, 4), container=right) or [2]
gammas = sorted(gammas)
k = page.state.number_slider("k", t("k_label"), 1, L - 1, min(6, L - 1), help=t("k_help"), container=right)
c1, c2 = right.columns(2)
n_new = page.state.number_slider("n", t("n_label"), 8, 48, 12, step=4, container=c1)
T = page.state.select("T", t("t_label"), TEMPS, 0.0, format_func=lambda v: t("greedy") if v == 0 else f"T = {v:g}",
                      container=c2)
seed = page.state.integer("seed", t("seed_label"), 0, 2**31 - 1, 0, container=c2) if T > 0 else 0

drafts = (("lookup", 3), ("early_small", k))
subset = frequent_tokens(m.tokenizer, (long_text(),), prompt.ids)   # ~1,600 token ids

# ---- the measurements (long: one timed plain + speculative run per draft and gamma) ----------
st.caption(t("long_note"))
bar = st.progress(0.0, text=t("progress_start"))
by_gamma = {}
for i, g in enumerate(gammas):
    bar.progress(i / len(gammas), text=t("progress", i=i + 1, n=len(gammas), g=g))
    by_gamma[g] = runtime.cached(sp.run_gamma)(m.engine, prompt.ids, drafts, g, n_new, T, seed, subset,
                                               tuple(m.spec.eos_ids))
bar.empty()
names = [by_gamma[gammas[0]][j].draft for j in range(len(drafts))]
cells = {n: [by_gamma[g][j] for g in gammas] for j, n in enumerate(names)}
pooled = {n: sp.pooled(cells[n]) for n in names}             # name -> (alpha, c)
verify = {n: [c.verify_ratio for c in cells[n]] for n in names}     # verify time / plain step, per gamma

rows = []
for n in names:
    a, c = pooled[n]
    best = max(cells[n], key=lambda x: x.speedup)
    rows.append({t("col_draft"): n, "α": round(a, 3), "c": round(c, 3),
                 t("col_best_pred"): sp.best_gamma(a, c, gammas, verify[n]),
                 t("col_best_meas"): best.gamma, t("col_speedup"): f"{best.speedup:.2f}×"})
st.subheader(t("table_title"))
st.dataframe(rows, hide_index=True, width="stretch")
st.caption(t("table_caption", plain=1000 * cells[names[0]][0].plain_step_s))

lines, points = {}, {}
for n in names:
    a, _ = pooled[n]
    lines[t("l_formula", d=n)] = [sp.expected_tokens_per_call(a, g) for g in gammas]
    points[t("l_measured", d=n)] = [c.tokens_per_call for c in cells[n]]
fig = plots.speed_figure(gammas, lines, points, {"title": t("fig_tpc_title"), "x": "γ", "y": t("fig_tpc_y")},
                         y_ref=None)
page.figure(fig, "tokens_per_call", {"gamma": gammas, **lines, **points})

lines, points = {}, {}
for n in names:
    a, c = pooled[n]
    lines[t("l_leviathan", d=n)] = [sp.expected_speedup(a, g, c) for g in gammas]
    lines[t("l_cpu", d=n)] = [sp.expected_speedup(a, g, c, v) for g, v in zip(gammas, verify[n])]
    points[t("l_measured", d=n)] = [x.speedup for x in cells[n]]
fig = plots.speed_figure(gammas, lines, points, {"title": t("fig_speed_title"), "x": "γ", "y": t("fig_speed_y")})
page.figure(fig, "speedup", {"gamma": gammas, **lines, **points})

series = {}
for n in names:
    series[t("s_verify", d=n)] = verify[n]
    series[t("s_draft_cost", d=n)] = [g * c.cost_ratio for g, c in zip(gammas, cells[n])]
fig = plots.bars_figure([f"γ = {g}" for g in gammas], series, t("fig_cost_title"), t("fig_cost_y"))
page.figure(fig, "costs", {"gamma": gammas, **series})

page.notice()

# ---- live checks -------------------------------------------------------------------------
all_cells = [c for n in names for c in cells[n]]
bands = [(c, *c.formula_band()) for c in all_cells]
inside = sum(abs(c.tokens_per_call - pred) <= half for c, pred, half in bands)
worst = max(bands, key=lambda b: abs(b[0].tokens_per_call - b[1]) / b[2])
exact_z = max(abs(c.tokens - c.expected_tokens) / (c.expected_sd + 1e-9) for c in all_cells)
checks = [
    CheckResult(t("check_exact_rule"), all(abs(c.tokens - c.expected_tokens) <= 4 * c.expected_sd + 1e-6 for c in all_cells),
                t("check_exact_rule_detail", n=len(all_cells), z=min(exact_z, 1e9),
                  tok=sum(c.tokens for c in all_cells), exp=sum(c.expected_tokens for c in all_cells))),
    CheckResult(t("check_formula"), inside >= len(bands) - 1,
                t("check_formula_detail", ok=inside, n=len(bands), d=worst[0].draft, g=worst[0].gamma,
                  m=worst[0].tokens_per_call, p=worst[1], h=worst[2])),
]
if T == 0:
    checks.append(CheckResult(t("check_identical"), all(c.identical for c in all_cells),
                              t("check_identical_detail", ok=sum(c.identical for c in all_cells), n=len(all_cells),
                                tok=n_new)))
page.checks(checks)
page.try_this()
page.code(sp.expected_tokens_per_call, sp.expected_speedup, sp.run_gamma, sp.block_expectation)
page.sources()
page.finish()
