"""The paged KV allocator: a fixed pool of physical blocks and one block table per sequence.

This module only does bookkeeping (which physical block holds which tokens of which
sequence); the K/V tensors live in `lib.core.cache.paged_attention.BlockPool`. It follows nano-vllm's
`block_manager.py`:

    logical block i of a sequence  = its tokens [i*B, (i+1)*B)        (B = block_size)
    block_tables[seq][i]           = the physical block that holds them
    token t of a sequence lives at   (block_tables[seq][t // B], slot t % B)

- A sequence only ever owns ceil(len / B) blocks, so at most B - 1 slots are unused per
  sequence (internal fragmentation < one block) — no max-length reservation.
- Physical blocks need not be contiguous or in order: any free block will do.
- `ref_count` counts the sequences whose table points at a block. `fork` shares all of a
  parent's blocks with a child (parallel samples of one prompt); the first write into a
  shared block triggers copy-on-write: the writer gets a private copy (`CopyOp`).
- Prefix caching: a *full* block gets a chained hash h_i = H(h_{i-1}, its token ids), so a
  hash names the whole prefix up to that block, not just the block's own text. `allocate`
  reuses blocks whose hash matches, front to back, stopping at the first miss. Freed blocks
  keep their hash until they are handed out again, so a later request can still hit them.
"""
from __future__ import annotations

import hashlib
from collections import deque
from dataclasses import dataclass, field

DEFAULT_BLOCK_SIZE = 16


def chain_hash(prev: str | None, token_ids) -> str:
    """H(prev hash, token ids of one full block) as hex: the identity of the whole prefix."""
    h = hashlib.sha256((prev or "root").encode())
    h.update(",".join(str(int(t)) for t in token_ids).encode())
    return h.hexdigest()


def block_hashes(token_ids, block_size: int = DEFAULT_BLOCK_SIZE) -> list[str]:
    """Chained hashes of every *full* block of `token_ids` (a partial last block has none)."""
    out, prev = [], None
    for i in range(len(token_ids) // block_size):
        prev = chain_hash(prev, token_ids[i * block_size:(i + 1) * block_size])
        out.append(prev)
    return out


@dataclass
class Block:
    block_id: int
    ref_count: int = 0
    hash: str | None = None                 # set once the block is full (prefix-cache key)
    token_ids: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class CopyOp:
    """Copy-on-write: copy physical block `src` into `dst` (all layers) before writing."""
    src: int
    dst: int


class OutOfBlocks(RuntimeError):
    """The pool has no free block for a request (the scheduler must wait or preempt)."""


class BlockManager:
    def __init__(self, num_blocks: int, block_size: int = DEFAULT_BLOCK_SIZE):
        if num_blocks < 1 or block_size < 1:
            raise ValueError("num_blocks and block_size must be >= 1")
        self.block_size = block_size
        self.blocks = [Block(i) for i in range(num_blocks)]
        self.free_ids: deque[int] = deque(range(num_blocks))   # handed out from the left
        self.hash_to_block: dict[str, int] = {}
        self.tables: dict[str, list[int]] = {}                 # seq id -> physical block ids
        self.lengths: dict[str, int] = {}                      # seq id -> tokens stored
        self.cached_tokens: dict[str, int] = {}                # seq id -> tokens reused at allocate

    # ---- queries ---------------------------------------------------------------------------
    @property
    def num_free(self) -> int:
        return len(self.free_ids)

    def blocks_needed(self, n_tokens: int) -> int:
        return -(-n_tokens // self.block_size)

    def can_allocate(self, n_tokens: int) -> bool:
        return self.num_free >= self.blocks_needed(n_tokens)

    def slot(self, seq: str, t: int) -> tuple[int, int]:
        """(physical block, offset) of token t of `seq`."""
        return self.tables[seq][t // self.block_size], t % self.block_size

    # ---- allocation ------------------------------------------------------------------------
    def _take_free(self) -> int:
        if not self.free_ids:
            raise OutOfBlocks("no free block")
        bid = self.free_ids.popleft()
        b = self.blocks[bid]
        if b.hash is not None and self.hash_to_block.get(b.hash) == bid:
            del self.hash_to_block[b.hash]     # its old content is about to be overwritten
        b.ref_count, b.hash, b.token_ids = 1, None, []
        return bid

    def _release(self, bid: int) -> None:
        b = self.blocks[bid]
        b.ref_count -= 1
        if b.ref_count == 0:
            self.free_ids.append(bid)          # keeps its hash: a later prompt may still hit it

    def allocate(self, seq: str, token_ids, use_prefix_cache: bool = True) -> int:
        """Give `seq` blocks for its prompt, reusing cached full blocks front to back.
        Returns the number of prompt tokens whose K/V already exist (a multiple of the block
        size, and always < len(token_ids): the last token is recomputed to get logits)."""
        if seq in self.tables:
            raise ValueError(f"sequence {seq!r} already has blocks")
        token_ids = [int(t) for t in token_ids]
        n, B = len(token_ids), self.block_size
        hashes = block_hashes(token_ids, B) if use_prefix_cache else []
        hits: list[int] = []
        for i, h in enumerate(hashes):
            bid = self.hash_to_block.get(h)
            if bid is None or self.blocks[bid].token_ids != token_ids[i * B:(i + 1) * B]:
                break
            if (i + 1) * B >= n:               # never reuse the block holding the last token
                break
            hits.append(bid)
        fresh = self.blocks_needed(n) - len(hits)
        revive = sum(1 for bid in hits if self.blocks[bid].ref_count == 0)
        if self.num_free - revive < fresh:
            raise OutOfBlocks(f"need {fresh} blocks, {self.num_free - revive} free")
        table = []
        for bid in hits:
            b = self.blocks[bid]
            if b.ref_count == 0:
                self.free_ids.remove(bid)
            b.ref_count += 1
            table.append(bid)
        for _ in range(fresh):
            table.append(self._take_free())
        self.tables[seq], self.lengths[seq] = table, len(hits) * B
        self.cached_tokens[seq] = len(hits) * B
        for i in range(len(hits)):
            self.blocks[table[i]].token_ids = token_ids[i * B:(i + 1) * B]
        return len(hits) * B

    def append_slots(self, seq: str, token_ids) -> tuple[list[tuple[int, int]], list[CopyOp]]:
        """Reserve slots for `token_ids` at the end of `seq`: allocate blocks as needed and
        copy-on-write a shared last block. Returns ((block, offset) per token, copies to do
        in the pool *before* writing). Full blocks get their chained hash."""
        table, B = self.tables[seq], self.block_size
        slots, copies = [], []
        for tok in token_ids:
            t = self.lengths[seq]
            if t // B == len(table):
                table.append(self._take_free())
            bid = table[t // B]
            if self.blocks[bid].ref_count > 1:          # shared: private copy before writing
                new = self._take_free()
                self.blocks[new].token_ids = list(self.blocks[bid].token_ids[:t % B])
                self._release(bid)
                copies.append(CopyOp(src=bid, dst=new))
                table[t // B] = bid = new
            b = self.blocks[bid]
            b.token_ids = b.token_ids[:t % B] + [int(tok)]
            self.lengths[seq] = t + 1
            slots.append((bid, t % B))
            if len(b.token_ids) == B:
                prev = self.blocks[table[t // B - 1]].hash if t // B > 0 else None
                b.hash = chain_hash(prev, b.token_ids)
                self.hash_to_block.setdefault(b.hash, bid)
        return slots, copies

    def fork(self, parent: str, child: str) -> None:
        """`child` shares every block of `parent` (ref_count + 1); writes copy on demand."""
        if child in self.tables:
            raise ValueError(f"sequence {child!r} already has blocks")
        self.tables[child] = list(self.tables[parent])
        self.lengths[child] = self.lengths[parent]
        self.cached_tokens[child] = self.lengths[parent]
        for bid in self.tables[child]:
            self.blocks[bid].ref_count += 1

    def free(self, seq: str) -> None:
        """Drop `seq`'s references; blocks nobody uses return to the free list (tail first,
        so the prompt's leading blocks stay cached longest)."""
        for bid in reversed(self.tables.pop(seq)):
            self._release(bid)
        del self.lengths[seq]
        self.cached_tokens.pop(seq, None)

    def uncache(self, block_ids) -> None:
        """Forget the prefix-cache entries of these blocks (their K/V may stay, unnamed)."""
        for bid in block_ids:
            b = self.blocks[bid]
            if b.hash is not None and self.hash_to_block.get(b.hash) == bid:
                del self.hash_to_block[b.hash]
            b.hash = None

    # ---- accounting and invariants -----------------------------------------------------------
    def used_blocks(self) -> int:
        return len(self.blocks) - self.num_free

    def unused_slots(self, seq: str) -> int:
        """Reserved-but-empty slots of `seq` (internal fragmentation)."""
        return len(self.tables[seq]) * self.block_size - self.lengths[seq]

    def check_invariants(self) -> list[str]:
        """Every broken rule as a message (empty list = consistent):
        ref_count == number of table entries pointing at the block; the free list holds
        exactly the blocks with ref_count 0, each once; no table lists a block twice;
        a table covers its tokens; the hash index points at blocks carrying that hash."""
        errors = []
        refs = [0] * len(self.blocks)
        for seq, table in self.tables.items():
            if len(set(table)) != len(table):
                errors.append(f"{seq}: a block appears twice in its table")
            if self.blocks_needed(self.lengths[seq]) > len(table):
                errors.append(f"{seq}: {self.lengths[seq]} tokens but {len(table)} blocks")
            for bid in table:
                refs[bid] += 1
        for b in self.blocks:
            if b.ref_count != refs[b.block_id]:
                errors.append(f"block {b.block_id}: ref_count {b.ref_count}, referenced {refs[b.block_id]}x")
        free = list(self.free_ids)
        if len(set(free)) != len(free):
            errors.append("a block is on the free list twice")
        if set(free) != {b.block_id for b in self.blocks if b.ref_count == 0}:
            errors.append("free list != blocks with ref_count 0")
        for h, bid in self.hash_to_block.items():
            if self.blocks[bid].hash != h:
                errors.append(f"hash index points at block {bid} with another hash")
        return errors
