"""KV cache quantization (CONCEPTS.md §17): widgets and layout only; the numbers come from lib/."""
import numpy as np
import streamlit as st

from lib.ui import runtime
from lib.concepts.kv_quantization import checks, kv_quant as kq
from lib.concepts.kv_quantization import figures as plots
from lib.core.quantization import quantize as qz
from lib.core.cache.quantized import Packed, QuantizedKVCache
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
# Only "group" scales read the group size: the other specs keep the default, so that their runs
# stay cached when the group size changes.
Q = lambda b, g: qz.QuantSpec(b, g, True, group if g == "group" else qz.QuantSpec.group_size)  # noqa: E731
policies = [kq.KVQuantPolicy(Q(b, g), Q(b, g), residual) for b in GRID_BITS for g in qz.GRANULARITIES]
policies += [kq.KVQuantPolicy(Q(16, "token"), Q(16, "token"), 0),          # 16-bit round trip
             kq.KVQuantPolicy(Q(bits, gran), None, residual),               # keys only
             kq.KVQuantPolicy(None, Q(bits, gran), residual),               # values only
             kq.KVQuantPolicy(Q(bits, "channel"), Q(bits, "token"), residual)]  # KIVI-style
ahead = st.info(page.c("predict_ahead", q=t("predict_q")), icon="🤔")   # asked below the runs; stated while they run
bar = st.progress(0.0, text=t("running", n=len(policies), E=E, P=T - E))
results_box = st.container()      # everything that needs the policies' runs
keys_box = st.container()         # the key channels: the full-precision reference is enough
report = runtime.cached(kq.reference, max_entries=4)(m.engine, prompt.ids, E)

# ---- key channel magnitudes (drawn first, while the policies run) -----------------------------
kmax = report.key_channel_max.numpy()
vmax = report.value_channel_max.numpy()
with keys_box:
    fig = plots.channel_heatmap(kmax, {"title": t("fig_keys_title", P=report.n_prefix), "x": t("fig_keys_x"),
                                       "y": t("layer_word"), "hover": t("layer_word") + " %{y}, " + t("channel_word")
                                       + " %{x}: %{z:.3g}"})
    page.figure(fig, "key_channel_max", {f"layer_{l}": kmax[l].tolist() for l in range(len(kmax))})
    keys_caption = st.empty()     # its last sentence says which scale keys need: written once answered
n_grid = len(GRID_BITS) * len(qz.GRANULARITIES)
# Three calls, each cached on its own: the grid does not change with the bits / scale controls,
# and only its "group" column changes with the group size.
parts = [[i for i in range(n_grid) if policies[i].key.granularity != "group"],
         [i for i in range(n_grid) if policies[i].key.granularity == "group"],
         list(range(n_grid, len(policies)))]
runs, done = [None] * len(policies), 0
for part in parts:
    def progress(k, total, before=done):
        bar.progress((before + k) / (len(policies) + 1), text=t("running", n=len(policies), E=E, P=T - E))
    out = runtime.cached(kq.run_policies, max_entries=32)(m.engine, prompt.ids, E, tuple(policies[i] for i in part),
                                                          _ref=report, _progress=progress)
    for i, run in zip(part, out):
        runs[i] = run
    done += len(part)
bar.empty()
ahead.empty()
r16, r_k, r_v, r_kivi = runs[n_grid:]

with results_box:
    st.markdown(t("summary", P=report.n_prefix, E=report.n_eval, ppl=runs[0].effect.ppl_ref))

    G = len(qz.GRANULARITIES)
    gran_label = {g: t(f"gran_{g}") + (f" {group}" if g == "group" else "") for g in qz.GRANULARITIES}
    gran_names = list(gran_label.values())
    grid_runs = {(b, g): (policies[i * G + j], runs[i * G + j]) for i, b in enumerate(GRID_BITS)
                 for j, g in enumerate(qz.GRANULARITIES)}

    # ---- predict: which scale choice hurts more at int4? ----------------------------------------
    # (int4, not int2: at 2 bits both choices wreck the distribution and their KLs come within ~10%)
    kl_tok, kl_ch = grid_runs[(4, "token")][1].effect.kl_mean, grid_runs[(4, "channel")][1].effect.kl_mean
    answer = "same" if max(kl_tok, kl_ch) <= 1.1 * min(kl_tok, kl_ch) else "token" if kl_tok > kl_ch else "channel"
    revealed = page.predict("int4", t("predict_q"), ("token", "channel", "same"), answer,
                            t("predict_why", kt=kl_tok, kc=kl_ch, x=max(kl_tok, kl_ch) / max(min(kl_tok, kl_ch), 1e-30)),
                            format_func=lambda o: t(f"opt_{o}"))

    if revealed:
        keys_caption.caption(t("fig_keys_caption", kr=float(np.median(kmax.max(1) / np.median(kmax, 1))),
                               vr=float(np.median(vmax.max(1) / np.median(vmax, 1)))))

    # ---- the grid ------------------------------------------------------------------------------
    grid = lambda f: np.array([[f(grid_runs[(b, g)][1]) for g in qz.GRANULARITIES] for b in GRID_BITS])  # noqa: E731
    tv = grid(lambda r: r.attn_tv)
    kl = grid(lambda r: r.effect.kl_mean)
    dppl = grid(lambda r: r.effect.ppl_new - r.effect.ppl_ref)
    mem = grid(lambda r: r.bytes_stored)
    rows = [{t("col_bits"): f"int{b}", t("col_scale"): gran_names[j], t("col_bytes"): int(mem[i, j]),
             t("col_tv"): float(tv[i, j]), t("col_kl"): float(kl[i, j]),
             t("col_ppl"): grid_runs[(b, qz.GRANULARITIES[j])][1].effect.ppl_new, t("col_dppl"): float(dppl[i, j])}
            for i, b in enumerate(GRID_BITS) for j in range(G)]
    if revealed:
        fig = plots.grid_figure(list(GRID_BITS), gran_names,
                                [(t("m_tv"), tv, ".2g"), (t("m_kl"), kl, ".2g"), (t("m_ppl"), np.abs(dppl), ",.5g")],
                                t("fig_grid_title", E=E, r=residual), t.num)
        page.figure(fig, "grid", {k: [r[k] for r in rows] for k in rows[0]}, caption=t("fig_grid_caption"))

    full = runs[0].bytes_full
    names = [f"int{b} {gran_names[j]}" for b in GRID_BITS for j in range(G)] + ["KIVI"]
    stored = [int(v) for v in mem.flatten()] + [r_kivi.bytes_stored]
    fig = plots.memory_figure(names, [v / 1024 for v in stored], full / 1024, full / 2048,
                              {"title": t("fig_mem_title", n=T), "y": t("fig_mem_y"), "stored": t("fig_mem_stored"),
                               "full": t("fig_mem_full", b=full / 1024), "half": t("fig_mem_half", b=full / 2048)})
    page.figure(fig, "memory", {"policy": names, "bytes_allocated": stored})

# ---- keys vs values -------------------------------------------------------------------------
st.subheader(t("kv_title"))
kv_rows = [{t("col_policy"): lab, t("col_tv"): t.num(r.attn_tv, ".3g"), t("col_l0"): t.num(r.attn_max_layer0, ".3g"),
            t("col_kl"): t.num(r.effect.kl_mean, ".3g"), t("col_ppl"): t.num(r.effect.ppl_new, ".3f"),
            t("col_bytes"): t.num(r.bytes_stored, ",")}
           for lab, r in ((t("pol_keys", b=bits, g=t(f"gran_{gran}")), r_k),
                          (t("pol_values", b=bits, g=t(f"gran_{gran}")), r_v),
                          (t("pol_kivi", b=bits, r=residual), r_kivi),
                          (t("pol_16"), r16))]
if revealed:        # per-token keys against KIVI's per-channel keys: the answer's mechanism
    st.dataframe(kv_rows, hide_index=True, width="stretch")
    st.caption(t("kv_caption"))
else:
    st.caption(page.c("predict_hidden"))

# ---- the formula ----------------------------------------------------------------------------
st.subheader(t("formula_title"))
tok8 = grid_runs[(8, "token")]
st.markdown(t("formula_text", L=s.n_layers, K=s.n_kv_heads, d=s.head_dim, T=T,
              f=int(kq.kv_bytes_formula(s.n_layers, s.n_kv_heads, s.head_dim, T, 1, 4)),
              f8=int(kq.kv_bytes_formula(s.n_layers, s.n_kv_heads, s.head_dim, T, 1, 1)), m8=tok8[1].bytes_stored,
              sc=tok8[1].bytes_stored - int(kq.kv_bytes_formula(s.n_layers, s.n_kv_heads, s.head_dim, T, 1, 1)),
              f16=kq.kv_bytes_formula(s.n_layers, s.n_kv_heads, s.head_dim, 32768, 1, 2) / 2**20))

page.notice()
page.checks(checks.page_checks(s, (report.n_prefix, report.n_eval), grid_runs, r16, r_k, r_v, gran_label, t))
page.try_this()
page.code(kq.kv_bytes_formula, QuantizedKVCache.append, Packed.of, kq.run_policies)
page.sources()
page.finish()
