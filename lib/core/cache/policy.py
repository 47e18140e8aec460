"""KV-cache policies: which earlier tokens each layer may still read, and what that costs.

A policy is a rule over *original* text positions. For a query at position t on layer l:

    dense      : every key 0..t                       (what this engine's cache keeps)
    window W   : keys t-W+1..t                        (sliding window; W entries incl. itself)
    sinks S + W: keys 0..S-1 and t-W+1..t             (StreamingLLM: "attention sinks")
    recompute W: keys t-W+1..t, re-encoded from scratch each step (the slow reference)

`layers="all"` applies the window to every layer; `layers="local"` only to the layers that
the model itself windows (Gemma 3: 5 local : 1 global) — global layers keep every entry.
On top of any policy the model's own rule still holds: a Gemma 3 local layer never reads a
key 512 or more positions back. With original positions that distance is measured in text
positions, so a sink at position 0 is invisible to local layers once t >= 512.

`reassign=True` (StreamingLLM's choice) numbers the entries by their slot in the cache
instead of their place in the text: once the cache is full, a query always sits at slot
P = S + W - 1, recent keys keep their offsets t - j, and sink i sits at distance P - i.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

KINDS = ("dense", "window", "sinks", "recompute")
LAYER_SCOPES = ("all", "local")


@dataclass(frozen=True)
class CachePolicy:
    kind: str = "dense"
    window: int | None = None   # W: recent entries kept (the query itself included)
    sinks: int = 0              # S: first entries kept forever
    layers: str = "all"         # "all" | "local"
    reassign: bool = False      # positions inside the cache instead of text positions

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {self.kind!r}")
        if self.layers not in LAYER_SCOPES:
            raise ValueError(f"layers must be one of {LAYER_SCOPES}, got {self.layers!r}")
        if self.kind == "dense":
            if self.window is not None or self.sinks or self.reassign:
                raise ValueError("dense keeps everything: no window, sinks or reassign")
            return
        if self.window is None or int(self.window) < 1:
            raise ValueError(f"window must be a positive number of tokens, got {self.window!r}")
        if self.sinks < 0:
            raise ValueError(f"sinks must be >= 0, got {self.sinks}")
        if self.kind == "sinks" and self.sinks < 1:
            raise ValueError("a sinks policy keeps at least 1 sink")
        if self.kind != "sinks" and self.sinks:
            raise ValueError(f"only the sinks policy keeps sinks (kind {self.kind!r})")
        if self.reassign and (self.kind != "sinks" or self.layers != "all"):
            raise ValueError("reassigning positions is defined for sinks + window on all layers")

    @property
    def label(self) -> str:
        """A short language-neutral name, e.g. 'dense', 'window 64', '4 sinks + 60'."""
        if self.kind == "dense":
            return "dense"
        scope = "" if self.layers == "all" else " (local layers)"
        if self.kind == "window":
            return f"window {self.window}{scope}"
        if self.kind == "recompute":
            return f"recompute {self.window}"
        return f"{self.sinks} sink{'s' if self.sinks > 1 else ''} + {self.window}" + (" (re-numbered)" if self.reassign else "")


def dense() -> CachePolicy:
    return CachePolicy("dense")


def window(w: int, layers: str = "all") -> CachePolicy:
    return CachePolicy("window", int(w), 0, layers)


def sinks(s: int, w: int, reassign: bool = False) -> CachePolicy:
    return CachePolicy("sinks", int(w), int(s), "all", bool(reassign))


def recompute(w: int) -> CachePolicy:
    return CachePolicy("recompute", int(w))


# ---- which entries a layer keeps -----------------------------------------------------------
def policy_window(policy: CachePolicy, spec, layer: int) -> int | None:
    """The window the policy imposes on `layer` (None = this layer keeps everything)."""
    if policy.kind == "dense":
        return None
    if policy.layers == "local" and spec.windows[layer] is None:
        return None
    return policy.window


def query_slot(policy: CachePolicy, t: torch.Tensor) -> torch.Tensor:
    """Position the query at text position t gets: t itself, or with `reassign` its slot in
    the cache, min(t, S + W - 1)."""
    if not policy.reassign:
        return t
    return torch.clamp(t, max=policy.sinks + policy.window - 1)


def kept(policy: CachePolicy, spec, layer: int, q_pos: torch.Tensor, k_pos: torch.Tensor) -> torch.Tensor:
    """Policy only (no model rule): (T,) x (S,) text positions -> (T, S) bool, key k still in
    the cache when query t runs (causal: k <= t)."""
    q, k = q_pos[:, None], k_pos[None, :]
    keep = k <= q
    w = policy_window(policy, spec, layer)
    if w is not None:
        keep &= (k > q - w) | (k < policy.sinks)
    return keep


def visible(policy: CachePolicy, spec, layer: int, q_pos: torch.Tensor, k_pos: torch.Tensor) -> torch.Tensor:
    """(T,) x (S,) text positions -> (T, S) bool: key k can receive attention from query t
    on `layer` = kept by the policy AND within the model's own window, measured in the
    positions the engine sees (text positions, or cache slots with `reassign`)."""
    allow = kept(policy, spec, layer, q_pos, k_pos)
    own = spec.windows[layer]
    if own is not None:
        q, k = q_pos[:, None], k_pos[None, :]
        dist = q - k                                               # recent keys keep offsets
        if policy.reassign:
            slot = query_slot(policy, q_pos)[:, None]
            dist = torch.where(k < policy.sinks, slot - k, dist)  # sinks sit at slots 0..S-1
        allow &= dist < own
    return allow


def visibility_map(policy: CachePolicy, spec, t: int) -> torch.Tensor:
    """(n_layers, t + 1) bool: which text positions 0..t each layer can read at step t."""
    q, k = torch.tensor([t]), torch.arange(t + 1)
    return torch.stack([visible(policy, spec, l, q, k)[0] for l in range(spec.n_layers)])


# ---- memory --------------------------------------------------------------------------------
def entries_per_layer(policy: CachePolicy, spec, n_tokens: int) -> list[int]:
    """Entries each layer's cache holds after n_tokens tokens (recompute keeps W per layer
    only during its forward; between steps it holds the W token ids)."""
    out = []
    for l in range(spec.n_layers):
        w = policy_window(policy, spec, l)
        out.append(n_tokens if w is None else min(n_tokens, w + policy.sinks))
    return out


def kv_bytes(policy: CachePolicy, spec, n_tokens: int, bytes_per_element: int = 4) -> int:
    """Bytes of K and V held after n_tokens tokens:
    sum over layers of entries_l * 2 (K and V) * n_kv_heads * head_dim * bytes_per_element."""
    per_entry = 2 * spec.n_kv_heads * spec.head_dim * bytes_per_element
    return sum(entries_per_layer(policy, spec, n_tokens)) * per_entry
