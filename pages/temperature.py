"""Temperature (CONCEPTS.md §1): widgets and layout only; the numbers come from lib/."""
import numpy as np
import streamlit as st

from lib.ui import runtime
from lib.decoding import generate
from lib.concepts.temperature import temperature
from lib.concepts.temperature import checks
from lib.concepts.temperature import figures as plots
from lib.decoding.sampling import SamplingConfig
from lib.model.tokens import token_texts
from lib.ui.page import ConceptPage
from lib.ui.token_view import tokens_html

TEMP_OPTIONS = (0.0, 0.1, 0.25, 0.5, 0.7, 1.0, 1.5, 2.0, 3.0, 5.0)
SWEEP = np.geomspace(0.05, 20.0, 41)        # the temperature axis of the sweep figure
TOP = 10                                    # tokens drawn in the bar chart

page = ConceptPage("temperature")
t = page.t
m = page.model()

left, right = page.controls()
prompt = page.prompt(container=left)
temps = page.state.multiselect("Ts", t("temps_label"), TEMP_OPTIONS, (0.5, 1.0, 2.0), format_func=lambda T_: t.num(T_, "g"),
                               help=t("temps_help"), container=right) or [1.0]
temps = sorted(temps)
T = page.state.number_slider("T", t("t_label"), 0.0, 3.0, 0.8, step=0.05, container=right)
c1, c2 = right.columns(2)
seed = page.state.integer("seed", t("seed_label"), 0, 2**31 - 1, 0, help=t("seed_help"), container=c1)
n_new = page.state.number_slider("n", t("n_label"), 4, 48, 12, container=c2)

# ---- the model calls (cached per model + prompt) -----------------------------------------
logits = runtime.cached(generate.next_token_logits)(m.engine, prompt.ids)          # (V,)
eos = m.spec.eos_ids


# Started now, collected below the figures: the two continuations share each batched step of the
# engine, and the checks' inputs are computed meanwhile.
later = runtime.start(lambda: runtime.cached(generate.checked_greedy)(m.engine, prompt.ids, n_new, eos),
                      lambda: runtime.cached(generate.continuation)(m.engine, prompt.ids, SamplingConfig(T), seed,
                                                                    n_new, eos),
                      lambda: runtime.cached(checks.check_inputs)(logits, tuple(temps), T))
sw = runtime.cached(temperature.sweep)(logits, tuple(SWEEP.tolist()) + tuple(temps), TOP)
top_tokens = token_texts(m.tokenizer, sw.top_ids)
n_sw = len(SWEEP)
probs_chosen = [sw.top_probs[n_sw + i] for i in range(len(temps))]       # the sweep ran over SWEEP + temps

tail = m.tokenizer.decode(list(prompt.ids[-4:]), skip_special_tokens=True)
hot = max(temps) if max(temps) > 1.0 else 2.0           # the hotter temperature the questions ask about
# milliseconds of arithmetic on the logits: called directly, not queued for a compute slot
at = {a.temperature: a for a in temperature.at_temperatures(logits, tuple(sorted({*temps, 1.0, hot})))}
s1, s_hot = at[1.0], at[hot]
tok1 = token_texts(m.tokenizer, [s1.top_id])[0]
same_top = s1.top_id == s_hot.top_id
q1 = page.predict("top", t("q_top", T=hot, tok=tok1), ("same", "other"), "same" if same_top else "other",
                  t("q_top_why_same" if same_top else "q_top_why_other", T=hot, tok=tok1, p1=s1.argmax_prob,
                    p2=s_hot.argmax_prob),
                  format_func=lambda k: t(f"q_top_{k}"))
if q1:
    fig = plots.distributions_figure(top_tokens, temps, probs_chosen, t("fig_dist_title", tail=tail), t("fig_dist_y"),
                                     [f"T = {t.num(T_, 'g')}" for T_ in temps])
    data = {"token": top_tokens, "token_id": sw.top_ids.tolist()}
    data.update({f"p_T={T_:g}": p.tolist() for T_, p in zip(temps, probs_chosen)})
    page.figure(fig, "distributions", data)
stats_box = st.container()      # each T's entropy line, filled in below once "entropy" is answered too

h1, h_hot = s1.entropy_bits, s_hot.entropy_bits
q2 = page.predict("entropy", t("q_entropy", T=hot), ("higher", "lower"), "higher" if h_hot > h1 else "lower",
                  t("q_entropy_why", T=hot, h1=h1, h2=h_hot, n1=s1.tokens_for_90, n2=s_hot.tokens_for_90),
                  format_func=lambda k: t(f"q_entropy_{k}"))
if q1 and q2:           # these lines measure the entropy at each T: the answer to "entropy"
    with stats_box:
        for T_ in temps:
            a = at[float(T_)]
            st.caption(t("stats_line_one" if a.tokens_for_90 == 1 else "stats_line", T=T_, H=a.entropy_bits,
                         tok=top_tokens[0], p=a.top_prob, n90=a.tokens_for_90))
if q2:
    fig = plots.sweep_figure(SWEEP, sw.entropy_bits[:n_sw], sw.top1_prob[:n_sw], temps,
                             {"title": t("fig_sweep_title"), "entropy": t("sweep_entropy"),
                              "top1": t("sweep_top1"), "x": t("sweep_x")}, fmt=t.num)
    page.figure(fig, "entropy_vs_T", {"T": SWEEP.tolist(), "entropy_bits": sw.entropy_bits[:n_sw].tolist(),
                                      "top1_prob": sw.top1_prob[:n_sw].tolist()})

rank_temps = [T_ for T_ in temps if T_ > 0] or [1.0]
scaled = temperature.scaled_logits(logits, sw.top_ids[:8], rank_temps)
if q1:                  # its title and lines answer "top": the order never changes
    fig = plots.rank_figure(top_tokens[:8], scaled, [f"T = {t.num(T_, 'g')}" for T_ in rank_temps],
                            {"title": t("fig_rank_title"), "y": t("fig_rank_y")})
    page.figure(fig, "logits_over_T", {"token": top_tokens[:8],
                                       **{f"logit/T T={T_:g}": col for T_, col in zip(rank_temps, scaled)}})

# ---- continuations (the long part: progress + cache) -------------------------------------
st.subheader(t("gen_title"))
with st.spinner(t("gen_running", n=n_new)):
    (greedy_steps, bad), sampled_steps, inputs = later.results()
labels = {"model": t("lbl_model"), "final": t("lbl_final"), "rank": t("lbl_rank"), "stage_temperature": t("lbl_final")}
g1, g2 = st.columns(2)
g1.markdown(f"**{t('gen_greedy')}**")
g1.html(tokens_html(m.tokenizer, prompt.text[-200:], greedy_steps, labels, fmt=t.num))
g2.markdown(f"**{t('gen_sampled', T=T, seed=seed)}**")
g2.html(tokens_html(m.tokenizer, prompt.text[-200:], sampled_steps, labels, fmt=t.num))
st.caption(t("gen_caption"))

page.notice()

# ---- live checks (lib/concepts/temperature/checks.py) -------------------------------------
greedy_ids = tuple(s.token for s in greedy_steps)
page.checks(checks.page_checks(inputs, greedy_ids, bad, t))
page.try_this()
page.code(temperature.temperature_probs, temperature.entropy_bits, temperature.ranks_identical,
          generate.generate)
page.sources()
page.finish()
