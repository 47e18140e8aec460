"""The model check (issue 32): the engine's layers and the vocabulary matrix against
transformers and `gguf`. Widgets and layout only: lib/concepts/model_check/."""
import streamlit as st
import torch

from lib.ui import runtime
from lib.concepts.model_check import checks, foundation
from lib.concepts.model_check import figures as plots
from lib.model.tokens import token_texts
from lib.ui.page import ConceptPage

page = ConceptPage("model-check", icon="🔬")
t = page.t
m = page.model()

left, right = page.controls()
prompt = page.prompt(max_tokens=128, container=left)
if not foundation.available(m):
    st.info(t("not_available", name=runtime.model_name(m)))
    page.finish()
    st.stop()

ids = torch.tensor(prompt.ids)
all_layers = tuple(range(m.spec.n_layers))
g_layer, l_layer = foundation.global_and_local(m.config)
long_layers = (max(l for l in range(g_layer) if m.config["layer_types"][l] == "sliding_attention"), g_layer)
with st.spinner(page.c("working")):
    vc = runtime.cached(foundation.vocab_check)(m, ids)
    lcs = runtime.cached(foundation.layer_checks)(m, ids, all_layers)
    long_ids = foundation.long_ids(m)
    long_lcs = runtime.cached(foundation.layer_checks)(m, long_ids, long_layers)

st.subheader(t("vocab_title"))
st.caption(t("vocab_caption", V=vc.vocab))
labels = token_texts(m.tokenizer, list(vc.ref_top))
fig = plots.top_logits(labels, vc.engine_logits, vc.ref_logits,
                       {"title": t("fig_top_title"), "x": t("axis_token"), "y": t("axis_logit"),
                        "engine": t("series_engine"), "ref": t("series_ref")})
page.figure(fig, "top_logits", {"token": labels, "engine_logit": list(vc.engine_logits),
                                "gguf_logit": list(vc.ref_logits)})

st.subheader(t("layers_title"))
fig = plots.layer_errors([lc.layer for lc in lcs], [lc.rel for lc in lcs], [lc.layer_type for lc in lcs],
                         checks.LAYER_REL_TOL, {"title": t("fig_layers_title", T=len(ids)), "x": t("axis_layer"),
                                                "y": t("axis_rel"), "tol": t("fig_tol")}, t.num)
page.figure(fig, "layer_errors", {"layer": [lc.layer for lc in lcs], "relative_error": [lc.rel for lc in lcs],
                                  "max_abs_diff": [lc.max_diff for lc in lcs]})

st.subheader(t("long_title"))
st.caption(t("long_caption", T=len(long_ids), w=m.config["sliding_window"]))

page.notice()
page.checks(checks.config_results(m.spec, m.config, t) + checks.vocab_results(vc, t)
            + [checks.layers_result(lcs, t)] + [checks.layer_result(lc, t) for lc in long_lcs])
page.try_this()
page.code(foundation.vocab_check, foundation.layer_checks)
page.sources()
page.finish()
