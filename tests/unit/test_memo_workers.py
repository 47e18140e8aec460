"""The memo's limit on computations at once spares generations that join the engine's batches:
thirty of them share each batched step, so queueing them two at a time only serialises a class."""
import threading
import time

from lib.decoding import batching
from lib.serving import memo as memo_module
from lib.serving.memo import Memo


def _fresh(fn):
    m = Memo(fn, key_of=lambda a: a)
    m.name = f"workers-test-{fn.__name__}-{time.monotonic_ns()}"      # a fresh key space
    return m


def test_a_batched_generation_runs_while_every_worker_slot_is_taken():
    @batching.joins_batches
    def generation(x):
        return x + 1

    def other(x):
        return x + 2

    was, memo_module.STORE.enabled = memo_module.STORE.enabled, False
    taken = []
    try:
        while memo_module._workers.free:                         # every slot busy (a class computing)
            taken.append(memo_module._workers.hold())
            taken[-1].__enter__()
        assert len(taken) == memo_module.WORKERS
        out = {}
        g = threading.Thread(target=lambda: out.setdefault("generation", _fresh(generation)(1)), daemon=True)
        g.start()
        g.join(timeout=5)
        assert out == {"generation": 2}                          # no slot needed: ran at once
        t = threading.Thread(target=lambda: out.setdefault("other", _fresh(other)(1)), daemon=True)
        t.start()
        t.join(timeout=0.5)
        assert "other" not in out                                # waits for a slot
        taken.pop().__exit__(None, None, None)
        t.join(timeout=10)
        assert out == {"generation": 2, "other": 3}
    finally:
        for held in taken:
            held.__exit__(None, None, None)
        memo_module.STORE.enabled = was


def test_the_generation_functions_are_marked():
    from lib.decoding import generate

    for fn in (generate.generate, generate.continuation, generate.greedy, generate.next_token_logits):
        assert getattr(fn, "joins_batches", False), fn.__name__
