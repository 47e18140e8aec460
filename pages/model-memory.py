"""Model memory vs file size (CONCEPTS.md §19): widgets and layout only; numbers come from lib/."""
import streamlit as st

from lib.ui import runtime
from lib.concepts.model_memory import checks as mc
from lib.concepts.model_memory import figures as plots
from lib.concepts.model_memory import memory_accounting as ma
from lib.concepts.model_memory import probes
from lib.model import bundled_model
from lib.model.long_text import long_text
from lib.model.model_loader import BUNDLED
from lib.reference import memory_reference
from lib.ui.page import ConceptPage

CONTEXTS = (256, 512, 1024, 2048, 4096, 8192, 16384, 32768)
MEASURED = (256, 1024, 2048, 4096)    # KV caches actually built and measured (the rest: calculator only; kept small for the memory budget)
OLLAMA_MB = mc.OLLAMA_MB              # published: Ollama's listing of gemma3:270m (Q8_0)
DEVICE_MB = 512                       # the small device of the seed article

page = ConceptPage("model-memory")
t = page.t
m = page.model()
s = m.spec
if m.source != BUNDLED:   # the file, the probes and the calculator are about the bundled model
    st.warning(t("bundled_only", name=runtime.model_name(m)))
    page.finish()
    st.stop()

page.section("controls")
c1, c2, c3 = st.columns(3)
ctx = page.state.select("ctx", t("ctx_label"), CONTEXTS, 4096, format_func=lambda n: t.num(n, ",d"), help=t("ctx_help"),
                        container=c1)
batch = page.state.number_slider("batch", t("batch_label"), probes.PREFILL_BATCHES[0], probes.PREFILL_BATCHES[-1],
                                 probes.PREFILL_DEFAULT[0], help=t("batch_help"), container=c2)
prefill = page.state.select("prefill", t("prefill_label"), probes.PREFILL_TOKENS, probes.PREFILL_DEFAULT[1], container=c3)
st.caption(t("long_note"))

# ---- the headline, predicted first --------------------------------------------------------------
q8 = ma.weight_bytes(s, "Q8_0")
kv16_full = ma.kv_cache_bytes(s, ctx, bytes_per_element=2, positions=False)
kv16_win = ma.kv_cache_bytes(s, ctx, bytes_per_element=2, windowed=True, positions=False)
fits = (q8 + kv16_win) / 1e6 <= DEVICE_MB
answer = t("predict_yes") if fits else t("predict_no")
revealed = page.predict("fit", t("predict_q", n=ctx, mb=DEVICE_MB), [t("predict_yes"), t("predict_no")], answer,
                        t("predict_why", w=q8 / 1e6, kv=kv16_win / 1e6, tot=(q8 + kv16_win) / 1e6, mb=DEVICE_MB))

# ---- measurements (small fresh processes, one at a time, within the memory budget) --------------
gguf = runtime.cached(ma.gguf_breakdown)(str(bundled_model.gguf_path()))
ids = tuple(m.tokenizer(long_text()[:4000])["input_ids"][:prefill])     # the prefill's tokens (~1,000 available)
refused = []


def probe(fn, *args):
    try:
        return runtime.cached(fn)(*args)
    except probes.ProbeRefused as e:
        refused.append(t("refused", mode=e.mode, need=e.need / 1e6, used=e.used / 1e6, budget=e.budget / 1e6))
        return None


with st.spinner(t("measuring_kv", n=len(MEASURED))):     # none of these depends on a control: once per server
    kv_probe = probe(probes.measure_kv, s, MEASURED)
    tok_probe = probe(probes.measure_tokenizer)
    w_probe = probe(probes.measure_weights, s)
warn_box = st.container()

# ---- 1. storage: the file ---------------------------------------------------------------------
st.subheader(t("file_title"))
types = sorted(gguf["by_type"], key=lambda k: -gguf["by_type"][k]["bytes"])
tensor_bytes = sum(v["bytes"] for v in gguf["by_type"].values())
fig = plots.file_figure(types, [gguf["by_type"][k]["bytes"] for k in types], [gguf["by_type"][k]["params"] for k in types],
                        {"title": t("fig_file_title", mb=gguf["file_bytes"] / 1e6), "params": t("params_word"),
                         "bpw": t("bpw_word")}, fmt=t.num)
page.figure(fig, "gguf_file", {"type": types, "bytes": [gguf["by_type"][k]["bytes"] for k in types],
                               "params": [gguf["by_type"][k]["params"] for k in types]})
n_params = ma.parameter_count(s)
meta = gguf["file_bytes"] - tensor_bytes
st.markdown(t("file_text", mb=gguf["file_bytes"] / 1e6, meta=meta / 1e6, n=n_params, q8=q8 / 1e6,
              q8f=mc.q8_file_bytes(s, gguf) / 1e6, ollama=OLLAMA_MB, f32=ma.weight_bytes(s, "float32") / 1e6))

# ---- 2. run time: measured step by step (its fresh process runs last, below) ------------------
st.subheader(t("run_title"))
run_box = st.container()
bar = run_box.progress(0.0, text=t("measuring_model", B=batch, T=prefill))

# ---- 3. context length and the KV cache --------------------------------------------------------
st.subheader(t("kv_title"))
kv_cmp = ma.compare_kv(s, kv_probe) if kv_probe is not None else []
grid = [2 ** k for k in range(7, 16)]
meas = {kind: ([int(c.name.split("_")[-1]) for c in kv_cmp if f"_{kind}_" in c.name],
               [c.measured for c in kv_cmp if f"_{kind}_" in c.name]) for kind in ("full", "window")}
fig = plots.kv_figure(grid, [ma.kv_cache_bytes(s, n) for n in grid], [ma.kv_cache_bytes(s, n, windowed=True) for n in grid],
                      meas, ctx, {"title": t("fig_kv_title"), "full": t("kv_full"), "window": t("kv_window"),
                                  "meas_full": t("kv_meas_full"), "meas_window": t("kv_meas_window"),
                                  "x": t("fig_kv_x"), "y": t("fig_kv_y")}, fmt=t.num)
page.figure(fig, "kv_vs_context", {"step": [c.name for c in kv_cmp], "predicted_bytes": [c.predicted for c in kv_cmp],
                                   "measured_bytes": [c.measured for c in kv_cmp]})
full_ctx, win_ctx = ma.kv_cache_bytes(s, ctx), ma.kv_cache_bytes(s, ctx, windowed=True)
n_local = sum(w is not None for w in s.windows)
st.markdown(t("kv_text", ctx=ctx, full=full_ctx / 1e6, win=win_ctx / 1e6, ratio=full_ctx / win_ctx, L=s.n_layers,
              loc=n_local, glob=s.n_layers - n_local, w=max(w for w in s.windows if w) if n_local else 0,
              per_tok=s.kv_bytes_per_token(4), pos=8 * s.n_layers))

# ---- 4. the 292 MB in context: weights + KV only; this Python stack's overhead shown apart ------
ollama_box = st.container()       # it answers the question at the top: drawn, heading too, once answered

page.notice()
checks_box = st.container()
page.try_this()
page.code(ma.kv_cache_bytes, ma.prefill_activation_bytes, ma.parameter_count, probes.run_probe)
page.sources()

# ---- the prefill's memory, last: a fresh process for this batch and prompt length --------------
pre_probe = probe(probes.measure_prefill, s, ids, batch)
bar.empty()
for r in refused:
    warn_box.warning(r)
measured = mc.Measured(gguf, kv_probe, w_probe, pre_probe)
with run_box:
    parts = []                                            # (component, measured or None, calculator or None)
    if pre_probe is not None:
        parts.append((t("c_runtime"), pre_probe.steps["runtime"]["anon"], None))
    if tok_probe is not None:
        parts.append((t("c_tokenizer"), tok_probe.steps["tokenizer"]["delta"], None))
    parts.append((t("c_weights"), w_probe.steps["weights"]["float32"] if w_probe else None, ma.weight_bytes(s, "float32")))
    if pre_probe is not None:
        pre = pre_probe.steps["prefill"]
        peak = pre["peak_delta"] if pre.get("peak_delta") is not None else pre["delta"]
        layers = pre.get("layers", s.n_layers)
        parts.append((t("c_kv", T=prefill, B=batch, L=layers), pre["kv_nbytes"],
                      ma.kv_cache_bytes(ma.truncated_spec(s, layers), prefill, batch)))
        parts.append((t("c_act", T=prefill, B=batch, L=layers), peak - pre["kv_nbytes"],
                      ma.prefill_activation_bytes(s, batch, prefill, logits=False)))
    fig = plots.stack_figure([t("bar_measured"), t("bar_predicted")],
                             [(name, [meas or 0, pred if pred is not None else (meas or 0)]) for name, meas, pred in parts],
                             None, {"title": t("fig_run_title", B=batch, T=prefill), "line": ""})
    page.figure(fig, "runtime_memory", {"component": [p[0] for p in parts], "measured_bytes": [p[1] for p in parts],
                                        "predicted_bytes": [p[2] for p in parts]}, caption=t("fig_run_caption"))
    rows = [{t("col_component"): name, t("col_measured"): t.num(meas / 1e6, ",.1f") if meas is not None else "—",
             t("col_predicted"): t.num(pred / 1e6, ",.1f") if pred is not None else t("measured_only"),
             t("col_error"): t.num(100 * abs(meas - pred) / pred, ".1f") + "%" if pred and meas is not None else "—"}
            for name, meas, pred in parts]
    if w_probe is not None:
        b16, p16 = w_probe.steps["weights"]["bfloat16"], ma.weight_bytes(s, "bfloat16")
        rows.append({t("col_component"): t("c_bf16"), t("col_measured"): t.num(b16 / 1e6, ",.1f"),
                     t("col_predicted"): t.num(p16 / 1e6, ",.1f"), t("col_error"): t.num(100 * abs(b16 - p16) / p16, ".1f") + "%"})
    st.dataframe(rows, hide_index=True, width="stretch")
    if pre_probe is not None:
        st.caption(t("run_caption", secs=pre_probe.steps["prefill"].get("prefill_seconds", 0.0)))

with ollama_box:
    if revealed:
        st.subheader(t("ollama_title"))
        overhead = (pre_probe.steps["runtime"]["anon"] if pre_probe else 0) + (tok_probe.steps["tokenizer"]["delta"] if tok_probe else 0)
        bars = [t("b_file"), t("b_win", n=ctx), t("b_full", n=ctx), t("b_python")]
        parts4 = [(t("p_weights_q8"), [OLLAMA_MB * 1e6, q8, q8, 0]),
                  (t("p_kv16"), [0, kv16_win, kv16_full, 0]),
                  (t("p_overhead"), [0, 0, 0, overhead])]
        title = t("fig_ollama_fits" if fits else "fig_ollama_not", n=ctx, mb=DEVICE_MB, tot=(q8 + kv16_win) / 1e6)
        fig = plots.stack_figure(bars, parts4, DEVICE_MB * 1e6, {"title": title, "line": t("device_line", mb=DEVICE_MB)})
        page.figure(fig, "ollama_context", {"bar": bars, **{name: vals for name, vals in parts4}},
                    caption=t("fig_ollama_caption", ollama=OLLAMA_MB, over=overhead / 1e6))

engine_kv = runtime.cached(memory_reference.engine_cache_bytes)(m.engine, ids)   # a real cache's storage
with checks_box:
    page.checks(mc.page_checks(s, measured, t, engine_kv))
page.finish()
