"""Model memory vs file size (CONCEPTS.md §19): widgets and layout only; numbers come from lib/."""
import streamlit as st

from lib.model import bundled_model
from lib.ui import runtime
from lib.concepts.model_memory import memory_accounting as ma
from lib.concepts.check_result import CheckResult
from lib.model.model_loader import BUNDLED
from lib.concepts.model_memory import figures as plots
from lib.ui.page import ConceptPage

CONTEXTS = (256, 512, 1024, 2048, 4096, 8192, 16384, 32768)
MEASURED = (256, 1024, 4096, 8192)    # KV caches actually built and measured (the rest: calculator only)
OLLAMA_MB = 292                       # published: Ollama's listing of gemma3:270m (Q8_0)
DEVICE_MB = 512                       # the small device of the seed article
TOL = 0.10

page = ConceptPage("model-memory")
t = page.t
m = page.model()
s = m.spec
if m.source != BUNDLED:   # the file, the probes and the calculator are about the bundled model
    st.warning(t("bundled_only", name=m.name))
    page.finish()
    st.stop()

page.section("controls")
c1, c2, c3 = st.columns(3)
ctx = page.state.select("ctx", t("ctx_label"), CONTEXTS, 4096, format_func=lambda n: f"{n:,}", help=t("ctx_help"),
                        container=c1)
batch = page.state.number_slider("batch", t("batch_label"), 1, 4, 1, help=t("batch_help"), container=c2)
prefill = page.state.select("prefill", t("prefill_label"), (64, 128, 256), 128, container=c3)
st.caption(t("long_note"))

# ---- measurements (fresh processes; cached per settings) ------------------------------------
gguf = runtime.cached(ma.gguf_breakdown)(str(bundled_model.gguf_path()))
with st.spinner(t("measuring_kv", n=len(MEASURED))):
    kv_probe = runtime.cached(ma.measure_kv)(s, MEASURED)
with st.spinner(t("measuring_model", B=batch, T=prefill)):
    model_probe = runtime.cached(ma.measure_model)(batch, prefill, m.device)
steps = model_probe.steps
pre = steps["prefill"]

# ---- 1. storage: the file ---------------------------------------------------------------------
st.subheader(t("file_title"))
types = sorted(gguf["by_type"], key=lambda k: -gguf["by_type"][k]["bytes"])
tensor_bytes = sum(v["bytes"] for v in gguf["by_type"].values())
fig = plots.file_figure(types, [gguf["by_type"][k]["bytes"] for k in types], [gguf["by_type"][k]["params"] for k in types],
                        {"title": t("fig_file_title", mb=gguf["file_bytes"] / 1e6), "params": t("params_word"),
                         "bpw": t("bpw_word")})
page.figure(fig, "gguf_file", {"type": types, "bytes": [gguf["by_type"][k]["bytes"] for k in types],
                               "params": [gguf["by_type"][k]["params"] for k in types]})
n_params = ma.parameter_count(s)
q8 = ma.weight_bytes(s, "Q8_0")
meta = gguf["file_bytes"] - tensor_bytes
st.markdown(t("file_text", mb=gguf["file_bytes"] / 1e6, meta=meta / 1e6, n=n_params, q8=q8 / 1e6,
              q8f=(q8 + meta) / 1e6, ollama=OLLAMA_MB, f32=ma.weight_bytes(s, "float32") / 1e6))

# ---- 2. run time: measured step by step ---------------------------------------------------------
st.subheader(t("run_title"))
kv_pre = pre["kv_nbytes"]
act_meas = (pre["peak_delta"] - kv_pre) if pre.get("peak_delta") is not None else pre["delta"]
act_pred = ma.prefill_activation_bytes(s, batch, prefill)
kv_pred_pre = ma.kv_cache_bytes(s, prefill, batch)
measured_parts = [
    (t("c_runtime"), steps["runtime"]["anon"], None),
    (t("c_tokenizer"), steps["tokenizer"]["delta"], None),
    (t("c_hf"), steps["hf_model_object"]["delta"], None),
    (t("c_weights"), steps["weights_float32"]["delta"], ma.weight_bytes(s, "float32")),
    (t("c_kv", T=prefill, B=batch), kv_pre, kv_pred_pre),
    (t("c_act", T=prefill, B=batch), act_meas, act_pred),
]
fig = plots.stack_figure([t("bar_measured"), t("bar_predicted")],
                         [(name, [meas, pred if pred is not None else meas]) for name, meas, pred in measured_parts],
                         None, {"title": t("fig_run_title", B=batch, T=prefill), "line": ""})
page.figure(fig, "runtime_memory", {"component": [p[0] for p in measured_parts],
                                    "measured_bytes": [p[1] for p in measured_parts],
                                    "predicted_bytes": [p[2] for p in measured_parts]},
            caption=t("fig_run_caption", file=steps["weights_float32"]["file"] / 1e6))
rows = [{t("col_component"): name, t("col_measured"): f"{meas / 1e6:,.1f}",
         t("col_predicted"): f"{pred / 1e6:,.1f}" if pred is not None else t("measured_only"),
         t("col_error"): f"{abs(meas - pred) / pred:.1%}" if pred else "—"} for name, meas, pred in measured_parts]
rows.append({t("col_component"): t("c_bf16"), t("col_measured"): f"{steps['weights_bfloat16']['delta'] / 1e6:,.1f}",
             t("col_predicted"): f"{ma.weight_bytes(s, 'bfloat16') / 1e6:,.1f}",
             t("col_error"): f"{abs(steps['weights_bfloat16']['delta'] - ma.weight_bytes(s, 'bfloat16')) / ma.weight_bytes(s, 'bfloat16'):.1%}"})
st.dataframe(rows, hide_index=True, width="stretch")
st.caption(t("run_caption", secs=pre.get("prefill_seconds", 0.0)))

# ---- 3. context length and the KV cache --------------------------------------------------------
st.subheader(t("kv_title"))
kv_cmp = ma.compare_kv(s, kv_probe)
grid = [2 ** k for k in range(7, 16)]
meas = {kind: ([int(c.name.split("_")[-1]) for c in kv_cmp if f"_{kind}_" in c.name],
               [c.measured for c in kv_cmp if f"_{kind}_" in c.name]) for kind in ("full", "window")}
fig = plots.kv_figure(grid, [ma.kv_cache_bytes(s, n) for n in grid], [ma.kv_cache_bytes(s, n, windowed=True) for n in grid],
                      meas, ctx, {"title": t("fig_kv_title"), "full": t("kv_full"), "window": t("kv_window"),
                                  "meas_full": t("kv_meas_full"), "meas_window": t("kv_meas_window"),
                                  "x": t("fig_kv_x"), "y": t("fig_kv_y")})
page.figure(fig, "kv_vs_context", {"step": [c.name for c in kv_cmp], "predicted_bytes": [c.predicted for c in kv_cmp],
                                   "measured_bytes": [c.measured for c in kv_cmp]})
full_ctx, win_ctx = ma.kv_cache_bytes(s, ctx), ma.kv_cache_bytes(s, ctx, windowed=True)
n_local = sum(w is not None for w in s.windows)
st.markdown(t("kv_text", ctx=ctx, full=full_ctx / 1e6, win=win_ctx / 1e6, ratio=full_ctx / win_ctx, L=s.n_layers,
              loc=n_local, glob=s.n_layers - n_local, w=max(w for w in s.windows if w) if n_local else 0,
              per_tok=s.kv_bytes_per_token(4)))

# ---- 4. the 292 MB in context -------------------------------------------------------------------
st.subheader(t("ollama_title"))
kv16_full = ma.kv_cache_bytes(s, ctx, bytes_per_element=2, positions=False)
kv16_win = ma.kv_cache_bytes(s, ctx, bytes_per_element=2, windowed=True, positions=False)
overhead = steps["runtime"]["anon"] + steps["tokenizer"]["delta"]
bars = [t("b_file"), t("b_win", n=ctx), t("b_full", n=ctx)]
parts = [(t("p_weights_q8"), [OLLAMA_MB * 1e6, q8, q8]),
         (t("p_kv16"), [0, kv16_win, kv16_full]),
         (t("p_overhead"), [0, overhead, overhead])]
fig = plots.stack_figure(bars, parts, DEVICE_MB * 1e6, {"title": t("fig_ollama_title", n=ctx),
                                                         "line": t("device_line", mb=DEVICE_MB)})
page.figure(fig, "ollama_context", {"bar": bars, **{name: vals for name, vals in parts}},
            caption=t("fig_ollama_caption", ollama=OLLAMA_MB))

page.notice()

# ---- live checks --------------------------------------------------------------------------------
model_cmp = ma.compare_model(s, model_probe)
worst_kv = max(kv_cmp, key=lambda c: c.rel_error)
by = {c.name: c for c in model_cmp}
checks = [
    CheckResult(t("check_weights"), by["weights_float32"].rel_error <= TOL and by["weights_bfloat16"].rel_error <= TOL,
                t("check_weights_detail", p32=by["weights_float32"].predicted / 1e6, m32=by["weights_float32"].measured / 1e6,
                  e32=by["weights_float32"].rel_error, p16=by["weights_bfloat16"].predicted / 1e6,
                  m16=by["weights_bfloat16"].measured / 1e6, e16=by["weights_bfloat16"].rel_error)),
    CheckResult(t("check_kv", n=len(kv_cmp)), all(c.rel_error <= TOL for c in kv_cmp),
                t("check_kv_detail", name=worst_kv.name, p=worst_kv.predicted / 1e6, m=worst_kv.measured / 1e6,
                  e=worst_kv.rel_error)),
    CheckResult(t("check_params"), n_params == sum(v["params"] for v in gguf["by_type"].values()) == steps["weights_float32"]["n_params"],
                t("check_params_detail", n=n_params, g=sum(v["params"] for v in gguf["by_type"].values()),
                  e=steps["weights_float32"]["n_params"])),
]
if "prefill_peak" in by:
    c = by["prefill_peak"]
    checks.append(CheckResult(t("check_prefill", B=batch, T=prefill), c.within(TOL, ma.PREFILL_FLOOR),
                              t("check_prefill_detail", p=c.predicted / 1e6, m=c.measured / 1e6, e=c.rel_error,
                                floor=ma.PREFILL_FLOOR / 1e6)))
page.checks(checks)
page.try_this()
page.code(ma.kv_cache_bytes, ma.prefill_activation_bytes, ma.parameter_count, ma.run_probe)
page.sources()
page.finish()
