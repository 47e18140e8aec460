"""Grouped-query attention (CONCEPTS.md §9): widgets and layout only; the numbers come from lib/."""
import numpy as np
import streamlit as st

from lib.ui import runtime
from lib.concepts.gqa import checks, gqa
from lib.concepts.gqa import figures as plots
from lib.model.tokens import token_texts
from lib.ui.page import ConceptPage

CONTEXTS = tuple(2 ** i for i in range(7, 16))        # 128 … 32,768 tokens
DTYPES = {"fp32": 4, "bf16": 2, "int8": 1}

page = ConceptPage("gqa")
t = page.t
m = page.model()
spec = m.spec

left, right = page.controls()
prompt = page.prompt(default=t("prompt_default"), max_tokens=64, container=left)
layer = page.layer_select(container=right)
dtype = page.state.select("dtype", t("dtype_label"), tuple(DTYPES), "fp32", help=t("dtype_help"), container=right)
right.caption(t("config_caption", H=spec.n_heads, Hkv=spec.n_kv_heads, G=spec.group_size, d=spec.head_dim,
                L=spec.n_layers))

with st.spinner(page.c("working")):
    hm = runtime.cached(gqa.head_maps)(m.engine, prompt.ids, layer)
    measured = runtime.cached(gqa.measured_cache_bytes)(m.engine, prompt.ids)
tokens = token_texts(m.tokenizer, prompt.ids)
T = len(tokens)
results = checks.page_checks(hm, measured, spec.n_heads, spec.n_kv_heads, t)

# ---- the heads' maps ---------------------------------------------------------------------------
st.subheader(t("maps_title", H=spec.n_heads, Hkv=spec.n_kv_heads))
H = spec.n_heads
off = hm.head_distance[~np.eye(H, dtype=bool)] if H > 1 else np.zeros(1)
differ = bool(off.max() > checks.DIFFER_MIN_TV)
if page.predict("maps", t("q_maps", H=H, Hkv=spec.n_kv_heads), ("same", "different"),
                "different" if differ else "same",
                t("q_maps_why_diff" if differ else "q_maps_why_same", lo=float(off.min()), hi=float(off.max())),
                format_func=lambda k: t(f"q_maps_{k}")):
    titles = [t("head_title", h=h, kv=hm.head_to_kv[h]) for h in range(H)]
    fig = plots.head_maps_figure(hm.probs.numpy(), tokens, titles,
                                 {"title": t("fig_maps_title", l=layer, kv=spec.n_kv_heads), "x": t("axis_key"),
                                  "y": t("axis_query"), "hover": t("maps_hover")})
    data = {"query": [i for i in range(T) for _ in range(T)], "key": [j for _ in range(T) for j in range(T)]}
    data.update({f"head_{h}": hm.probs[h].numpy().ravel().tolist() for h in range(H)})
    page.figure(fig, "head_maps", data)
    fig = plots.distance_figure(hm.head_distance, {"title": t("fig_dist_title"), "head": t("head_word")}, fmt=t.num)
    page.figure(fig, "head_distance", {f"head_{h}": hm.head_distance[h].tolist() for h in range(H)},
                caption=t("dist_caption"))

# ---- cache size ----------------------------------------------------------------------------------
st.subheader(t("bytes_title"))
layouts = gqa.kv_layouts(spec.n_heads, spec.n_kv_heads)
own = next(lay.name for lay in layouts if lay.n_kv_heads == spec.n_kv_heads)
mha = layouts[0].name
real = {r[0]: r[3] for r in measured.rows}
ratio = real[mha] / real[own]
options = sorted({1, 2, int(round(ratio)), int(round(ratio)) * 4})
if page.predict("ratio", t("q_ratio", H=H, Hkv=spec.n_kv_heads), options, int(round(ratio)),
                t("q_ratio_why", T=measured.tokens, a=real[mha], b=real[own], r=ratio),
                format_func=lambda v: f"{v}×"):
    el = DTYPES[dtype]
    series = {lay.name: [gqa.kv_cache_bytes(spec.n_layers, lay.n_kv_heads, spec.head_dim, n, el) / 2**20
                         for n in CONTEXTS] for lay in layouts}
    fig = plots.cache_bytes_figure(CONTEXTS, series, own,
                                   {"title": t("fig_bytes_title", dtype=dtype), "x": t("bytes_x"), "y": t("bytes_y"),
                                    "own": t("bytes_own"), "hover": t("bytes_hover")}, fmt=t.num)
    page.figure(fig, "kv_cache_bytes", {"context_tokens": list(CONTEXTS), **{f"{k}_MiB": v for k, v in series.items()}})
    st.caption(t("bytes_caption", n=CONTEXTS[-1], mha=series[mha][-1], own=series[own][-1], name=own,
                 r=series[mha][-1] / series[own][-1], w=max(w for w in spec.windows if w) if any(spec.windows) else 0))
    st.markdown(t("bandwidth", n=CONTEXTS[-1], mha=series[mha][-1] / spec.n_layers, own=series[own][-1] / spec.n_layers,
                  name=own, r=series[mha][-1] / series[own][-1]))

    # the measured bytes of each layout: MHA's over this model's is the answer to "ratio"
    st.markdown(t("table_intro", T=measured.tokens))
    st.dataframe({t("col_layout"): [r[0] for r in measured.rows], t("col_kv"): [r[1] for r in measured.rows],
                  t("col_formula"): [t.num(r[2], ",") for r in measured.rows],
                  t("col_real"): [t.num(r[3], ",") for r in measured.rows]},
                 hide_index=True, width="stretch")

page.notice()
page.checks(results + page.spec_checks(m, "scale"))
page.try_this()
page.code(gqa.gqa_attention, gqa.mha_attention, gqa.repeat_kv, gqa.kv_cache_bytes, gqa.allocated_kv_bytes)
page.sources()
page.finish()
