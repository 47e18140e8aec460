"""The life of a token (issue 14 §6): one prompt through tokenizer -> embedding -> layers
(attention, KV cache, MLP) -> final norm -> logits -> bias -> temperature -> top-k -> top-p ->
sample. Widgets and layout only: the trace is lib/concepts/life_of_a_token/trace.py."""
import math

import streamlit as st

from lib.ui import glossary, runtime
from lib.concepts.catalog import PAGES_DIR
from lib.concepts.life_of_a_token import figures as plots
from lib.concepts.life_of_a_token import trace as lt
from lib.decoding.sampling import SamplingConfig
from lib.model.tokens import token_texts
from lib.ui.page import ConceptPage

page = ConceptPage("life-of-a-token", icon="🧬")
t, c, lang = page.t, page.c, page.t.lang
m = page.model()
spec = m.spec
g = glossary.link

left, right = page.controls()
prompt = page.prompt(max_tokens=48, container=left)
word = page.state.text("word", t("word_label"), t("default_word"), max_chars=40, area=False, help=t("word_help"),
                       container=left)
b = page.state.number_slider("b", t("b_label"), -10.0, 10.0, lt.DEFAULT_BIAS, step=0.5, container=left)
T = page.state.number_slider("T", t("t_label"), 0.05, 3.0, 0.8, step=0.05, container=right)
k = page.state.number_slider("k", t("k_label"), 1, 200, 40, container=right)
p = page.state.number_slider("p", t("p_label"), 0.05, 1.0, 0.9, step=0.01, container=right)
seed = page.state.integer("seed", t("seed_label"), 0, 2**31 - 1, 0, container=right)
layer = page.layer_select(default=5, container=right)

bias = lt.word_bias(m.tokenizer, word, b)
cfg = SamplingConfig(temperature=T, top_k=k, top_p=p, bias=bias)
with st.spinner(c("working")):
    tr = runtime.cached(lt.trace_token)(m.engine, prompt.ids, cfg, seed)
tokens = token_texts(m.tokenizer, tr.ids)
n_tok, D = tr.embed.shape
layer_names = [t("layer_name", l=l) + ("" if spec.windows[l] is None else "·") for l in range(spec.n_layers)]
chosen_text = token_texts(m.tokenizer, [tr.token])[0]


def concept_link(slug: str) -> None:
    st.page_link(str(PAGES_DIR / f"{slug}.py"), label=t("go_to", page=glossary.page_title(slug, lang)), icon="➡️")


def stage(n: int, key: str, *slugs: str) -> None:
    st.subheader(f"{n}. {t(f'stage_{key}')}")
    if slugs and not page.present:
        cols = st.columns(len(slugs))
        for col, slug in zip(cols, slugs):
            with col:
                concept_link(slug)


# ---- predict first: how many tokens survive the filters? ---------------------------------
kept_final = tr.pipeline.kept_count
buckets = ((1, 1), (2, 5), (6, 20), (21, 100), (101, spec.vocab))
answer = next(i for i, (lo, hi) in enumerate(buckets) if lo <= kept_final <= hi)
revealed = page.predict("kept", t("q_kept", V=spec.vocab, k=k, p=p), range(len(buckets)), answer,
                        t("q_kept_why", n=kept_final, k=k, p=p),
                        format_func=lambda i: t("bucket", lo=buckets[i][0], hi=buckets[i][1])
                        if buckets[i][0] != buckets[i][1] else t("bucket_one"))

# ---- 1. tokenizer -------------------------------------------------------------------------
stage(1, "tokenizer", "prefix-caching")
st.markdown(t("tokenizer_text", n=n_tok, tok=g("token"), tokenizer=g("tokenizer"), bos=g("bos")))
st.markdown(" ".join(f"`{i}: {tok} ({tid})`" for i, (tok, tid) in enumerate(zip(tokens, tr.ids))))

# ---- 2. embedding -------------------------------------------------------------------------
stage(2, "embedding", "model-memory")
st.markdown(t("embedding_text", T=n_tok, D=D, emb=g("embedding"), scale=math.sqrt(D)))
page.figure(plots.embedding_figure(tr.embed, tokens, {"title": t("fig_embed_title", T=n_tok, D=D),
                                                      "x": t("fig_dim"), "value": t("fig_value")}),
            "embedding", {"token": tokens, **{f"dim{j}": tr.embed[:, j].tolist() for j in range(8)}})

# ---- 3. the layers: attention (KV cache grows) and MLP ----------------------------------
stage(3, "layers", "attention-scaling", "gqa", "rope-shift", "sliding-window", "attention-sinks")
n_local = sum(w is not None for w in spec.windows)
st.markdown(t("layers_text", L=spec.n_layers, local=n_local, glob=spec.n_layers - n_local,
              H=spec.n_heads, Hkv=spec.n_kv_heads, attn=g("attention"), mlp=g("mlp"), kv=g("kv_cache"),
              layer=g("layer"), resid=g("residual_stream"), T=n_tok, D=D))
rows = lt.last_token_attention(tr)                                               # (L, T)
page.figure(plots.attention_stack_figure(rows, layer_names, tokens,
                                         {"title": t("fig_stack_title", tok=tokens[-1]), "x": t("fig_key"),
                                          "y": t("fig_layer"), "value": t("fig_weight")}),
            "attention_by_layer", {"layer": list(range(spec.n_layers)),
                                   **{f"key{j}": rows[:, j].tolist() for j in range(n_tok)}})
first_mass = lt.first_token_share(tr)
st.caption(t("stack_caption", share=first_mass, bos=tokens[0]))

kib = [lay.cache_bytes_total / 1024 for lay in tr.layers]
per_layer = tr.layers[0].cache_bytes_total
page.figure(plots.cache_growth_figure(layer_names, kib, tr.cache_bytes_decode / 1024,
                                      {"title": t("fig_cache_title", T=n_tok), "y": "KiB", "x": t("fig_layer"),
                                       "bars": t("fig_cache_bars"),
                                       "decode": t("fig_cache_decode", n=tr.cache_len_decode,
                                                   kib=tr.cache_bytes_decode / 1024)}),
            "kv_cache_growth", {"layer": list(range(spec.n_layers)), "cache_bytes": [lay.cache_bytes_total for lay in tr.layers]})
st.caption(t("cache_caption", per_layer=per_layer, T=n_tok, Hkv=spec.n_kv_heads, d=spec.head_dim,
             bpe=per_layer // max(1, 2 * spec.n_kv_heads * spec.head_dim * n_tok),
             total=tr.layers[-1].cache_bytes_total, after=tr.cache_bytes_decode, n=tr.cache_len_decode))

attn_n, mlp_n, res_n = ([lay.attn_norm for lay in tr.layers], [lay.mlp_norm for lay in tr.layers],
                        [lay.resid_norm for lay in tr.layers])
page.figure(plots.updates_figure(layer_names, attn_n, mlp_n, res_n,
                                 {"title": t("fig_updates_title"), "attn": t("fig_attn_adds"),
                                  "mlp": t("fig_mlp_adds"), "resid": t("fig_resid"), "y": t("fig_norm"),
                                  "fmt": t.num}),
            "updates_by_layer", {"layer": list(range(spec.n_layers)), "attention_norm": attn_n, "mlp_norm": mlp_n,
                                 "residual_norm": res_n})

lay = tr.layers[layer]
kind = c("kind_global") if lay.window is None else c("kind_local", w=lay.window)
st.markdown(f"**{t('detail_title', l=layer, kind=kind)}**")
heads = [t("head_name", h=h, kv=h // spec.group_size) for h in range(spec.n_heads)]
page.figure(plots.layer_detail_figure(lay.attn, tokens, heads, {"title": t("fig_detail_title", l=layer)}),
            f"attention_layer{layer}", {"head": [h for h in range(spec.n_heads) for _ in range(n_tok)],
                                        **{f"key{j}": lay.attn[:, :, j].reshape(-1).tolist() for j in range(n_tok)}})
ent = [lt.entropy_bits(lay.last_row[h]) for h in range(spec.n_heads)]
st.caption(t("detail_caption", lo=min(ent), hi=max(ent), ent=g("entropy"), H=spec.n_heads))
pk = lt.peak(lay.mlp_act)
page.figure(plots.vector_figure(lay.mlp_act, t("fig_mlp_title", l=layer, I=lay.mlp_act.shape[0], tok=tokens[-1]),
                                t("fig_channel"), t("fig_value"), "#e0701b"),
            f"mlp_layer{layer}", {"channel": list(range(lay.mlp_act.shape[0])), "value": lay.mlp_act.tolist()})
st.caption(t("mlp_caption", ch=pk.channel, v=pk.value, ratio=pk.ratio, out=g("outlier")))
concept_link("activation-outliers")

# ---- 4. final norm ------------------------------------------------------------------------
stage(4, "final")
st.markdown(t("final_text", D=D, norm=g("rmsnorm"), before=tr.layers[-1].resid_norm,
              after=lt.norm(tr.final)))
page.figure(plots.vector_figure(tr.final, t("fig_final_title", D=D), t("fig_dim"), t("fig_value")),
            "final_hidden", {"dim": list(range(D)), "value": tr.final.tolist()})

# ---- 5. logits ----------------------------------------------------------------------------
stage(5, "logits", "stable-softmax", "temperature")
lg = tr.logits
top_id = int(lg.argmax())
st.markdown(t("logits_text", V=lg.shape[0], logit=g("logit"), softmax=g("softmax"), hi=float(lg.max()),
              lo=float(lg.min()), tok=token_texts(m.tokenizer, [top_id])[0]))

# ---- 6. the sampling pipeline -------------------------------------------------------------
stage(6, "sampling", "logit-bias", "temperature", "top-k-top-p")
ids, views = lt.stage_views(tr, 12, extra=[b_id for b_id, _ in bias] + [tr.token])
shown = token_texts(m.tokenizer, ids)
names = {"input": t("st_input"), "bias": t("st_bias"), "temperature": t("st_temperature", T=T),
         "top_k": t("st_top_k", k=k), "top_p": t("st_top_p", p=p)}
if bias:
    bword = token_texts(m.tokenizer, [bias[0][0]])[0]
    st.markdown(t("bias_text", word=bword, b=b, ratio=math.exp(b), lb=g("logit_bias"), odds=g("odds")))
else:
    st.markdown(t("bias_none", lb=g("logit_bias")))
st.markdown(t("pipeline_text", temp=g("temperature"), topk=g("top_k"), nucleus=g("nucleus")))
if revealed:
    fig = plots.stages_figure(shown, [names[v.name] for v in views], [v.probs for v in views],
                              [v.kept for v in views], ids.index(tr.token),
                              {"title": t("fig_stages_title", tok=chosen_text),
                               "kept": lambda n: t("kept_fmt", n=n)})
    page.figure(fig, "pipeline_stages", {"token": shown, "token_id": ids,
                                         **{v.name: v.probs.tolist() for v in views}})
    st.markdown(" → ".join(f"**{names[v.name]}**: {t('kept_fmt', n=v.kept)}" for v in views))

st.subheader(f"7. {t('stage_sample')}")
p_final = float(tr.pipeline.probs[tr.token])
if revealed:             # the drawn token's final probability: 100% when the filters left only it ("kept")
    st.success(t("sample_text", tok=chosen_text, id=tr.token, p=p_final, seed=seed, seedl=g("seed"),
                 n=tr.cache_len_decode))
else:
    st.caption(c("predict_hidden"))
concept_link("speculative-acceptance")

page.notice()
page.try_this()
page.code(lt.trace_token, lt.stage_views)
page.sources()
page.finish()
