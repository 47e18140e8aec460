"""Activation outliers (CONCEPTS.md §18): widgets and layout only; the numbers come from lib/."""
import numpy as np
import streamlit as st

from lib.ui import runtime
from lib.concepts.activation_outliers import checks
from lib.concepts.activation_outliers import figures as plots
from lib.core.quantization import activation_capture as ac
from lib.core.quantization import quantize as qz
from lib.ui.page import ConceptPage

BITS = (8, 4, 2)
GROUPS = (32, 64, 128)
OUTLIER_FACTOR = 6.0   # a channel is an outlier if its max |x| > 6 x the median channel max

page = ConceptPage("activation-outliers")
t = page.t
m = page.model()

left, right = page.controls()
prompt = page.prompt(default=t("default_text"), max_tokens=128, container=left)
point = page.state.select("point", t("point_label"), ac.POINTS, "resid_out",
                          format_func=lambda p: t(f"point_{p}"), help=t("point_help"), container=right)
layer = page.state.number_slider("layer", t("layer_label"), 0, m.spec.n_layers - 1, min(11, m.spec.n_layers - 1),
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

# ---- the clipping question's place first (the figures below do not give its answer away);
# the re-runs it needs are the page's slow part and run last, after every figure that does not
# depend on them is drawn -------------------------------------------------------------------------
predict_box = st.container()
n_clip = int((acts.abs() > clip_at).sum())
clip_q = t("predict_q", n=n_clip, N=acts.numel(), pct=100 * n_clip / acts.numel(), thr=clip_at, where=where)
ahead = predict_box.info(page.c("predict_ahead", q=clip_q), icon="🤔")    # asked here once the re-runs are done
bar = predict_box.progress(0.0, text=t("inj_waiting"))

top = int(cmax.argmax())
st.markdown(t("summary", where=where, T=T, C=C, n_out=len(outliers), top=top, vmax=float(cmax[top]),
              med=float(np.median(np.abs(acts.numpy()))), ratio=float(cmax[top] / max(median_cmax, 1e-12))))

fig = plots.channel_max_figure(cmax, outliers, {
    "title": t("fig_cmax_title", n=len(outliers), C=C, f=OUTLIER_FACTOR, where=where),
    "x": t("channel"), "y": t("fig_cmax_y"), "hover": t("channel") + " %{x}: %{y:.3g}",
    "threshold": OUTLIER_FACTOR * median_cmax, "threshold_text": t("fig_cmax_thr", f=OUTLIER_FACTOR)}, fmt=t.num)
page.figure(fig, "channel_max", {"channel": list(range(C)), "max_abs": cmax.tolist(),
                                 "outlier": [bool(i in set(outliers.tolist())) for i in range(C)]})

# ---- the step each scale choice gives -------------------------------------------------------
steps = {g: qz.step_size(acts, qz.QuantSpec(bits, g, True, group)) for g in qz.GRANULARITIES}
typical = {t(f"gran_{g}"): float(s.median()) for g, s in steps.items()}
fig = plots.histogram_figure(acts.flatten().numpy(), typical, {
    "title": t("fig_hist_title", bits=bits, where=where), "x": t("fig_hist_x"), "y": t("fig_hist_y"),
    "values": t("fig_hist_values")}, fmt=t.num)
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
rows = [{t("col_bits"): f"int{b}", t("col_scale"): gran_names[j], t("col_sqnr"): t.num(grid[i][j].sqnr_db, ".2f"),
         t("col_mse"): t.num(grid[i][j].mse, ".3g"), t("col_maxerr"): t.num(grid[i][j].max_error, ".3g")}
        for i, b in enumerate(BITS) for j in range(len(gran_names))]
page.figure(fig, "sqnr", {"bits": [b for b in BITS for _ in gran_names], "scale": gran_names * len(BITS),
                          "sqnr_db": [e.sqnr_db for row in grid for e in row], "mse": [e.mse for row in grid for e in row]})
st.dataframe(rows, hide_index=True, width="stretch")

# ---- inject the quantized activation back into the forward pass (long: progress + cache) ----
st.subheader(t("inj_title"))
st.caption(t("inj_caption", where=where, bits=bits, clip=clip_at, f=clip_factor))


def exp_name(kind: str) -> str:
    if kind == "clip":
        return t("exp_clip")
    if kind == "clip_tensor":
        return t("exp_clip_tensor", bits=bits)
    return f"int{bits} " + t(f"gran_{kind}") + (f" {group}" if kind == "group" else "")


def progress(done, total):           # after each experiment's forward; then the LM head for all of them
    kind = ac.EXPERIMENTS[min(done, total - 1)]
    bar.progress(done / (total + 1), text=t("inj_running_one", i=min(done + 1, total), n=total, name=exp_name(kind)))


bar.progress(0.0, text=t("inj_running_one", i=1, n=len(ac.EXPERIMENTS), name=exp_name(ac.EXPERIMENTS[0])))
rows_of = {}      # one cached call per group of experiments that read the same settings
for kinds, b, g, c in ac.experiment_groups(bits, group, clip_at):
    def one_done(done, total, before=len(rows_of)):
        progress(before + done, len(ac.EXPERIMENTS))
    for r in runtime.cached(ac.injection_rows, max_entries=32)(m.engine, prompt.ids, cap.hidden, acts, point, layer,
                                                               b, g, c, kinds, _progress=one_done):
        rows_of[r.kind] = r
table = [rows_of[k] for k in ac.EXPERIMENTS]
bar.empty()
ahead.empty()
clip_row = next(r for r in table if r.kind == "clip")
rise = clip_row.effect.ppl_new / table[0].effect.ppl_ref - 1
answer = "barely" if rise < 0.01 else "some" if rise < 0.10 else "lot"
with predict_box:
    revealed = page.predict("clip", clip_q, ("barely", "some", "lot"), answer,
                            t("predict_why", p0=table[0].effect.ppl_ref, p1=clip_row.effect.ppl_new, r=100 * rise,
                              n=n_clip), format_func=lambda o: t(f"opt_{o}"))
names = [exp_name(r.kind) for r in table]
ppl_ref = table[0].effect.ppl_ref
if revealed:
    fig = plots.effect_figure(names, [max(r.effect.kl_mean, 1e-12) for r in table], [r.effect.ppl_new for r in table],
                              ppl_ref, {"title": t("fig_eff_title", where=where), "kl": t("fig_eff_kl"),
                                        "ppl": t("fig_eff_ppl"), "ppl_ref": t("fig_eff_ppl_ref", p=ppl_ref)})
    page.figure(fig, "injection", {"experiment": [r.kind for r in table], "sqnr_db": [r.sqnr_db for r in table],
                                   "kl_mean_nats": [r.effect.kl_mean for r in table],
                                   "perplexity": [r.effect.ppl_new for r in table]})
eff_rows = [{t("col_exp"): exp_name(r.kind), t("col_sqnr"): t.num(r.sqnr_db, ".2f"),
             t("col_kl_mean"): t.num(r.effect.kl_mean, ".3g"), t("col_kl_max"): t.num(r.effect.kl_max, ".3g"),
             t("col_ppl"): t.num(r.effect.ppl_new, ".3f"), t("col_top1"): t.num(100 * r.effect.top1_agree, ".1f")}
            for r in table]
by_kind = {r.kind: r for r in table}
ct, pt = by_kind["clip_tensor"], by_kind["tensor"]
if revealed:        # the table's "clip outliers" row and the line below give the perplexity change: the answer
    st.dataframe(eff_rows, hide_index=True, width="stretch")
    st.caption(t("ppl_caption", n=T, p=ppl_ref))
    st.markdown(t("clip_line_better" if ct.sqnr_db > pt.sqnr_db else "clip_line_worse", bits=bits, sc=ct.sqnr_db,
                  st=pt.sqnr_db, p0=ppl_ref, p1=by_kind["clip"].effect.ppl_new,
                  x=by_kind["clip"].effect.ppl_new / ppl_ref, n=int((acts.abs() > clip_at).sum()), N=acts.numel()))
else:
    st.caption(page.c("predict_hidden"))

page.notice()

# ---- live checks ------------------------------------------------------------------------------
sq = dict(zip(qz.GRANULARITIES, sqnr[BITS.index(bits)]))
page.checks(checks.page_checks(acts, bits, group, sq, clip_at, qz.clip(acts, clip_at), by_kind["clip"].effect,
                               ppl_ref, t))
page.try_this()
page.code(qz.quantize, ac.outlier_channels, ac.injection_hooks, ac.compare_runs)
page.sources()
page.finish()
