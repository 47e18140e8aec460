"""Several real requests generating concurrently on one paged block pool.

Each scheduler step:
  1. admit waiting requests (first come, first served) while the pool has blocks for their
     prompt: allocate, `prefill` through the paged pool, sample the first token; a request
     with two samples is then forked — both samples share the prompt's blocks (ref_count 2);
  2. decode: every running sequence feeds its last token in ONE batched `decode_one_token`
     whose K/V go through the block tables (lib.core.cache.paged.PagedBatch); the first write
     into a shared, partly filled block copies it (copy-on-write);
  3. sequences that reached their token limit free their blocks, which later requests reuse.
A snapshot of the block tables and the pool is kept after every step for the figures.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch

from lib.core.cache.block_manager import BlockManager
from lib.core.cache.paged import BlockPool, PagedBatch
from lib.decoding.generate import choose_token, decode_one_token, prefill
from lib.decoding.sampling import SamplingConfig


@dataclass(frozen=True)
class Request:
    rid: str
    prompt_ids: tuple[int, ...]
    max_new: int
    arrival_step: int = 0
    samples: tuple[tuple[float, int], ...] = ((0.0, 0),)   # (temperature, seed) per sample


@dataclass
class Snapshot:
    step: int
    event: str                              # what happened, e.g. "admit A; cow B.2; free C"
    events: list[tuple]                     # the same, structured (see `run_requests`)
    tables: dict[str, list[int]]            # seq -> physical blocks
    lengths: dict[str, int]                 # seq -> tokens with K/V in the pool
    ref_counts: list[int]                   # per physical block
    owners: list[list[str]]                 # per physical block: the sequences using it
    used_blocks: int
    filled_slots: int                       # slots holding a token (a shared slot counts once)


@dataclass
class PagedRun:
    block_size: int
    num_blocks: int
    bytes_per_token: int
    snapshots: list[Snapshot] = field(default_factory=list)
    tokens: dict[str, list[int]] = field(default_factory=dict)   # seq -> prompt + generated ids
    n_prompt: dict[str, int] = field(default_factory=dict)
    cow_copies: list[tuple[int, str, int, int]] = field(default_factory=list)  # (step, seq, src, dst)
    max_abs_diff: float = 0.0               # paged logits vs contiguous recompute, all steps
    argmax_equal: bool = True
    n_checked: int = 0                      # generated positions compared
    invariant_errors: list[str] = field(default_factory=list)
    rejected: list[str] = field(default_factory=list)   # requests larger than the whole pool
    # rid -> (n_prompt, D): the final (normed) hidden states at the prompt's positions in the
    # contiguous recompute below, i.e. each prompt through the engine alone (B = 1, a plain
    # KVCache); lib.reference.batch_reference reads its "alone" side from them (no second forward)
    prompt_hidden: dict[str, torch.Tensor] = field(default_factory=dict)


def _snapshot(step: int, events: list[tuple], bm: BlockManager) -> Snapshot:
    owners = [[] for _ in bm.blocks]
    for s, table in bm.tables.items():
        for bid in table:
            owners[bid].append(s)
    filled = set()
    for s, table in bm.tables.items():
        for t in range(bm.lengths[s]):
            filled.add(bm.slot(s, t))
    return Snapshot(step, "; ".join(" ".join(str(x) for x in e) for e in events), list(events),
                    {s: list(t) for s, t in bm.tables.items()}, dict(bm.lengths),
                    [b.ref_count for b in bm.blocks], owners, bm.used_blocks(), len(filled))


def _lifetime_blocks(r: Request, B: int) -> int:
    """Blocks request r can ever need: its prompt's blocks plus, per sample, the blocks its
    own tokens fill (a fork's copy-on-write block included). Admission keeps that many free
    for every admitted request, so nobody runs out mid-generation (no preemption here)."""
    P, written = len(r.prompt_ids), len(r.prompt_ids) + r.max_new - 1   # the last token is never fed back
    shared = P // B                                     # full prompt blocks: stored once
    return shared + len(r.samples) * (-(-written // B) - shared)


def _still_needed(bm: BlockManager, running: dict) -> int:
    """Blocks the running sequences may still take before they finish (upper bound)."""
    need = 0
    for s, st in running.items():
        table, n = bm.tables[s], bm.lengths[s]
        need += max(0, -(-(n + st["left"]) // bm.block_size) - len(table))
        if n % bm.block_size and bm.blocks[table[-1]].ref_count > 1:
            need += 1                                     # its shared last block will be copied
    return need


def _pick(logits: torch.Tensor, temperature: float, gen: torch.Generator) -> int:
    """A sequence's next token: the decode loop's own per-step choice (lib/decoding/generate.py).
    The scheduler below advances many sequences per batched forward, so it drives that step
    itself instead of running one `decode_loop` per sequence."""
    return choose_token(logits.float().cpu(), SamplingConfig(temperature), gen)[1]


def plan_requests(spec, requests: list[Request], num_blocks: int, block_size: int = 16,
                  max_steps: int = 200, dtype=torch.float32) -> PagedRun:
    """The schedule `run_requests` follows, without the model: every request generates exactly
    `max_new` tokens (no end-of-text stop), so admissions, block tables, copy-on-write and
    frees depend only on the lengths. Same snapshots, copies and refusals as the real run, in
    milliseconds; its `tokens` hold the prompts and one placeholder id (-1) per new token, and
    it checks nothing (max_abs_diff 0, n_checked 0). `bytes_per_token` is measured on a
    one-block pool of the model's shape (`spec`, `dtype`)."""
    return _serve(None, BlockPool(spec, 1, block_size, dtype).bytes_per_token, requests, num_blocks, block_size,
                  max_steps)[0]


def run_requests(engine, requests: list[Request], num_blocks: int, block_size: int = 16,
                 max_steps: int = 200) -> PagedRun:
    """Serve `requests` on a pool of `num_blocks` blocks; then re-run every finished sequence
    through the engine's contiguous KVCache and compare the logits at every generated step.

    Each snapshot's `events` says what the step did, in order, as tuples:
      ("admit", rid, prompt_tokens, blocks, seqs)   prompt prefilled into `blocks`; `seqs` share them
      ("wait", rid, need, available)                arrived, but its whole generation needs `need`
                                                    blocks and only `available` are not promised
      ("decode", seqs)                              one batched forward, one new token each
      ("cow", seq, src, dst)                        seq wrote into shared block src: copied to dst
      ("free", seq, returned, held)                 seq finished; `returned` went back to the free list
    """
    pool = BlockPool(engine.spec, num_blocks, block_size, engine.dtype, engine.device)
    run, step_logits = _serve(engine, pool, requests, num_blocks, block_size, max_steps)
    _compare_with_contiguous(engine, run, step_logits)
    return run


def _serve(engine, pool, requests, num_blocks: int, block_size: int, max_steps: int):
    """The scheduler loop of `run_requests`; with engine None (`plan_requests`) it does the
    block bookkeeping alone (`pool` is then the bytes per token) and picks no tokens."""
    bm = BlockManager(num_blocks, block_size)
    run = PagedRun(block_size, num_blocks, pool if engine is None else pool.bytes_per_token)
    waiting = sorted(requests, key=lambda r: (r.arrival_step, r.rid))
    running: dict[str, dict] = {}           # seq -> {left, temperature, gen, next}
    step_logits: dict[str, list[torch.Tensor]] = {}
    for step in range(max_steps):
        events = []
        while waiting and _lifetime_blocks(waiting[0], block_size) > num_blocks:
            run.rejected.append(waiting.pop(0).rid)       # could never fit: refuse, do not wait forever
        while waiting and waiting[0].arrival_step <= step and \
                _lifetime_blocks(waiting[0], block_size) <= bm.num_free - _still_needed(bm, running):
            r = waiting.pop(0)
            ids = list(r.prompt_ids)
            names = [r.rid] if len(r.samples) == 1 else [f"{r.rid}.{i + 1}" for i in range(len(r.samples))]
            bm.allocate(names[0], ids, use_prefix_cache=False)
            if engine is None:
                bm.append_slots(names[0], ids)
            else:
                batch = PagedBatch(pool, bm, [names[0]], [ids])       # the prompt's slots, via its block table
                logits = prefill(engine, torch.tensor([ids], device=engine.device), batch,
                                 positions=batch.positions)[0][0]                         # (V,)
            for nm in names[1:]:
                bm.fork(names[0], nm)
            for nm, (temp, seed) in zip(names, r.samples):
                gen = torch.Generator().manual_seed(int(seed))
                tok = -1 if engine is None else _pick(logits, temp, gen)
                running[nm] = {"left": r.max_new - 1, "temp": temp, "gen": gen, "next": tok}
                run.tokens[nm], run.n_prompt[nm] = ids + [tok], len(ids)
                step_logits[nm] = [] if engine is None else [logits.float().cpu()]
            events.append(("admit", r.rid, len(ids), tuple(bm.tables[names[0]]), tuple(names)))
        if waiting and waiting[0].arrival_step <= step:
            r = waiting[0]
            events.append(("wait", r.rid, _lifetime_blocks(r, block_size), bm.num_free - _still_needed(bm, running)))
        active = [s for s in running if running[s]["left"] > 0]
        if active:
            before = {s: list(bm.tables[s]) for s in active}
            if engine is None:
                for s in active:
                    bm.append_slots(s, [running[s]["next"]])
            else:
                batch = PagedBatch(pool, bm, active, [[running[s]["next"]] for s in active])  # copy-on-write here
                tokens = torch.tensor([[running[s]["next"]] for s in active], device=engine.device)  # (B, 1)
                logits = decode_one_token(engine, tokens, batch, batch.positions)             # (B, V)
            events.append(("decode", tuple(active)))
            for b, s in enumerate(active):
                for i, (old, new) in enumerate(zip(before[s], bm.tables[s])):
                    if old != new:
                        run.cow_copies.append((step, s, old, new))
                        events.append(("cow", s, old, new))
                st = running[s]
                st["next"] = -1 if engine is None else _pick(logits[b], st["temp"], st["gen"])
                st["left"] -= 1
                run.tokens[s].append(st["next"])
                if engine is not None:
                    step_logits[s].append(logits[b].float().cpu())
        for s in [s for s in running if running[s]["left"] == 0]:
            del running[s]
            held = tuple(bm.tables[s])
            free_before = set(bm.free_ids)
            bm.free(s)
            events.append(("free", s, tuple(b for b in held if b in set(bm.free_ids) - free_before), held))
        run.invariant_errors += bm.check_invariants()
        run.snapshots.append(_snapshot(step, events, bm))
        if not waiting and not running:
            break
    return run, step_logits


HEAD_ROWS = 48      # the check's LM head takes up to this many rows at once (48 x 262,144 logits: 50 MB)


def _compare_with_contiguous(engine, run: PagedRun, step_logits) -> None:
    """One teacher-forced forward per sequence through the contiguous KVCache; their rows go
    through the LM head together, up to HEAD_ROWS at a time (one pass over the vocabulary
    matrix for several sequences, not one each); the first sequence of each request also
    leaves its prompt's final hidden states in run.prompt_hidden (the "final" hook sees them
    anyway: keeping them costs no computation)."""
    waiting: list[tuple[str, torch.Tensor]] = []                       # (sequence, its rows (k, D))

    def flush():
        refs = engine.head(torch.cat([h for _, h in waiting])[None])[0].float().cpu()       # (rows, V)
        refs = refs.split([h.shape[0] for _, h in waiting])
        for (s, _), ref in zip(waiting, refs):
            ours = torch.stack(step_logits[s])                                               # (k, V)
            run.max_abs_diff = max(run.max_abs_diff, float((ours - ref).abs().max()))
            run.argmax_equal &= bool((ours.argmax(-1) == ref.argmax(-1)).all())
            run.n_checked += len(ref)
        waiting.clear()

    for s, toks in run.tokens.items():
        n = run.n_prompt[s]
        k = len(step_logits[s])
        rid = s.split(".")[0]
        ids = torch.tensor([toks[:n + k - 1]], device=engine.device)
        keep = {} if rid in run.prompt_hidden else {"final": lambda _l, x, rid=rid, n=n: _keep(run, rid, x[0, :n])}
        hidden = engine.forward(ids, engine.new_cache(capacity=ids.shape[1]), hooks=keep, logits="none")[0]
        if waiting and sum(h.shape[0] for _, h in waiting) + k > HEAD_ROWS:
            flush()
        waiting.append((s, hidden[n - 1:n - 1 + k]))
    if waiting:
        flush()


def _keep(run: PagedRun, rid: str, hidden: torch.Tensor) -> None:
    """The "final" hook's record (returns None: the forward goes on unchanged)."""
    run.prompt_hidden[rid] = hidden.detach().cpu().clone()                                 # (n, D)
