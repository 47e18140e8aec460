"""The paged allocator: tables, ref counts, copy-on-write, prefix hits, invariants."""
import random

import pytest

from lib.core.cache.block_manager import BlockManager, OutOfBlocks, block_hashes, chain_hash


def test_blocks_follow_tokens_and_waste_is_under_one_block():
    bm = BlockManager(10, 4)
    bm.allocate("a", list(range(9)))                  # 9 tokens -> 3 blocks
    bm.append_slots("a", list(range(9)))
    assert len(bm.tables["a"]) == 3 and bm.unused_slots("a") == 3
    slots, _ = bm.append_slots("a", [1, 2, 3, 4])     # 13 tokens -> 4 blocks
    assert len(bm.tables["a"]) == 4 and bm.unused_slots("a") == 3
    assert slots[-1] == (bm.tables["a"][3], 0)
    assert bm.check_invariants() == []


def test_free_returns_blocks_and_they_are_reused():
    bm = BlockManager(4, 4)
    bm.allocate("a", list(range(16)))
    assert bm.num_free == 0 and not bm.can_allocate(1)
    with pytest.raises(OutOfBlocks):
        bm.allocate("b", [1])
    old = set(bm.tables["a"])
    bm.free("a")
    assert bm.num_free == 4
    bm.allocate("b", [7] * 5)
    assert set(bm.tables["b"]) <= old
    assert bm.check_invariants() == []


def test_fork_shares_blocks_then_copy_on_write_on_first_divergent_write():
    bm = BlockManager(8, 4)
    bm.allocate("p", list(range(6)))                  # blocks: [full, partial(2)]
    bm.append_slots("p", list(range(6)))
    bm.fork("p", "c")
    shared = bm.tables["p"]
    assert [bm.blocks[b].ref_count for b in shared] == [2, 2]
    _, copies = bm.append_slots("c", [100])           # c writes into the shared partial block
    assert len(copies) == 1 and copies[0].src == shared[1]
    assert bm.tables["c"][0] == shared[0] and bm.tables["c"][1] == copies[0].dst
    assert bm.blocks[copies[0].dst].token_ids == [4, 5, 100]
    _, copies = bm.append_slots("p", [200])           # now p owns its block alone: no copy
    assert copies == [] and bm.blocks[bm.tables["p"][1]].token_ids == [4, 5, 200]
    assert bm.blocks[shared[0]].ref_count == 2
    assert bm.check_invariants() == []


def test_chained_hash_depends_on_every_earlier_block():
    a = list(range(32))
    b = [999] + a[1:]                                 # differs only in token 0
    ha, hb = block_hashes(a, 16), block_hashes(b, 16)
    assert ha[0] != hb[0] and ha[1] != hb[1]          # block 1's own tokens are identical
    assert chain_hash(None, a[16:]) != ha[1]
    assert block_hashes(a[:20], 16) == ha[:1]         # partial blocks get no hash


def test_prefix_hits_stop_at_first_miss_and_survive_free():
    bm = BlockManager(12, 4)
    a = list(range(14))
    bm.allocate("a", a)
    bm.append_slots("a", a)
    kept = list(bm.tables["a"])
    bm.free("a")                                      # freed, but hashes stay
    b = a[:8] + [50, 51, 52, 53] + a[12:]             # blocks 0,1 equal, block 2 differs
    n = bm.allocate("b", b)
    assert n == 8 and bm.tables["b"][:2] == kept[:2]
    bm.append_slots("b", b[n:])
    assert bm.allocate("c", a) == 12                  # a's block 2 was still free and hashed
    assert bm.tables["c"][:3] == kept[:3]
    assert bm.check_invariants() == []


def test_last_token_is_never_served_from_cache():
    bm = BlockManager(8, 4)
    a = list(range(8))
    bm.allocate("a", a)
    bm.append_slots("a", a)
    bm.free("a")
    assert bm.allocate("b", a) == 4                   # 2 full blocks cached, only 1 reused


def test_invariants_hold_under_random_operations():
    rng = random.Random(1234)
    bm = BlockManager(40, 4)
    live, n_ops, cow = [], 0, 0
    for i in range(3000):
        op = rng.random()
        if op < 0.25 and bm.num_free > 6:
            s = f"s{i}"
            toks = [rng.randrange(6) for _ in range(rng.randrange(1, 12))]
            n = bm.allocate(s, toks)
            bm.append_slots(s, toks[n:])
            live.append(s)
        elif op < 0.35 and live and bm.num_free > 2:
            s = f"f{i}"
            bm.fork(rng.choice(live), s)
            live.append(s)
        elif op < 0.8 and live and bm.num_free > 2:
            _, copies = bm.append_slots(rng.choice(live), [rng.randrange(6)])
            cow += len(copies)
        elif live:
            bm.free(live.pop(rng.randrange(len(live))))
        else:
            continue
        n_ops += 1
        assert bm.check_invariants() == [], i
        owned = [b for t in bm.tables.values() for b in t]
        for b in bm.blocks:                            # never on the free list while owned
            assert (b.block_id in bm.free_ids) == (b.block_id not in owned)
    for s in list(live):
        bm.free(s)
    assert bm.num_free == 40 and all(b.ref_count == 0 for b in bm.blocks)
    assert n_ops > 1500 and cow > 10
