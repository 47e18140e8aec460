"""Speculative sampling: acceptance and correction (CONCEPTS.md §6). Widgets and layout only."""
import streamlit as st

from lib.decoding import generate
from lib.ui import runtime
from lib.concepts.speculative import speculative, speculative_decode
from lib.concepts.check_result import CheckResult
from lib.concepts.speculative.drafts import early_exit_distributions
from lib.concepts.speculative import figures as plots
from lib.decoding.sampling import SamplingConfig
from lib.model.tokens import token_texts
from lib.ui.page import ConceptPage

TRIALS = (2_000, 5_000, 20_000, 50_000)
TOP = 8                 # tokens of p and of q shown in the bar charts (union, + "rest")
GREEDY_CHECK_TOKENS = 8

page = ConceptPage("speculative-acceptance")
t = page.t
m = page.model()
L = m.spec.n_layers

left, right = page.controls()
prompt = page.prompt(container=left)
k = page.state.number_slider("k", t("k_label"), 1, L - 1, min(14, L - 1), help=t("k_help"), container=right)
c1, c2 = right.columns(2)
T = page.state.number_slider("T", t("t_label"), 0.1, 2.0, 1.0, step=0.05, container=c1)
top_p = page.state.number_slider("top_p", t("top_p_label"), 0.5, 1.0, 1.0, step=0.05, help=t("top_p_help"),
                                 container=c2)
c3, c4 = left.columns(2)
n_trials = page.state.select("n", t("n_label"), TRIALS, 20_000, format_func=lambda v: f"{v:,}", container=c3)
seed = page.state.integer("seed", t("seed_label"), 0, 2**31 - 1, 0, container=c4)
c5, c6 = left.columns(2)
gamma = page.state.number_slider("gamma", t("gamma_label"), 1, 8, 4, container=c5)
wrong = page.state.select("wrong", t("wrong_label"), ("target", "none"), "target",
                          format_func=lambda v: t(f"wrong_{v}"), help=t("wrong_help"), container=c6)
cfg = SamplingConfig(T, top_p=None if top_p >= 1.0 else top_p)

# ---- p and every early-exit q at the position after the prompt (one forward) ---------------
with st.spinner(t("running")):
    p, qs = runtime.cached(early_exit_distributions)(m.engine, prompt.ids, cfg)      # (V,), (L, V)
q = qs[k - 1]
b = speculative.breakdown(p, q, TOP)
tokens = token_texts(m.tokenizer, b.token_ids) + [t("rest")]

st.subheader(t("dist_title"))
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

# ---- Monte Carlo of the accept / correct step ---------------------------------------------
st.subheader(t("mc_title"))
with st.spinner(t("mc_running", n=n_trials)):
    exact = runtime.cached(speculative.monte_carlo)(p, q, n_trials, seed, "residual")
    broken = runtime.cached(speculative.monte_carlo)(p, q, n_trials, seed, wrong)
fit_exact = speculative.fit_test(exact.outputs, p)
fit_broken = speculative.fit_test(broken.outputs, p)
predicted_broken = speculative.output_distribution(p, q, wrong).float()
fit_broken_pred = speculative.fit_test(broken.outputs, predicted_broken)
h_exact = speculative.histogram(exact.outputs, b.token_ids)
h_broken = speculative.histogram(broken.outputs, b.token_ids)
fig = plots.bars_figure(tokens, {t("s_p"): b.p, t("s_exact"): h_exact, t("s_broken", v=t(f"wrong_{wrong}")): h_broken},
                        t("fig_mc_title", n=n_trials), t("freq"),
                        {t("s_p"): "#3182bd", t("s_exact"): "#31a354", t("s_broken", v=t(f"wrong_{wrong}")): "#de2d26"})
page.figure(fig, "monte_carlo", {"token": tokens, "p": b.p.tolist(), "exact_rule": h_exact.tolist(),
                                 f"without_correction_{wrong}": h_broken.tolist()})
st.markdown(t("mc_line", n=n_trials, rate=exact.acceptance_rate, a=b.alpha,
              chi=fit_exact.chi2, dof=fit_exact.dof, pv=fit_exact.p_value, tv=fit_exact.tv, noise=fit_exact.tv_noise,
              chi_b=fit_broken.chi2, dof_b=fit_broken.dof, pv_b=fit_broken.p_value, tv_b=fit_broken.tv))

# ---- one gamma-token block on the real text -----------------------------------------------
st.subheader(t("block_title", g=gamma, k=k))
with st.spinner(t("running")):
    blk = runtime.cached(speculative_decode.early_exit_block)(m.engine, prompt.ids, k, gamma, cfg, seed)
draft_txt = token_texts(m.tokenizer, blk.proposals)
outcome, rows = [], []
for i, (d, qd, pd, a) in enumerate(zip(draft_txt, blk.q_prob, blk.p_prob, blk.accept_prob)):
    if i < blk.accepted:
        verdict = t("v_accept")
    elif i == blk.accepted:
        verdict = t("v_reject", tok=token_texts(m.tokenizer, [blk.token])[0])
    else:
        verdict = t("v_unreached")
    outcome.append("✓" if i < blk.accepted else "✗" if i == blk.accepted else "·")
    rows.append({t("col_pos"): i + 1, t("col_draft"): d, "q(x)": round(qd, 4), "p(x)": round(pd, 4),
                 "min(1, p/q)": round(a, 4), t("col_verdict"): verdict})
if blk.accepted == len(blk.proposals):
    rows.append({t("col_pos"): len(blk.proposals) + 1, t("col_draft"): "—", "q(x)": None, "p(x)": None,
                 "min(1, p/q)": None, t("col_verdict"): t("v_bonus", tok=token_texts(m.tokenizer, [blk.token])[0])})
positions = [f"{i + 1}: {d}" for i, d in enumerate(draft_txt)]
fig = plots.block_figure(positions, blk.p_prob, blk.q_prob, blk.accept_prob, outcome,
                         {"title": t("fig_block_title", g=len(blk.proposals), j=blk.accepted),
                          "p": t("s_p_d"), "q": t("s_q_d"), "accept": t("s_accept"), "y": t("prob")})
page.figure(fig, "block", {"position": positions, "q_of_draft": blk.q_prob, "p_of_draft": blk.p_prob,
                           "accept_prob": blk.accept_prob, "verdict": outcome})
st.dataframe(rows, hide_index=True, width="stretch")
st.caption(t("block_caption", j=blk.accepted, g=len(blk.proposals), n=blk.emitted))

page.notice()

# ---- live checks -------------------------------------------------------------------------
with st.spinner(t("running")):
    g_run = runtime.cached(speculative_decode.early_exit_greedy)(m.engine, prompt.ids, k, gamma, GREEDY_CHECK_TOKENS)
    plain = runtime.cached(generate.greedy)(m.engine, prompt.ids, len(g_run.new_ids)).new_ids
identity_gap = abs(b.alpha - (1 - b.tv))
broken_tv = speculative.total_variation(predicted_broken, p)
detectable = broken_tv > 3 * fit_broken.tv_noise
page.checks([
    CheckResult(t("check_alpha"), identity_gap < 1e-9, t("check_alpha_detail", a=b.alpha, tv=b.tv, d=identity_gap)),
    CheckResult(t("check_exact", n=n_trials), fit_exact.passed(),
                t("check_exact_detail", chi=fit_exact.chi2, dof=fit_exact.dof, pv=fit_exact.p_value,
                  tv=fit_exact.tv, noise=fit_exact.tv_noise)),
    CheckResult(t("check_broken", v=t(f"wrong_{wrong}")),
                fit_broken_pred.passed() and (not fit_broken.passed() or not detectable),
                t("check_broken_detail", pv=fit_broken.p_value, pv2=fit_broken_pred.p_value, d=broken_tv,
                  noise=fit_broken.tv_noise)),
    CheckResult(t("check_rate"), abs(exact.acceptance_rate - b.alpha) < 4 * (b.alpha * (1 - b.alpha) / n_trials) ** 0.5 + 1e-9,
                t("check_rate_detail", rate=exact.acceptance_rate, a=b.alpha, n=n_trials)),
    CheckResult(t("check_greedy", k=k, g=gamma), g_run.new_ids == plain,
                t("check_greedy_detail", n=len(plain), calls=g_run.target_calls,
                  same=sum(a == c for a, c in zip(g_run.new_ids, plain)))),
])
page.try_this()
page.code(speculative.accept_or_resample, speculative.residual, speculative.monte_carlo,
          speculative_decode.SpeculativeDecoder.step)
page.sources()
page.finish()
