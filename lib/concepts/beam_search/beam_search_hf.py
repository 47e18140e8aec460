"""transformers' own beam search code, fed by this project's model: the live reference.

The page cannot keep transformers' copy of the model (the app frees it to save memory), so
transformers' *unmodified* code is handed a thin adapter that answers its forward calls:

    generate_beam_search : `EngineForGenerate.generate(num_beams=..., length_penalty=...,
                           early_stopping=..., do_sample=False)` -- transformers' whole
                           `generate` (config validation, stopping criteria, `_beam_search`,
                           cache reordering through `_reorder_cache`) on the engine's live
                           forward. This is the page's parity check.
    transformers_beam_search : `_beam_search` alone, on one of two backends:

    EngineBackend : the engine itself    prefill -> the decode loop's prefill(prompt, new KVCache)
                                         step    -> decode_one_token(last tokens (B, 1), cache)
                                         gather  -> KVCache.reorder(beam_idx)
    TableBackend  : a table of the engine's logits, keyed by generated token sequence, that
                    `lib.concepts.beam_search.beam_search.beam_search(..., logits_table=...)` filled while it ran.
                    Asking for a sequence the search never computed raises KeyError.

Which beams run does not depend on alpha, so one recorded search answers transformers' calls
for every (alpha, early_stopping) without running the model again (lib.concepts.beam_search.replay).
(Parity with transformers' full `generate` on its own model is tested in tests/unit and tests/model.)
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from transformers import GenerationConfig, GenerationMixin, PretrainedConfig, PreTrainedModel
from transformers.utils import ModelOutput
from transformers.generation.logits_process import LogitsProcessorList
from transformers.generation.stopping_criteria import (EosTokenCriteria, MaxLengthCriteria,
                                                       StoppingCriteriaList)

from lib.core.engine import Engine
from lib.decoding.generate import decode_one_token, prefill


class EngineBackend:
    def __init__(self, engine: Engine):
        self.engine = engine

    def prefill(self, ids: torch.Tensor, capacity: int):
        """ids (B, P), identical rows -> (logits (B, 1, V), KV cache with B rows)."""
        logits, cache = prefill(self.engine, ids[:1], self.engine.new_cache(1, capacity=capacity))  # (1, V)
        cache.reorder(torch.zeros(ids.shape[0], dtype=torch.long, device=ids.device))
        return logits[:, None].expand(ids.shape[0], -1, -1), cache

    def step(self, ids: torch.Tensor, cache) -> torch.Tensor:
        return decode_one_token(self.engine, ids, cache)[:, None]          # (B, 1, V)

    def reorder(self, cache, beam_idx: torch.Tensor):
        cache.reorder(beam_idx.long())
        return cache


class TableBackend:
    """Serves logits recorded by a search; the 'cache' is each row's generated tokens."""

    def __init__(self, table: dict[tuple[int, ...], torch.Tensor]):
        self.table = table

    def _rows(self, seqs):
        return torch.stack([self.table[s] for s in seqs])[:, None, :]       # (B, 1, V)

    def prefill(self, ids: torch.Tensor, capacity: int):
        seqs = [()] * ids.shape[0]
        return self._rows(seqs), seqs

    def step(self, ids: torch.Tensor, seqs: list) -> torch.Tensor:
        seqs[:] = [s + (int(t),) for s, t in zip(seqs, ids[:, -1].tolist())]
        return self._rows(seqs)

    def reorder(self, seqs: list, beam_idx: torch.Tensor):
        return [seqs[i] for i in beam_idx.tolist()]


@dataclass
class _Out:
    logits: torch.Tensor  # (B, 1, V)


class _KeepsFinishedScores:
    """Reads the finished beams' scores where transformers' `_beam_search` updates them.

    `sequences_scores` comes back only with `output_scores=True`, which also makes transformers
    keep a (beams, V) float32 copy of every step's log-probs (4 beams x 16 steps: 64 MB) that
    nothing here reads. The search runs without it; `finished_scores[:, 0]` is the very tensor
    `_beam_search` returns as `sequences_scores` (the best finished beam's score, per batch row)."""
    finished_scores = None        # (batch, num_beams), best first

    def _update_finished_beams(self, **kwargs):
        sequences, beam_scores, beam_indices, is_sent_finished = super()._update_finished_beams(**kwargs)
        self.finished_scores = beam_scores
        return sequences, beam_scores, beam_indices, is_sent_finished


class _ForGeneration(_KeepsFinishedScores, GenerationMixin):
    """Just enough of a transformers model for `_beam_search`: forward, prefill, cache reorder."""

    class _Config:
        is_encoder_decoder = False

    def __init__(self, backend):
        self.backend, self.config = backend, self._Config()

    def _prefill(self, input_ids, generation_config, model_kwargs, is_first_iteration=True):
        logits, model_kwargs["cache"] = self.backend.prefill(input_ids, generation_config.max_length)
        return _Out(logits)

    def _update_model_kwargs_for_generation(self, outputs, model_kwargs, **_):
        return model_kwargs

    def prepare_inputs_for_generation(self, input_ids, next_sequence_length=None, **kwargs):
        return {"ids": input_ids[:, -1:], "cache": kwargs["cache"]}

    def __call__(self, ids, cache, return_dict=True):
        return _Out(self.backend.step(ids, cache))

    def _reorder_cache(self, cache, beam_idx):
        return self.backend.reorder(cache, beam_idx)


def transformers_beam_search(backend, prompt_ids, num_beams: int, max_new_tokens: int,
                             length_penalty: float = 1.0, early_stopping=False,
                             eos_ids=()) -> tuple[tuple[int, ...], float]:
    """(generated tokens, sequences_score) from transformers' `_beam_search` on a backend
    (an Engine is wrapped in EngineBackend)."""
    if isinstance(backend, Engine):
        backend = EngineBackend(backend)
    ids = torch.tensor([list(prompt_ids)] * num_beams)                     # (num_beams, P)
    P = ids.shape[1]
    cfg = GenerationConfig(num_beams=num_beams, length_penalty=float(length_penalty),
                           early_stopping=early_stopping, max_length=P + max_new_tokens,
                           num_return_sequences=1, do_sample=False,
                           return_dict_in_generate=True)
    ends = sorted(set(int(e) for e in eos_ids))
    cfg._eos_token_tensor = torch.tensor(ends) if ends else None
    cfg._pad_token_tensor = None
    criteria = [MaxLengthCriteria(P + max_new_tokens)] + ([EosTokenCriteria(ends)] if ends else [])
    model = _ForGeneration(backend)
    out = model._beam_search(ids, LogitsProcessorList(), StoppingCriteriaList(criteria), cfg, use_cache=True)
    return tuple(out.sequences[0, P:].tolist()), float(model.finished_scores[0, 0])


class _EngineConfig(PretrainedConfig):
    model_type = "lab-engine"


@dataclass
class _GenOut(ModelOutput):
    logits: torch.Tensor | None = None     # (B, 1, V)
    cache: object = None


class EngineForGenerate(_KeepsFinishedScores, PreTrainedModel, GenerationMixin):
    """A transformers model whose forward is the engine (EngineBackend) and whose cache is the
    engine's KVCache, passed through `generate`'s model_kwargs under the name "cache". It has
    no parameters of its own; `generate` reorders the cache rows through `_reorder_cache`."""
    config_class = _EngineConfig
    main_input_name = "input_ids"

    def __init__(self, engine: Engine, capacity: int, backend=None):
        super().__init__(_EngineConfig(vocab_size=engine.spec.vocab, is_encoder_decoder=False))
        self.backend, self.capacity = backend or EngineBackend(engine), capacity
        self._device = torch.device(engine.device)
        self.generation_config = GenerationConfig()

    @property
    def device(self) -> torch.device:
        return self._device

    @classmethod
    def _supports_default_dynamic_cache(cls) -> bool:
        return False                      # our own KVCache, created at the first forward

    def prepare_inputs_for_generation(self, input_ids, **kwargs):
        return {"input_ids": input_ids, "cache": kwargs.get("cache")}

    def _update_model_kwargs_for_generation(self, outputs, model_kwargs, **_):
        model_kwargs["cache"] = outputs.cache
        return model_kwargs

    def _reorder_cache(self, cache, beam_idx):
        return self.backend.reorder(cache, beam_idx)

    def forward(self, input_ids, cache=None, **_):
        """input_ids (B, T): the whole sequence so far; only new tokens are run."""
        if cache is None:
            logits, cache = self.backend.prefill(input_ids, self.capacity)       # (B, 1, V)
        else:
            logits = self.backend.step(input_ids[:, -1:], cache)               # (B, 1, V)
        return _GenOut(logits=logits, cache=cache)


def generate_beam_search(engine: Engine, prompt_ids, num_beams: int, max_new_tokens: int, eos_ids=(),
                         length_penalty: float = 1.0, early_stopping=False,
                         backend=None) -> tuple[tuple[int, ...], float]:
    """(generated tokens, sequences_score) from transformers' `generate(num_beams=...,
    length_penalty=..., early_stopping=..., do_sample=False)` running on the engine (or on
    `backend`, e.g. a TableBackend of recorded logits).

    num_beams == 1: transformers' generate runs GREEDY search (one beam is greedy search) and
    returns no `sequences_scores`; the score is then computed from the logits generate itself
    returns (`output_logits`): the float32 running sum of log_softmax(logits)[token] over the
    generated tokens, divided by L ** length_penalty (L = generated tokens, end token included)."""
    ids = torch.tensor([list(prompt_ids)], device=engine.device)                 # (1, P)
    ends = sorted(set(int(e) for e in eos_ids))
    model = EngineForGenerate(engine, ids.shape[1] + max_new_tokens + 1, backend)
    greedy = num_beams == 1
    beam_args = {} if greedy else dict(num_beams=num_beams, length_penalty=float(length_penalty),
                                       early_stopping=early_stopping)
    out = model.generate(ids, do_sample=False, max_new_tokens=max_new_tokens, num_return_sequences=1,
                         eos_token_id=ends or None, pad_token_id=ends[0] if ends else 0,
                         return_dict_in_generate=True, output_logits=greedy, **beam_args)
    P = ids.shape[1]
    toks = out.sequences[0, P:].tolist()                                          # padded after an end token
    for i, tok in enumerate(toks):
        if tok in ends:
            toks = toks[:i + 1]
            break
    if not greedy:
        return tuple(toks), float(model.finished_scores[0, 0])
    total = torch.zeros((), dtype=torch.float32)
    for tok, row in zip(toks, out.logits):                                        # row (1, V)
        total = total + torch.log_softmax(row[0].float().cpu(), dim=-1)[tok]
    return tuple(toks), float(np.float32(total.item()) / np.float32(len(toks) ** float(length_penalty)))
