"""Mutation tests for the paged-attention page: realistic bugs planted in the paged cache and
its allocator (lib.core.cache.paged, lib.core.cache.block_manager) must turn at
least one of the page's live checks red; without them every check is green. A tiny random
Gemma 3 runs the same engine, cache and scheduler code as the page (the real model's run
takes minutes on a busy 2-core machine); a pool small enough that D has to wait."""
from types import SimpleNamespace

import pytest
import torch

from lib.concepts.paged_attention import checks
from lib.core.cache import block_manager as bmod
from lib.decoding.paged_generation import Request, run_requests
from lib.core.cache import paged
from lib.model.from_transformers import engine_from_hf
from lib.decoding import batching
from lib.reference import batch_reference
from tests.conftest import tiny_gemma3

pytestmark = pytest.mark.slow  # every mutation reruns the four-request paged schedule and the batched reference

BS, BLOCKS = 4, 18


def key(name, **_):
    return name


def rand_ids(n, seed):
    return tuple(torch.randint(0, 97, (n,), generator=torch.Generator().manual_seed(seed)).tolist())


@pytest.fixture(scope="module")
def real_model():
    """Stands in for the bundled model: an object with .engine (tiny random Gemma 3)."""
    torch.set_num_threads(1)
    hf = tiny_gemma3(window=8)
    return SimpleNamespace(engine=engine_from_hf(hf))


@pytest.fixture(scope="module")
def requests():
    return (Request("A", rand_ids(10, 1), 9, 0, ((0.0, 0), (1.0, 1))), Request("B", rand_ids(23, 2), 5),
            Request("C", rand_ids(5, 3), 7), Request("D", rand_ids(17, 4), 6, 2))


def results(real_model, requests):
    run = run_requests(real_model.engine, requests, BLOCKS, BS)
    batch = batch_reference.batched_vs_alone(real_model.engine, tuple(tuple(r.prompt_ids) for r in requests),
                                             tuple(run.prompt_hidden.get(r.rid) for r in requests))   # as the page
    return {r.name for r in checks.page_checks(run, requests, len(requests[0].prompt_ids), key, batch)
            if not r.passed}, run


def test_all_green_without_a_bug_on_a_deliberately_loaded_machine(real_model, requests):
    """Also issue 32 item 5: with a busy program on every core, correct code shows no ❌ (the
    page's checks read block tables, logits and counts, never a clock). The module's one
    unmutated run, so the load costs no extra run."""
    from tests.mutation.busy_cores import busy_cores

    with busy_cores() as load:
        failed, run = results(real_model, requests)
    assert load["others"] > 0.5                                  # the load was there
    assert failed == set()
    assert checks.waits_and_reuse(run, requests)[0], "the pool must make a request wait"


def test_slot_forgets_the_block_size(real_model, requests, monkeypatch):
    def slot_index(table, n_tokens, block_size):          # block id used as a slot offset
        t = torch.arange(n_tokens)
        return torch.as_tensor(table, dtype=torch.long)[t // block_size] + t % block_size
    monkeypatch.setattr(paged, "slot_index", slot_index)
    assert "check_equal" in results(real_model, requests)[0]


def test_write_into_shared_block_without_copy(real_model, requests, monkeypatch):
    real = bmod.BlockManager.append_slots

    def no_cow(self, seq, token_ids):                    # pretend shared blocks are private
        saved = {b.block_id: b.ref_count for b in self.blocks}
        for b in self.blocks:
            b.ref_count = min(b.ref_count, 1)
        try:
            return real(self, seq, token_ids)
        finally:
            for b in self.blocks:
                if b.ref_count == 1 and saved[b.block_id] > 1:
                    b.ref_count = saved[b.block_id]
    monkeypatch.setattr(bmod.BlockManager, "append_slots", no_cow)
    assert {"check_equal", "check_cow"} & results(real_model, requests)[0]


def test_one_block_too_many_per_sequence(real_model, requests, monkeypatch):
    monkeypatch.setattr(bmod.BlockManager, "blocks_needed", lambda self, n: n // self.block_size + 1)
    assert {"check_waste", "check_invariants"} & results(real_model, requests)[0]


def test_free_keeps_the_blocks(real_model, requests, monkeypatch):
    def leak(self, seq):                                  # forgets to release the references
        self.tables.pop(seq)
        del self.lengths[seq]
    monkeypatch.setattr(bmod.BlockManager, "free", leak)
    try:
        failed = results(real_model, requests)[0]
    except bmod.OutOfBlocks:
        return                                            # the run cannot even finish: caught too
    assert {"check_invariants", "check_reuse"} & failed


def test_batched_rows_read_at_the_padded_end(real_model, requests, monkeypatch):
    """lib/decoding/batching.py (issue 32): every row's ids padded to the longest before the
    forward, so a shorter prompt's logits are read after its padding: the batching check turns red."""
    real = batching.batched_forward

    def bad(engine, reqs):
        T = max(r[0].shape[1] for r in reqs)
        return real(engine, [(torch.nn.functional.pad(r[0], (0, T - r[0].shape[1])), r[1]) for r in reqs])
    monkeypatch.setattr(batching, "batched_forward", bad)
    assert "check_batched" in results(real_model, requests)[0]      # the page's path: alone rows from the run
    batch = batch_reference.batched_vs_alone(real_model.engine, tuple(tuple(r.prompt_ids) for r in requests))
    assert not checks.batch_check(batch, key).passed                # and with four alone forwards of its own

