"""Attention logit scaling (CONCEPTS.md §8): widgets and layout only; the numbers come from lib/."""
import numpy as np
import streamlit as st

from lib.ui import runtime
from lib.concepts.attention_scaling import attention_scaling as scaling
from lib.concepts.attention_scaling import checks
from lib.concepts.attention_scaling import figures as plots
from lib.model.tokens import token_texts
from lib.ui.page import ConceptPage

SCALE_LOG2 = tuple(range(-8, 1))                 # the slider: scale = 2^x (Gemma 3 uses 2^-4)
SWEEP = np.geomspace(2.0 ** -9, 2.0 ** 2, 45)    # scales for the entropy curve
DIMS = (4, 16, 64, 256, 1024)                    # random-vector dimensions

page = ConceptPage("attention-scaling")
t = page.t
m = page.model()
spec = m.spec

left, right = page.controls()
prompt = page.prompt(default=t("prompt_default"), max_tokens=64, container=left)
c1, c2 = right.columns(2)
layer = page.layer_select(container=c1)
head = page.state.select("head", t("head_label"), tuple(range(spec.n_heads)), 0, container=c2)
x = page.state.number_slider("s", t("scale_label"), SCALE_LOG2[0], SCALE_LOG2[-1], 0, step=1,
                             help=t("scale_help"), container=right)
scale = 2.0 ** x
model_log2 = float(np.log2(spec.attn_scale))
right.caption(t("scale_caption", s=scale, ms=spec.attn_scale, f=scale / spec.attn_scale, d=spec.head_dim))

# ---- one forward per scale, cached per (model, prompt, layer, scale) ------------------------------
factor = scale / spec.attn_scale
with st.spinner(page.c("working")):
    ls = runtime.cached(scaling.layer_scores)(m.engine, prompt.ids, layer)
    ls_chosen = ls if factor == 1.0 else runtime.cached(scaling.layer_scores)(m.engine, prompt.ids, layer, factor)
    dv = runtime.cached(scaling.random_dot_variance)(DIMS, 20_000, 0)
results = checks.page_checks(dv, ls, ls_chosen, t)
tokens = token_texts(m.tokenizer, prompt.ids)
dots = ls.dots[head]                                                      # (T, T)
p_model = scaling.scaled_probs(dots, spec.attn_scale).numpy()
p_chosen = scaling.scaled_probs(dots, scale).numpy()
ent_model = float(scaling.row_entropy_bits(scaling.scaled_probs(dots, spec.attn_scale)).mean())
ent_chosen = float(scaling.row_entropy_bits(scaling.scaled_probs(dots, scale)).mean())
T = len(tokens)

st.subheader(t("maps_title"))
verdict = "sharper" if ent_chosen < ent_model - 1e-6 else "flatter" if ent_chosen > ent_model + 1e-6 else "same"
if page.predict("sharp", t("q_sharp", s=scale, s0=spec.attn_scale, h=head, l=layer), ("sharper", "same", "flatter"),
                verdict, t("q_sharp_why", em=ent_model, ec=ent_chosen, mm=float(p_model.max(-1).mean()),
                           mc=float(p_chosen.max(-1).mean())),
                format_func=lambda k: t(f"q_sharp_{k}")):
    fig = plots.heatmaps(p_model, p_chosen, tokens,
                         (t("map_model", s=spec.attn_scale), t("map_chosen", s=scale)),
                         {"title": t("fig_maps_title", l=layer, h=head), "x": t("axis_key"), "y": t("axis_query"),
                          "hover": t("maps_hover")})
    page.figure(fig, "attention_maps", {"query": [i for i in range(T) for _ in range(T)],
                                        "key": [j for _ in range(T) for j in range(T)],
                                        "weight_model_scale": p_model.ravel().tolist(),
                                        "weight_chosen_scale": p_chosen.ravel().tolist()})
    st.caption(t("maps_stats", em=ent_model, ec=ent_chosen,
                 mm=float(p_model.max(-1).mean()), mc=float(p_chosen.max(-1).mean()),
                 q=float(ls.q_norm[head].median()), k=float(ls.k_norm.median()),
                 r=float(dots[ls.allowed[head]].abs().median())))

    stats = scaling.scale_sweep(dots, ls.allowed[head], tuple(SWEEP.tolist()))
    fig = plots.sweep_figure(stats.scales, stats.mean_entropy, stats.mean_max, stats.max_entropy, spec.attn_scale,
                             scale, {"title": t("fig_sweep_title"), "entropy": t("sweep_entropy"), "max": t("sweep_max"),
                                     "uniform": t("sweep_uniform"), "model": t("sweep_model"),
                                     "chosen": t("sweep_chosen"), "x": t("sweep_x")}, fmt=t.num)
    page.figure(fig, "entropy_vs_scale", {"scale": stats.scales.tolist(),
                                          "mean_row_entropy_bits": stats.mean_entropy.tolist(),
                                          "mean_max_weight": stats.mean_max.tolist()})

# ---- random vectors (synthetic side panel) ----------------------------------------------------
st.subheader(t("var_title"))
fig = plots.variance_figure(dv.dims, dv.var_raw, dv.var_scaled,
                            {"title": t("fig_var_title", n=dv.n_samples), "ideal": t("var_ideal"),
                             "raw": t("var_raw"), "scaled": t("var_scaled"), "x": t("var_x"), "y": t("var_y")}, fmt=t.num)
page.figure(fig, "random_dot_variance", {"d": dv.dims.tolist(), "var_dot": dv.var_raw.tolist(),
                                         "var_dot_over_sqrt_d": dv.var_scaled.tolist()})
st.caption(t("var_caption"))

# ---- the whole model at another scale -------------------------------------------------------------
st.subheader(t("model_title"))
factors = tuple(2.0 ** (s_ - model_log2) for s_ in SCALE_LOG2)
with st.spinner(t("model_running", n=len(factors))):
    sw = runtime.cached(scaling.model_scale_sweep)(m.engine, prompt.ids, factors)
i_model = int(np.argmin(np.abs(sw.factors - 1.0)))
i_chosen = int(np.argmin(np.abs(sw.factors - factor)))
top1_text = token_texts(m.tokenizer, sw.top1_ids)
kept = top1_text[i_chosen] == top1_text[i_model]
if page.predict("next", t("q_next", s=scale, s0=spec.attn_scale, tok=top1_text[i_model]), ("yes", "no"),
                "yes" if kept else "no",
                t("q_next_why_kept" if kept else "q_next_why_changed", s=scale, tok=top1_text[i_chosen],
                  p=sw.top1_probs[i_chosen], tok0=top1_text[i_model], p0=sw.top1_probs[i_model],
                  kl=sw.kl_from_model[i_chosen]),
                format_func=lambda k: t(f"q_next_{k}")):
    top_tokens = token_texts(m.tokenizer, sw.top_ids)
    rows = [i_model] if i_chosen == i_model else [i_model, i_chosen]
    fig = plots.next_token_figure(top_tokens, [t("next_factor", f=sw.factors[i] * spec.attn_scale) for i in rows],
                                  [sw.top_probs[i] for i in rows], {"title": t("fig_next_title"), "y": t("next_y")})
    page.figure(fig, "next_token", {"token": top_tokens,
                                    **{f"p_scale={sw.factors[i] * spec.attn_scale:g}": sw.top_probs[i].tolist()
                                       for i in rows}})
    scales_all = sw.factors * spec.attn_scale
    fig = plots.model_sweep_figure(scales_all, sw.entropy_bits, sw.kl_from_model,
                                   {"title": t("fig_model_title", L=spec.n_layers), "entropy": t("model_entropy"),
                                    "kl": t("model_kl"), "x": t("sweep_x")}, fmt=t.num)
    page.figure(fig, "model_scale_sweep", {"scale": scales_all.tolist(), "next_token_entropy_bits": sw.entropy_bits.tolist(),
                                           "kl_bits": sw.kl_from_model.tolist(), "top1": top1_text,
                                           "top1_prob": sw.top1_probs.tolist()})
    st.caption(t("model_caption", s=scale, tok=top1_text[i_chosen], p=sw.top1_probs[i_chosen],
                 tok0=top1_text[i_model], p0=sw.top1_probs[i_model], kl=sw.kl_from_model[i_chosen]))

page.notice()
page.checks(results + page.spec_checks(m, "scale"))
page.try_this()
page.code(scaling.layer_scores, scaling.scaled_probs, scaling.rescale_hook, scaling.order_inversions,
          scaling.random_dot_variance)
page.sources()
page.finish()
