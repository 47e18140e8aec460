"""Giving freed heap memory back to the system.

glibc keeps memory that Python and torch freed in per-thread arenas; a server whose thirty
sessions each computed a large activation keeps that peak resident long after the work ended.
`trim_memory()` hands it back (`malloc_trim`); `LIBC` is None where there is no glibc (then
nothing is trimmed).
"""
from __future__ import annotations

import time


def _libc():
    try:
        import ctypes

        return ctypes.CDLL("libc.so.6")
    except OSError:
        return None


LIBC = _libc()


_trimmed_at = [0.0]


def trim_memory(unless_within_s: float = 0.0) -> None:
    """Give freed heap memory back to the system (glibc keeps it per thread arena otherwise);
    skipped if the last trim was less than `unless_within_s` seconds ago (sixty generations
    finishing together need one trim, not sixty: each walks every heap)."""
    now = time.monotonic()
    if LIBC is not None and now - _trimmed_at[0] >= unless_within_s:
        _trimmed_at[0] = now
        LIBC.malloc_trim(0)
