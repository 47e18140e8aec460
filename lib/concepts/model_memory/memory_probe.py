"""Measure the memory of running the model, step by step, in small fresh processes.

    python -m lib.concepts.model_memory.memory_probe '{"mode": "kv", "contexts": [1024, 4096], "spec": {...}}'
    python -m lib.concepts.model_memory.memory_probe '{"mode": "tokenizer"}'
    python -m lib.concepts.model_memory.memory_probe '{"mode": "weights"}'
    python -m lib.concepts.model_memory.memory_probe '{"mode": "prefill", "batch": 1, "ids": [2, 651, ...]}'

A fresh process is the honest way to see what each step costs: nothing else lives in it.
After every step it prints one JSON line {"step", "delta", "rss", "anon", "file", ...}
(bytes): delta = anonymous resident memory after - before (RssAnon: the process's own
data; file-backed pages such as a memory-mapped safetensors file are reported apart, as
"file", because the OS can drop and re-read them). For the prefill, "peak_delta" is the
peak RSS (VmHWM, reset through /proc/self/clear_refs) above the RSS before it.
lib.concepts.model_memory.memory_accounting starts this with glibc's mmap threshold pinned,
so freed large tensors really go back to the OS, and runs one probe at a time.

Each probe is kept small so that it fits beside the server on a small host (Streamlit
Community Cloud: ~2.7 GB for everything): the weights are measured a piece at a time (never
the whole model in the probe), the prefill reads the memory-mapped weights the server also
maps, and the tokenizer is measured in a probe of its own.
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


def _folder(args: dict):
    """The bundled model's folder: args["folder"] when the server passes it (then this probe
    imports nothing of the project's model code, and so no torch), else looked up."""
    from pathlib import Path

    if args.get("folder"):
        folder = Path(args["folder"])
        if not (folder / "MANIFEST.json").is_file():
            raise SystemExit(f"the bundled model is not prepared in {folder}")
        return folder
    from lib.model import bundled_model

    folder = bundled_model.bundled_folder()
    if not bundled_model.is_complete(folder, check_hashes=False):
        raise SystemExit(f"the bundled model is not prepared in {folder}")
    return Path(folder)


def tokenizer_mode(args: dict) -> None:
    """The tokenizer alone: Hugging Face `tokenizers` (the Rust library transformers wraps)
    loading tokenizer.json, without torch or transformers in the process (a smaller probe)."""
    from tokenizers import Tokenizer

    folder = _folder(args)
    before = anon()
    tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
    emit("tokenizer", before, vocab=tok.get_vocab_size())


def weights_mode(args: dict) -> None:
    """The weights materialized in memory, one piece at a time: each tensor of engine.safetensors
    (the large vocabulary matrix 8,192 rows at a time) is read from the file into a new float32
    tensor (process memory, not file pages: no memory map), measured, converted to a bfloat16
    copy, measured, and freed. A Q8_0 vocabulary matrix (int8 values and scales) is read a
    piece at a time too and expanded to float32 first: what is measured is the float32 and
    bfloat16 model. The sums are the weights' bytes in each dtype; the probe itself never holds
    more than one piece (~21 MB), so it fits beside a small server."""
    import torch

    from lib.core import engine_weights

    path = _folder(args) / engine_weights.FILE
    with path.open("rb") as f:
        n = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(n))
    header.pop("__metadata__", None)
    emit("runtime", 0)
    total32 = total16 = n_params = pieces = max_piece = 0
    rows_per_piece = 8192

    def read(f, info, r0: int, r1: int, dtype):
        """Rows r0..r1 of a tensor with the given dtype (a new tensor)."""
        shape, (start, _) = info["shape"], info["data_offsets"]
        t = torch.empty((r1 - r0, *shape[1:]), dtype=dtype)
        f.seek(8 + n + start + r0 * t[0].nbytes)
        f.readinto(t.numpy().reshape(-1).view("uint8"))
        return t

    with path.open("rb", buffering=0) as f:
        for name, info in header.items():
            if name.endswith("_q8_scales"):
                continue                                    # read with its int8 values
            q8 = info["dtype"] == "I8" and f"{name}_scales" in header
            if info["dtype"] != "F32" and not q8:
                raise SystemExit(f"{name}: expected F32 or Q8_0 values, found {info['dtype']}")
            shape = info["shape"]                           # every engine tensor has >= 1 axis
            big = q8 or (info["data_offsets"][1] - info["data_offsets"][0]) > (64 << 20)
            step = (rows_per_piece if q8 else 1) if big else shape[0]
            for r0 in range(0, shape[0], step):
                r1 = min(r0 + step, shape[0])
                trim()
                if q8:
                    q, sc = read(f, info, r0, r1, torch.int8), read(f, header[f"{name}_scales"], r0, r1, torch.float32)
                    before = anon()                         # q and its scales are already counted
                    t = torch.empty(q.shape, dtype=torch.float32)
                    t.copy_(q).view(r1 - r0, sc.shape[1], -1).mul_(sc[:, :, None])      # in place: no temporary
                else:
                    before = anon()
                    t = read(f, info, r0, r1, torch.float32)
                mid = anon()
                half = t.to(torch.bfloat16)
                after = anon()
                if q8:
                    del q, sc
                total32 += mid - before
                total16 += after - mid
                n_params += t.numel()
                pieces += 1
                max_piece = max(max_piece, t.nbytes)
                del t, half
    emit("weights", 0, float32=total32, bfloat16=total16, n_params=n_params, pieces=pieces, max_piece=max_piece)


def _embedding_rows(folder, ids: list[int]):
    """Rows `ids` of the embedding E (V, D) read from model.safetensors with plain file reads
    (no memory map: only these rows' bytes enter the process)."""
    import torch

    with (folder / "model.safetensors").open("rb", buffering=0) as f:
        n = int.from_bytes(f.read(8), "little")
        info = json.loads(f.read(n))["model.embed_tokens.weight"]
        d = info["shape"][1]
        out = torch.empty(len(ids), d, dtype=torch.float32)                    # (U, D)
        for i, t in enumerate(ids):
            f.seek(8 + n + info["data_offsets"][0] + t * d * 4)
            f.readinto(out[i].numpy().view("uint8"))
    return out


def prefill_mode(args: dict) -> None:
    """One prefill of the given token ids at batch B through the first `layers` layers (default
    all), weights memory-mapped from engine.safetensors (read-only file pages, shared with the
    server through the page cache), final hidden states only. A smaller probe: the embedding
    is a small vocabulary of the prompt's own tokens (their rows read from the file), and the
    LM head, whose 671 MB matrix would enter this process, is not run (its product for the
    last position, 2 x B x V floats, comes after the layers' peak). Every layer's activations
    have the same shapes, so the peak of a few layers is the peak of all; the KV written is
    the layers run. A warm-up with the same shapes first, so the measured peak is this
    prefill's own tensors."""
    t0 = time.perf_counter()
    import torch
    from transformers import AutoConfig

    from lib.concepts.model_memory.memory_accounting import truncated_spec
    from lib.core import engine_weights
    from lib.core.engine import Engine
    from lib.core.spec import spec_from_config
    from lib.core.vocab_matrix import VocabMatrix

    torch.set_num_threads(max(1, min(torch.get_num_threads(), 2)))
    folder = _folder(args)
    spec = spec_from_config(AutoConfig.from_pretrained(str(folder), local_files_only=True))
    emit("runtime", 0)                  # Python + torch + transformers, before any model data
    k = min(int(args.get("layers", spec.n_layers)), spec.n_layers)
    full = engine_weights.load(folder / engine_weights.FILE, spec.n_layers)
    vocab = sorted(set(args["ids"]))
    small = VocabMatrix.from_dense(_embedding_rows(folder, vocab).t())         # (D, U)
    weights = engine_weights.EngineWeights(small, small, full.final_norm, full.layers[:k])
    engine = Engine(truncated_spec(spec, k), weights, key="memory-probe")
    B = int(args.get("batch", 1))
    index = {t: i for i, t in enumerate(vocab)}
    ids = torch.tensor([index[t] for t in args["ids"]])[None].expand(B, -1).contiguous()   # (B, T)
    T = ids.shape[1]
    engine.forward(ids, engine.new_cache(B, capacity=T), logits="none")
    cache = engine.new_cache(B, capacity=T)
    trim()
    before, start_rss = anon(), rss()
    has_peak = reset_peak()
    t1 = time.perf_counter()
    engine.forward(ids, cache, logits="none")
    seconds = time.perf_counter() - t1
    peak = peak_rss() if has_peak else None
    emit("prefill", before, batch=B, tokens=T, layers=k, kv_nbytes=cache.nbytes(), prefill_seconds=seconds,
         peak_delta=(peak - start_rss) if peak is not None else None, seconds=time.perf_counter() - t0)


MODES = {"kv": "kv_mode", "tokenizer": "tokenizer_mode", "weights": "weights_mode", "prefill": "prefill_mode"}


if __name__ == "__main__":
    _args = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
    globals()[MODES[_args.get("mode", "kv")]](_args)
