"""Running the memory probes: small fresh processes, one at a time, within a memory budget.

Each probe (lib.concepts.model_memory.memory_probe) runs only if the server and its children
plus the probe's expected peak fit the budget: $LLM_LAB_MEMORY_BUDGET_MB, else the
container's memory limit, else the machine's memory. Otherwise `ProbeRefused` says how much
is needed and how much is in use, and the page shows the calculator alone. A lock keeps two
sessions from probing at once (their peaks would add up).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Callable

from lib.core import one_call
from lib.concepts.model_memory.memory_accounting import (PREFILL_LAYERS, MiB, ProbeResult, kv_cache_bytes,
                                                         parameter_count, prefill_activation_bytes, spec_shape)

ROOT = Path(__file__).resolve().parents[3]


class ProbeRefused(RuntimeError):
    """Not enough memory left in the budget to run a probe now (the page says so)."""

    def __init__(self, mode: str, need: float, used: float, budget: float, available: float):
        self.mode, self.need, self.used, self.budget, self.available = mode, need, used, budget, available
        super().__init__(f"{mode} probe needs ~{need / MiB:,.0f} MiB; the server and its children use "
                         f"{used / MiB:,.0f} MiB of a {budget / MiB:,.0f} MiB budget, {available / MiB:,.0f} MiB free")


BUDGET_ENV = "LLM_LAB_MEMORY_BUDGET_MB"
RUNTIME_BYTES = 260 * MiB        # a probe's Python + torch (+ transformers' config), measured ~230-260 MiB
_PROBE_LOCK = threading.Lock()   # one probe at a time in this server, whoever asks


def memory_budget() -> float:
    """Bytes the server and all its children may use: $LLM_LAB_MEMORY_BUDGET_MB if set, else
    the container's limit (cgroup v2 memory.max) if any, else the machine's memory."""
    import psutil

    if os.environ.get(BUDGET_ENV):
        return float(os.environ[BUDGET_ENV]) * 1e6
    try:
        limit = Path("/sys/fs/cgroup/memory.max").read_text().strip()
        if limit != "max":
            return float(limit)
    except (OSError, ValueError):
        pass
    return float(psutil.virtual_memory().total)


def tree_rss(pid: int | None = None) -> int:
    """Resident bytes of a process (default: this one) and all its descendants."""
    import psutil

    root = psutil.Process(pid)
    total = 0
    for p in [root] + root.children(recursive=True):
        try:
            total += p.memory_info().rss
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            pass
    return total


def guard(mode: str, need: float) -> None:
    """Refuse (ProbeRefused) unless this server + children + `need` fit the budget and the
    machine has `need` free."""
    import psutil

    used, budget, available = tree_rss(), memory_budget(), psutil.virtual_memory().available
    if used + need > budget or need > available:
        raise ProbeRefused(mode, need, used, budget, available)


def run_probe(args: dict, need: float, on_step: Callable[[str], None] | None = None,
              timeout: float = 900) -> ProbeResult:
    """Run lib.concepts.model_memory.memory_probe in a fresh Python with `args`; collect its JSON
    lines. One probe at a time (a lock), and only if `need` bytes more fit the memory budget
    (`guard`, checked once the lock is held). glibc's mmap threshold is pinned so every large
    tensor is its own mapping and goes back to the OS when freed: deltas then show the step,
    not the allocator's leftovers."""
    import time

    from lib.model.bundled_model import bundled_folder

    args = {"folder": str(bundled_folder()), **args}     # the probe then needs no model code to find it
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    if args.get("mode") != "tokenizer":      # tensors only: the Rust tokenizer's parse peaks higher with it
        env.update(MALLOC_MMAP_THRESHOLD_="65536", MALLOC_ARENA_MAX="2")
    if args.get("mode") == "prefill":        # the layer step by step, as prefill_activation_bytes counts it
        env[one_call.ENV] = "0"
    with _PROBE_LOCK:
        guard(args.get("mode", "kv"), need)
        t0 = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", "lib.concepts.model_memory.memory_probe", json.dumps(args)],
                                cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        steps = {}
        try:
            for line in proc.stdout:
                if line.startswith("{"):
                    rec = json.loads(line)
                    steps[rec["step"]] = rec
                    if on_step:
                        on_step(rec["step"])
            proc.wait(timeout=timeout)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        if proc.returncode != 0:
            raise RuntimeError(f"memory probe failed ({proc.returncode}): {proc.stderr.read()[-500:]}")
    return ProbeResult(steps, time.perf_counter() - t0)


def measure_kv(spec, contexts: tuple[int, ...], batch: int = 1, chunk: int = 64,
               _progress: Callable[[float], None] | None = None) -> ProbeResult:
    """Measured RSS growth of full and sliding-window KV caches at each context length (one
    cache alive at a time)."""
    n = 2 * len(contexts) + 1
    done = []
    step = (lambda s: (done.append(s), _progress(len(done) / n))) if _progress else None  # noqa: E731
    need = RUNTIME_BYTES + max(kv_cache_bytes(spec, c, batch) for c in contexts)
    return run_probe({"mode": "kv", "contexts": list(contexts), "batch": batch, "chunk": chunk,
                      "spec": spec_shape(spec)}, need, step)


TOKENIZER_PROBE_BYTES = 420 * MiB    # tokenizers alone loading Gemma 3's tokenizer.json: ~380 MB peak measured


def measure_tokenizer() -> ProbeResult:
    """Measured memory of the tokenizer (the `tokenizers` library alone, in its own probe)."""
    return run_probe({"mode": "tokenizer"}, TOKENIZER_PROBE_BYTES)


def measure_weights(spec) -> ProbeResult:
    """Measured bytes of the weights in float32 and bfloat16, materialized one piece at a time."""
    largest = spec.vocab * spec.hidden * 4 / 32 + 3 * spec.hidden * spec.intermediate * 4   # a vocab block, a big matrix
    return run_probe({"mode": "weights"}, RUNTIME_BYTES + 1.5 * largest)


# The prefill probe's grid: every batch and prompt length the page offers (its default first).
# The server measures them all in the background (lib.concepts.catalog: model-memory's
# `background`), so a student moving these controls waits for no fresh process.
PREFILL_BATCHES = (1, 2, 3, 4)
PREFILL_TOKENS = (64, 128, 256)
PREFILL_DEFAULT = (1, 128)


def measure_prefill(spec, ids: tuple[int, ...], batch: int, layers: int = PREFILL_LAYERS) -> ProbeResult:
    """Measured peak of one prefill of `ids` at batch B through the first `layers` layers
    (weights memory-mapped, the prompt's own embedding rows, no LM head)."""
    layers = min(layers, spec.n_layers)
    per_layer = (parameter_count(spec) - spec.vocab * spec.hidden * (1 if spec.tied_embeddings else 2)) / spec.n_layers
    need = (RUNTIME_BYTES + 4 * per_layer * layers + kv_cache_bytes(spec, len(ids), batch)
            + prefill_activation_bytes(spec, batch, len(ids), logits=False))
    return run_probe({"mode": "prefill", "batch": batch, "ids": list(ids), "layers": layers}, need)
