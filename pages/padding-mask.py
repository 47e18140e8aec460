"""Padding mask (CONCEPTS.md §10): widgets and layout only; the numbers come from lib/."""
import streamlit as st

from lib.ui import runtime
from lib.concepts.padding_mask import padding
from lib.concepts.padding_mask import checks
from lib.concepts.padding_mask import figures as plots
from lib.model.tokens import EmptyPrompt, encode_prompt, token_text
from lib.concepts.plot_marks import significant_spec
from lib.ui.page import ConceptPage

DEFAULT_PROMPTS = ("The capital of France is\n"
                   "Once upon a time, in a small village by the sea, there lived an old fisherman who every morning\n"
                   "def fibonacci(n):\n"
                   "Ibu kota Indonesia adalah")
MAX_PROMPTS, MAX_TOKENS = 6, 48
EXTRA_PAD = (0, 64, 192)
TIME_REPEATS = 5

page = ConceptPage("padding-mask")
t = page.t
m = page.model()
tok = m.tokenizer
pad_id = tok.pad_token_id if tok.pad_token_id is not None else 0

left, right = page.controls()
text = page.state.text("prompts", t("prompts_label"), DEFAULT_PROMPTS, max_chars=4000, height=150,
                       help=t("prompts_help", n=MAX_PROMPTS, k=MAX_TOKENS), container=left)
side = page.state.select("side", t("side_label"), padding.SIDES, "left", format_func=lambda s: t(f"side_{s}"),
                         radio=True, horizontal=True, container=right)
extra = page.state.select("pad", t("extra_label"), EXTRA_PAD[1:], 64, help=t("extra_help"), container=right)

lines = [s for s in text.splitlines() if s.strip()]
if len(lines) > MAX_PROMPTS:
    page.notes.append(t("note_too_many", n=len(lines), k=MAX_PROMPTS))
    lines = lines[:MAX_PROMPTS]
prompts = []
for s in lines:
    try:
        p = encode_prompt(tok, s, MAX_TOKENS)
    except EmptyPrompt:
        continue
    if p.truncated_from:
        page.notes.append(t("note_truncated", n=p.truncated_from, k=MAX_TOKENS))
    prompts.append(p.ids)
if len(prompts) < 2:
    left.warning(t("need_two"))
    page.finish()
    st.stop()
prompts = tuple(prompts)

# ---- the padded tensor ---------------------------------------------------------------------------
st.subheader(t("batch_title"))
batch = padding.pad_batch(prompts, pad_id, side, "mask")
B, T = batch.ids.shape
texts = [[token_text(tok, int(i)) if v else "·" for i, v in zip(row, vrow)]
         for row, vrow in zip(batch.ids.tolist(), batch.valid.tolist())]
fig = plots.batch_figure(padding.padded_view(batch), texts, batch.positions.numpy(),
                         {"title": t("fig_batch_title", B=B, T=T, side=t(f"side_{side}")), "prompt": t("prompt_word"),
                          "x": t("batch_x"), "col": t("hover_col"), "pos": t("hover_pos")})
page.figure(fig, "padded_batch", {f"prompt_{b + 1}_positions": batch.positions[b].tolist() for b in range(B)},
            wide=True)      # a token in every cell: on a phone the map keeps its width and scrolls
valid_n = sum(batch.lengths)
st.caption(t("batch_caption", n=valid_n, B=B, T=T, bt=B * T, f=100 * batch.valid_fraction,
             s=B * T * T, sv=sum(L * L for L in batch.lengths)))

# ---- outputs with and without the mask -----------------------------------------------------------------
st.subheader(t("out_title"))
with st.spinner(t("out_running")):
    cmp = runtime.cached(padding.compare_variants)(m.engine, prompts, pad_id)
changed = checks.nomask_changes(cmp)
answer = ("both" if all(changed.values()) else "left" if changed["left"] else "right" if changed["right"] else "none")
left_nomask = next(v for v in cmp.variants if v.side == "left" and v.mode == "no_mask")
right_nomask = next(v for v in cmp.variants if v.side == "right" and v.mode == "no_mask")
why = t(f"predict_side_why_{answer}", hl=left_nomask.max_hidden_diff, hr=right_nomask.max_hidden_diff)
if page.predict("side", t("predict_side_q"), ("left", "right", "both", "none"), answer, why,
                format_func=lambda o: t(f"predict_side_{o}")):
    rows = {t("col_setup"): [], t("col_hidden"): [], t("col_logit"): [], t("col_top1"): []}
    for v in cmp.variants:
        rows[t("col_setup")].append(t(f"mode_{v.mode}", side=t(f"side_{v.side}")))
        rows[t("col_hidden")].append(t.num(v.max_hidden_diff, significant_spec(v.max_hidden_diff)))
        rows[t("col_logit")].append(t.num(v.max_logit_diff, significant_spec(v.max_logit_diff)))
        rows[t("col_top1")].append(f"{v.top1_changed} / {B}")
    rows[t("col_setup")].append(t("mode_packed"))
    rows[t("col_hidden")].append(t.num(cmp.packed_hidden_diff, significant_spec(cmp.packed_hidden_diff)))
    rows[t("col_logit")].append(t.num(cmp.packed_logit_diff, significant_spec(cmp.packed_logit_diff)))
    rows[t("col_top1")].append("–")
    st.dataframe(rows, hide_index=True, width="stretch")
    st.caption(t("out_caption"))

# ---- time -----------------------------------------------------------------------------------------------
# Measured after everything that does not depend on it is drawn (issue 29), each run alone with a
# warm-up run first (lib.core.timing.measure). The runs that do not depend on the extra padding are
# cached per prompts (measured once), so a new extra padding measures only its own padded run.
st.subheader(t("time_title"))
time_q = t("predict_time_q", k=int(extra), T=max(batch.lengths))     # asked below the timing; stated while it runs
ahead = st.info(page.c("predict_ahead", q=time_q), icon="🤔")
bar = st.progress(0.0, text=t("time_running", r=TIME_REPEATS))
base = runtime.cached(padding.measure_times)(m.engine, prompts, pad_id, (0,), TIME_REPEATS)
bar.progress(0.5, text=t("time_running", r=TIME_REPEATS))
more = runtime.cached(padding.measure_times)(m.engine, prompts, pad_id, (int(extra),), TIME_REPEATS, True)
bar.empty()
ahead.empty()
tm = padding.with_padded(base, more)
tr, pr = padding.time_ratio(tm)
slower = tr > checks.TIME_MIN_RATIO
if page.predict("time", time_q, ("same", "longer"),
                "longer" if slower else "same",
                t("predict_time_why_longer" if slower else "predict_time_why_same", tr=tr, pr=pr),
                format_func=lambda o: t(f"predict_time_{o}")):
    names = []
    for lab in tm.labels:
        if lab.startswith("padded:"):
            names.append(t("run_padded", T=int(lab.split(":")[1])))
        else:
            names.append(t(f"run_{lab}"))
    fig = plots.times_figure(names, tm.seconds, tm.fastest, tm.slowest, [t("time_tokens", n=n) for n in tm.tokens],
                             {"title": t("fig_time_title", r=tm.repeats), "y": t("time_y")})
    page.figure(fig, "forward_times", {"run": names, "median_seconds": tm.seconds, "fastest_seconds": tm.fastest,
                                       "slowest_seconds": tm.slowest, "token_rows": tm.tokens,
                                       "score_entries_per_head_layer": tm.score_entries})
    st.caption(t("time_caption", load=tm.load_avg, r=tm.repeats))

page.notice()
page.checks(checks.page_checks(cmp, tm, batch.lengths, t))
page.try_this()
page.code(padding.pad_batch, padding.segment_hook, padding.compare_variants, padding.measure_times)
page.sources()
page.finish()
