"""Chunked prefill (CONCEPTS.md §16): widgets and layout only; the numbers come from lib/."""
import streamlit as st

from lib.ui import runtime
from lib.concepts.chunked_prefill import checks, chunked_prefill, narrate, real_schedule, scheduler_sim
from lib.concepts.chunked_prefill import figures as plots
from lib.ui.page import ConceptPage
from lib.ui.step_through import step_through

LENGTHS = (64, 128, 256, 512)
CHUNKS = (16, 32, 64, 128, 256)
GRID = (16, 32, 64, 128, 256, 512)          # prompt lengths whose prefill time is measured
DECODE_BATCH = (1, 2, 4, 8, 12)   # up to every request of the scenario decoding at once
PLAY_EVERY_S = 1.0

page = ConceptPage("chunked-prefill")
t = page.t
m = page.model()

left, right = page.controls()
prompt = page.prompt(default=t("default_prompt"), container=left, label=t("prompt_label"))
L = page.state.select("L", t("L_label"), LENGTHS, 256, help=t("L_help"), container=right)
c1, c2 = right.columns(2)
n_run = page.state.number_slider("n", t("n_label"), 1, 8, 4, container=c1)
chunk = page.state.select("chunk", t("chunk_label"), CHUNKS, 32, help=t("chunk_help"), container=c2)

# ---- the cost grid: measured once per server up to the largest length, then sliced for L ------
# (a length the visitor picks never measures again; lib.concepts.chunked_prefill.StepCosts.up_to)
grid_bar = st.progress(0.0, text=t("measuring", n=len(GRID) + len(DECODE_BATCH)))
costs = runtime.cached(chunked_prefill.measure_costs)(
    m.engine, GRID, DECODE_BATCH,
    on_progress=lambda f: grid_bar.progress(min(f, 1.0), text=t("measuring", n=len(GRID) + len(DECODE_BATCH)))).up_to(L)
grid_bar.empty()
a, b = costs.prefill_line()
labels = {"prefill": t("fig_cost_prefill"), "decode": t("fig_cost_decode"), "prefill_fit": t("fig_cost_prefill_fit"),
          "decode_fit": t("fig_cost_decode_fit"), "title": t("fig_cost_title"), "x": t("fig_cost_x"), "y": t("fig_cost_y")}
page.figure(plots.costs_figure(costs, labels, fmt=t.num), "measured_costs",
            {"kind": ["prefill"] * len(costs.prefill_s) + ["decode"] * len(costs.decode_s),
             "tokens_in_forward": list(costs.prefill_tokens) + list(costs.decode_batch),
             "median_seconds": list(costs.prefill_s) + list(costs.decode_s),
             "spread_seconds": list(costs.prefill_spread_s) + list(costs.decode_spread_s)})
st.caption(t("cost_caption", L=L, pl=costs.prefill(L) * 1000, n=n_run, d=costs.decode(n_run) * 1000,
             ratio=costs.prefill(L) / costs.decode(n_run), r=costs.repeats, load=costs.load_avg,
             a=a * 1000, b=b * 1000))
over = narrate.chunking_cost(a, costs.decode(n_run), L, chunk)      # the sentence's k, k - 1 and product

# ---- simulation ------------------------------------------------------------------------------
reqs = scheduler_sim.scenario(costs, n_run, L)
sweep = runtime.cached(scheduler_sim.sweep_chunks)(tuple(reqs), costs, tuple([c for c in CHUNKS if c < L] + [None]))
row_c = next(r for r in sweep if r.chunk == chunk) if chunk < L else sweep[-1]
row_n = sweep[-1]
ttft_x = row_c.ttft_mean_s / row_n.ttft_mean_s
gap_x = row_n.tbt_max_s / row_c.tbt_max_s
answer = "sooner" if ttft_x < 0.9 else "same" if ttft_x <= 1.1 else "later" if ttft_x < 2 else "much_later"
revealed = page.predict("ttft", t("predict_q", c=chunk, L=L, n=n_run), ("sooner", "same", "later", "much_later"),
                        answer, t("predict_why", c=chunk, ttc=row_c.ttft_mean_s * 1000, ttn=row_n.ttft_mean_s * 1000,
                                  x=ttft_x, k=-(-L // chunk), g=gap_x),
                        format_func=lambda o: t(f"opt_{o}"))

st.subheader(t("sim_title"))
st.markdown(t("sim_intro", n=n_run, L=L, k=sum(r.prompt_len > 0 for r in reqs)))
naive = runtime.cached(scheduler_sim.simulate)(tuple(reqs), costs, None)
chunked = runtime.cached(scheduler_sim.simulate)(tuple(reqs), costs, chunk)
prompt_lens = {r.rid: r.prompt_len for r in reqs}
sentences = narrate.step_sentences(chunked, prompt_lens, t)
last = len(chunked.steps) - 1


def draw_step(step: int) -> None:
    st.markdown(sentences[step])
    fig = plots.timeline_figure({t("policy_naive"): naive, t("policy_chunked", c=chunk): chunked},
                                {"title": t("fig_tl_title"), "x": t("fig_tl_x"), "steps": t("fig_tl_steps")},
                                cursor_s=chunked.steps[step].end_s)
    rows_csv = {"policy": [], "request": [], "token_time_s": []}
    for name, res in (("naive", naive), (f"chunk {chunk}", chunked)):
        for rid, tt in res.token_times.items():
            rows_csv["policy"] += [name] * len(tt)
            rows_csv["request"] += [rid] * len(tt)
            rows_csv["token_time_s"] += tt
    page.figure(fig, "timeline", rows_csv, caption=t("tl_caption"))
    with st.expander(t("log_title", step=step)):
        st.markdown("\n".join(f"- {s}" for s in sentences[:step + 1]))


if revealed:        # the timeline shows when the new request's first token comes: the answer
    step_through(page, last, t("step_label", c=chunk), t("step_help"), draw_step, PLAY_EVERY_S)
else:
    st.caption(page.c("predict_hidden"))

if revealed:
    fig = plots.sweep_figure(sweep, {"title": t("fig_sw_title"), "tbt": t("fig_sw_tbt"), "ttft": t("fig_sw_ttft"),
                                     "ttft_name": t("fig_sw_ttft_name"), "x": t("fig_sw_x"), "none": t("none")})
    page.figure(fig, "tbt_ttft_vs_chunk", {"chunk": [r.chunk or 0 for r in sweep],
                                           "tbt_p50_s": [r.tbt_p50_s for r in sweep],
                                           "tbt_p99_s": [r.tbt_p99_s for r in sweep],
                                           "tbt_max_s": [r.tbt_max_s for r in sweep],
                                           "ttft_mean_s": [r.ttft_mean_s for r in sweep]})
    ttft_key = "sweep_ttft_later" if ttft_x > 1.1 else "sweep_ttft_same" if ttft_x >= 0.9 else "sweep_ttft_sooner"
    st.markdown(t("sweep_line", c=chunk, p50c=row_c.tbt_p50_s * 1000, p99c=row_c.tbt_p99_s * 1000,
                  p50n=row_n.tbt_p50_s * 1000, p99n=row_n.tbt_p99_s * 1000) + " "
                + t(ttft_key, c=chunk, ttc=row_c.ttft_mean_s * 1000, ttn=row_n.ttft_mean_s * 1000, x=ttft_x))
    # why, in this machine's costs: the extra steps chunking adds before the first token
    st.markdown(t("cpu_gpu", a=over["a_ms"], b=b * 1000, c=chunk, cc=costs.prefill(chunk) * 1000, k=over["k"],
                  e=over["extra_steps"], d=over["d_ms"], extra=over["extra_ms"]))

# ---- the real model: the same schedule run and timed, and chunked = one-shot prefill -----------
st.subheader(t("real_title"))
check_chunk = min(chunk, max(1, prompt.n_tokens // 2))
with st.spinner(t("running_check")):                   # exact and cheap: before the timed run
    cc = runtime.cached(chunked_prefill.chunked_vs_oneshot)(m.engine, prompt.ids, check_chunk)
real_box = st.container()
real_bar = real_box.progress(0.0, text=t("running_real", L=L, c=chunk, n=n_run))
note = real_box.caption(t("browser_note"))       # item 5: the browser draws the charts above meanwhile
real_n, real_c = runtime.cached(real_schedule.run_schedules)(
    m.engine, n_run, L, (None, chunk),
    _progress=lambda done, total: real_bar.progress(done / total, text=t("running_real_pass", L=L, c=chunk, n=n_run,
                                                                         i=done, k=total)))
real_bar.empty()
note.empty()
pred_n = real_schedule.predicted_steps(costs, n_run, L, None)
pred_c = real_schedule.predicted_steps(costs, n_run, L, chunk)
if not revealed:     # its steps add up to each policy's time to the new request's first token
    real_box.caption(page.c("predict_hidden"))
else:
    with real_box:
        fig = plots.real_steps_figure({t("policy_naive"): real_n, t("policy_chunked", c=chunk): real_c},
                                      {t("policy_naive"): pred_n[1], t("policy_chunked", c=chunk): pred_c[1]},
                                      {"title": t("fig_real_title", n=n_run, L=L), "measured": t("fig_real_measured"),
                                       "predicted": t("fig_real_predicted"), "x": t("fig_real_x"), "y": t("fig_cost_y")})
        page.figure(fig, "real_steps", {"policy": ["naive"] * len(real_n.step_s) + [f"chunk {chunk}"] * len(real_c.step_s),
                                        "step": list(range(len(real_n.step_s))) + list(range(len(real_c.step_s))),
                                        "prompt_tokens": real_n.prefill_tokens + real_c.prefill_tokens,
                                        "measured_s": real_n.step_s + real_c.step_s})
        st.caption(t("real_caption", mn=max(real_n.step_s) * 1000, mc=max(real_c.step_s) * 1000,
                     x=max(real_n.step_s) / max(real_c.step_s), load=real_c.load_avg)
                   + " " + t("real_others", o=100 * max(real_n.others_cpu, real_c.others_cpu)))

page.notice()
page.checks(checks.page_checks(cc, real_n, real_c, pred_n, pred_c, t))
page.try_this()
page.code(chunked_prefill.prefill_in_chunks, real_schedule.one_pass, real_schedule.run_schedules, scheduler_sim.simulate)
page.sources()
page.finish()
