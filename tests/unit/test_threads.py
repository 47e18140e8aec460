"""lib/core/threads.py: a thread's core count inside one_core()/all_cores(), and the engine's
forward on all cores even when called from a one-core block."""
import threading

import torch

from lib.core import threads


def _in_thread(fn):
    out = []
    t = threading.Thread(target=lambda: out.append(fn()))
    t.start()
    t.join()
    return out[0]


def test_one_core_is_per_thread_and_restored():
    if threads._OMP is None:
        return                                              # another PyTorch build: nothing to set
    def inside():
        before = torch.get_num_threads()
        with threads.one_core():
            during = torch.get_num_threads()
            with threads.all_cores():
                model = torch.get_num_threads()
        return before, during, model, torch.get_num_threads()
    mine = torch.get_num_threads()
    before, during, model, after = _in_thread(inside)
    assert during == 1 and model == threads.ALL and after == before
    assert torch.get_num_threads() == mine                   # this thread was never changed


def test_the_engine_takes_all_cores_inside_a_one_core_block():
    from lib.core.engine import Engine

    for method in (Engine.forward, Engine.head, Engine.head_argmax):
        assert getattr(method, "__wrapped__", None) is not None, method     # threads.on_all_cores
    seen = []
    model_work = threads.on_all_cores(lambda: seen.append(torch.get_num_threads()))
    def session():
        with threads.one_core():
            model_work()
            seen.append(torch.get_num_threads())
    _in_thread(session)
    if threads._OMP is not None:
        assert seen == [threads.ALL, 1]


def _os_threads() -> int:
    import os
    return len(os.listdir("/proc/self/task"))


def test_a_thread_that_leaves_its_model_work_keeps_no_idle_helper_threads():
    """libgomp stops every helper from spinning once all teams together hold more threads than
    there are cores, idle teams included: a thread done with the model must not keep one."""
    import os
    import time

    if threads._OMP is None or threads.ALL < 2 or not os.path.isdir("/proc/self/task") \
            or not hasattr(threads._OMP, "omp_pause_resource_all"):
        return                                              # nothing to release on this build
    done, leave = threading.Event(), threading.Event()
    x = torch.ones(1 << 22)          # 4M elements: ATen's own OpenMP loop (a matmul's BLAS may stay on one core)

    def session():
        with threads.all_cores():
            for _ in range(20):
                x.mul(2.0)                                    # a parallel region: helpers start
            inside.append(_os_threads())
        done.set()
        leave.wait()

    inside, base = [], _os_threads()
    t = threading.Thread(target=session)
    t.start()
    done.wait()
    deadline = time.monotonic() + 5
    while _os_threads() > base + 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    after = _os_threads()
    leave.set()
    t.join()
    assert inside[0] > base + 1           # the session thread and its helper(s) while it worked
    assert after == base + 1              # then the session thread alone
