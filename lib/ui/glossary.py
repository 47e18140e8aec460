"""The glossary: one list of terms, their pages, and links to them.

The terms themselves live in assets/text/terms.toml, THE term list of the app (English term ->
the one Indonesian term, by glossary key, with the rival wordings no page may use); the
definitions in assets/text/glossary.toml (`def_<key>`, [en] and [id]). Any page links a term:

    from lib.ui import glossary
    st.markdown(f"The {glossary.link('kv_cache')} grows by one entry per token.")
    # -> "The [KV cache](/glossary#kv-cache) grows ..."  (`/glossary?lang=id#kv-cache` in Indonesian)

`TERMS` says which pages use each term; the glossary page lists them under the definition.
"""
from __future__ import annotations

from dataclasses import dataclass

from lib.ui.i18n import current_lang, load_texts

GLOSSARY_PATH = "/glossary"


@dataclass(frozen=True)
class Term:
    key: str                    # terms.toml <key>, glossary.toml def_<key>; anchor: key with hyphens
    pages: tuple[str, ...]      # URL slugs of the pages that use the term (concepts or teaching pages)

    @property
    def anchor(self) -> str:
        return self.key.replace("_", "-")


T = Term
TERMS = (
    T("token", ("life-of-a-token", "prefix-caching", "logit-bias")),
    T("tokenizer", ("life-of-a-token", "prefix-caching", "logit-bias")),
    T("bos", ("life-of-a-token", "attention-sinks", "padding-mask")),
    T("embedding", ("life-of-a-token", "model-memory")),
    T("layer", ("life-of-a-token", "sliding-window", "speculative-acceptance", "activation-outliers")),
    T("residual_stream", ("life-of-a-token", "activation-outliers")),
    T("rmsnorm", ("life-of-a-token", "attention-scaling")),
    T("attention", ("life-of-a-token", "attention-scaling", "gqa", "padding-mask", "attention-sinks")),
    T("qkv", ("life-of-a-token", "attention-scaling", "gqa", "rope-shift")),
    T("attention_head", ("life-of-a-token", "gqa", "attention-scaling", "attention-sinks")),
    T("gqa", ("gqa", "model-memory", "kv-quantization")),
    T("rope", ("rope-shift", "sliding-window", "prefix-caching")),
    T("mlp", ("life-of-a-token", "activation-outliers")),
    T("logit", ("life-of-a-token", "temperature", "top-k-top-p", "stable-softmax", "logit-bias")),
    T("softmax", ("life-of-a-token", "stable-softmax", "temperature", "attention-scaling")),
    T("log_sum_exp", ("stable-softmax",)),
    T("overflow", ("stable-softmax",)),
    T("float_formats", ("stable-softmax", "model-memory", "kv-quantization")),
    T("temperature", ("life-of-a-token", "temperature", "top-k-top-p", "logit-bias")),
    T("entropy", ("temperature", "attention-scaling")),
    T("greedy", ("temperature", "beam-search", "speculative-speed")),
    T("top_k", ("life-of-a-token", "top-k-top-p")),
    T("nucleus", ("life-of-a-token", "top-k-top-p", "logit-bias", "speculative-acceptance")),
    T("logit_bias", ("life-of-a-token", "logit-bias")),
    T("odds", ("logit-bias",)),
    T("log_prob", ("beam-search", "attention-sinks", "kv-quantization")),
    T("beam_search", ("beam-search",)),
    T("length_norm", ("beam-search",)),
    T("seed", ("temperature", "top-k-top-p", "speculative-acceptance", "life-of-a-token")),
    T("speculative", ("speculative-acceptance", "speculative-speed")),
    T("draft_model", ("speculative-acceptance", "speculative-speed")),
    T("acceptance_rate", ("speculative-acceptance", "speculative-speed")),
    T("residual_dist", ("speculative-acceptance",)),
    T("tv_distance", ("speculative-acceptance",)),
    T("chi_square", ("speculative-acceptance",)),
    T("monte_carlo", ("speculative-acceptance",)),
    T("kl_divergence", ("kv-quantization", "activation-outliers")),
    T("perplexity", ("attention-sinks", "kv-quantization", "activation-outliers")),
    T("kv_cache", ("life-of-a-token", "gqa", "sliding-window", "attention-sinks", "prefix-caching",
                   "paged-attention", "kv-quantization", "model-memory")),
    T("prefill", ("chunked-prefill", "prefix-caching", "model-memory")),
    T("decode_step", ("chunked-prefill", "speculative-speed", "paged-attention")),
    T("sliding_window", ("sliding-window", "attention-sinks", "model-memory")),
    T("ring_buffer", ("sliding-window", "attention-sinks")),
    T("attention_sink", ("attention-sinks",)),
    T("padding_mask", ("padding-mask",)),
    T("prefix_cache", ("prefix-caching",)),
    T("paged_attention", ("paged-attention",)),
    T("copy_on_write", ("paged-attention",)),
    T("chunked_prefill", ("chunked-prefill",)),
    T("ttft", ("chunked-prefill",)),
    T("tbt", ("chunked-prefill",)),
    T("percentile", ("chunked-prefill",)),
    T("quantization", ("kv-quantization", "activation-outliers", "model-memory")),
    T("scale_granularity", ("kv-quantization", "activation-outliers")),
    T("sqnr", ("activation-outliers", "kv-quantization")),
    T("outlier", ("activation-outliers", "kv-quantization")),
    T("mib", ("model-memory", "gqa", "kv-quantization", "paged-attention")),
    T("log_scale", ("temperature", "attention-scaling", "speculative-speed", "chunked-prefill")),
)
BY_KEY = {t.key: t for t in TERMS}


def url(key: str, lang: str | None = None) -> str:
    """`/glossary#kv-cache`, with `?lang=id` when the page is in Indonesian (a link opens a
    fresh page, so the language must travel in the address)."""
    lang = lang or current_lang()
    query = f"?lang={lang}" if lang != "en" else ""
    return f"{GLOSSARY_PATH}{query}#{BY_KEY[key].anchor}"


def term(key: str, lang: str | None = None) -> str:
    """The term in the page language, from the term list (the Indonesian one is the app's term)."""
    BY_KEY[key]  # unknown keys fail loudly, not with a dead link
    return load_texts("terms")[lang or current_lang()][key]


def english_beside(key: str, lang: str | None = None) -> str:
    """The English term to show beside the term in `lang` ("" when there is nothing to add):
    Indonesian courses use both, so `dekoding greedy` shows `greedy decoding`, while
    `KV cache` or `GQA (grouped-query attention)`, which already hold every English word, show
    nothing."""
    lang = lang or current_lang()
    if lang == "en":
        return ""
    en, local = term(key, "en"), term(key, lang)
    words = lambda s: {w for w in "".join(c if c.isalnum() else " " for c in s.lower()).split()}
    return "" if words(en) <= words(local) else en


def term_list() -> list[tuple[str, str, str]]:
    """THE term list: (key, English, Indonesian) for every entry of assets/text/terms.toml,
    glossary terms and the `word_*` words alike, in alphabetical order of the English."""
    table = load_texts("terms")
    return sorted(((k, en, table["id"][k]) for k, en in table["en"].items()), key=lambda r: r[1].lower())


def definition(key: str, lang: str | None = None) -> str:
    return load_texts("glossary")[lang or current_lang()][f"def_{key}"]


def link(key: str, text: str | None = None, lang: str | None = None) -> str:
    """A Markdown link to the term's entry: `[KV cache](/glossary#kv-cache)`; `text` replaces
    the term as the visible words (e.g. a plural)."""
    return f"[{text or term(key, lang)}]({url(key, lang)})"


def terms_of(slug: str) -> list[Term]:
    """The terms a page uses (those whose `pages` name it), in the glossary's order."""
    return [t for t in TERMS if slug in t.pages]


def page_terms_line(slug: str, lang: str | None = None) -> str:
    """`[logit](/glossary#logit) · [entropy](/glossary#entropy)`: every term of a page linked to
    its glossary entry ("" for a page with none)."""
    return " · ".join(link(t.key, lang=lang) for t in terms_of(slug))


def sorted_terms(lang: str | None = None) -> list[Term]:
    """The terms in alphabetical order of their name in `lang` (case- and symbol-insensitive)."""
    lang = lang or current_lang()
    return sorted(TERMS, key=lambda t: "".join(ch for ch in term(t.key, lang).lower() if ch.isalnum()))



def page_title(slug: str, lang: str | None = None) -> str:
    """A page's full title in `lang`: a concept's (common.toml concept_<slug>) or a teaching
    page's (page_<slug>)."""
    table = load_texts("common")[lang or current_lang()]
    return table.get(f"concept_{slug}") or table[f"page_{slug}"]


def page_url(slug: str, params: dict | None = None, lang: str | None = None) -> str:
    """`/<slug>?k=v&lang=id`: a link that opens a page in a given state and language."""
    from urllib.parse import urlencode

    lang = lang or current_lang()
    query = dict(params or {})
    if lang != "en":
        query["lang"] = lang
    return f"/{slug}" + (f"?{urlencode(query)}" if query else "")
