"""Load a model for the engine: the bundled Gemma 3 270M, a local folder, or a Hugging Face id.

Everything here is process-wide and read-only after loading (see lib.ui.runtime for caching):
the returned LoadedModel holds the Engine (weights), tokenizer and facts — never a KV cache,
generated tokens or a random generator; those belong to each caller.
"""
from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import torch

from lib.model import bundled_model
from lib.core import engine_weights
from lib.core.engine import Engine
from lib.core.vocab_matrix import Q8VocabMatrix
from lib.model.from_transformers import engine_from_hf
from lib.core.spec import SUPPORTED_MODEL_TYPES, ModelSpec, spec_from_config

BUNDLED = "bundled"


class ModelLoadError(RuntimeError):
    """A model could not be loaded; the message is meant for the user."""


@dataclass
class LoadedModel:
    source: str              # "bundled", a folder, or a Hugging Face id
    name: str                # display name
    spec: ModelSpec
    engine: Engine
    tokenizer: object
    device: str
    dtype: torch.dtype
    config: dict             # the transformers config as a dict (model facts)
    folder: Path | None
    load_seconds: float
    timings: dict = field(default_factory=dict)

    @property
    def key(self) -> str:
        """Identifies the weights + device + dtype; part of every cache key."""
        return f"{self.source}|{self.device}|{self.dtype}"


MAX_SOURCE_CHARS = 512   # longer than any real folder or hub id ("owner/name" is at most 96 + 1 + 96)


def _exists(path) -> bool:
    """Path(path).exists() that says False instead of raising (a name too long for the file
    system, a NUL byte, a permission error)."""
    try:
        return Path(path).expanduser().exists()
    except (OSError, ValueError):
        return False


def available_devices() -> list[str]:
    return ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


def default_device() -> str:
    wanted = os.environ.get("LLM_LAB_DEVICE")
    return wanted if wanted in available_devices() else available_devices()[-1]


def load_tokenizer(folder: str, **kw):
    """AutoTokenizer.from_pretrained(folder), without two Python copies it no longer needs:
    transformers' BPE tokenizer classes (Gemma's among them) keep the vocabulary and merge list
    they built the Rust tokenizer from. For Gemma 3 that is 262,144 strings and 514,906 pairs,
    ~140 MB of a 2.7 GB host (measured after malloc_trim: 265 MB -> 126 MB). Encoding and
    decoding use only the Rust tokenizer, which keeps its own copy
    (tests/model/test_parity_real.py compares ids and texts with a fresh AutoTokenizer)."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(folder, **kw)
    if getattr(tok, "_tokenizer", None) is not None:
        for name, empty in (("_merges", []), ("_vocab", {})):
            if isinstance(getattr(tok, name, None), (list, dict)):
                setattr(tok, name, empty)
    return tok


def _load_folder(folder: str, device: str, dtype: torch.dtype, local_only: bool):
    """(hf_model, tokenizer) loaded in parallel threads (both spend time outside the GIL)."""
    from transformers import AutoModelForCausalLM

    kw = dict(local_files_only=local_only, trust_remote_code=False)
    with ThreadPoolExecutor(2) as pool:
        tok = pool.submit(load_tokenizer, folder, **kw)
        model = pool.submit(AutoModelForCausalLM.from_pretrained, folder, dtype=dtype, **kw)
        hf, tokenizer = model.result(), tok.result()
    return hf.to(device).eval(), tokenizer


def load(source: str = BUNDLED, device: str = "cpu", dtype: torch.dtype = torch.float32,
         progress=None) -> LoadedModel:
    """Load `source` onto `device`. Raises ModelLoadError with a user-facing message."""
    t0 = time.perf_counter()
    timings = {}
    if device not in available_devices():
        raise ModelLoadError(f"device {device!r} is not available here (available: {available_devices()})")
    if source == BUNDLED:
        folder = bundled_model.prepare(progress)
        timings["prepare_s"] = time.perf_counter() - t0
        return _load_bundled(folder, device, dtype, t0, timings)
    else:
        folder, name = _check_other(source), source
        local_only = _exists(folder) or not _hub_reachable()
    t1 = time.perf_counter()
    try:
        hf, tokenizer = _load_folder(str(folder), device, dtype, local_only)
    except Exception as e:  # noqa: BLE001 - any failure becomes a message for the user
        raise ModelLoadError(f"could not load {source!r}: {type(e).__name__}: {str(e)[:300]}") from e
    timings["load_s"] = time.perf_counter() - t1
    config = hf.config.to_dict()
    engine = engine_from_hf(hf, release_hf=True, key=f"{source}|{device}|{dtype}")  # key: the weights in cache keys
    spec = engine.spec
    del hf
    return LoadedModel(source, name, spec, engine, tokenizer, device, dtype, config,
                       Path(folder) if _exists(folder) else None,
                       time.perf_counter() - t0, timings)


def _hub_reachable(host: str = "huggingface.co", timeout_s: float = 3.0) -> bool:
    """Can we open a TCP connection to the hub? (Avoids ~35 s of retries when offline.)"""
    import socket

    if os.environ.get("HF_HUB_OFFLINE") == "1":
        return False
    try:
        with socket.create_connection((host, 443), timeout=timeout_s):
            return True
    except OSError:
        return False


VOCAB_ENV = "LLM_LAB_VOCAB"      # "q8" (default): the embedding / LM head as the GGUF's Q8_0 (179 MB);
                                 # "float32": expanded at load (671 MB, faster for one sequence)


def _load_bundled(folder: Path, device: str, dtype: torch.dtype, t0: float, timings: dict) -> LoadedModel:
    """The bundled model without building a transformers model: config + tokenizer +
    engine.safetensors memory-mapped (zero-copy on the CPU in float32)."""
    from transformers import AutoConfig

    t1 = time.perf_counter()
    with ThreadPoolExecutor(2) as pool:
        tok = pool.submit(load_tokenizer, str(folder), local_files_only=True)
        cfg = AutoConfig.from_pretrained(str(folder), local_files_only=True)
        spec = spec_from_config(cfg)
        weights = engine_weights.load(folder / engine_weights.FILE, spec.n_layers)
        weights = engine_weights.to(weights, device, dtype)
        expand = os.environ.get(VOCAB_ENV, "q8") == "float32" and isinstance(weights.embed, Q8VocabMatrix)
        if expand:      # the server's choice: ~1.25x faster decoding of one sequence, 480 MB more memory
            vocab = weights.embed.expanded()
            weights = engine_weights.EngineWeights(vocab, vocab, weights.final_norm, weights.layers)
        tokenizer = tok.result()
    timings["load_s"] = time.perf_counter() - t1
    engine = Engine(spec, weights, key=f"{BUNDLED}|{device}|{dtype}" + ("|float32-vocab" if expand else ""))
    return LoadedModel(BUNDLED, "Gemma 3 270M (Q4_K_M GGUF, dequantized)", spec, engine, tokenizer, device,
                       dtype, cfg.to_dict(), folder, time.perf_counter() - t0, timings)


def _check_other(source: str) -> str:
    """Validate a folder / hub id before loading weights: supported architecture, no remote code."""
    from transformers import AutoConfig

    source = source.strip()
    if not source:
        raise ModelLoadError("no model given")
    if len(source) > MAX_SOURCE_CHARS or "\x00" in source:
        raise ModelLoadError(f"{source[:60]!r}… ({len(source)} characters) is not a folder or a Hugging Face "
                             f"id: give a folder path or an id like 'google/gemma-3-270m'")
    if source.startswith(("/", ".", "~")) and not _exists(source):
        raise ModelLoadError(f"there is no folder {source[:200]!r} on this machine")
    source = str(Path(source).expanduser()) if source.startswith("~") else source
    local_only = _exists(source) or not _hub_reachable()
    try:
        cfg = AutoConfig.from_pretrained(source, trust_remote_code=False, local_files_only=local_only)
    except Exception as e:  # noqa: BLE001
        if local_only and not _exists(source):
            raise ModelLoadError(f"{source!r} is not a folder here, not in the local Hugging Face cache, and "
                                 "the Hugging Face hub cannot be reached from this machine") from e
        msg = str(e).splitlines()[0][:200]
        if "gated" in msg.lower() or "401" in msg or "403" in msg:
            raise ModelLoadError(f"{source!r} is gated: accept its licence and log in first ({msg})") from e
        raise ModelLoadError(f"{source!r} is neither a model folder here nor a reachable Hugging Face "
                             f"model ({type(e).__name__}: {msg})") from e
    cfg = getattr(cfg, "text_config", None) or cfg
    if cfg.model_type not in SUPPORTED_MODEL_TYPES:
        raise ModelLoadError(f"{source!r} is a {cfg.model_type!r} model; this app runs Gemma 3 (text) "
                             "and Llama-family models (Llama, Qwen2, Qwen3, SmolLM)")
    return source
