"""The scheduler's step events (lib.decoding.paged_generation) as sentences.

`describe(event, t)` turns one structured event into a sentence in the page's language;
`t(key, **fmt)` is the page's text lookup (keys ev_admit, ev_fork, ev_wait, ev_decode,
ev_cow, ev_free, ev_free_shared)."""
from __future__ import annotations


def _blocks(ids) -> str:
    return ", ".join(f"#{b}" for b in ids) or "—"


def describe(event: tuple, t) -> str:
    kind = event[0]
    if kind == "admit":
        _, rid, n, blocks, seqs = event
        text = t("ev_admit", rid=rid, n=n, k=len(blocks), blocks=_blocks(blocks))
        if len(seqs) > 1:
            text += " " + t("ev_fork", seqs=" + ".join(seqs), k=len(blocks))
        return text
    if kind == "wait":
        _, rid, need, avail = event
        return t("ev_wait", rid=rid, need=need, avail=max(avail, 0))
    if kind == "decode":
        return t("ev_decode", seqs=", ".join(event[1]), n=len(event[1]))
    if kind == "cow":
        _, seq, src, dst = event
        return t("ev_cow", seq=seq, src=src, dst=dst)
    if kind == "free":
        _, seq, returned, held = event
        kept = [b for b in held if b not in returned]
        text = t("ev_free", seq=seq, blocks=_blocks(returned), k=len(returned))
        if kept:
            text += " " + t("ev_free_shared", blocks=_blocks(kept))
        return text
    raise ValueError(f"unknown event {kind!r}")


def step_log(snapshots, upto: int, t) -> list[tuple[int, str]]:
    """(step, sentence) for every event of steps 0..upto, in order."""
    return [(sn.step, describe(e, t)) for sn in snapshots[:upto + 1] for e in sn.events]
