"""Core measurements (issue 2): model preparation and load, decode speed against transformers,
the memory-bandwidth bound, logits parity, peak memory and first page render.

Each measurement that must start from a clean process (cold/warm load, peak RSS) runs in a
subprocess; speed comparisons run side by side in this process, medians of repeats."""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.common import median_time

ROOT = Path(__file__).resolve().parents[1]
PROMPT = "The capital of France is"
NEW_TOKENS = 48


def _py(code: str, env: dict | None = None, timeout: int = 900) -> dict:
    """Run python code in a fresh process; it must print one JSON line last."""
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env={**os.environ, **(env or {})},
                         capture_output=True, text=True, timeout=timeout)
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-2000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


LOAD_CODE = """
import json, time, sys
t0 = time.perf_counter()
sys.path.insert(0, '.')
from lib.model import model_loader
m = model_loader.load('bundled', 'cpu')
print(json.dumps({'total_s': time.perf_counter() - t0, **m.timings}))
"""

RSS_CODE = """
import json, resource, sys
sys.path.insert(0, '.')
from lib.model import model_loader
from lib.decoding import generate
from lib.concepts.temperature import temperature
from lib.decoding.sampling import SamplingConfig
from lib.model.tokens import encode_prompt
import numpy as np
m = model_loader.load('bundled', 'cpu')
p = encode_prompt(m.tokenizer, 'The capital of France is')
logits = generate.next_token_logits(m.engine, p.ids)
temperature.sweep(logits, tuple(np.geomspace(0.05, 20, 41)), 10)
generate.continuation(m.engine, p.ids, SamplingConfig(0.0), 0, 16, m.spec.eos_ids)
generate.continuation(m.engine, p.ids, SamplingConfig(0.8), 0, 16, m.spec.eos_ids)
temperature.ranks_identical(logits, (0.05, 0.5, 2.0, 20.0))
temperature.max_diff_vs_transformers(logits, (0.05, 0.5, 2.0, 20.0))
print(json.dumps({'peak_rss_mb': resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

HF_GGUF_CODE = """
import json, time, sys
sys.path.insert(0, '.')
from lib.model.bundled_model import gguf_path
p = gguf_path()
t0 = time.perf_counter()
from transformers import AutoModelForCausalLM, AutoTokenizer
m = AutoModelForCausalLM.from_pretrained(str(p.parent), gguf_file=p.name)
t1 = time.perf_counter()
tok = AutoTokenizer.from_pretrained(str(p.parent), gguf_file=p.name)
print(json.dumps({'hf_gguf_load_s': time.perf_counter() - t0, 'hf_gguf_model_s': t1 - t0}))
"""


def cold_prepare() -> dict:
    """First-ever preparation into an empty cache folder (the GGUF is assembled there too)."""
    with tempfile.TemporaryDirectory() as d:
        r = _py(LOAD_CODE, {"LLM_LAB_CACHE": d})
    return {"load_cold_s": r["total_s"], "prepare_cold_s": r["prepare_s"]}


def warm_load(repeat: int = 3) -> dict:
    runs = [_py(LOAD_CODE) for _ in range(repeat)]
    return {"load_warm_s": statistics.median(r["total_s"] for r in runs)}


def memory_bandwidth_gbs(repeat: int = 7) -> float:
    """Read bandwidth of this machine as torch sees it: sum over a 1 GiB float32 tensor."""
    import torch

    x = torch.ones(256 * 2**20)
    return x.nbytes / median_time(x.sum, repeat, warmup=0) / 1e9


def decode_speed(repeat: int = 5) -> dict:
    """The app's greedy decode vs transformers `generate` (same weights, fp32, prompt, token count),
    and the same engine with its Q8_0 vocabulary matrix expanded to float32 (LLM_LAB_VOCAB=float32)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from lib.model import bundled_model, model_loader
    from lib.decoding.generate import greedy, prompt_cache
    from lib.model.facts import weight_bytes

    torch.set_num_threads(min(2, os.cpu_count() or 1))
    folder = bundled_model.prepare()
    tok = AutoTokenizer.from_pretrained(folder)
    hf = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    eng = model_loader.load("bundled", "cpu").engine   # the app's engine: the same weights, memory-mapped
    prompt_cache(eng).max_bytes = 0                    # every timed run prefills, as transformers' does
    from lib.core.engine import Engine
    from lib.core.engine_weights import EngineWeights
    from lib.core.vocab_matrix import Q8VocabMatrix

    eng32 = None
    if isinstance(eng.embed, Q8VocabMatrix):           # the server's other choice, side by side
        vocab = eng.embed.expanded()
        eng32 = Engine(eng.spec, EngineWeights(vocab, vocab, eng.final_norm, eng.layers), key="bench|float32-vocab")
        prompt_cache(eng32).max_bytes = 0
    ids = tok(PROMPT, return_tensors="pt").input_ids
    prompt = ids[0].tolist()

    def ours():
        return greedy(eng, prompt, NEW_TOKENS).new_ids

    def theirs():
        with torch.no_grad():
            out = hf.generate(ids, max_new_tokens=NEW_TOKENS, min_new_tokens=NEW_TOKENS, do_sample=False)
        return out[0, ids.shape[1]:].tolist()

    def ours32():
        return greedy(eng32, prompt, NEW_TOKENS).new_ids

    same = ours() == theirs()  # also the warm-up
    same32 = eng32 is None or ours32() == theirs()
    t_ours, t_hf, t_32 = [], [], []
    for _ in range(repeat):  # interleaved, so all see the same machine load
        t0 = time.perf_counter(); ours(); t_ours.append(time.perf_counter() - t0)
        t0 = time.perf_counter(); theirs(); t_hf.append(time.perf_counter() - t0)
        if eng32 is not None:
            t0 = time.perf_counter(); ours32(); t_32.append(time.perf_counter() - t0)
    ours_tok_s = NEW_TOKENS / statistics.median(t_ours)
    hf_tok_s = NEW_TOKENS / statistics.median(t_hf)
    vocab32 = {}
    if eng32 is not None:
        v32 = NEW_TOKENS / statistics.median(t_32)
        vocab32 = {"decode_tok_s_float32_vocab": v32, "decode_speedup_float32_vocab": v32 / hf_tok_s,
                   "decode_same_tokens_float32_vocab": same32}
        del eng32, vocab

    # Parity on a long prompt (past the 512-token window) against transformers eager attention.
    from lib.model.long_text import long_text

    hf.config._attn_implementation = "eager"
    long_ids = tok(long_text(), return_tensors="pt").input_ids[:, :700]
    ours_logits = eng.forward(long_ids, eng.new_cache(capacity=800))[0, -1]
    with torch.no_grad():
        ref = hf(long_ids).logits[0, -1]
    bw = memory_bandwidth_gbs()
    bytes_per_token = weight_bytes(eng)  # every weight is read once per decoded token
    bound = bw * 1e9 / bytes_per_token
    return {
        "decode_tok_s": ours_tok_s, "hf_decode_tok_s": hf_tok_s, "decode_speedup": ours_tok_s / hf_tok_s,
        "decode_same_tokens": same, "decode_new_tokens": NEW_TOKENS,
        "memory_bandwidth_gbs": bw, "weight_bytes_per_token": bytes_per_token,
        "bandwidth_bound_tok_s": bound, "decode_fraction_of_bound": ours_tok_s / bound,
        "logits_max_abs_diff": float((ours_logits - ref).abs().max()), "logits_prompt_tokens": long_ids.shape[1],
        **vocab32,
    }


def page_first_render() -> dict:
    """First render of each page with the model warm (AppTest, this process)."""
    from streamlit.testing.v1 import AppTest

    from lib.concepts.catalog import CONCEPTS

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=600)
    at.run()  # loads the model (cache_resource) on the home page
    out = {}
    teaching = ("lessons", "glossary", "life-of-a-token")       # issue 14: <= 3 s warm as well
    for slug in [c.slug for c in CONCEPTS if c.exists] + list(teaching):
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=600)
        at.run()
        at.switch_page(f"pages/{slug}.py")
        t0 = time.perf_counter()
        at.run()
        out[slug] = round(time.perf_counter() - t0, 2)
        if at.exception:
            out[slug + "_exception"] = str(at.exception[0].value)[:200]
    return {"page_first_render_s": out,
            "page_first_render_over_3s_not_declared_long": sorted(
                c.slug for c in CONCEPTS if c.exists and not c.long and out.get(c.slug, 0) > 3.0),
            "page_declared_long": [c.slug for c in CONCEPTS if c.exists and c.long],
            "teaching_first_render_over_3s": sorted(s for s in teaching if out.get(s, 0) > 3.0)}


def measure_all(baseline: bool = False, cold: bool = True) -> dict:
    out: dict = {}
    steps = [("cold", cold_prepare)] if cold else []
    steps += [("warm", warm_load), ("rss", lambda: _py(RSS_CODE)), ("decode", decode_speed)]
    if baseline:
        steps.append(("hf_gguf", lambda: _py(HF_GGUF_CODE, timeout=1200)))
    steps.append(("render", page_first_render))
    for name, fn in steps:
        print(f"[bench] core.{name}…", file=sys.stderr, flush=True)
        t0 = time.perf_counter()
        out.update(fn())
        print(f"[bench] core.{name} done in {time.perf_counter() - t0:.1f}s", file=sys.stderr, flush=True)
    return out
