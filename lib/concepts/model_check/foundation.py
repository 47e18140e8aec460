"""The shared foundations every concept page stands on — the vocabulary matrix and the
engine's layers — measured against references that share none of their code
(lib/reference/vocab_reference.py: `gguf`'s dequantization; lib/reference/layer_reference.py:
a transformers `Gemma3DecoderLayer` built from the config with `gguf`'s weights).

Only the bundled model has its GGUF on disk: `available(m)` says whether the references can
run (another model gets no foundation checks, and the pages say so).

Contracts (m is a LoadedModel; ids a 1-D LongTensor of the prompt's token ids):
- `vocab_check(m, ids, k)` -> VocabCheck: the prompt's and the top tokens' embedding rows, and
  the top-k logits recomputed over the whole vocabulary from the `gguf` matrix.
- `rows_max_diff(m, row_ids)` -> max |engine embedding row - `gguf` row| over those ids.
- `layer_checks(m, ids, layers)` -> tuple[LayerCheck] (ids: tensor or list): the engine's layer output against
  transformers' on the engine's own layer input.
- `long_ids(m, n)` -> the first n tokens of the bundled long text (past the 512-token window).
Pure functions of their inputs: pages run them through runtime.cached.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from lib.reference import gguf_weights, layer_reference, vocab_reference

LONG_TOKENS = 600          # past Gemma 3's 512-token window: the local layers' window binds


@dataclass(frozen=True)
class VocabCheck:
    row_ids: tuple[int, ...]           # the prompt's tokens and the engine's top tokens
    rows_max_diff: float               # max |engine embedding row - gguf row| (exact: 0)
    engine_top: tuple[int, ...]        # the engine's top-k next tokens
    ref_top: tuple[int, ...]           # top-k of h @ E_gguf^T over the whole vocabulary
    logit_max_diff: float              # max |engine logit - reference logit| on ref_top
    ref_logits: tuple[float, ...]      # the reference's top-k logits
    engine_logits: tuple[float, ...]   # the engine's logits of ref_top
    vocab: int


def available(m) -> bool:
    from lib.model.model_loader import BUNDLED

    return m.source == BUNDLED and gguf_weights.bundled() is not None


def vocab_check(m, ids: torch.Tensor, k: int = 10) -> VocabCheck:
    eng = m.engine
    ids = ids.reshape(1, -1)
    h = eng.forward(ids, eng.new_cache(capacity=ids.shape[1]), logits="none")[0, -1]   # (D,) final normed
    logits = eng.head(h[None])[0]                                                       # (V,)
    engine_top = logits.topk(k).indices
    row_ids = torch.unique(torch.cat([ids[0], engine_top]))
    g = gguf_weights.bundled()
    ref_ids, ref_val = vocab_reference.top_logits(g, h.float().numpy(), k)
    return VocabCheck(row_ids=tuple(row_ids.tolist()), rows_max_diff=rows_max_diff(m, row_ids),
                      engine_top=tuple(engine_top.tolist()), ref_top=tuple(int(i) for i in ref_ids),
                      logit_max_diff=float(np.abs(logits[torch.from_numpy(ref_ids)].double().numpy() - ref_val).max()),
                      ref_logits=tuple(float(v) for v in ref_val),
                      engine_logits=tuple(float(logits[i]) for i in ref_ids), vocab=int(logits.shape[0]))


def rows_max_diff(m, row_ids: torch.Tensor) -> float:
    """max |engine embedding row - `gguf` row| over the token ids `row_ids` (1-D); exact: 0."""
    ref_rows = vocab_reference.embedding_rows(gguf_weights.bundled(), row_ids.numpy())  # (n, D)
    app_rows = m.engine.embed.embed(row_ids[None])[0].float().numpy()                   # (n, D)
    return float(np.abs(app_rows - ref_rows).max())


def layer_checks(m, ids: torch.Tensor, layers) -> tuple[layer_reference.LayerCheck, ...]:
    return layer_reference.layer_checks(m.engine, m.config, gguf_weights.bundled(),
                                         torch.as_tensor(ids).reshape(-1), tuple(layers))


def long_ids(m, n: int = LONG_TOKENS) -> torch.Tensor:
    from lib.model.long_text import long_text

    return torch.tensor(m.tokenizer(long_text()).input_ids[:n])


def global_and_local(config: dict) -> tuple[int, int]:
    """(the first global layer, the first local layer) from the config's layer types."""
    types = config["layer_types"]
    return types.index("full_attention"), types.index("sliding_attention")

