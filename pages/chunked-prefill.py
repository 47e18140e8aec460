"""Chunked prefill (CONCEPTS.md §16): widgets and layout only; the numbers come from lib/."""
import streamlit as st

from lib.concepts.chunked_prefill import chunked_prefill, scheduler_sim
from lib.ui import runtime
from lib.concepts.check_result import CheckResult
from lib.concepts.chunked_prefill import figures as plots
from lib.ui.page import ConceptPage

LENGTHS = (64, 128, 256, 512)
CHUNKS = (16, 32, 64, 128, 256)
GRID = (16, 32, 64, 128, 256, 512)          # prompt lengths whose prefill time is measured
DECODE_BATCH = (1, 2, 4, 8, 12)   # up to every request of the scenario decoding at once

page = ConceptPage("chunked-prefill")
t = page.t
m = page.model()

left, right = page.controls()
prompt = page.prompt(default=t("default_prompt"), container=left, label=t("prompt_label"))
L = page.state.select("L", t("L_label"), LENGTHS, 256, help=t("L_help"), container=right)
c1, c2 = right.columns(2)
n_run = page.state.number_slider("n", t("n_label"), 1, 8, 4, container=c1)
chunk = page.state.select("chunk", t("chunk_label"), CHUNKS, 32, help=t("chunk_help"), container=c2)

# ---- measured costs (long: once per server, cached) -------------------------------------------
grid = tuple(x for x in GRID if x <= L)
with st.spinner(t("measuring", n=len(grid) + len(DECODE_BATCH))):
    costs = runtime.cached(chunked_prefill.measure_costs)(m.engine, grid, DECODE_BATCH)
labels = {"prefill": t("fig_cost_prefill"), "decode": t("fig_cost_decode"), "prefill_fit": t("fig_cost_prefill_fit"),
          "decode_fit": t("fig_cost_decode_fit"), "title": t("fig_cost_title"), "x": t("fig_cost_x"), "y": t("fig_cost_y")}
page.figure(plots.costs_figure(costs, labels), "measured_costs",
            {"kind": ["prefill"] * len(costs.prefill_s) + ["decode"] * len(costs.decode_s),
             "tokens_in_forward": list(costs.prefill_tokens) + list(costs.decode_batch),
             "median_seconds": list(costs.prefill_s) + list(costs.decode_s)})
st.caption(t("cost_caption", L=L, pl=costs.prefill(L) * 1000, n=n_run, d=costs.decode(n_run) * 1000,
             ratio=costs.prefill(L) / costs.decode(n_run)))

# ---- simulation ------------------------------------------------------------------------------
reqs = scheduler_sim.scenario(costs, n_run, L)
naive = scheduler_sim.simulate(reqs, costs, None)
chunked = scheduler_sim.simulate(reqs, costs, chunk)
st.subheader(t("sim_title"))
st.markdown(t("sim_intro", n=n_run, L=L, k=sum(r.prompt_len > 0 for r in reqs)))
fig = plots.timeline_figure({t("policy_naive"): naive, t("policy_chunked", c=chunk): chunked},
                            {"title": t("fig_tl_title"), "x": t("fig_tl_x"), "steps": t("fig_tl_steps")})
rows_csv = {"policy": [], "request": [], "token_time_s": []}
for name, res in ((t("policy_naive"), naive), (t("policy_chunked", c=chunk), chunked)):
    for rid, tt in res.token_times.items():
        rows_csv["policy"] += [name] * len(tt)
        rows_csv["request"] += [rid] * len(tt)
        rows_csv["token_time_s"] += tt
page.figure(fig, "timeline", rows_csv, caption=t("tl_caption"))

sweep = scheduler_sim.sweep_chunks(reqs, costs, [c for c in CHUNKS if c < L] + [None])
fig = plots.sweep_figure(sweep, {"title": t("fig_sw_title"), "tbt": t("fig_sw_tbt"), "ttft": t("fig_sw_ttft"),
                                 "ttft_name": t("fig_sw_ttft_name"), "x": t("fig_sw_x"), "none": t("none")})
page.figure(fig, "tbt_ttft_vs_chunk", {"chunk": [r.chunk or 0 for r in sweep],
                                       "tbt_p50_s": [r.tbt_p50_s for r in sweep], "tbt_p99_s": [r.tbt_p99_s for r in sweep],
                                       "tbt_max_s": [r.tbt_max_s for r in sweep], "ttft_mean_s": [r.ttft_mean_s for r in sweep]})
row_c = next(r for r in sweep if r.chunk == chunk) if chunk < L else sweep[-1]
row_n = sweep[-1]
st.markdown(t("sweep_line", c=chunk, p50c=row_c.tbt_p50_s * 1000, p99c=row_c.tbt_p99_s * 1000,
              p50n=row_n.tbt_p50_s * 1000, p99n=row_n.tbt_p99_s * 1000,
              ttc=row_c.ttft_mean_s * 1000, ttn=row_n.ttft_mean_s * 1000))

# ---- the real model: chunked prefill = one-shot prefill -----------------------------------------
check_chunk = min(chunk, max(1, prompt.n_tokens // 2))
with st.spinner(t("running_check")):
    cc = runtime.cached(chunked_prefill.chunked_vs_oneshot)(m.engine, prompt.ids, check_chunk)

page.notice()
# the longest step a chunked schedule can have: every request decoding + one full chunk
bound = costs.decode(len(reqs)) + costs.prefill(min(chunk, L))
page.checks([
    CheckResult(t("check_logits"), cc.max_abs_diff <= 1e-3 and cc.cache_diff <= 1e-3 and cc.argmax_equal,
                t("check_logits_detail", n=cc.n_tokens, c=cc.chunk, k=cc.n_chunks, d=cc.max_abs_diff, kv=cc.cache_diff)),
    CheckResult(t("check_ratio"), costs.prefill(L) > costs.decode(n_run),
                t("check_ratio_detail", L=L, pl=costs.prefill(L) * 1000, n=n_run, d=costs.decode(n_run) * 1000)),
    CheckResult(t("check_bound", c=chunk), row_c.tbt_max_s <= bound + 1e-9 and (chunk >= L or row_c.tbt_max_s < row_n.tbt_max_s),
                t("check_bound_detail", mc=row_c.tbt_max_s * 1000, b=bound * 1000, mn=row_n.tbt_max_s * 1000)),
])
page.try_this()
page.code(chunked_prefill.chunked_vs_oneshot, chunked_prefill.measure_costs, scheduler_sim.simulate)
page.sources()
page.finish()
