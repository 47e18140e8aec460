"""Continuous batching: many sessions' forwards on one engine as ONE batched forward.

Decoding one token reads every weight of the model (0.5-1 GB) to do very little arithmetic
with it: the CPU waits for memory. Eight sessions decoding at once can share that read: their
eight tokens go through the model as one (8, 1) batch, and each weight matrix is streamed
once for all of them instead of eight times.

    session threads                      the engine's scheduler thread
    ---------------                      -----------------------------
    seat.forward(ids, cache)  --put-->   pending: [(ids, cache), ...]
         (waits)                         gather everyone seated (a few ms at most)
                                         ids -> one (B, T_max) batch, padding at position -1
                                         engine.forward(batch, BatchOfCaches(caches))
         <--result-- logits of its row   each row's logits back to its session

Requests join and leave between steps (a new session's prefill runs in the same step as the
others' decodes, as a second forward): that is continuous batching, as in vLLM and the
serving pages. Every session keeps
its own KV cache; `BatchOfCaches` shows them to the engine as one batch, padded with
position -1, which the engine never attends to. A session alone gets the engine's own forward
(the scheduler thread runs it: its thread is the only one whose tensor work takes every core).
"""
from __future__ import annotations

import math
import os
import threading
import time
import weakref
from contextlib import contextmanager

import torch

from lib.core.cache.batch import BatchOfCaches
from lib.core.cache.protocol import PAD_POSITION, KVCacheProtocol
from lib.core.cancellation import checkpoint

GATHER_S = 0.03        # the least a step waits for seated sessions still choosing their token
ENABLED = os.environ.get("LLM_LAB_BATCHING", "1") != "0"
def batched_forward(engine, requests: list[tuple]) -> list[torch.Tensor]:
    """One engine forward for several (ids (1, T_i), own cache[, n_logits[, argmax]]) requests;
    each request's logits of its last n_logits positions (default 1): (1, n_logits, V), as if it
    had run alone, or with argmax=True only their argmax token ids (1, n_logits). Rows are
    padded on the right; the LM head runs once on the rows whose logits are wanted, and once,
    one vocabulary chunk at a time, on the argmax rows (Engine.head_argmax: thirty
    teacher-forced checks of 12 tokens would otherwise hold 360 x 1 MB of logits at once)."""
    T = max(r[0].shape[1] for r in requests)
    n = [r[0].shape[1] for r in requests]
    k = [r[2] if len(r) > 2 else 1 for r in requests]
    only_argmax = [bool(r[3]) if len(r) > 3 else False for r in requests]
    batch = torch.zeros(len(requests), T, dtype=torch.long, device=engine.device)       # (B, T)
    positions = torch.full((len(requests), T), PAD_POSITION, dtype=torch.long, device=engine.device)
    for i, (ids, cache, *_) in enumerate(requests):
        batch[i, :n[i]] = ids[0]
        positions[i, :n[i]] = torch.arange(cache.next_position, cache.next_position + n[i])
    hidden = engine.forward(batch, BatchOfCaches([r[1] for r in requests], n), positions,
                            logits="none")                                             # (B, T, D)
    rows = [hidden[i, n[i] - k[i]:n[i]] for i in range(len(requests))]                 # (k_i, D) each
    out: list = [None] * len(requests)
    for argmax in (False, True):
        which = [i for i in range(len(requests)) if only_argmax[i] == argmax]
        if not which:
            continue
        wanted = torch.cat([rows[i] for i in which])                                    # (sum k, D)
        if argmax:
            result = engine.head_argmax(wanted)                                         # (sum k,)
        else:
            result = engine.head(wanted[None])[0]                                       # (sum k, V)
        for i, part in zip(which, result.split([k[i] for i in which])):
            # each request gets its own copy: a view would keep the whole (sum k, V) batch alive
            # for as long as any session keeps its row (a cached result kept 30 MB for 1 MB)
            out[i] = part[None].clone()                            # (1, k_i, V) or (1, k_i) ids
    return out


FORWARD_TOKENS = 32     # what one more forward costs, in padded token rows: every weight is read once
                        # again (~25 ms for one token of Gemma 3 270M on this CPU, ~1.5 ms per token
                        # row in a big batch) plus the LM head's pass over the vocabulary


def length_groups(lengths: list[int]) -> list[list[int]]:
    """Indices of the requests, in groups for separate forwards: sorted by length and cut where
    padding the shorter rows to the longest would cost more than another forward. Minimises the
    sum over groups of FORWARD_TOKENS + rows x longest (dynamic programming over the sorted
    lengths). Thirty decoding rows and one prompt: two groups; thirty prompts of 14 tokens and
    one of 20: two groups (30 x 20 padded rows would be 40% padding)."""
    order = sorted(range(len(lengths)), key=lengths.__getitem__)
    L = [lengths[i] for i in order]                                    # ascending
    best, cut = [0] + [math.inf] * len(L), [0] * (len(L) + 1)        # best[j]: cost of the first j
    for j in range(1, len(L) + 1):
        for i in range(j):                                             # the last group is L[i:j]
            cost = best[i] + FORWARD_TOKENS + (j - i) * L[j - 1]
            if cost < best[j]:
                best[j], cut[j] = cost, i
    groups, j = [], len(L)
    while j > 0:
        groups.append(order[cut[j]:j])
        j = cut[j]
    return groups[::-1]


def alone_forward(engine, ids, cache, n_logits: int = 1, argmax: bool = False) -> torch.Tensor:
    """The engine by itself: logits of the last n_logits positions (B, n_logits, V), or their
    argmax ids (B, n_logits)."""
    T = ids.shape[1]
    if argmax:
        return engine.head_argmax(engine.forward(ids, cache, logits="none")[:, T - n_logits:])
    return engine.forward(ids, cache, logits=slice(T - n_logits, T))


# Called by the scheduler thread after each batched step (a server hands freed memory back
# here: lib.ui.startup).
AFTER_STEP: list = []


class _Request:
    def __init__(self, ids, cache, n_logits, argmax):
        self.ids, self.cache, self.n_logits, self.argmax = ids, cache, n_logits, argmax
        self.done = threading.Event()
        self.logits: torch.Tensor | None = None
        self.error: BaseException | None = None


class Scheduler:
    """One per engine: a thread that runs the pending forwards of all seated sessions as one
    batched forward per step (one per group of similar lengths: the decodes, the prompts).
    `seated` counts sessions inside `seat()`.

    Gathering a step: a seated session that has not asked yet is choosing its next token (or
    starting) and will ask soon. The step waits until every seated session has asked, for at
    most as long as the last step took (at least GATHER_S): a straggler left out would cost a
    step of its own, which reads every weight again for a few rows. (With a fixed 30 ms,
    thirty sessions' decoding settled into two half-full steps per token, and their first
    step ran three rows while fifty-seven others waited for it.)"""

    def __init__(self, engine):
        self.engine_ref = weakref.ref(engine)   # the scheduler must not keep a dropped model alive
        self.cond = threading.Condition()
        self.pending: list[_Request] = []
        self.seated = 0
        self.steps = 0                    # batched forwards run (for tests and the bench)
        self.rows = 0                     # requests they served
        self.runs = 0                     # times the scheduler woke to run a batch (a forward per length group)
        self.alone = 0                    # forwards of a session alone (no batch, the engine directly)
        self.last_step_s = 0.0
        threading.Thread(target=self._loop, name="batching-scheduler", daemon=True).start()

    def forward(self, ids: torch.Tensor, cache: KVCacheProtocol, n_logits: int = 1,
                argmax: bool = False) -> torch.Tensor:
        """ids (1, T) through the model with this session's cache -> the logits of its last
        n_logits positions (1, n_logits, V), or only their argmax ids (1, n_logits). Run by
        the scheduler thread even for a session alone (as `alone_forward`, the same numbers
        as the engine called directly): then the scheduler's is the only thread whose tensor
        work uses several cores (lib/core/threads.py). A session nobody waits for any more
        stops here, between its steps (lib.core.cancellation)."""
        checkpoint()
        req = _Request(ids, cache, n_logits, argmax)
        with self.cond:
            self.pending.append(req)
            self.cond.notify_all()
        req.done.wait()
        if req.error is not None:
            raise req.error
        return req.logits

    def _loop(self) -> None:
        while True:
            with self.cond:
                while not self.pending:
                    if self.engine_ref() is None:
                        return                      # the model was dropped: so is this thread
                    self.cond.wait(timeout=5.0)
                # gather: until every seated session has asked, for at most the last step's duration
                self.cond.wait_for(lambda: len(self.pending) >= self.seated,
                                   timeout=max(GATHER_S, self.last_step_s))
                batch, self.pending = self.pending, []
            t0 = time.monotonic()
            self._run(batch)
            self.last_step_s = time.monotonic() - t0

    def _run(self, batch: list[_Request]) -> None:
        """One step: the requests in groups of similar length (length_groups: the decoding
        rows, one token each, in one forward; the prompts in one or a few more), one forward
        per group. Every session gets its result when the whole step is done: sessions woken
        earlier would compete for the two cores (and the GIL) with the step's last forwards,
        which then ran 10-30x slower than alone."""
        engine = self.engine_ref()
        if len(batch) == 1:                            # a session alone: the engine directly
            r = batch[0]
            try:
                r.logits = alone_forward(engine, r.ids, r.cache, r.n_logits, r.argmax)
            except BaseException as e:  # noqa: BLE001 - handed to the waiting session
                r.error = e
            self.alone += 1
            r.done.set()
            return
        for group in ([batch[i] for i in g] for g in length_groups([r.ids.shape[1] for r in batch])):
            try:
                for r, logits in zip(group, batched_forward(engine, [(r.ids, r.cache, r.n_logits, r.argmax) for r in group])):
                    r.logits = logits
            except BaseException as e:  # noqa: BLE001 - handed to every waiting session
                for r in group:
                    r.error = e
            self.steps, self.rows = self.steps + 1, self.rows + len(group)
        for r in batch:
            r.done.set()
        self.runs += 1
        for hook in AFTER_STEP:
            hook()


class Seat:
    """What `generate` sees: the engine's forward, new_cache and device, with forwards going
    through the engine's scheduler."""

    def __init__(self, engine, scheduler: Scheduler | None):
        self.engine, self.scheduler = engine, scheduler
        self.device, self.spec = engine.device, engine.spec

    def new_cache(self, batch: int = 1, capacity: int = 64):
        return self.engine.new_cache(batch, capacity)

    def forward(self, ids: torch.Tensor, cache: KVCacheProtocol, n_logits: int = 1,
                argmax: bool = False) -> torch.Tensor:
        """ids (B, T) -> the logits of the last n_logits positions (B, n_logits, V), or only
        their argmax ids (B, n_logits)."""
        if self.scheduler is None or ids.shape[0] != 1:
            return alone_forward(self.engine, ids, cache, n_logits, argmax)
        return self.scheduler.forward(ids, cache, n_logits, argmax)


def joins_batches(fn):
    """Mark `fn` as one whose model forwards all go through `seat()`. Many of them running at
    once share each batched step (they get faster together, and each holds only its own short
    cache), so a server lets them run side by side instead of queueing them (lib/serving/memo.py)."""
    fn.joins_batches = True
    return fn


_schedulers: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def scheduler_for(engine) -> Scheduler:
    with _lock:
        if engine not in _schedulers:
            _schedulers[engine] = Scheduler(engine)
        return _schedulers[engine]


_held = threading.local()        # this thread's seats, per scheduler: {id(scheduler): depth}


@contextmanager
def seat(engine):
    """A seat at the engine's scheduler for one generation (see Seat). Seats nest: a thread
    that already holds one (a generation and then its check, under one outer seat) is counted
    once, so the scheduler keeps waiting for its next forward between the two instead of
    starting a step without it (thirty checks then ran in three steps, one of them for a
    single late session: every weight read again for one row)."""
    if not ENABLED:
        yield Seat(engine, None)
        return
    s = scheduler_for(engine)
    depth = getattr(_held, "seats", None)
    if depth is None:
        depth = _held.seats = {}
    outer = depth.get(id(s), 0) == 0
    depth[id(s)] = depth.get(id(s), 0) + 1
    if outer:
        with s.cond:
            s.seated += 1
    try:
        yield Seat(engine, s)
    finally:
        depth[id(s)] -= 1
        if outer:
            with s.cond:
                s.seated -= 1
                s.cond.notify_all()
