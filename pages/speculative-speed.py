"""Speculative decoding: speed vs acceptance (CONCEPTS.md §7). Widgets and layout only.

Declared long: every (draft, gamma) point is a real run timed with lib.core.timing.measure
(alone, repeated, median), cached per (model, workload, settings) and shown with a progress bar."""
from dataclasses import replace

import streamlit as st

from lib.ui import runtime
from lib.concepts.speculative_speed import figures as plots
from lib.decoding.speculative.drafts import frequent_tokens
from lib.concepts.speculative_speed import checks, timed_runs
from lib.concepts.speculative_speed import speculative_speed as sp
from lib.model.long_text import long_text
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
subset = frequent_tokens(m.tokenizer, (long_text(),), prompt.ids)   # the small LM head's token ids
k = page.state.number_slider("k", t("k_label"), 1, L - 1, min(6, L - 1), help=t("k_help", n=len(subset)),
                             container=right)
c1, c2 = right.columns(2)
n_new = page.state.number_slider("n", t("n_label"), 8, 48, 12, step=4, container=c1)
T = page.state.select("T", t("t_label"), TEMPS, 0.0,
                      format_func=lambda v: t("greedy") if v == 0 else f"T = {t.num(v, 'g')}", container=c2)
seed = page.state.integer("seed", t("seed_label"), 0, 2**31 - 1, 0, container=c2) if T > 0 else 0

drafts = (("lookup", 3), ("early_small", k))
eos = tuple(m.spec.eos_ids)

# ---- the measurements (a timing sweep: every run timed alone, repeated, median) ---------------
# Their place is kept here and they run last, after everything that does not depend on them is
# drawn. Each draft is timed on its own (cached per draft): moving k re-times only the
# early-exit draft, never the lookup draft or plain decoding.
result_box = st.container()
question = t("q_winner", w=t(f"work_{workload}"))
ahead = result_box.info(page.c("predict_ahead", q=question), icon="🤔")   # think about it while it measures
bar = result_box.progress(0.0, text=t("progress_start"))
note = result_box.caption(t("browser_note"))
page.notice()
checks_box = st.container()
page.try_this()
page.code(sp.expected_tokens_per_call, sp.expected_speedup, timed_runs.run_gamma, timed_runs.held_out_band)
page.sources()

# ---- the timed runs, last ----------------------------------------------------------------------
plain = runtime.cached(timed_runs.time_plain)(m.engine, prompt.ids, n_new, T, seed, eos)
by_gamma = {}
for i, g in enumerate(gammas):
    bar.progress((i + 1) / (len(gammas) + 1), text=t("progress", i=i + 1, n=len(gammas), g=g))
    by_gamma[g] = [c for d in drafts for c in runtime.cached(timed_runs.run_gamma)(
        m.engine, prompt.ids, (d,), g, n_new, T, seed, subset, eos, plain)]
bar.empty()
note.empty()
ahead.empty()
shown = dict(zip((c.draft for c in by_gamma[gammas[0]]),        # the drafts' names, in the page's language
                 (t("draft_lookup", n=drafts[0][1]), t("draft_early", k=drafts[1][1]))))
by_gamma = {g: [replace(c, draft=shown[c.draft]) for c in cs] for g, cs in by_gamma.items()}
names = [by_gamma[gammas[0]][j].draft for j in range(len(drafts))]
cells = {n: [by_gamma[g][j] for g in gammas] for j, n in enumerate(names)}
pooled = {n: timed_runs.pooled(cells[n]) for n in names}              # name -> (alpha, c)
verify = {n: [c.verify_ratio for c in cells[n]] for n in names}       # verify time / plain step, per gamma
results = checks.page_checks(cells, T, n_new, t)
all_cells = [c for n in names for c in cells[n]]
kind, best = timed_runs.verdict(all_cells)
lo, hi = best.speedup_range

with result_box:
    # ---- the question, then the answer ---------------------------------------------------------------
    if page.predict("winner", question, ("speculate", "dont"),
                    "speculate" if kind == "speculate" else "dont",       # a win within the noise is no win
                    t(f"q_winner_why_{kind}", d=best.draft, g=best.gamma, s=best.speedup, lo=lo, hi=hi),
                    format_func=lambda v: t(f"q_winner_{v}")):
        st.subheader(t("table_title"))
        rows = []
        for n in names:
            a, c = pooled[n]
            b = max(cells[n], key=lambda x: x.speedup)
            blo, bhi = b.speedup_range
            rows.append({t("col_draft"): n, t("col_alpha"): t.num(a, ".3f"), t("col_cost"): t.num(c, ".3f"),
                         t("col_best_pred"): sp.best_gamma(a, c, gammas, verify[n]),
                         t("col_best_meas"): b.gamma,
                         t("col_speedup"): t("speedup_cell", s=b.speedup, lo=blo, hi=bhi)})
        st.dataframe(rows, hide_index=True, width="stretch")
        st.caption(t("table_caption", plain=1000 * plain.step_s, r=plain.timing.repeats,
                     med=plain.timing.median_s, lo=plain.timing.min_s, hi=plain.timing.max_s,
                     load=plain.timing.load_avg, cpus=plain.timing.cpus))
        st.markdown(t(f"verdict_{kind}", d=best.draft, g=best.gamma, s=best.speedup, lo=lo, hi=hi,
                      w=t(f"work_{workload}")))

        curve_g = list(range(1, max(GAMMAS) + 1))             # the formula is defined at every gamma
        curves, points = {}, {}
        for n in names:
            a, _ = pooled[n]
            curves[t("l_formula", d=n)] = [sp.expected_tokens_per_call(a, g) for g in curve_g]
            points[t("l_measured", d=n)] = [c.tokens_per_call for c in cells[n]]
        fig = plots.speed_figure(curve_g, curves, gammas, points, {"title": t("fig_tpc_title"), "x": "γ", "y": t("fig_tpc_y")},
                                 y_ref=None, fmt=t.num)
        page.figure(fig, "tokens_per_call", {"gamma": gammas, **points})

        curves, points, marks = {}, {}, {}
        for n in names:
            a, c = pooled[n]
            curves[t("l_leviathan", d=n)] = [sp.expected_speedup(a, g, c) for g in curve_g]
            marks[t("l_cpu", d=n)] = [sp.expected_speedup(a, g, c, v) for g, v in zip(gammas, verify[n])]
            points[t("l_measured", d=n)] = [x.speedup for x in cells[n]]
        errors = {t("l_measured", d=n): [x.speedup_range for x in cells[n]] for n in names}
        fig = plots.speed_figure(curve_g, curves, gammas, {**marks, **points},
                                 {"title": t("fig_speed_title"), "x": "γ", "y": t("fig_speed_y")}, errors=errors, fmt=t.num)
        page.figure(fig, "speedup", {"gamma": gammas, **marks, **points})

        series = {}
        for n in names:
            series[t("s_verify", d=n)] = verify[n]
            series[t("s_draft_cost", d=n)] = [g * c.cost_ratio for g, c in zip(gammas, cells[n])]
        fig = plots.bars_figure([f"γ = {g}" for g in gammas], series, t("fig_cost_title"), t("fig_cost_y"))
        page.figure(fig, "costs", {"gamma": gammas, **series})

with checks_box:
    page.checks(results)
page.finish()
