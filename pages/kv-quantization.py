"""KV cache quantization (CONCEPTS.md §17): widgets and layout only; the numbers come from lib/."""
import numpy as np
import streamlit as st

from lib.concepts.kv_quantization import kv_quant as kq
from lib.concepts.quantization import quantize as qz
from lib.ui import runtime
from lib.concepts.check_result import CheckResult
from lib.concepts.kv_quantization import figures as plots
from lib.ui.page import ConceptPage

GRID_BITS = (8, 4, 2)
GROUPS = (32, 64, 128)
RESIDUALS = (0, 16, 32)

page = ConceptPage("kv-quantization")
t = page.t
m = page.model()
s = m.spec

left, right = page.controls()
prompt = page.prompt(default=t("default_text"), max_tokens=160, container=left)
n_eval = page.state.number_slider("eval", t("eval_label"), 4, 64, 32, step=4, help=t("eval_help"), container=right)
c1, c2 = right.columns(2)
group = page.state.select("group", t("group_label"), GROUPS, 64, help=t("group_help"), container=c1)
residual = page.state.select("recent", t("recent_label"), RESIDUALS, 0, help=t("recent_help"), container=c2)
c3, c4 = right.columns(2)
bits = page.state.select("bits", t("bits_label"), GRID_BITS, 4, format_func=lambda b: f"int{b}",
                         help=t("bits_help"), container=c3)
gran = page.state.select("scale", t("scale_label"), qz.GRANULARITIES, "token",
                         format_func=lambda g: t(f"gran_{g}"), container=c4)

T = len(prompt.ids)
E = min(n_eval, T - 1)
if T < 4 or E < 2:
    st.warning(t("too_short"))
    page.finish()
    st.stop()
if E < n_eval:
    page.notes.append(t("note_eval", n=n_eval, E=E, T=T))

# ---- the policies: the bits x scale grid, then the comparisons the checks need --------------
Q = lambda b, g: qz.QuantSpec(b, g, True, group)  # noqa: E731
policies = [kq.KVQuantPolicy(Q(b, g), Q(b, g), residual) for b in GRID_BITS for g in qz.GRANULARITIES]
policies += [kq.KVQuantPolicy(Q(16, "token"), Q(16, "token"), 0),          # 16-bit round trip
             kq.KVQuantPolicy(Q(bits, gran), None, residual),               # keys only
             kq.KVQuantPolicy(None, Q(bits, gran), residual),               # values only
             kq.KVQuantPolicy(Q(bits, "channel"), Q(bits, "token"), residual)]  # KIVI-style
bar = st.progress(0.0, text=t("running", n=len(policies), E=E, P=T - E))
report = runtime.cached(kq.reference, max_entries=4)(m.engine, prompt.ids, E)
runs = []
for i, pol in enumerate(policies):
    runs.append(runtime.cached(kq.run_policy, max_entries=128)(m.engine, prompt.ids, E, pol, _ref=report))
    bar.progress((i + 1) / len(policies), text=t("running", n=len(policies), E=E, P=T - E))
bar.empty()
n_grid = len(GRID_BITS) * len(qz.GRANULARITIES)
r16, r_k, r_v, r_kivi = runs[n_grid:]

st.markdown(t("summary", P=report.n_prefix, E=report.n_eval, ppl=runs[0].effect.ppl_ref))

# ---- key channel magnitudes ------------------------------------------------------------------
kmax = report.key_channel_max.numpy()
vmax = report.value_channel_max.numpy()
fig = plots.channel_heatmap(kmax, {"title": t("fig_keys_title", P=report.n_prefix), "x": t("fig_keys_x"),
                                   "y": t("layer_word"), "hover": t("layer_word") + " %{y}, ch %{x}: %{z:.3g}"})
page.figure(fig, "key_channel_max", {f"layer_{l}": kmax[l].tolist() for l in range(len(kmax))},
            caption=t("fig_keys_caption", kr=float(np.median(kmax.max(1) / np.median(kmax, 1))),
                      vr=float(np.median(vmax.max(1) / np.median(vmax, 1)))))

# ---- the grid ------------------------------------------------------------------------------
gran_names = [t(f"gran_{g}") + (f" {group}" if g == "group" else "") for g in qz.GRANULARITIES]
grid = lambda f: np.array([[f(runs[i * len(qz.GRANULARITIES) + j]) for j in range(len(qz.GRANULARITIES))]  # noqa: E731
                           for i in range(len(GRID_BITS))])
tv = grid(lambda r: r.attn_tv)
kl = grid(lambda r: r.effect.kl_mean)
dppl = grid(lambda r: r.effect.ppl_new - r.effect.ppl_ref)
mem = grid(lambda r: r.bytes_stored)
fig = plots.grid_figure(list(GRID_BITS), gran_names,
                        [(t("m_tv"), tv, ".2g"), (t("m_kl"), kl, ".2g"), (t("m_ppl"), np.abs(dppl), ".3f"),
                         (t("m_mem"), mem / 1024, ".0f")],
                        t("fig_grid_title", E=E, r=residual))
rows = [{"bits": b, "scale": gran_names[j], "bytes": int(mem[i, j]), "attn_TV": float(tv[i, j]),
         "KL_nats": float(kl[i, j]), "ppl": runs[i * 4 + j].effect.ppl_new, "delta_ppl": float(dppl[i, j])}
        for i, b in enumerate(GRID_BITS) for j in range(len(gran_names))]
page.figure(fig, "grid", {k: [r[k] for r in rows] for k in rows[0]}, caption=t("fig_grid_caption"))

full = runs[0].bytes_full
names = [f"int{r['bits']} {r['scale']}" for r in rows] + ["KIVI"]
fig = plots.memory_figure(names, [r["bytes"] for r in rows] + [r_kivi.bytes_stored], full, full / 2,
                          {"title": t("fig_mem_title", n=T), "y": t("fig_mem_y"), "stored": t("fig_mem_stored"),
                           "full": t("fig_mem_full", b=full), "half": t("fig_mem_half", b=full / 2)})
page.figure(fig, "memory", {"policy": names, "bytes": [r["bytes"] for r in rows] + [r_kivi.bytes_stored]})

# ---- keys vs values -------------------------------------------------------------------------
st.subheader(t("kv_title"))
kv_rows = [{t("col_policy"): lab, t("col_tv"): r.attn_tv, t("col_l0"): r.attn_max_layer0,
            t("col_kl"): r.effect.kl_mean, t("col_ppl"): round(r.effect.ppl_new, 4), t("col_bytes"): r.bytes_stored}
           for lab, r in ((t("pol_keys", b=bits, g=t(f"gran_{gran}")), r_k),
                          (t("pol_values", b=bits, g=t(f"gran_{gran}")), r_v),
                          (t("pol_kivi", b=bits, r=residual), r_kivi),
                          (t("pol_16"), r16))]
st.dataframe(kv_rows, hide_index=True, width="stretch")
st.caption(t("kv_caption"))

# ---- the formula ----------------------------------------------------------------------------
st.subheader(t("formula_title"))
formula = kq.kv_bytes_formula(s.n_layers, s.n_kv_heads, s.head_dim, T, 1, 4)
st.markdown(t("formula_text", L=s.n_layers, K=s.n_kv_heads, d=s.head_dim, T=T, f=formula, n=report.cache_nbytes,
              f16=kq.kv_bytes_formula(s.n_layers, s.n_kv_heads, s.head_dim, 32768, 1, 2) / 2**20))

page.notice()

# ---- live checks ----------------------------------------------------------------------------
mono = [bool(kl[0, j] <= kl[1, j] <= kl[2, j]) for j in range(len(gran_names))]
page.checks([
    CheckResult(t("check_bytes"), formula == report.cache_nbytes,
                t("check_bytes_detail", L=s.n_layers, K=s.n_kv_heads, d=s.head_dim, T=T, f=formula, n=report.cache_nbytes)),
    CheckResult(t("check_mono"), all(mono),
                t("check_mono_detail", ok=sum(mono), n=len(mono),
                  vals="; ".join(f"{g}: {kl[0, j]:.2g} → {kl[1, j]:.2g} → {kl[2, j]:.2g}" for j, g in enumerate(gran_names)))),
    CheckResult(t("check_16"), r16.effect.kl_mean < 1e-5 and r16.attn_max < 5e-3,
                t("check_16_detail", kl=r16.effect.kl_mean, a=r16.attn_max)),
    CheckResult(t("check_kv"), r_v.attn_max_layer0 == 0.0 and r_k.attn_max_layer0 > 0,
                t("check_kv_detail", v=r_v.attn_max_layer0, k=r_k.attn_max_layer0, kl=r_v.effect.kl_mean)),
])
page.try_this()
page.code(kq.kv_bytes_formula, kq.QuantizedKVCache._commit, qz.quantize, kq.run_policy)
page.sources()
page.finish()
