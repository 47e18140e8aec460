"""Measure the memory of running the model, step by step, in a fresh process.

    python -m lib.concepts.model_memory.memory_probe '{"mode": "model", "batch": 1, "prefill": 128, "device": "cpu"}'
    python -m lib.concepts.model_memory.memory_probe '{"mode": "kv", "contexts": [1024, 4096]}'

A fresh process is the honest way to see what each step costs: nothing else lives in it.
After every step it prints one JSON line {"step", "delta", "rss", "anon", "file", ...}
(bytes): delta = anonymous resident memory after - before (RssAnon: the process's own
data; file-backed pages such as a memory-mapped safetensors file are reported apart, as
"file", because the OS can drop and re-read them). For the prefill, "peak_delta" is the
peak RSS (VmHWM, reset through /proc/self/clear_refs) above the RSS before it. On a GPU
the CUDA allocator's bytes are reported too. lib.concepts.model_memory.memory_accounting starts this with
glibc's mmap threshold pinned, so freed large tensors really go back to the OS.

"kv" mode needs only torch and the model's shape (passed in as "spec"): it is quick; "model" mode loads the tokenizer and the weights.
"""
from __future__ import annotations

import ctypes
import gc
import json
import sys
import time

import psutil

_PROC = psutil.Process()


def rss() -> int:
    return _PROC.memory_info().rss


def status_bytes(field: str) -> int:
    """A size field of /proc/self/status (RssAnon, RssFile, VmHWM) in bytes; 0 if absent."""
    try:
        for line in open("/proc/self/status"):
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def anon() -> int:
    return status_bytes("RssAnon") or rss()


def reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def peak_rss() -> int | None:
    return status_bytes("VmHWM") or None


def trim() -> None:
    """Collect garbage and hand free heap pages back to the OS (glibc)."""
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def emit(step: str, before: int, **extra) -> None:
    trim()
    now = anon()
    print(json.dumps({"step": step, "delta": now - before, "rss": rss(), "anon": now,
                      "file": status_bytes("RssFile"), **extra}), flush=True)


def kv_mode(args: dict) -> None:
    """RSS growth of a full KVCache and of a sliding-window RingKVCache for each context."""
    from types import SimpleNamespace

    import torch

    from lib.core.cache.dense import KVCache
    from lib.core.cache.ring import RingKVCache

    spec = SimpleNamespace(**args["spec"])   # n_layers, n_kv_heads, head_dim, windows
    device, chunk, B = args.get("device", "cpu"), int(args.get("chunk", 64)), int(args.get("batch", 1))
    emit("runtime", 0)
    for n in args.get("contexts", []):
        for kind in ("full", "window"):
            trim()
            before = anon()
            if kind == "full":
                cache = KVCache.for_spec(spec, B, torch.float32, device, capacity=n)
            else:
                cache = RingKVCache(spec, B, n, chunk=chunk, device=device)
            z = torch.zeros(B, spec.n_kv_heads, chunk, spec.head_dim, device=device)
            for s in range(0, n, chunk):
                t = min(chunk, n - s)
                pos = torch.arange(s, s + t, device=device).expand(B, t)
                for layer in range(spec.n_layers):
                    cache.append(layer, z[:, :, :t], z[:, :, :t], pos)
            emit(f"kv_{kind}_{n}", before, tokens=n, kind=kind, batch=B, chunk=chunk, nbytes=cache.nbytes())
            del cache, z


def model_mode(args: dict) -> None:
    """Tokenizer, weights (fp32 as loaded, a bf16 copy) and one prefill at batch B."""
    t0 = time.perf_counter()
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from lib.model import bundled_model
    from lib.model.from_transformers import engine_from_hf
    from lib.model.long_text import long_text

    torch.set_num_threads(max(1, min(torch.get_num_threads(), 4)))
    device = args.get("device", "cpu")
    cuda = device == "cuda" and torch.cuda.is_available()
    cuda_bytes = (lambda: torch.cuda.memory_allocated()) if cuda else (lambda: 0)  # noqa: E731
    folder = bundled_model.prepare()
    emit("runtime", 0)

    before = anon()
    tok = AutoTokenizer.from_pretrained(folder)
    emit("tokenizer", before)

    before, cb = anon(), cuda_bytes()
    hf = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).to(device).eval()
    emit("hf_model_object", before, cuda_delta=cuda_bytes() - cb)

    before, cb = anon(), cuda_bytes()
    engine = engine_from_hf(hf, release_hf=True)     # transposed fp32 copies
    del hf
    tensors = list({id(t): t for t in _engine_tensors(engine)}.values())
    emit("weights_float32", before, tensor_bytes=sum(t.nbytes for t in tensors),
         n_params=sum(t.numel() for t in tensors), cuda_delta=cuda_bytes() - cb)

    before, cb = anon(), cuda_bytes()
    half = [t.to(torch.bfloat16) for t in tensors]
    emit("weights_bfloat16", before, tensor_bytes=sum(t.nbytes for t in half), cuda_delta=cuda_bytes() - cb)
    del half

    B, T = int(args.get("batch", 1)), int(args.get("prefill", 128))
    ids = torch.tensor(tok(long_text())["input_ids"][:T], device=device)[None].expand(B, T).contiguous()
    # warm-up with the same shapes: the math library's reusable buffers (thread pools, packing
    # workspace) are then already there, and the measured peak is this prefill's own tensors
    engine.forward(ids, engine.new_cache(B, capacity=T))
    cache = engine.new_cache(B, capacity=T)
    trim()
    before, start_rss = anon(), rss()
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    cb = cuda_bytes()
    has_peak = reset_peak()
    t1 = time.perf_counter()
    engine.forward(ids, cache)
    seconds = time.perf_counter() - t1
    peak = peak_rss() if has_peak else None
    cuda_peak = torch.cuda.max_memory_allocated() - cb if cuda else 0
    emit("prefill", before, batch=B, tokens=T, kv_nbytes=cache.nbytes(), prefill_seconds=seconds,
         peak_delta=(peak - start_rss) if peak is not None else None, cuda_peak_delta=cuda_peak,
         seconds=time.perf_counter() - t0)


def _engine_tensors(engine):
    yield engine.embed.blocks
    yield engine.lm_head.blocks
    yield engine.final_norm
    for w in engine.layers:
        for t in vars(w).values():
            if isinstance(t, __import__("torch").Tensor):
                yield t


if __name__ == "__main__":
    _args = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
    (kv_mode if _args.get("mode") == "kv" else model_mode)(_args)
