"""Logit bias (CONCEPTS.md §4): widgets and layout only; the numbers come from lib/."""
import math

import numpy as np
import streamlit as st

from lib.ui import runtime
from lib.decoding import generate
from lib.concepts.logit_bias import checks, logit_bias as lb
from lib.concepts.logit_bias import figures as plots
from lib.decoding.sampling import EmptyDistribution, InvalidSamplingParameter, SamplingConfig, apply_bias
from lib.decoding.generate import continuation, generated_ids
from lib.model.tokens import token_text, token_texts
from lib.ui.page import ConceptPage
from lib.ui.token_view import tokens_html

SWEEP_B = tuple(np.linspace(-10.0, 10.0, 21).tolist())   # b axis of the odds-ratio figure
MODES = ("first", "sequence")
DECODES = ("greedy", "sample")

page = ConceptPage("logit-bias")
t = page.t
m = page.model()

left, right = page.controls()
prompt = page.prompt(default=t("default_prompt"), container=left)
words_text = page.state.text("words", t("words_label"), t("default_words"), max_chars=200, area=False,
                             help=t("words_help"), container=left)
c1, c2 = left.columns(2)
with_variants = page.state.checkbox("variants", t("variants_label"), True, help=t("variants_help"), container=c1)
mode = page.state.select("mode", t("mode_label"), MODES, "first", format_func=lambda x: t(f"mode_{x}"),
                         help=t("mode_help"), container=c2)
ban = page.state.checkbox("ban", t("ban_label"), False, help=t("ban_help"), container=right)
b_slider = page.state.number_slider("b", t("b_label"), -10.0, 10.0, -3.0, step=0.5, help=t("b_help"), container=right)
T = page.state.number_slider("T", t("t_label"), 0.25, 3.0, 0.5, step=0.05, help=t("t_help"), container=right)
top_p = page.state.number_slider("p", t("p_label"), 0.05, 1.0, 0.9, step=0.01, help=t("p_help"), container=right)
d1, d2, d3 = right.columns(3)
decode = page.state.select("decode", t("decode_label"), DECODES, "greedy", format_func=lambda x: t(f"decode_{x}"),
                           container=d1)
seed = page.state.integer("seed", t("seed_label"), 0, 2**31 - 1, 0, container=d2)
n_new = page.state.number_slider("n", t("n_label"), 4, 24, 12, container=d3)
b = -math.inf if ban else b_slider

words = lb.parse_words(words_text)
if not words:
    st.warning(t("no_words"))
    page.finish()
    st.stop()
entries = lb.word_tokens(m.tokenizer, words, with_variants)
try:
    bias, seq_bias = lb.bias_settings(entries, b, mode)
    SamplingConfig(T, top_p=top_p, bias=bias, sequence_bias=seq_bias)
except InvalidSamplingParameter as e:
    st.error(t("bad_setting", msg=str(e)))
    page.finish()
    st.stop()

# ---- words -> token ids --------------------------------------------------------------------
logits = runtime.cached(generate.next_token_logits)(m.engine, prompt.ids)          # (V,)
# The two continuations start now, side by side (they share every batched step of the engine),
# and are collected where they are shown: the figures of this one step do not wait for them.
T_gen = 0.0 if decode == "greedy" else T
eos = m.spec.eos_ids
gens = runtime.start(
    lambda: runtime.cached(continuation)(m.engine, prompt.ids, SamplingConfig(T_gen), seed, n_new, eos),
    lambda: runtime.cached(continuation)(m.engine, prompt.ids, SamplingConfig(T_gen, bias=bias, sequence_bias=seq_bias),
                                         seed, n_new, eos))
st.subheader(t("tokens_title"))
first_ids = tuple(e.ids[0] for e in entries)
p_first = runtime.cached(lb.first_token_probs)(logits, first_ids)
st.dataframe({
    t("col_word"): [e.word for e in entries],
    t("col_variant"): [repr(e.variant) for e in entries],
    t("col_ids"): [", ".join(map(str, e.ids)) for e in entries],
    t("col_pieces"): [" | ".join(e.pieces) for e in entries],
    t("col_n"): [len(e.ids) for e in entries],
    t("col_p"): [t.num(float(x), ".5f") for x in p_first],
}, hide_index=True)
multi = [e for e in entries if len(e.ids) > 1]
st.caption(t("tokens_caption_multi", n=len(multi), mode=t(f"mode_{mode}")) if multi else t("tokens_caption_single"))

# ---- the bias on this step -----------------------------------------------------------------
target = max(first_ids, key=lambda i: p_first[first_ids.index(i)])
target_text = token_text(m.tokenizer, target)
change = runtime.cached(lb.top_change)(logits, bias, seq_bias, T, prompt.ids)
change_tokens = token_texts(m.tokenizer, change.ids)
b_text = "−∞" if b == -math.inf else t.num(b, "+g")
top_after = int(change.ids[int(change.after.argmax())])
options = list(dict.fromkeys([int(i) for i in change.ids[:4]] + [top_after]))   # by probability before the bias
q_top = page.predict("top", t("q_top", b=b_text, tok=target_text), options, top_after,
                     t("q_top_why", tok=token_text(m.tokenizer, top_after), p=float(change.after.max()),
                       t0=change_tokens[0], p0=float(change.before[0])),
                     format_func=lambda i: f"“{token_text(m.tokenizer, i)}”")
if q_top:
    L = {k: t(f"change_{k}") for k in ("before", "after", "y")}
    L["title"] = t("change_title", b=b_text, T=T, n=len(bias) + len(seq_bias))
    page.figure(plots.change_figure(change_tokens, change.before, change.after, L), "probabilities",
                {"token": change_tokens, "token_id": change.ids.tolist(), "p_without_bias": change.before.tolist(),
                 "p_with_bias": change.after.tolist()})

odds = {o: runtime.cached(lb.odds_report)(logits, target, b, T, o) for o in (lb.BIAS_FIRST, lb.TEMPERATURE_FIRST)}
r = odds[lb.BIAS_FIRST]
if b != -math.inf:
    shift = math.log(r.measured)
    answer = "more" if abs(shift) > abs(b) * (1 + 1e-6) else "less" if abs(shift) < abs(b) * (1 - 1e-6) else "same"
    q_odds = page.predict("odds", t("q_odds", b=b_text, T=T), ("less", "same", "more"), answer,
                          t("q_odds_why", m=shift, b=b_text, T=T, e=r.effective,
                            m2=math.log(odds[lb.TEMPERATURE_FIRST].measured)),
                          format_func=lambda k: t(f"q_odds_{k}"))
else:
    q_odds = True
if q_odds:
    st.markdown(t("odds_line_ban" if b == -math.inf else "odds_line", tok=target_text, b=b_text, T=T, p0=r.p_before,
                  p1=r.p_after, m=r.measured, e=r.effective, pred=r.predicted,
                  m2=odds[lb.TEMPERATURE_FIRST].measured, pred2=odds[lb.TEMPERATURE_FIRST].predicted))
    sweep = runtime.cached(lb.bias_sweep)(logits, target, T, SWEEP_B)
    L = {k: t(f"sweep_{k}") for k in ("pred_bias_first", "pred_temp_first", "bias_first", "temp_first", "x", "y")}
    L["title"] = t("sweep_title", tok=target_text, T=T)
    page.figure(plots.sweep_figure(sweep, T, b, L), "odds_vs_bias",
                {"b": sweep.biases.tolist(), "log_odds_ratio_bias_then_T": sweep.bias_first.tolist(),
                 "log_odds_ratio_T_then_bias": sweep.temp_first.tolist()})

st.markdown(f"**{t('order_title', p=top_p)}**")
rows = runtime.cached(lb.order_table)(logits, bias, seq_bias, target, T, top_p, prompt.ids)
order_cols = {
    t("col_order"): [" → ".join(t(f"stage_{s}") for s in row.order if s != "min_p" and s != "top_k") for row in rows],
    t("col_pt", tok=target_text): ["—" if row.p_target is None else t.num(row.p_target, ".5f") for row in rows],
    t("col_kept"): [t("nothing_left") if row.kept is None else t.num(row.kept, ",") for row in rows],
    t("col_top"): ["—" if row.top_token is None else token_text(m.tokenizer, row.top_token) for row in rows],
}
if not (q_top and q_odds):  # the orders always, their outcomes once answered: the most likely token answers
    # "top"; the target's final p and the tokens left in each order show how strongly the bias acted ("odds")
    order_cols = {t("col_order"): order_cols[t("col_order")]}
st.dataframe(order_cols, hide_index=True)
st.caption(t("order_caption"))

# ---- continuation with and without the bias -------------------------------------------------
st.subheader(t("gen_title"))
try:
    with st.spinner(t("gen_running", n=n_new)):
        plain, biased = gens.results()
except EmptyDistribution as e:
    st.error(t("bad_setting", msg=str(e)))
    page.finish()
    st.stop()
labels = {key: t(f"lbl_{key}") for key in ("model", "final", "rank", "kept", "stage_bias", "stage_temperature")}
g1, g2 = st.columns(2)
g1.markdown(f"**{t('gen_plain')}**")
g1.html(tokens_html(m.tokenizer, prompt.text[-200:], plain, labels, fmt=t.num))
g2.markdown(f"**{t('gen_biased', b=b_text)}**")
if q_top:                # its first token is the answer to "top"
    g2.html(tokens_html(m.tokenizer, prompt.text[-200:], biased, labels, fmt=t.num))
else:
    g2.caption(page.c("predict_hidden"))
st.caption(t("gen_caption", d=t(f"decode_{decode}")))

page.notice()

# ---- live checks (lib/concepts/logit_bias/checks.py) --------------------------------------
inputs = runtime.cached(checks.check_inputs)(logits, tuple(entries), b, T, top_p, mode, target, prompt.ids,
                                             tuple(generated_ids(biased)))
page.checks(checks.page_checks(inputs, target_text, t))
page.try_this()
page.code(apply_bias, lb.bias_settings, lb.odds_report, lb.word_tokens)
page.sources()
page.finish()
