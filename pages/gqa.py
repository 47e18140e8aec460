"""Grouped-query attention (CONCEPTS.md §9): widgets and layout only; the numbers come from lib/."""
import numpy as np
import streamlit as st

from lib.concepts.gqa import gqa
from lib.ui import runtime
from lib.concepts.check_result import CheckResult
from lib.concepts.gqa import figures as plots
from lib.model.tokens import token_texts
from lib.ui.page import ConceptPage

DEFAULT_PROMPT = "Alice gave Bob a book because she wanted him to read it before the exam."
CONTEXTS = tuple(2 ** i for i in range(7, 16))        # 128 … 32,768 tokens
DTYPES = {"fp32": 4, "bf16": 2, "int8": 1}

page = ConceptPage("gqa")
t = page.t
m = page.model()
spec = m.spec

left, right = page.controls()
prompt = page.prompt(default=DEFAULT_PROMPT, max_tokens=64, container=left)
layer = page.layer_select(container=right)
dtype = page.state.select("dtype", t("dtype_label"), tuple(DTYPES), "fp32", help=t("dtype_help"), container=right)
right.caption(t("config_caption", H=spec.n_heads, Hkv=spec.n_kv_heads, G=spec.group_size, d=spec.head_dim,
                L=spec.n_layers))

with st.spinner(page.c("working")):
    hm = runtime.cached(gqa.head_maps)(m.engine, prompt.ids, layer)
tokens = token_texts(m.tokenizer, prompt.ids)
T = len(tokens)

st.subheader(t("maps_title"))
titles = [t("head_title", h=h, kv=hm.head_to_kv[h]) for h in range(spec.n_heads)]
fig = plots.head_maps_figure(hm.probs.numpy(), tokens, titles,
                             {"title": t("fig_maps_title", l=layer, kv=spec.n_kv_heads), "x": t("axis_key"),
                              "y": t("axis_query")})
data = {"query": [i for i in range(T) for _ in range(T)], "key": [j for _ in range(T) for j in range(T)]}
data.update({f"head_{h}": hm.probs[h].numpy().ravel().tolist() for h in range(spec.n_heads)})
page.figure(fig, "head_maps", data)
fig = plots.distance_figure(hm.head_distance, {"title": t("fig_dist_title"), "head": t("head_word")})
page.figure(fig, "head_distance", {f"head_{h}": hm.head_distance[h].tolist() for h in range(spec.n_heads)},
            caption=t("dist_caption"))

# ---- cache size ----------------------------------------------------------------------------------
st.subheader(t("bytes_title"))
layouts = gqa.kv_layouts(spec.n_heads, spec.n_kv_heads)
own = next(lay.name for lay in layouts if lay.n_kv_heads == spec.n_kv_heads)
el = DTYPES[dtype]
series = {lay.name: [gqa.kv_cache_bytes(spec.n_layers, lay.n_kv_heads, spec.head_dim, n, el) / 2**20 for n in CONTEXTS]
          for lay in layouts}
fig = plots.cache_bytes_figure(CONTEXTS, series, own, {"title": t("fig_bytes_title", dtype=dtype), "x": t("bytes_x"),
                                                       "y": t("bytes_y"), "own": t("bytes_own")})
page.figure(fig, "kv_cache_bytes", {"context_tokens": list(CONTEXTS), **{f"{k}_MiB": v for k, v in series.items()}})
st.caption(t("bytes_caption", n=CONTEXTS[-1], mha=series[layouts[0].name][-1], own=series[own][-1], name=own,
             G=spec.group_size))

measured = runtime.cached(gqa.measured_cache_bytes)(m.engine, prompt.ids)
st.markdown(t("table_intro", T=measured.tokens))
st.dataframe({t("col_layout"): [r[0] for r in measured.rows], t("col_kv"): [r[1] for r in measured.rows],
              t("col_formula"): [f"{r[2]:,}" for r in measured.rows], t("col_real"): [f"{r[3]:,}" for r in measured.rows]},
             hide_index=True)

page.notice()

# ---- live checks -----------------------------------------------------------------------------------
off = hm.head_distance[~np.eye(len(hm.head_distance), dtype=bool)]
bytes_ok = all(r[2] == r[3] for r in measured.rows)
real = {r[0]: r[3] for r in measured.rows}
ratio = real[layouts[0].name] / real[own]
page.checks([
    CheckResult(t("check_equal", l=layer), hm.gqa_vs_mha_exact and hm.gqa_vs_mha <= 1e-6,
                t("check_equal_detail", exact=hm.gqa_vs_mha_exact, h=hm.heads_diff, d=hm.gqa_vs_mha)),
    CheckResult(t("check_differ"), bool(off.max() > 1e-3), t("check_differ_detail", lo=off.min(), hi=off.max())),
    CheckResult(t("check_bytes"), bytes_ok, t("check_bytes_detail", T=measured.tokens,
                                               rows="; ".join(f"{r[0]} {r[2]:,} = {r[3]:,}" for r in measured.rows))),
    CheckResult(t("check_ratio", G=spec.n_heads // spec.n_kv_heads), ratio == spec.n_heads / spec.n_kv_heads,
                t("check_ratio_detail", a=real[layouts[0].name], b=real[own], r=ratio)),
])
page.try_this()
page.code(gqa.gqa_attention, gqa.mha_attention, gqa.repeat_kv, gqa.kv_cache_bytes)
page.sources()
page.finish()
