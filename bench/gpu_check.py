"""python -m bench.gpu_check [--tiny] [--out FILE]: the CUDA path, checked and timed.

The bundled weights cannot travel to the GPU machine, so this builds the REAL Gemma 3 270M
configuration with random weights: fine for correctness of the code path and for speed,
meaningless for text quality. Measures (one JSON object, also written to --out):
  - parity of our engine with transformers on CUDA in float32 (prefill 700 + 16 decode steps)
  - greedy decode tok/s in bfloat16: transformers `generate`, our engine eager, our engine
    with the decode step captured in a CUDA graph (lib/decoding/graphed_greedy.py)
  - cost of verifying a block of k tokens in one forward vs one token (speculative decoding)
`--tiny` runs the same code on a tiny config (for a quick check on a CPU)."""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lib.model.from_transformers import engine_from_hf  # noqa: E402
from lib.decoding.generate import greedy  # noqa: E402
from lib.decoding.graphed_greedy import GraphedGreedyDecoder  # noqa: E402


def real_config(tiny: bool):
    from transformers import Gemma3TextConfig

    if tiny:
        return Gemma3TextConfig(vocab_size=1000, hidden_size=64, intermediate_size=128, num_hidden_layers=6,
                                num_attention_heads=4, num_key_value_heads=1, head_dim=16,
                                query_pre_attn_scalar=16, sliding_window=32, max_position_embeddings=2048)
    return Gemma3TextConfig(vocab_size=262_144, hidden_size=640, intermediate_size=2048, num_hidden_layers=18,
                            num_attention_heads=4, num_key_value_heads=1, head_dim=256, query_pre_attn_scalar=256,
                            sliding_window=512, rms_norm_eps=1e-6, max_position_embeddings=32_768,
                            rope_parameters={"full_attention": {"rope_type": "default", "rope_theta": 1e6},
                                             "sliding_attention": {"rope_type": "default", "rope_theta": 1e4}})


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def timed(fn, device, repeat=3):
    fn()
    ts = []
    for _ in range(repeat):
        sync(device)
        t0 = time.perf_counter()
        fn()
        sync(device)
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def parity(hf, device, n_prompt: int) -> dict:
    eng = engine_from_hf(hf)
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(0, hf.config.vocab_size, (1, n_prompt), generator=g).to(device)
    cache = eng.new_cache(capacity=n_prompt + 32)
    ours = eng.forward(ids, cache)[0, -1]
    with torch.no_grad():
        out = hf(ids, use_cache=True)
    worst = float((ours - out.logits[0, -1]).abs().max())
    past, nxt = out.past_key_values, out.logits[:, -1].argmax(-1, keepdim=True)
    for _ in range(16):
        ours = eng.forward(nxt, cache)[0, -1]
        with torch.no_grad():
            out = hf(nxt, past_key_values=past, use_cache=True)
        past = out.past_key_values
        worst = max(worst, float((ours - out.logits[0, -1]).abs().max()))
        nxt = out.logits[:, -1].argmax(-1, keepdim=True)
    scale = float(out.logits.abs().max())
    return {"cuda_fp32_logits_max_abs_diff": worst, "cuda_fp32_logit_scale": scale, "parity_prompt_tokens": n_prompt}


def speed(hf, device, new_tokens: int) -> dict:
    eng = engine_from_hf(hf)
    g = torch.Generator().manual_seed(1)
    prompt = torch.randint(0, hf.config.vocab_size, (1, 32), generator=g).tolist()[0]
    ids = torch.tensor([prompt], device=device)

    def hf_gen():
        with torch.no_grad():
            return hf.generate(ids, max_new_tokens=new_tokens, min_new_tokens=new_tokens, do_sample=False)

    t_hf = timed(hf_gen, device)
    t_eager = timed(lambda: greedy(eng, prompt, new_tokens), device)
    dec = GraphedGreedyDecoder(eng, capacity=32 + new_tokens + 8)
    t_capture0 = time.perf_counter()
    graph_tokens = dec.generate(prompt, new_tokens)  # includes the one-time capture
    capture_s = time.perf_counter() - t_capture0
    t_graph = timed(lambda: GraphedGreedyDecoder.generate(dec, prompt, new_tokens), device)
    eager_tokens = greedy(eng, prompt, new_tokens).new_ids
    hf_tokens = hf_gen()[0, 32:].tolist()
    agree = lambda a, b: sum(x == y for x, y in zip(a, b)) / len(a)  # noqa: E731
    return {
        "gpu_dtype": str(next(hf.parameters()).dtype), "gpu_new_tokens": new_tokens,
        "gpu_hf_generate_tok_s": new_tokens / t_hf,
        "gpu_engine_eager_tok_s": new_tokens / t_eager,
        "gpu_engine_cudagraph_tok_s": new_tokens / t_graph,
        "gpu_cudagraph_capture_s": capture_s,
        "gpu_cudagraph_vs_hf": t_hf / t_graph,
        "gpu_tokens_graph_equal_eager": graph_tokens == eager_tokens,
        "gpu_tokens_agree_with_hf": agree(eager_tokens, hf_tokens),
    }


def verify_cost(hf, device, context: int = 512) -> dict:
    """Time of one forward with k new tokens against a `context`-token cache, relative to k=1."""
    eng = engine_from_hf(hf)
    g = torch.Generator().manual_seed(2)
    ctx = torch.randint(0, hf.config.vocab_size, (1, context), generator=g).to(device)
    base = eng.new_cache(capacity=context + 64)
    eng.forward(ctx, base)
    out = {}
    for k in (1, 2, 4, 8, 16):
        new = torch.randint(0, hf.config.vocab_size, (1, k), generator=g).to(device)

        def step():
            base.crop(context)
            eng.forward(new, base)

        out[k] = timed(step, device, repeat=7)
    return {"gpu_verify_ms": {k: v * 1e3 for k, v in out.items()},
            "gpu_verify_cost_ratio": {k: out[k] / out[1] for k in out}}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tiny", action="store_true")
    ap.add_argument("--out", default="")
    ap.add_argument("--new-tokens", type=int, default=128)
    a = ap.parse_args()
    from transformers import Gemma3ForCausalLM
    import transformers

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    res = {"torch": torch.__version__, "transformers": transformers.__version__, "device": str(device),
           "gpu_name": torch.cuda.get_device_name() if device.type == "cuda" else None,
           "weights": "random (real Gemma 3 270M config)" if not a.tiny else "random (tiny config)"}
    torch.manual_seed(0)
    cfg = real_config(a.tiny)
    cfg._attn_implementation = "eager"
    hf = Gemma3ForCausalLM(cfg).to(device).eval()
    with torch.no_grad():  # Gemma norms start at 0; give them random values so they matter
        for n, p in hf.named_parameters():
            if "norm" in n:
                p.normal_(0, 0.1)
    res.update(parity(hf, device, 700 if not a.tiny else 80))
    hf = hf.to(torch.bfloat16)
    hf.config._attn_implementation = "sdpa"
    res.update(speed(hf, device, a.new_tokens))
    res.update(verify_cost(hf, device, 512 if not a.tiny else 64))
    try:
        from bench import gpu_speculative
        res.update(gpu_speculative.measure(hf, device))
    except ImportError:
        pass
    line = json.dumps(res, default=str)
    if a.out:
        Path(a.out).write_text(line)
    print(line)


if __name__ == "__main__":
    main()
