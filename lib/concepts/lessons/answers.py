"""Answer keys for the lessons: each step's answer computed live from its preset state, with
the same lib functions its page calls. `answer(model, name, params)` returns a dict of values
(numbers and token strings) that assets/text/lessons.toml's `<lesson>_<n>_answer` template
states. Nothing is typed in: change the model or the preset and the key follows.

`model` is a LoadedModel (.engine, .tokenizer, .spec); `params` is a tuple of (name, value)
strings, exactly as they appear in the step's URL (plus text defaults filled by the UI)."""
from __future__ import annotations


import torch

from lib.concepts.beam_search.beam_search import beam_search, select
from lib.concepts.lessons.catalog import DEFAULT_PROMPT
from lib.concepts.life_of_a_token.trace import DEFAULT_BIAS, trace_token, word_bias
from lib.concepts.logit_bias import logit_bias as lb
from lib.concepts.paged_attention.workload import page_requests
from lib.decoding.paged_generation import run_requests
from lib.concepts.model_memory.memory_accounting import MiB, kv_cache_bytes
from lib.concepts.prefix_caching import prefix_cache
from lib.decoding.speculative.drafts import early_exit_distributions
from lib.decoding.speculative.acceptance import acceptance_probability, output_distribution, total_variation
from lib.concepts.stable_softmax import stable_softmax as ss
from lib.concepts.temperature import temperature as temp
from lib.decoding.generate import greedy, next_token_logits
from lib.decoding.sampling import SamplingConfig, apply_bias, top_p_mask
from lib.decoding.stop_tokens import end_token_ids
from lib.model.tokens import encode_prompt, token_text


def _ids(model, params: dict, key: str = "prompt", cap: int = 256):
    return encode_prompt(model.tokenizer, params.get(key, DEFAULT_PROMPT), cap).ids


def _tok(model, i: int) -> str:
    return token_text(model.tokenizer, int(i))


def pipeline_kept(model, p: dict) -> dict:
    """life-of-a-token in the state the step opens it in, the page's defaults for the rest (its
    bias of DEFAULT_BIAS on `word` included: the step passes b = 0 so that only top-k/top-p count)."""
    bias = word_bias(model.tokenizer, p.get("word", " Paris"), float(p.get("b", DEFAULT_BIAS)))
    cfg = SamplingConfig(temperature=float(p.get("T", 0.8)), top_k=int(p.get("k", 40)), top_p=float(p.get("p", 0.9)),
                         bias=bias)
    tr = trace_token(model.engine, _ids(model, p, cap=48), cfg, int(p.get("seed", 0)))
    return {"n": tr.pipeline.kept_count, "tok": _tok(model, tr.token), "V": model.spec.vocab}


def temperature_entropy(model, p: dict) -> dict:
    logits = next_token_logits(model.engine, _ids(model, p))
    probs = {T: temp.temperature_probs(logits, T) for T in (0.5, 1.0, 2.0)}
    top = int(probs[1.0].argmax())
    return {"h05": temp.entropy_bits(probs[0.5]), "h1": temp.entropy_bits(probs[1.0]),
            "h2": temp.entropy_bits(probs[2.0]), "tok": _tok(model, top),
            "p05": float(probs[0.5][top]), "p1": float(probs[1.0][top]), "p2": float(probs[2.0][top])}


def entropy_en_id(model, p: dict) -> dict:
    """The Indonesian step ("now the same in Indonesian"): the temperature page's entropy and top
    token at T = 1 on the step's prompt (`_id`), and the same on the English question (`_en`)."""
    out = {}
    for suffix, params in (("id", p), ("en", {"prompt": DEFAULT_PROMPT})):
        ids = _ids(model, params)
        probs = temp.temperature_probs(next_token_logits(model.engine, ids), 1.0)
        top = int(probs.argmax())
        out |= {f"n_{suffix}": len(ids), f"h_{suffix}": temp.entropy_bits(probs),
                f"tok_{suffix}": _tok(model, top), f"p_{suffix}": float(probs[top])}
    return out


def nucleus_size(model, p: dict) -> dict:
    logits = next_token_logits(model.engine, _ids(model, p))
    top_p = float(p.get("p", 0.9))
    kept = int(top_p_mask(logits, top_p).sum())
    probs = torch.softmax(logits.float(), -1)
    return {"n": kept, "p": top_p, "tok": _tok(model, int(probs.argmax())), "ptop": float(probs.max())}


def softmax_overflow(model, p: dict) -> dict:
    logits = next_token_logits(model.engine, _ids(model, p))
    r = ss.report(logits, float(p.get("scale", 1.0)), float(p.get("offset", 0.0)), p.get("dtype", "fp16"))
    return {"inf": r.exp_inf, "nan": r.naive_nan, "stable_nan": r.stable_nan, "zmax": r.z_max,
            "limit": r.overflow_at, "dtype": r.dtype}


def ban_top(model, p: dict) -> dict:
    logits = next_token_logits(model.engine, _ids(model, p))
    entries = lb.word_tokens(model.tokenizer, lb.parse_words(p.get("words", "Paris")), True)
    bias, _ = lb.bias_settings(entries, float("-inf"), "first")
    before, after = int(logits.argmax()), int(apply_bias(logits, bias).argmax())
    return {"before": _tok(model, before), "after": _tok(model, after), "n_banned": len(bias)}


def beam_vs_greedy(model, p: dict) -> dict:
    """The beam-search page's default: 4 beams, 16 new tokens, α = 1, ending at a sentence end."""
    ids = _ids(model, p, cap=64)
    beams, n_new, alpha = int(p.get("beams", 4)), int(p.get("n", 16)), float(p.get("alpha", 1.0))
    ends = end_token_ids(model.tokenizer, model.spec.eos_ids, tuple(p.get("stop", "sentence").split(",")))
    record = beam_search(model.engine, ids, beams, n_new, alpha, False, ends, run_to_max=True)
    best = record.hypotheses[select(record, alpha).best]
    plain = greedy(model.engine, ids, n_new, ends).new_ids
    return {"beams": beams, "alpha": alpha, "beam": model.tokenizer.decode(list(best.tokens)),
            "greedy": model.tokenizer.decode(plain)}


def _acceptance_inputs(model, p: dict):
    prob, qs = early_exit_distributions(model.engine, _ids(model, p), SamplingConfig(float(p.get("T", 1.0))))
    k = min(max(int(p.get("k", 6)), 1), model.spec.n_layers - 1)
    return prob, qs[k - 1], k


def acceptance(model, p: dict) -> dict:
    prob, q, k = _acceptance_inputs(model, p)
    return {"k": k, "alpha": acceptance_probability(prob, q), "tv": total_variation(prob, q)}


def correction(model, p: dict) -> dict:
    prob, q, k = _acceptance_inputs(model, p)
    return {"k": k, "tv_fixed": total_variation(prob, output_distribution(prob, q, "residual")),
            "tv_none": total_variation(prob, output_distribution(prob, q, "none"))}


def tokens_per_call(model, p: dict) -> dict:
    prob, q, k = _acceptance_inputs(model, p)
    a = acceptance_probability(prob, q)
    gammas = [int(g) for g in p.get("gammas", "2,4").split(",") if g]
    e = [(1 - a ** (g + 1)) / (1 - a) if a < 1 else g + 1 for g in gammas]
    return {"k": k, "alpha": a, "g1": gammas[0], "e1": e[0], "g2": gammas[-1], "e2": e[-1]}


def cache_growth(model, p: dict) -> dict:
    tr = trace_token(model.engine, _ids(model, p, cap=48), SamplingConfig(0.8, top_k=40, top_p=0.9), 0)
    return {"T": len(tr.ids), "per_layer": tr.layers[0].cache_bytes_total, "total": tr.layers[-1].cache_bytes_total,
            "after": tr.cache_bytes_decode}


def cache_en_id(model, p: dict) -> dict:
    """The Indonesian step: life-of-a-token's KV cache after the step's prompt (`_id`) and after
    the English question (`_en`): tokens and bytes after all layers."""
    out = {}
    for suffix, params in (("id", p), ("en", {"prompt": DEFAULT_PROMPT})):
        g = cache_growth(model, params)
        out |= {f"T_{suffix}": g["T"], f"total_{suffix}": g["total"]}
    out["ratio"] = out["total_id"] / out["total_en"]
    return out


def kv_per_token(model, p: dict) -> dict:
    s = model.spec
    gqa = s.kv_bytes_per_token(4)
    return {"gqa": gqa, "mha": gqa * s.group_size, "ratio": s.group_size, "H": s.n_heads, "Hkv": s.n_kv_heads}


def window_reach(model, p: dict) -> dict:
    t = int(p.get("t", 700))
    local = [w for w in model.spec.windows if w is not None]
    W = min(local) if local else t
    return {"t": t, "W": W, "local": min(t, W), "glob": t, "n_local": len(local),
            "n_glob": model.spec.n_layers - len(local)}


def prefix_hits(model, p: dict) -> dict:
    a = _ids(model, p, "prompt")
    b_text = p.get("b", "")
    if p.get("edit") == "1":
        b_text = prefix_cache.one_char_edit(b_text)
    b = encode_prompt(model.tokenizer, b_text, 256).ids
    bs = int(p.get("bs", 16))
    rows = prefix_cache.match_blocks(a, b, bs)
    return {"hits": sum(r.hit for r in rows), "blocks": len(rows), "lcp": prefix_cache.common_prefix_len(a, b),
            "n": len(b), "bs": bs}


def cow_copies(model, p: dict) -> dict:
    """The paged-attention page's default workload: how many blocks copy-on-write copied."""
    n_new, bs, blocks = int(p.get("n", 12)), int(p.get("bs", 16)), int(p.get("blocks", 9))
    others = [encode_prompt(model.tokenizer, p[k], 96).ids for k in ("req_b", "req_c", "req_d")]
    prompt = _ids(model, p, cap=96)
    run = run_requests(model.engine, page_requests(prompt, others, n_new, int(p.get("seed", 0))), blocks, bs)
    return {"cow": len(run.cow_copies), "p": len(prompt), "bs": bs, "full": len(prompt) // bs,
            "rest": len(prompt) % bs, "peak": max((s.used_blocks for s in run.snapshots), default=0), "blocks": blocks}


def kv_total(model, p: dict) -> dict:
    ctx = int(p.get("ctx", 4096))
    full, win = (kv_cache_bytes(model.spec, ctx, windowed=w) / MiB for w in (False, True))
    return {"ctx": ctx, "full": full, "win": win, "saved": 1 - win / full}


ANSWERS = {f.__name__: f for f in (pipeline_kept, temperature_entropy, nucleus_size, softmax_overflow, ban_top,
                                   acceptance, correction, tokens_per_call, cache_growth, kv_per_token,
                                   window_reach, prefix_hits, kv_total, beam_vs_greedy, cow_copies,
                                   entropy_en_id, cache_en_id)}


def answer(model, name: str, params: tuple[tuple[str, str], ...]) -> dict:
    """The values that answer one step, computed now on `model` for `params`."""
    return ANSWERS[name](model, dict(params))


