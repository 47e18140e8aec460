"""Activation outliers (CONCEPTS.md §18): widgets and layout only; the numbers come from lib/."""
import numpy as np
import streamlit as st

from lib.concepts.quantization import activation_capture as ac
from lib.concepts.quantization import quantize as qz
from lib.ui import runtime
from lib.concepts.check_result import CheckResult
from lib.concepts.activation_outliers import figures as plots
from lib.ui.page import ConceptPage

BITS = (8, 4, 2)
GROUPS = (32, 64, 128)
OUTLIER_FACTOR = 6.0   # a channel is an outlier if its max |x| > 6 x the median channel max

page = ConceptPage("activation-outliers")
t = page.t
m = page.model()

left, right = page.controls()
prompt = page.prompt(default=t("default_text"), max_tokens=128, container=left)
point = page.state.select("point", t("point_label"), ac.POINTS, "mlp_act",
                          format_func=lambda p: t(f"point_{p}"), help=t("point_help"), container=right)
layer = page.state.number_slider("layer", t("layer_label"), 0, m.spec.n_layers - 1, min(5, m.spec.n_layers - 1),
                                 container=right)
c1, c2, c3 = right.columns(3)
bits = page.state.select("bits", t("bits_label"), BITS, 8, format_func=lambda b: f"int{b}", container=c1)
group = page.state.select("group", t("group_label"), GROUPS, 64, help=t("group_help"), container=c2)
clip_factor = page.state.number_slider("clip", t("clip_label"), 1.0, 50.0, 6.0, step=0.5,
                                       help=t("clip_help"), container=c3)

if len(prompt.ids) < 3:
    st.warning(t("too_short"))
    page.finish()
    st.stop()

# ---- capture (one forward, cached per model + text) ---------------------------------------
with st.spinner(t("capturing", n=len(prompt.ids))):
    cap = runtime.cached(ac.capture, max_entries=4)(m.engine, prompt.ids)
acts = cap.acts[point][layer]                                   # (T-1, C) this layer, BOS excluded
T, C = acts.shape
cmax = ac.channel_max(acts).numpy()
median_cmax = float(np.median(cmax))
outliers = ac.outlier_channels(acts, OUTLIER_FACTOR).numpy()
clip_at = clip_factor * median_cmax
where = t(f"point_{point}") + f", {t('layer_word')} {layer}"

top = int(cmax.argmax())
st.markdown(t("summary", where=where, T=T, C=C, n_out=len(outliers), top=top, vmax=float(cmax[top]),
              med=float(np.median(np.abs(acts.numpy()))), ratio=float(cmax[top] / max(median_cmax, 1e-12))))

fig = plots.channel_max_figure(cmax, outliers, {
    "title": t("fig_cmax_title", n=len(outliers), C=C, f=OUTLIER_FACTOR, where=where),
    "x": t("channel"), "y": t("fig_cmax_y"), "hover": t("channel") + " %{x}: %{y:.3g}",
    "threshold": OUTLIER_FACTOR * median_cmax, "threshold_text": t("fig_cmax_thr", f=OUTLIER_FACTOR)})
page.figure(fig, "channel_max", {"channel": list(range(C)), "max_abs": cmax.tolist(),
                                 "outlier": [bool(i in set(outliers.tolist())) for i in range(C)]})

# ---- the step each scale choice gives -------------------------------------------------------
steps = {g: qz.step_size(acts, qz.QuantSpec(bits, g, True, group)) for g in qz.GRANULARITIES}
typical = {t(f"gran_{g}"): float(s.median()) for g, s in steps.items()}
fig = plots.histogram_figure(acts.flatten().numpy(), typical, {
    "title": t("fig_hist_title", bits=bits, where=where), "x": t("fig_hist_x"), "y": t("fig_hist_y"),
    "values": t("fig_hist_values")})
page.figure(fig, "histogram", {"scale_choice": list(typical), "median_step": list(typical.values())},
            caption=t("fig_hist_caption", bits=bits))

all_layers = np.stack([ac.channel_max(cap.acts[point][l]).numpy() for l in range(m.spec.n_layers)])
fig = plots.layer_heatmap(all_layers, {"title": t("fig_heat_title", point=t(f"point_{point}")),
                                       "x": t("channel"), "y": t("layer_word"),
                                       "hover": t("layer_word") + " %{y}, " + t("channel") + " %{x}: 10^%{z:.2f}"})
page.figure(fig, "channel_max_by_layer", {f"layer_{l}": all_layers[l].tolist() for l in range(m.spec.n_layers)})

# ---- quantization error per scale choice ----------------------------------------------------
st.subheader(t("err_title"))
grid = qz.error_grid(acts, BITS, qz.GRANULARITIES, group)
sqnr = np.array([[e.sqnr_db for e in row] for row in grid])
gran_names = [t(f"gran_{g}") + (f" {group}" if g == "group" else "") for g in qz.GRANULARITIES]
fig = plots.sqnr_figure(list(BITS), gran_names, sqnr, {"title": t("fig_sqnr_title", where=where),
                                                        "y": t("fig_sqnr_y")})
rows = [{"bits": b, "scale": gran_names[j], "SQNR_dB": round(grid[i][j].sqnr_db, 2), "MSE": grid[i][j].mse,
         "max_error": grid[i][j].max_error} for i, b in enumerate(BITS) for j in range(len(gran_names))]
page.figure(fig, "sqnr", {k: [r[k] for r in rows] for k in rows[0]})
st.dataframe(rows, hide_index=True, width="stretch")

# ---- inject the quantized activation back into the forward pass (long: progress + cache) ----
st.subheader(t("inj_title"))
st.caption(t("inj_caption", where=where, bits=bits, clip=clip_at, f=clip_factor))
bar = st.progress(0.0, text=t("inj_running"))
table = []
for i, kind in enumerate(ac.EXPERIMENTS):
    b, g = (8, 64) if kind == "clip" else (bits, group)          # only what the experiment uses
    c = clip_at if kind.startswith("clip") else 0.0               # goes into the cache key
    table.append(runtime.cached(ac.injection_row, max_entries=96)(
        m.engine, prompt.ids, cap.hidden, acts, point, layer, b, g, c, kind))
    bar.progress((i + 1) / len(ac.EXPERIMENTS), text=t("inj_running"))
bar.empty()
def exp_name(kind: str) -> str:
    if kind == "clip":
        return t("exp_clip")
    if kind == "clip_tensor":
        return t("exp_clip_tensor", bits=bits)
    return f"int{bits} " + t(f"gran_{kind}") + (f" {group}" if kind == "group" else "")


names = [exp_name(r.kind) for r in table]
ppl_ref = table[0].effect.ppl_ref
fig = plots.effect_figure(names, [max(r.effect.kl_mean, 1e-12) for r in table], [r.effect.ppl_new for r in table],
                          ppl_ref, {"title": t("fig_eff_title", where=where), "kl": t("fig_eff_kl"),
                                    "ppl": t("fig_eff_ppl"), "ppl_ref": t("fig_eff_ppl_ref", p=ppl_ref)})
eff_rows = [{"experiment": exp_name(r.kind), "SQNR_dB": round(r.sqnr_db, 2), "KL_mean_nats": r.effect.kl_mean,
             "KL_max_nats": r.effect.kl_max, "perplexity": round(r.effect.ppl_new, 3),
             "same_top1": round(r.effect.top1_agree, 3)} for r in table]
page.figure(fig, "injection", {k: [r[k] for r in eff_rows] for k in eff_rows[0]})
st.dataframe(eff_rows, hide_index=True, width="stretch")
st.caption(t("ppl_caption", n=T, p=ppl_ref))

page.notice()

# ---- live checks ------------------------------------------------------------------------------
spec_t = qz.QuantSpec(bits, "tensor", True, group)
q_t = qz.quantize(acts, spec_t)
scale_expected = float(acts.abs().max() / spec_t.qmax)   # the same float32 division
spec_c = qz.QuantSpec(bits, "channel", True, group)
q_c = qz.quantize(acts, spec_c)
col_err = float((q_c.scale.flatten() - acts.abs().amax(0).clamp_min(1e-30) / spec_c.qmax).abs().max())
err_bound = float(((acts - q_t.dequant).abs() - q_t.scale / 2).max())
sq = dict(zip(qz.GRANULARITIES, sqnr[BITS.index(bits)]))
finer_ok = all(sq[g] >= sq["tensor"] for g in ("token", "channel", "group"))
clip_row = next(r for r in table if r.kind == "clip")
n_clipped = int((acts.abs() > clip_at).sum())
page.checks([
    CheckResult(t("check_scale", bits=bits), float(q_t.scale.flatten()[0]) == scale_expected and col_err < 1e-12,
                t("check_scale_detail", s=float(q_t.scale.flatten()[0]), m=float(acts.abs().max()),
                  q=spec_t.qmax, e=scale_expected, c=col_err)),
    CheckResult(t("check_finer", bits=bits), finer_ok,
                t("check_finer_detail", t=sq["tensor"], k=sq["token"], c=sq["channel"], g=sq["group"], gs=group)),
    CheckResult(t("check_bound"), err_bound <= 1e-6 * float(acts.abs().max()),
                t("check_bound_detail", e=float((acts - q_t.dequant).abs().max()), h=float(q_t.scale.flatten()[0]) / 2)),
    CheckResult(t("check_clip"), (n_clipped > 0) == (clip_row.effect.kl_mean > 0),
                t("check_clip_detail", thr=clip_at, kl=clip_row.effect.kl_mean, p0=ppl_ref, p1=clip_row.effect.ppl_new,
                  n=n_clipped, N=acts.numel())),
])
page.try_this()
page.code(qz.quantize, ac.outlier_channels, ac.injection_hooks, ac.compare)
page.sources()
page.finish()
