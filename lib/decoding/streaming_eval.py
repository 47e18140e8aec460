"""Streaming evaluation: per-token negative log-likelihood of a long text under a cache policy.

    nll[i] = -ln p(ids[t_i + 1] | what the policy lets position t_i read)       (nats)

Three implementations of the same quantity:
  nll_evicting  — the reference: one token per forward on a cache that really evicts.
  nll_masked    — the fast equivalent: chunks of tokens, evicted keys masked to weight 0
                  (a test proves it equals nll_evicting on a short text).
  nll_recompute — sliding window with recompute: every step re-encodes the last W tokens
                  from scratch at positions 0..W-1 (O(T * W) work; `stride` evaluates
                  every stride-th position to keep it affordable).
All take `progress(done, total)`; returning False cancels (raises Cancelled).
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import torch

from lib.core.cache.policy import CachePolicy
from lib.core.cache.evicting import Cancelled, new_evicting_cache, report, step  # noqa: F401  (re-export)
from lib.core.cache.policy_masks import PolicyReads, policy_hooks


@dataclass
class StreamResult:
    label: str              # policy label
    positions: np.ndarray   # (N,) t: the position whose next token is scored
    nll: np.ndarray         # (N,) nats
    seconds: float          # wall time of this evaluation
    held: int = 0           # nll_evicting only: most entries any layer's cache held at the end

    def upto(self, n_tokens: int) -> "StreamResult":
        """The same evaluation of the text's first `n_tokens` tokens: its positions t <= n_tokens - 2.
        Every score reads only tokens 0..t+1 (causal attention; each recompute window is its own
        forward), so it is what evaluating ids[:n_tokens] gives, up to float rounding (the last
        chunk has fewer rows). `seconds` stays the whole run's."""
        keep = self.positions <= n_tokens - 2
        return StreamResult(self.label, self.positions[keep], self.nll[keep], self.seconds, self.held)

    def perplexity(self, mask: np.ndarray | None = None) -> float:
        """exp(mean nll) over all scored positions (or those where mask is True)."""
        x = self.nll if mask is None else self.nll[mask]
        return float(np.exp(x.mean())) if len(x) else float("nan")


def token_nll(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """logits (T, V), targets (T,) -> (T,) -ln softmax(logits)[target] = logsumexp - logit."""
    x = logits.float()
    return torch.logsumexp(x, -1) - x.gather(-1, targets[:, None])[:, 0]


def hidden_nll(engine, hidden: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Final hidden states (T, D), targets (T,) -> (T,) token NLL: `Engine.head_nll`, the LM
    head one vocabulary chunk at a time for all T rows together (the (T, V) logits, 128 MB for
    128 positions, never exist; the bundled model's int8 matrix is expanded once per call, so
    one call for a 128-token chunk costs half what four calls of 32 rows did)."""
    return engine.head_nll(hidden, targets)


def running_perplexity(nll: np.ndarray) -> np.ndarray:
    """(N,) -> (N,) exp(mean of nll[:i+1])."""
    nll = np.asarray(nll, dtype=np.float64)
    return np.exp(np.cumsum(nll) / np.arange(1, len(nll) + 1))


def _check(ids, need: int = 2) -> torch.Tensor:
    if len(ids) < need:
        raise ValueError(f"the text needs at least {need} tokens, got {len(ids)}")
    return torch.tensor([list(ids)], dtype=torch.long)


# The LM head runs on this many rows at once: the bundled model's int8 vocabulary matrix is
# expanded to float32 once per call, so 512 rows pay one expansion where four 128-token chunks
# paid four (4,096 tokens, one core: the head 14.1 -> 11 s of a policy's ~32 s).
HEAD_ROWS = 512


@torch.inference_mode()
def nll_masked(engine, ids, policy: CachePolicy, chunk: int = 128, progress=None) -> StreamResult:
    """Fast path: chunks of `chunk` tokens; the cache keeps everything, masks do the evicting,
    and each chunk's attention reads only the keys it may (PolicyReads). The LM head takes
    HEAD_ROWS of their final hidden states at a time."""
    if policy.kind == "recompute":
        raise ValueError("recompute has no masked equivalent: use nll_recompute")
    t0 = time.perf_counter()
    x = _check(ids).to(engine.device)                                       # (1, N)
    N = x.shape[1]
    cache = PolicyReads(engine, None, policy)   # attention reads only what it may; keeps only what it still can
    hooks = policy_hooks(engine, cache, policy)
    out, waiting, first = [], [], 0          # final hidden states not yet through the LM head
    report(progress, 0, N - 1)
    for s in range(0, N - 1, chunk):
        e = min(s + chunk, N - 1)
        waiting.append(engine.forward(x[:, s:e], cache, hooks=hooks, logits="none")[0])  # (e-s, D)
        if e - first >= HEAD_ROWS or e == N - 1:
            out.append(hidden_nll(engine, torch.cat(waiting), x[0, first + 1:e + 1]).cpu())
            waiting, first = [], e
        report(progress, e, N - 1)
    nll = torch.cat(out).double().numpy()
    return StreamResult(policy.label, np.arange(N - 1), nll, time.perf_counter() - t0)


@torch.inference_mode()
def nll_evicting(engine, ids, policy: CachePolicy, progress=None, hooks=None) -> StreamResult:
    """Reference path: one token per forward, evicting before every step."""
    t0 = time.perf_counter()
    x = _check(ids)
    N = x.shape[1]
    ec = new_evicting_cache(engine, policy, capacity=min(N, (policy.window or N) + policy.sinks + 1))
    out = []
    for t in range(N - 1):
        logits = step(ec, engine, int(x[0, t]), hooks=hooks)[0]            # (1, V)
        out.append(token_nll(logits, x[0, t + 1:t + 2]).cpu())
        report(progress, t + 1, N - 1)
    held = max(ec.cache.length(l) for l in range(ec.cache.n_layers))
    return StreamResult(policy.label, np.arange(N - 1), torch.cat(out).double().numpy(),
                        time.perf_counter() - t0, held)


def recompute_positions(n_tokens: int, w: int, stride: int = 1) -> np.ndarray:
    """Scored positions for recompute: 0..W-1 (same as dense: the window still holds the
    whole prefix), then every stride-th t from W on (t <= n_tokens - 2)."""
    head = np.arange(min(w, n_tokens - 1))
    tail = np.arange(w, n_tokens - 1, max(1, int(stride)))
    return np.concatenate([head, tail])


@torch.inference_mode()
def nll_recompute(engine, ids, w: int, stride: int = 1, batch: int = 8, progress=None) -> StreamResult:
    """Sliding window with recompute: position t is scored by a fresh forward over
    ids[t-W+1 .. t] at positions 0..W-1 (no cache survives between steps)."""
    t0 = time.perf_counter()
    x = _check(ids)
    N, w = x.shape[1], int(w)
    if w < 1:
        raise ValueError("window must be >= 1")
    pos = recompute_positions(N, w, stride)
    head = pos[pos < w]
    tail = pos[pos >= w]
    total = 1 + len(tail)
    out = []
    report(progress, 0, total)
    if len(head):   # t <= W-1: the window is the whole prefix -> one causal pass
        n = int(head[-1]) + 1
        hidden = engine.forward(x[:, :n].to(engine.device), engine.new_cache(1, n), logits="none")[0]  # (n, D)
        out.append(hidden_nll(engine, hidden, x[0, 1:n + 1].to(engine.device)).cpu())
    report(progress, 1, total)
    for b in range(0, len(tail), batch):
        ts = tail[b:b + batch]
        win = torch.stack([x[0, t - w + 1:t + 1] for t in ts]).to(engine.device)     # (B, W)
        last = engine.forward(win, engine.new_cache(len(ts), w), logits="none")[:, -1]  # (B, D)
        out.append(hidden_nll(engine, last, x[0, torch.as_tensor(ts) + 1].to(engine.device)).cpu())
        report(progress, 1 + b + len(ts), total)
    return StreamResult(f"recompute {w}", pos, torch.cat(out).double().numpy(), time.perf_counter() - t0)


def evaluate(engine, ids: tuple[int, ...], policy: CachePolicy, chunk: int = 128, stride: int = 1,
             _progress=None) -> StreamResult:
    """One policy over the text, by the fast path that is exact for it (cacheable: the
    underscore keeps the progress callback out of the cache key). `stride` is read by the
    recompute policy only: give the others 1, so that one cached result serves every stride."""
    if policy.kind == "recompute":
        return nll_recompute(engine, ids, policy.window, stride, progress=_progress)
    return nll_masked(engine, ids, policy, chunk, progress=_progress)


def rolling_mean(x: np.ndarray, k: int) -> np.ndarray:
    """(N,) -> (N,) mean of the last min(k, i+1) values at each i."""
    x = np.asarray(x, dtype=np.float64)
    c = np.concatenate([[0.0], np.cumsum(x)])
    i = np.arange(1, len(x) + 1)
    lo = np.maximum(0, i - max(1, int(k)))
    return (c[i] - c[lo]) / (i - lo)
