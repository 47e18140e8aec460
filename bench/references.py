"""Benchmark keys for issue 32 item 6: what the quantizer references cost on their pages'
defaults, measured side by side in this process (with, then without, alternating; medians).

refs_kvq_page_s: kv-quantization's default computation once (the full-precision reference + the
    page's 16 policies through run_policies, references included).
refs_kvq_added_s: what the references add to it: the PyTorch fake-quantization reports on
    float64 scales (lib.reference.quant_reference.cache_report) of the 16 policies' quantized
    caches, timed alone (median of REPEATS); an upper bound, since the own-scale half-step pass
    it replaced read the same blocks (goal: <= 0.5 s).
refs_act_checks_s: activation-outliers' page_checks on its default activation (resid_out,
    layer 11, int8), which run PyTorch's per-tensor and per-channel fake quantization on
    float64 scales (everything else on that page is unchanged by the references).
refs_batch_s: paged-attention's batching check as the page runs it: batched_vs_alone of its four
    default prompts (16 tokens each at most), the alone side read from the paged run's contiguous
    recompute (PagedRun.prompt_hidden; that run is the page's own work, computed once, untimed).
refs_batch_own_s: the same check with four alone forwards of its own (how it ran before),
    timed alternately with refs_batch_s (own, shared, own, shared, ...).
refs_memkv_s: model-memory's real-cache check (engine_cache_bytes of the first 32 of its 128 prefill tokens).
On a shared machine the absolute seconds are noisy; the difference of medians is the figure."""
from __future__ import annotations

import statistics
import time
import tomllib
from pathlib import Path

REPEATS = 3


def _kv_default(model):
    from lib.concepts.kv_quantization import kv_quant as kq
    from lib.core.quantization import quantize as qz
    from lib.model.tokens import encode_prompt

    text = tomllib.loads((Path(__file__).parents[1] / "assets/text/kv-quantization.toml").read_text())["en"]["default_text"]
    ids = tuple(encode_prompt(model.tokenizer, text, 160).ids)
    E = min(32, len(ids) - 1)
    Q = lambda b, g: qz.QuantSpec(b, g, True, 64)  # noqa: E731
    pols = [kq.KVQuantPolicy(Q(b, g), Q(b, g), 0) for b in (8, 4, 2) for g in qz.GRANULARITIES]
    pols += [kq.KVQuantPolicy(Q(16, "token"), Q(16, "token"), 0), kq.KVQuantPolicy(Q(4, "token"), None, 0),
             kq.KVQuantPolicy(None, Q(4, "token"), 0), kq.KVQuantPolicy(Q(4, "channel"), Q(4, "token"), 0)]
    return kq, ids, E, pols


def measure(model) -> dict:
    from lib.concepts.activation_outliers import checks as act_checks
    from lib.core.quantization import activation_capture as ac
    from lib.core.quantization import quantize as qz
    from lib.model.tokens import encode_prompt
    from lib.core.cache.quantized import QuantizedKVCache
    from lib.reference.quant_reference import cache_report

    kq, ids, E, pols = _kv_default(model)
    t0 = time.perf_counter()
    ref = kq.reference(model.engine, ids, E)
    kq.run_policies(model.engine, ids, E, tuple(pols), _ref=ref)
    page_s = time.perf_counter() - t0
    caches = [QuantizedKVCache.from_cache(ref.prefix, p) for p in pols]
    added = []
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        for qc in caches:
            cache_report(qc, ref.prefix)
        added.append(time.perf_counter() - t0)

    text = tomllib.loads((Path(__file__).parents[1] / "assets/text/activation-outliers.toml").read_text())["en"]["default_text"]
    a_ids = tuple(encode_prompt(model.tokenizer, text, 128).ids)
    acts = ac.capture(model.engine, a_ids, ("resid_out",)).acts["resid_out"][min(11, model.spec.n_layers - 1)]
    clip_at = 6.0 * float(ac.channel_max(acts).median())
    sq = {g: qz.error_stats(acts, qz.fake_quantize(acts, qz.QuantSpec(8, g, True, 64))).sqnr_db for g in qz.GRANULARITIES}
    effect = ac.Effect(0.0, 0.0, 1.0, 1.0, 1.0)
    t = lambda key, **_: key  # noqa: E731
    act_s = []
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        act_checks.page_checks(acts, 8, 64, sq, clip_at, qz.clip(acts, clip_at), effect, 1.0, t)
        act_s.append(time.perf_counter() - t0)
    from lib.concepts.paged_attention import workload
    from lib.decoding.paged_generation import run_requests
    from lib.model.long_text import long_text
    from lib.reference.batch_reference import batched_vs_alone
    from lib.reference.memory_reference import engine_cache_bytes

    pa = tomllib.loads((Path(__file__).parents[1] / "assets/text/paged-attention.toml").read_text())["en"]
    reqs = workload.page_requests(encode_prompt(model.tokenizer, pa["default_prompt"], 96).ids,
                                  [encode_prompt(model.tokenizer, pa[k], 96).ids for k in ("req_b", "req_c", "req_d")], 12, 0)
    prompts = tuple(tuple(r.prompt_ids) for r in reqs)
    run = run_requests(model.engine, reqs, 9, 16)                     # the page's default run
    alone = tuple(run.prompt_hidden.get(r.rid) for r in reqs)
    mem_ids = tuple(model.tokenizer(long_text()[:4000])["input_ids"][:128])
    batch_s, own_s, mem_s = [], [], []
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        batched_vs_alone(model.engine, prompts)
        own_s.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        batched_vs_alone(model.engine, prompts, alone)
        batch_s.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        engine_cache_bytes(model.engine, mem_ids)
        mem_s.append(time.perf_counter() - t0)
    return {"refs_batch_s": statistics.median(batch_s), "refs_batch_own_s": statistics.median(own_s),
            "refs_batch_runs_s": [round(x, 3) for x in batch_s], "refs_batch_own_runs_s": [round(x, 3) for x in own_s],
            "refs_memkv_s": statistics.median(mem_s),
            "refs_kvq_page_s": page_s, "refs_kvq_added_s": statistics.median(added),
            "refs_kvq_policies": len(pols), "refs_act_checks_s": statistics.median(act_s), "refs_repeats": REPEATS}
