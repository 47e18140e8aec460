"""The page's re-ranking checked against transformers: one search recorded, replayed at every alpha.

    search_record : our search run to max_new_tokens (the record the page re-ranks with `select`);
                    the engine's logits it computed are kept in a table, keyed by token sequence
    replays       : transformers' `_beam_search` on those logits (beam_search_hf.TableBackend)
                    at each (alpha, early_stopping): our `select` must pick what it picks

Which beams run does not depend on alpha, so the model runs once for every setting.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass

import torch

from lib.concepts.beam_search.beam_search import BeamRecord, beam_search, select
from lib.concepts.beam_search.beam_search_hf import TableBackend, generate_beam_search, transformers_beam_search
from lib.core.engine import Engine


@dataclass(frozen=True)
class Parity:
    alpha: float
    early_stopping: object
    ours: tuple[tuple[int, ...], float]      # (tokens, score) read off our record by `select`
    theirs: tuple[tuple[int, ...], float]    # transformers' _beam_search on the same logits

    @property
    def same(self) -> bool:
        return self.ours == self.theirs


# The last searches' logits tables, until their replays take them: a page draws its record's
# figures while the replays run in the background (issue 29). Each is held once (~1 MB per beam
# and step), by code that runs the search in this process; a replay that finds none runs it again.
_TABLES: dict[tuple, dict] = {}
_TABLES_KEPT = 2
_tables_lock = threading.Lock()


def _table_key(engine: Engine, prompt_ids, num_beams: int, max_new_tokens: int, eos_ids) -> tuple:
    return (id(engine), tuple(int(i) for i in prompt_ids), num_beams, max_new_tokens,
            tuple(sorted(set(int(e) for e in eos_ids))))


def search_record(engine: Engine, prompt_ids, num_beams: int, max_new_tokens: int, eos_ids,
                  _on_step=None) -> BeamRecord:
    """The search run to max_new_tokens (the record the page re-ranks); its logits table is
    kept for `replays` of the same search. `_on_step(record so far)`: after every step (the
    page draws the tree as it grows; not part of the cache key)."""
    table: dict[tuple[int, ...], torch.Tensor] = {}
    rec = beam_search(engine, prompt_ids, num_beams, max_new_tokens, eos_ids=eos_ids,
                      run_to_max=True, on_step=_on_step, logits_table=table)
    with _tables_lock:
        _TABLES[_table_key(engine, prompt_ids, num_beams, max_new_tokens, eos_ids)] = (rec, table)
        while len(_TABLES) > _TABLES_KEPT:
            del _TABLES[next(iter(_TABLES))]
    return rec


def replays(engine: Engine, prompt_ids, num_beams: int, max_new_tokens: int, eos_ids, alphas,
            modes) -> list[Parity]:
    """transformers' `_beam_search` replayed on the logits of `search_record`'s search (the
    same arguments) for every alpha x early_stopping mode (with one beam: transformers' greedy
    `generate`, which is what generate runs for num_beams=1); the search is run again if its
    table is no longer held."""
    with _tables_lock:
        held = _TABLES.pop(_table_key(engine, prompt_ids, num_beams, max_new_tokens, eos_ids), None)
    if held is None:
        search_record(engine, prompt_ids, num_beams, max_new_tokens, eos_ids)
        with _tables_lock:
            held = _TABLES.pop(_table_key(engine, prompt_ids, num_beams, max_new_tokens, eos_ids))
    return _replay(engine, *held, max_new_tokens, eos_ids, alphas, modes)


def _replay(engine: Engine, rec: BeamRecord, table: dict, max_new_tokens: int, eos_ids, alphas,
            modes) -> list[Parity]:
    backend, out = TableBackend(table), []
    for alpha in alphas:
        for es in modes:
            s = select(rec, alpha, es)
            if rec.num_beams == 1:  # transformers' generate: greedy search, replayed on the same logits
                theirs = generate_beam_search(engine, rec.prompt_ids, 1, max_new_tokens, eos_ids, alpha, es,
                                              backend=TableBackend(table))
            else:
                theirs = transformers_beam_search(backend, rec.prompt_ids, rec.num_beams, max_new_tokens, alpha,
                                                  es, eos_ids)
            out.append(Parity(float(alpha), es, (rec.hypotheses[s.best].tokens, s.score), theirs))
    return out


def search_with_parity(engine: Engine, prompt_ids, num_beams: int, max_new_tokens: int,
                       eos_ids, alphas, modes) -> tuple[BeamRecord, list[Parity]]:
    """One search run to max_new_tokens (the record the page re-ranks), then transformers'
    `_beam_search` replayed on its logits for every alpha x early_stopping mode (`replays`)."""
    rec = search_record(engine, prompt_ids, num_beams, max_new_tokens, eos_ids)
    return rec, replays(engine, prompt_ids, num_beams, max_new_tokens, eos_ids, alphas, modes)
