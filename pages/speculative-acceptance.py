"""Speculative sampling: acceptance and correction (CONCEPTS.md §6). Widgets and layout only."""
import streamlit as st

from lib.ui import runtime
from lib.concepts.speculative_acceptance import figures as plots
from lib.decoding.speculative import acceptance as speculative
from lib.decoding.speculative import speculative_decode
from lib.reference import speculative_step_fit as step_fit
from lib.decoding.speculative.drafts import early_exit_distributions, early_exit_logits
from lib.concepts.speculative_acceptance import checks
from lib.decoding import generate
from lib.decoding.sampling import SamplingConfig
from lib.model.tokens import token_texts
from lib.ui.page import ConceptPage

TRIALS = (2_000, 5_000, 20_000, 50_000)
TOP = 8                 # tokens of p and of q shown in the bar charts (union, + "rest")
GREEDY_CHECK_TOKENS = 8
ALPHA_BINS = ((0.0, 0.25), (0.25, 0.5), (0.5, 0.75), (0.75, 1.0001))

page = ConceptPage("speculative-acceptance")
t = page.t
m = page.model()
L = m.spec.n_layers

left, right = page.controls()
prompt = page.prompt(container=left)
k = page.state.number_slider("k", t("k_label"), 1, L - 1, L - 1, help=t("k_help"), container=right)
c1, c2 = right.columns(2)
T = page.state.number_slider("T", t("t_label"), 0.1, 2.0, 1.0, step=0.05, container=c1)
top_p = page.state.number_slider("top_p", t("top_p_label"), 0.5, 1.0, 1.0, step=0.05, help=t("top_p_help"),
                                 container=c2)
c3, c4 = left.columns(2)
n_trials = page.state.select("n", t("n_label"), TRIALS, 20_000, format_func=lambda v: t.num(v, ","), container=c3)
seed = page.state.integer("seed", t("seed_label"), 0, 2**31 - 1, 0, container=c4)
c5, c6 = left.columns(2)
gamma = page.state.number_slider("gamma", t("gamma_label"), 1, 8, 4, container=c5)
wrong = page.state.select("wrong", t("wrong_label"), ("target", "none"), "target",
                          format_func=lambda v: t(f"wrong_{v}"), help=t("wrong_help"), container=c6)
cfg = SamplingConfig(T, top_p=None if top_p >= 1.0 else top_p)

# ---- everything this run measures (cached per model, prompt and settings) -----------------------
with st.spinner(t("running")):
    exits = runtime.cached(early_exit_logits)(m.engine, prompt.ids)   # the one forward: (V,), (L, V) logits, K/V
    p, qs = runtime.cached(early_exit_distributions)(m.engine, prompt.ids, cfg, _exits=exits)   # (V,), (L, V)
    q = qs[k - 1]


def _greedy_pair():
    """The early-exit speculative greedy run and plain greedy decoding over as many tokens."""
    g = runtime.cached(speculative_decode.early_exit_greedy)(m.engine, prompt.ids, k, gamma, GREEDY_CHECK_TOKENS)
    return g, runtime.cached(generate.greedy)(m.engine, prompt.ids, len(g.new_ids)).new_ids


# Started now, collected where they are shown (issue 29): the first figures need only p and q.
# The block is computed where it is shown, by this script run: before its question is answered
# it is the page's first figure. The Monte Carlo (milliseconds) starts now; the checks' work
# (a speculative and a plain greedy run, the step fits: ~1-2 s) starts once the block is drawn,
# so that it does not share the two cores with the first figure (docs/BENCHMARKS.md, 2026-12-07).
mc_job = runtime.start(lambda: runtime.cached(speculative.monte_carlo)(p, q, n_trials, seed, "residual"),
                       lambda: runtime.cached(speculative.monte_carlo)(p, q, n_trials, seed, wrong))
b = speculative.breakdown(p, q, TOP)
tokens = token_texts(m.tokenizer, b.token_ids) + [t("rest")]

# ---- p, q, overlap and residual --------------------------------------------------------------
st.subheader(t("dist_title"))
bin_i = next(i for i, (lo, hi) in enumerate(ALPHA_BINS) if lo <= b.alpha < hi)
if page.predict("alpha", t("q_alpha", k=k, L=L), range(len(ALPHA_BINS)), bin_i,
                t("q_alpha_why", a=b.alpha, tv=b.tv, k=k),
                format_func=lambda i: t("q_alpha_bin", lo=100 * ALPHA_BINS[i][0], hi=min(100.0, 100 * ALPHA_BINS[i][1]))):
    fig = plots.bars_figure(tokens, {t("s_p"): b.p, t("s_q", k=k): b.q, t("s_min"): b.overlap, t("s_res"): b.residual},
                            t("fig_dist_title", k=k, a=b.alpha), t("prob"),
                            {t("s_p"): "#3182bd", t("s_q", k=k): "#9ecae1", t("s_min"): "#31a354", t("s_res"): "#e6550d"})
    page.figure(fig, "p_q_residual", {"token": tokens, "p": b.p.tolist(), "q": b.q.tolist(),
                                      "min_p_q": b.overlap.tolist(), "residual": b.residual.tolist()})
    st.markdown(t("alpha_line", a=b.alpha, tv=b.tv, k=k))
    alphas = [speculative.acceptance_probability(p, qs[j]) for j in range(L)]
    fig = plots.alpha_by_layer_figure(list(range(1, L + 1)), alphas, k,
                                      {"title": t("fig_alpha_title"), "x": t("fig_alpha_x"), "alpha": t("fig_alpha_y")})
    page.figure(fig, "alpha_by_layers", {"layers_k": list(range(1, L + 1)), "alpha": alphas})

# ---- one gamma-token block on the real text, one verification step per click ---------------------
st.subheader(t("block_title", g=gamma, k=k))
with st.spinner(t("running")):
    blk = runtime.cached(speculative_decode.early_exit_block)(m.engine, prompt.ids, k, gamma, cfg, seed,
                                                              _exits=exits)
n_steps = len(blk.u) + 1                       # each verified proposal, then the residual / bonus draw
step_key = page.state._key("step")


def _move(delta: int) -> None:
    st.session_state[step_key] = min(max(int(st.session_state.get(step_key, 1)) + delta, 1), gamma + 1)


if st.session_state.get(step_key, 1) > gamma + 1:        # gamma was lowered: keep the slider in range
    st.session_state[step_key] = gamma + 1
b1, b2, b3 = st.columns([1, 1, 4])
b1.button(t("step_back"), on_click=_move, args=(-1,), key="spec.step.back", width="stretch")
b2.button(t("step_next"), on_click=_move, args=(1,), key="spec.step.next", width="stretch")
step = page.state.number_slider("step", t("step_label"), 1, gamma + 1, 1, help=t("step_help"), container=b3)
shown = min(step, n_steps)
draft_txt = token_texts(m.tokenizer, blk.proposals)
new_tok = token_texts(m.tokenizer, [blk.token])[0]
outcome = ["✓" if i < blk.accepted else "✗" for i in range(len(blk.proposals))]
positions = [f"{i + 1}: {d}" for i, d in enumerate(draft_txt)]
u_shown = [blk.u[i] if i < len(blk.u) and i < shown else None for i in range(len(positions))]
fig = plots.block_figure(positions, blk.p_prob, blk.q_prob, blk.accept_prob, u_shown, outcome,
                         {"title": t("fig_block_title", g=len(blk.proposals)), "p": t("s_p_d"), "q": t("s_q_d"),
                          "accept": t("s_accept"), "u": t("s_u"), "y": t("prob")}, fmt=t.num)
page.figure(fig, "block", {"position": positions, "q_of_draft": blk.q_prob, "p_of_draft": blk.p_prob,
                           "accept_prob": blk.accept_prob, "u": blk.u + [None] * (len(positions) - len(blk.u))})
check_job = runtime.start(_greedy_pair, lambda: runtime.cached(step_fit.step_fits)(p, q))
if step > n_steps:
    st.caption(t("step_clamped", n=n_steps))
lines = []
for i in range(min(shown, len(blk.u))):
    ok = i < blk.accepted
    lines.append(t("step_accept" if ok else "step_reject", i=i + 1, x=draft_txt[i], q=blk.q_prob[i], p=blk.p_prob[i],
                   r=blk.accept_prob[i], u=blk.u[i], rest=len(blk.proposals) - i - 1))
if shown == n_steps:
    key = "step_residual" if blk.from_residual else "step_bonus"
    lines.append(t(key, i=blk.accepted + 1, tok=new_tok, n=blk.emitted, g=len(blk.proposals)))
st.markdown("\n".join(f"{j + 1}. {line}" for j, line in enumerate(lines)))
if shown == n_steps:
    top = blk.top_r if blk.from_residual else blk.top_p[len(blk.proposals)]
    names = token_texts(m.tokenizer, [i for i, _ in top])
    title = t("fig_resid_title" if blk.from_residual else "fig_bonus_title", i=blk.accepted + 1, tok=new_tok)
    fig = plots.bars_figure(names, {t("s_res") if blk.from_residual else t("s_p"): [v for _, v in top]}, title,
                            t("prob"), {t("s_res"): "#e6550d", t("s_p"): "#3182bd"}, height=360)
    page.figure(fig, "correction_draw", {"token": names, "probability": [v for _, v in top]})

# ---- Monte Carlo of the accept / correct step ---------------------------------------------
st.subheader(t("mc_title"))
with st.spinner(t("mc_running", n=n_trials)):
    exact, broken = mc_job.results()
fit_exact = speculative.fit_test(exact.outputs, p)
fit_broken = speculative.fit_test(broken.outputs, p)
follows = fit_broken.p_value > checks.FIT_LEVEL
if page.predict("broken", t("q_broken", v=t(f"wrong_{wrong}"), n=n_trials), ("yes", "no"), "yes" if follows else "no",
                t("q_broken_why_yes" if follows else "q_broken_why_no", pv=fit_broken.p_value, tv=fit_broken.tv,
                  noise=fit_broken.tv_noise, a=b.alpha),
                format_func=lambda v: t(f"q_broken_{v}")):
    h_exact = speculative.histogram(exact.outputs, b.token_ids)
    h_broken = speculative.histogram(broken.outputs, b.token_ids)
    s_broken = t("s_broken", v=t(f"wrong_{wrong}"))
    fig = plots.bars_figure(tokens, {t("s_p"): b.p, t("s_exact"): h_exact, s_broken: h_broken},
                            t("fig_mc_title", n=n_trials), t("freq"),
                            {t("s_p"): "#3182bd", t("s_exact"): "#31a354", s_broken: "#de2d26"})
    page.figure(fig, "monte_carlo", {"token": tokens, "p": b.p.tolist(), "exact_rule": h_exact.tolist(),
                                     f"without_correction_{wrong}": h_broken.tolist()})
    st.markdown(t("mc_line", n=n_trials, rate=exact.acceptance_rate, a=b.alpha,
                  chi=fit_exact.chi2, dof=fit_exact.dof, pv=fit_exact.p_value, tv=fit_exact.tv, noise=fit_exact.tv_noise,
                  chi_b=fit_broken.chi2, dof_b=fit_broken.dof, pv_b=fit_broken.p_value, tv_b=fit_broken.tv))

page.notice()
with st.spinner(t("running")):
    (g_run, plain), steps = check_job.results()
page.checks(checks.page_checks(checks.AcceptanceInputs(p, q, exact, broken, g_run.new_ids, plain, g_run.target_calls,
                                                       steps), t))
page.try_this()
page.code(speculative.accept_or_resample, speculative.acceptance_ratio, speculative.residual,
          speculative.monte_carlo, speculative_decode.SpeculativeDecoder.step,
          speculative_decode.SpeculativeDecoder._verify)
page.sources()
page.finish()
