"""Continuous batching: sessions generating at once on one engine are run as one batched
forward per step, and each gets the tokens it gets alone (tiny random model)."""
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
import torch

from lib.decoding import batching, generate
from lib.decoding.batching import BatchOfCaches, batched_forward
from lib.decoding.sampling import SamplingConfig
from lib.model.from_transformers import engine_from_hf
from tests.conftest import tiny_gemma3, tiny_llama


@pytest.fixture(scope="module")
def eng():
    torch.set_num_threads(1)
    return engine_from_hf(tiny_gemma3(window=8))


def _prompt(n: int) -> tuple[int, ...]:
    return tuple(torch.randint(1, 97, (n,), generator=torch.Generator().manual_seed(n)).tolist())


JOBS = [(_prompt(n), T, seed) for n, T, seed in
        [(3, 0.0, 0), (5, 0.8, 1), (9, 1.0, 2), (12, 0.0, 3), (4, 1.3, 4), (7, 0.6, 5)]]


def _run(eng, job, n_new=20):
    prompt, T, seed = job
    return generate.continuation(eng, prompt, SamplingConfig(T), seed, n_new)


def test_batched_forward_rows_equal_each_request_alone(eng):
    """Decode rows with caches of different lengths, and prefill rows of different lengths."""
    for lengths, new in (((3, 5, 9), 1), ((2, 6), 4)):
        solo, shared = [], []
        for n in lengths:
            c = eng.new_cache()
            eng.forward(torch.arange(1, n + 1)[None], c)
            solo.append(c)
            shared.append(c.clone())
        ids = [torch.arange(20, 20 + new)[None] + i for i in range(len(lengths))]
        alone = [eng.forward(x, c) for x, c in zip(ids, solo)]                     # (1, 1, V) each
        together = batched_forward(eng, list(zip(ids, shared)))
        for a, b, c1, c2 in zip(alone, together, solo, shared):
            torch.testing.assert_close(b, a, atol=1e-5, rtol=0)
            assert c1.length() == c2.length() and torch.equal(c1.positions(0), c2.positions(0))
            assert c1.next_position == c2.next_position


def test_batched_rows_ask_for_their_own_number_of_trailing_logits(eng):
    """A row may want the logits of its last k positions (a teacher-forced check): each equals
    the same positions of a forward alone, whatever the other rows ask for."""
    ids = [torch.arange(1, 8)[None], torch.arange(30, 34)[None], torch.arange(50, 61)[None]]
    k = [3, 1, 11]
    together = batched_forward(eng, [(x, eng.new_cache(), n) for x, n in zip(ids, k)])
    for x, n, b in zip(ids, k, together):
        T = x.shape[1]
        alone = eng.forward(x, eng.new_cache(), logits=slice(T - n, T))              # (1, n, V)
        assert b.shape == alone.shape == (1, n, alone.shape[-1])
        torch.testing.assert_close(b, alone, atol=1e-5, rtol=0)
    # a row may want only the argmax ids of its last k positions (Engine.head_argmax)
    mixed = batched_forward(eng, [(ids[0], eng.new_cache(), 3), (ids[2], eng.new_cache(), 11, True)])
    assert mixed[0].shape == (1, 3, together[0].shape[-1])
    assert mixed[1].shape == (1, 11) and torch.equal(mixed[1][0], together[2][0].argmax(-1))


def test_argmax_check_counts_the_same_alone_and_beside_other_sessions(eng):
    """generate.argmax_mismatches goes through the scheduler: 0 for a real greedy path and the
    number of replaced tokens for a tampered one, alone or with five other sessions at once."""
    prompts = [_prompt(n) for n in (3, 5, 7, 9, 11, 13)]
    paths = [generate.greedy(eng, p, 8).new_ids for p in prompts]
    tampered = [path[:3] + [(path[3] + 1) % 97] + path[4:] for path in paths]
    assert [generate.argmax_mismatches(eng, p, x) for p, x in zip(prompts, paths)] == [0] * 6
    alone = [generate.argmax_mismatches(eng, p, x) for p, x in zip(prompts, tampered)]
    assert all(a >= 1 for a in alone)
    with ThreadPoolExecutor(6) as ex:
        together = list(ex.map(lambda a: generate.argmax_mismatches(eng, *a), zip(prompts, tampered)))
    assert together == alone


def test_padding_is_never_stored_in_a_request_cache(eng):
    a, b = eng.new_cache(), eng.new_cache()
    batched_forward(eng, [(torch.tensor([[1, 2, 3, 4]]), a), (torch.tensor([[5]]), b)])
    assert a.length() == 4 and b.length() == 1
    assert (b.positions(0) >= 0).all() and (a.positions(0) >= 0).all()


def _filled(eng, n):
    c = eng.new_cache(capacity=4)                     # small: the batched step must grow it
    if n:
        eng.forward(torch.arange(1, n + 1)[None] + 40, c)
    return c


def test_a_gathered_step_equals_the_per_layer_step_exactly(eng, monkeypatch):
    """BatchOfCaches' two ways (all layers of every row gathered at once, or one copy per row
    and layer) give bit-identical logits and leave bit-identical caches behind: decode rows of
    different lengths with a prefill row, then a second step on the same caches."""
    from lib.core.cache import batch

    lengths, new = (0, 3, 9, 5), (4, 1, 1, 2)
    results = []
    for limit in (batch.GATHER_MAX_BYTES, 0):                         # 0: never gathered
        monkeypatch.setattr(batch, "GATHER_MAX_BYTES", limit)
        caches = [_filled(eng, n) for n in lengths]
        ids = [torch.arange(60, 60 + k)[None] + i for i, k in enumerate(new)]
        first = batched_forward(eng, list(zip(ids, caches)))
        second = batched_forward(eng, [(torch.tensor([[70 + i]]), c) for i, c in enumerate(caches)])
        results.append((first, second, caches))
    (f1, s1, c1), (f2, s2, c2) = results
    for a, b in zip(f1 + s1, f2 + s2):
        assert torch.equal(a, b)
    for a, b in zip(c1, c2):
        assert a.length() == b.length() and a.next_position == b.next_position
        for l in range(eng.spec.n_layers):
            assert torch.equal(a.keys(l), b.keys(l)) and torch.equal(a.values(l), b.values(l))
            assert torch.equal(a.positions(l), b.positions(l))


def test_a_step_with_another_kind_of_cache_takes_the_per_layer_way(eng):
    """A row whose cache is not a dense KVCache (here a static cache) is not gathered, and its
    logits still equal a forward alone."""
    from lib.core.cache.static import StaticKVCache

    other = StaticKVCache(eng.spec, 1, 16, eng.dtype)
    dense, alone_cache = _filled(eng, 3), _filled(eng, 3)
    ids = [torch.tensor([[5, 6]]), torch.tensor([[7]])]
    together = batched_forward(eng, [(ids[0], other), (ids[1], dense)])
    torch.testing.assert_close(together[0], eng.forward(ids[0], StaticKVCache(eng.spec, 1, 16, eng.dtype)),
                               atol=1e-5, rtol=0)
    torch.testing.assert_close(together[1], eng.forward(ids[1], alone_cache), atol=1e-5, rtol=0)


def test_a_dense_cache_extends_all_layers_at_once_as_layer_by_layer():
    """KVCache.append_all_layers equals append per layer, growing the storage when needed; a
    cache whose layers differ in length refuses it."""
    from lib.core.cache.dense import KVCache

    L, H, d = 3, 2, 4
    a, b = KVCache(L, 1, H, d, capacity=2), KVCache(L, 1, H, d, capacity=2)
    for T in (1, 3, 2):
        k, v = torch.randn(L, 1, H, T, d), torch.randn(L, 1, H, T, d)
        pos = torch.arange(a.length(), a.length() + T).expand(L, 1, T)
        a.append_all_layers(k, v, pos)
        for l in range(L):
            b.append(l, k[l], v[l], pos[l])
    for l in range(L):
        assert torch.equal(a.keys(l), b.keys(l)) and torch.equal(a.values(l), b.values(l))
        assert torch.equal(a.positions(l), b.positions(l))
    ka, va, pa = a.all_layers()
    assert ka.shape == (L, 1, H, 6, d) and torch.equal(ka[1], b.keys(1)) and torch.equal(pa[2], b.positions(2))
    a.keep(0, torch.tensor([0, 2]))
    assert a.uniform_length() is None
    with pytest.raises(ValueError, match="different numbers of entries"):
        a.append_all_layers(k, v, pos)


def test_batch_of_caches_pads_keys_with_position_minus_one():
    hf = tiny_llama("llama")
    e = engine_from_hf(hf)
    a, b = e.new_cache(), e.new_cache()
    e.forward(torch.tensor([[1, 2, 3]]), a)
    batch = BatchOfCaches([a, b], [1, 1])
    k = torch.randn(2, e.spec.n_kv_heads, 1, e.spec.head_dim)
    keys, values, pos = batch.append(0, k, k, torch.tensor([[3], [0]]))
    assert keys.shape[2] == 4 and pos.tolist() == [[0, 1, 2, 3], [0, -1, -1, -1]]
    assert torch.equal(keys[1, :, 1:], torch.zeros_like(keys[1, :, 1:]))          # zeros, never NaN


def test_concurrent_sessions_get_the_tokens_they_get_alone(eng):
    """Six different prompts, greedy and seeded sampling, run alone then all at once twice."""
    alone = [_run(eng, j) for j in JOBS]
    sched = batching.scheduler_for(eng)
    steps0, rows0 = sched.steps, sched.rows
    with ThreadPoolExecutor(len(JOBS) * 2) as pool:
        together = list(pool.map(lambda j: _run(eng, j), JOBS * 2))
    assert [[s.token for s in r] for r in together] == [[s.token for s in r] for r in alone] * 2
    for a, b in zip(alone * 2, together):                     # same records, up to float rounding
        assert [s.kept for s in a] == [s.kept for s in b]
        assert max(abs(x.prob - y.prob) + abs(x.model_prob - y.model_prob) for x, y in zip(a, b)) < 1e-5
    steps, rows = sched.steps - steps0, sched.rows - rows0
    assert rows > 0 and steps < rows / 2, (steps, rows)       # really batched: > 2 requests per forward


def test_a_session_alone_runs_the_engine_directly(eng):
    sched = batching.scheduler_for(eng)
    steps = sched.steps
    assert generate.generate(eng, JOBS[0][0], SamplingConfig(0.0), 0, 5) == [s.token for s in _run(eng, JOBS[0], 5)]
    assert sched.steps == steps and sched.seated == 0


def test_an_error_in_a_batched_step_reaches_its_sessions(eng, monkeypatch):
    def boom(*a, **k):
        raise RuntimeError("out of memory (simulated)")

    monkeypatch.setattr(batching, "batched_forward", boom)
    together = threading.Barrier(3)       # the three start at once: their steps are batched (a CI run
                                          # once ran three 3-token generations one after another, alone)

    def run(job):
        together.wait(5)
        return _run(eng, job, 20)

    with ThreadPoolExecutor(3) as pool:
        futures = [pool.submit(run, j) for j in JOBS[:3]]
        errors = [f.exception() for f in futures]
    assert any(isinstance(e, RuntimeError) and "simulated" in str(e) for e in errors)
    assert batching.scheduler_for(eng).seated == 0


def test_a_prompt_prefilled_once_is_reused_with_the_same_tokens_and_bounded_in_bytes(eng):
    """generate.PromptCache: a second generation from the same prompt starts from a copy of the
    first one's prefill (a hit), and gives the tokens a fresh prefill gives; the copy is the
    requester's own (the stored cache stays at the prompt's length). Too small a budget keeps
    nothing."""
    prompt = _prompt(10)
    cache = generate.prompt_cache(eng)
    logits = generate.DenseStepper(eng, capacity=40, reuse_prompt=False).prefill(list(prompt))
    fresh = generate.DenseStepper(eng, capacity=40, reuse_prompt=False)
    expected = generate.decode_loop(fresh, prompt, SamplingConfig(0.9), 3, 12)
    hits = cache.hits
    first = generate.continuation(eng, prompt, SamplingConfig(0.9), 3, 12)
    second = generate.continuation(eng, prompt, SamplingConfig(0.9), 3, 12)
    assert cache.hits >= hits + 1
    assert [s.token for s in first] == [s.token for s in second] == expected
    stored, stored_logits, _ = cache.entries[tuple(prompt)]
    assert stored.length() == len(prompt)
    torch.testing.assert_close(stored_logits, logits, atol=1e-5, rtol=0)
    tiny = generate.PromptCache(max_bytes=1000)
    tiny.put(tuple(prompt), stored, stored_logits)
    assert tiny.get(tuple(prompt)) is None


def test_each_request_owns_its_logits_not_a_view_of_the_whole_batch(eng):
    """A row kept by a session (or cached by the page) must not keep the batch's (B, V) tensor
    alive: each returned tensor's storage is its own size."""
    rows = batched_forward(eng, [(torch.tensor([[i + 1, i + 2]]), eng.new_cache()) for i in range(5)])
    for r in rows:
        assert r.untyped_storage().nbytes() == r.numel() * r.element_size()


def test_the_result_budget_counts_the_storage_a_view_holds():
    from lib.serving.result_store import nbytes

    big = torch.zeros(30, 1000)
    assert nbytes(big[3]) >= big.numel() * 4 and nbytes(big[3].clone()) < 2 * 1000 * 4


def test_the_after_step_hooks_run_once_per_batched_step(eng, monkeypatch):
    """A server trims freed memory from the scheduler thread between steps
    (lib.ui.startup): every batched step ends by calling each AFTER_STEP hook, and a hook
    that is called does not change anyone's tokens."""
    calls = []
    monkeypatch.setattr(batching, "AFTER_STEP", [lambda: calls.append(1)])
    sched = batching.scheduler_for(eng)
    runs0 = sched.runs
    with ThreadPoolExecutor(len(JOBS)) as pool:
        together = list(pool.map(lambda j: _run(eng, j, 8), JOBS))
    assert [[s.token for s in r] for r in together] == [[s.token for s in r] for r in (_run(eng, j, 8) for j in JOBS)]
    assert len(calls) == sched.runs - runs0 > 0


def test_a_server_trims_memory_after_batched_steps():
    from lib.ui import startup

    startup._hand_back_memory_after_steps()
    startup._hand_back_memory_after_steps()          # once only
    assert sum(getattr(h, "trims_memory", False) for h in batching.AFTER_STEP) == 1


def test_a_step_waits_for_every_seated_session_up_to_a_step_s_time(eng, monkeypatch):
    """Sessions that take longer than GATHER_S to choose their next token are still in the
    next step: it waits for every seated session, for up to the last step's duration
    (here each step is slowed to 0.3 s, each choice to 0.08 s, two choosing at a time). Four
    sessions of six tokens need five decode steps of four rows (one more if they do not all
    arrive for the first), not two steps per token. A session's first decode row may share a
    step with another's prompt, so the decode rows are counted in every step."""
    import time

    real, steps = batching.batched_forward, []

    def slow(engine, requests):
        time.sleep(0.3)
        steps.append([r[0].shape[1] for r in requests])
        return real(engine, requests)

    monkeypatch.setattr(batching, "batched_forward", slow)
    prompts = [_prompt(6)[:5] + (i + 1,) for i in range(4)]                    # same length
    alone = [generate.greedy(eng, p, 6).new_ids for p in prompts]
    steps.clear()
    with ThreadPoolExecutor(4) as pool:
        together = list(pool.map(lambda p: generate.greedy(eng, p, 6, on_token=lambda t: time.sleep(0.08)).new_ids,
                                 prompts))
    assert together == alone
    assert sum(s.count(1) for s in steps) == 4 * 5, steps                     # prompts are 6 long
    decode_steps = [s for s in steps if max(s) == 1]
    assert len(decode_steps) <= 6 and all(len(s) == 4 for s in decode_steps[1:-1]), steps


def test_requests_are_grouped_by_length_where_padding_costs_more_than_a_forward():
    from lib.decoding.batching import FORWARD_TOKENS, length_groups

    def lengths_of(lengths):
        groups = length_groups(lengths)
        assert sorted(i for g in groups for i in g) == list(range(len(lengths)))     # a partition
        return [sorted(lengths[i] for i in g) for g in groups]

    assert lengths_of([1] * 30) == [[1] * 30]
    assert lengths_of([1] * 30 + [14]) == [[1] * 30, [14]]                           # no decode row padded
    assert lengths_of([14] * 29 + [20]) == [[14] * 29, [20]]                         # 30 x 20 is 40% padding
    assert lengths_of([14, 15, 16] * 10) == [[14] * 10 + [15] * 10 + [16] * 10]      # a little padding is cheaper
    assert lengths_of([]) == []
    # the chosen groups cost no more than one group or one forward per length
    lengths = [1, 1, 3, 9, 9, 10, 25, 26, 40]
    cost = lambda groups: sum(FORWARD_TOKENS + len(g) * max(g) for g in groups)      # noqa: E731
    assert cost(lengths_of(lengths)) <= min(cost([lengths]), cost([[x] * lengths.count(x) for x in set(lengths)]))


def test_seats_nest_a_thread_counts_once(eng):
    """A generation and its check under one outer seat (generate.checked_greedy): the scheduler
    counts the thread once, so it waits for the check's forward instead of starting without it."""
    sched = batching.scheduler_for(eng)
    with batching.seat(eng):
        with batching.seat(eng):
            assert sched.seated == 1
        assert sched.seated == 1
    assert sched.seated == 0
    prompt = _prompt(6)
    steps, bad = generate.checked_greedy(eng, prompt, 8)
    assert [s.token for s in steps] == generate.greedy(eng, prompt, 8).new_ids and bad == 0
    with ThreadPoolExecutor(4) as pool:                        # four sessions at once: the same answers
        together = list(pool.map(lambda n: generate.checked_greedy(eng, _prompt(n), 8), (3, 5, 7, 9)))
    assert [([s.token for s in st], b) for st, b in together] == \
        [([s.token for s in st], b) for st, b in (generate.checked_greedy(eng, _prompt(n), 8) for n in (3, 5, 7, 9))]
    assert sched.seated == 0


def test_the_check_reuses_the_prompt_prefill_and_still_catches_a_changed_token(eng):
    """argmax_mismatches takes the prompt's keys and values (all but its last token) from the
    PromptCache when it is there: the count is the same as with the whole prompt run again."""
    prompt = _prompt(11)
    path = generate.greedy(eng, prompt, 8).new_ids              # the prompt is now cached
    cache = generate.prompt_cache(eng)
    hits = cache.hits
    tampered = path[:5] + [(path[5] + 1) % 97] + path[6:]
    assert generate.argmax_mismatches(eng, prompt, path) == 0 and cache.hits == hits + 1
    with_cache = generate.argmax_mismatches(eng, prompt, tampered)
    cache.entries.clear()                                        # now the whole prompt is run again
    assert with_cache >= 1 and generate.argmax_mismatches(eng, prompt, tampered) == with_cache
    assert generate.argmax_mismatches(eng, prompt, path) == 0
