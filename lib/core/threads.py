"""How many cores one thread's tensor operations use: all of them for the model, one for the rest.

PyTorch runs a big enough operation on several cores through OpenMP, and OpenMP gives every
thread that does so its own team of helper threads, kept for as long as that thread lives. A
class on one server has sixty session threads choosing tokens and computing checks, and one
scheduler thread running everybody's batched forwards (lib/decoding/batching.py). Once all
those teams hold more threads than the machine has cores, OpenMP (GNU libgomp) stops letting
idle helpers spin and puts them to sleep at once; then each of the ~1,500 small operations of
a batched step waits for the scheduler's helper to be woken, and the step takes twice as long
(60 rows on this 2-core host: 0.36 s with no other team, 0.71 s beside 60 idle ones, 0.49 s
beside 60 one-core threads).

So in the server every thread's tensor work runs on one core by default
(`model_work_on_all_cores`, set by lib/ui/runtime.py: a session's whole-vocabulary arithmetic
is too small to gain from a second core anyway), and the model's forwards on all cores
(`all_cores()`, which the engine's forward takes itself, and which lets the thread's OpenMP team
go again when it ends: `release_team`). `one_core()` says the same for one
block wherever the default is not set (the decode loop's choosing, the background visitor). The count is per thread, set
with OpenMP's own `omp_set_num_threads` on the runtime PyTorch loaded; where that runtime
cannot be found (another build), both do nothing.
"""
from __future__ import annotations

import ctypes
import functools
import glob
import os
import threading
from contextlib import contextmanager

import torch


def _openmp():
    """PyTorch's OpenMP runtime (its bundled libgomp / libomp), if setting a thread's count
    there really changes what torch uses in that thread; else None."""
    lib_dir = os.path.join(os.path.dirname(torch.__file__), "lib")
    names = ("libgomp*.so*", "libomp*.so*", "libiomp*.so*", "libomp*.dylib")
    for path in sorted(p for name in names for p in glob.glob(os.path.join(lib_dir, name))):
        try:
            omp = ctypes.CDLL(path)
            omp.omp_set_num_threads.argtypes = [ctypes.c_int]
            if hasattr(omp, "omp_pause_resource_all"):          # OpenMP 5.0 (GNU libgomp has it)
                omp.omp_pause_resource_all.argtypes = [ctypes.c_int]
        except (OSError, AttributeError):
            continue
        works = []

        def probe():
            torch.get_num_threads()                   # torch's own per-thread set-up comes first
            omp.omp_set_num_threads(1)
            works.append(torch.get_num_threads() == 1)

        t = threading.Thread(target=probe)            # a throwaway thread: nobody else's count changes
        t.start()
        t.join()
        if works and works[0]:
            return omp
    return None


_OMP = _openmp()


OMP_PAUSE_SOFT = 1           # omp_pause_resource_t: the calling thread's idle helper threads end


@contextmanager
def cores(n: int):
    """This thread's tensor operations use at most n cores inside the block. Leaving the
    outermost block of several cores, the thread lets its OpenMP helpers go (`release_team`)."""
    if _OMP is None:
        yield
        return
    before = torch.get_num_threads()                 # also torch's per-thread set-up, before ours
    _OMP.omp_set_num_threads(max(1, int(n)))
    many = getattr(_here, "many", 0)                 # blocks of several cores this thread is in
    _here.many = many + (n > 1)
    try:
        yield
    finally:
        _here.many = many
        _OMP.omp_set_num_threads(before)
        if n > 1 and many == 0:
            release_team()


def release_team() -> None:
    """End this thread's idle OpenMP helper threads (OpenMP 5.0 `omp_pause_resource_all`, soft).
    libgomp counts every thread of every team, idle or not, and once that count passes the
    number of cores it stops letting any helper spin: each of a forward's ~1,500 small parallel
    operations then waits for its helper to be woken. A server has many threads that ran the
    model once (session threads, a page's started calls), and each kept its team: one early-exit
    speculative block (six forwards, this 2-core host) took 0.58-0.66 s alone and 0.92-1.05 s
    beside three idle teams, 0.68-0.71 s once they were released. A new team costs one thread
    start at the next forward (tens of microseconds)."""
    if _OMP is not None and hasattr(_OMP, "omp_pause_resource_all"):
        _OMP.omp_pause_resource_all(OMP_PAUSE_SOFT)


def one_core():
    """A session thread's own arithmetic: one core, and no OpenMP team of its own."""
    return cores(1)


def all_cores():
    """The model's work: as many cores as the process uses (torch.set_num_threads), or one in a
    thread marked `background_thread()`."""
    return cores(1 if getattr(_here, "background", False) else ALL)


_here = threading.local()


@contextmanager
def background_thread():
    """Inside the block this thread's model work, too, runs on one core: background work (the
    server's pre-computation of every page's defaults) then never holds an OpenMP team beside
    the scheduler's while a class is on."""
    before = getattr(_here, "background", False)
    _here.background = True
    try:
        with one_core():
            yield
    finally:
        _here.background = before


def _fresh_thread_count() -> int:
    """How many cores a new thread's tensor operations use (torch's default for the process):
    asked in a throwaway thread, whatever the calling thread set for itself."""
    out = []
    t = threading.Thread(target=lambda: out.append(torch.get_num_threads()))
    t.start()
    t.join()
    return out[0]


DEFAULT = _fresh_thread_count()        # before anything here changes it
ALL = DEFAULT


def model_work_on_all_cores(n: int) -> None:
    """A server's setting: the model's forwards take n cores (`all_cores`), and every other
    tensor operation, in any thread, one (torch's default count for every thread that starts
    from now on). Then the scheduler thread, which runs every batched forward, is the only one
    with an OpenMP team. Where the per-thread count cannot be set, simply n for everything."""
    global ALL
    ALL = n
    torch.set_num_threads(1 if _OMP is not None else n)


def on_all_cores(fn):
    """Decorator: `fn` runs its tensor operations on all cores, whatever its caller set."""
    @functools.wraps(fn)
    def wrapped(*args, **kwargs):
        with all_cores():
            return fn(*args, **kwargs)
    return wrapped

