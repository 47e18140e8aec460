"""python -m bench --live-class : a live class of 200 phones on one fresh server (issue 30).

A fresh server (bench.classroom.start_server, its class database a new SQLite file given by
LLM_LAB_CLASS_DB), a room created and a page projected through the store (the lecturer's side,
as lib/ui/live_room.py does it), then over Streamlit's websocket protocol (bench/live_student.py):
- the lecturer's session on `?room=CODE&key=SECRET`, rerunning its answer-count fragment as its
  browser does (every run_every s, auto_rerun);
- `students` sessions joining `?room=CODE` (20 at a time), each finding the answer radio in the
  deltas (widget key live.answer.live.<page>.<question>), polling the room as a browser does
  (rerunning every auto_rerun fragment at its interval, each timer in the phase of the run that
  drew it, as a browser's), and answering once at a random moment of a `window_s` window: a
  widget-state BackMsg rerunning only the radio's fragment.
Measured: answers sent / acknowledged (the fragment showed "answer sent") / counted (the store),
the answer round trip (send -> that fragment's script_finished) median and p95, the presenter
lag (an acknowledged answer -> the lecturer's count including it; p95 and max), the peak RSS of
the server with its children, and from the window's start to its last answer counted: the runs
sent (`live_runs`: polls, answers, the lecturer's) and the CPU seconds of the server (with its
children) and of this client process, per run (the 200 simulated phones share the machine). Then the same in a second room with the server SIGKILLed in the
middle of the window and restarted on the same database: students still to answer reconnect and
answer; answers in flight at the kill are neither acknowledged nor retried. Each student has its
own id in its URL (`&s=`, lib/ui/live_class.session_id), so `live_lost_acked` /
`restart_lost_acked` count the acknowledged answers the store does not hold with the option
acknowledged (must be 0), student by student.
"""
from __future__ import annotations

import asyncio
import math
import random
import re
import signal
import statistics
import tempfile
import time
from pathlib import Path

import psutil

from bench.classroom import PeakRss, p95, start_server, stop_server
from bench.live_student import LiveSession, Run
from lib.classroom import ClassStore

PAGE, QUESTION = "stable-softmax", "naive"
JOIN_AT_ONCE = 20
POLL_TIMEOUT_S = 60.0      # a poll given up early would answer into the next run
COUNT_RE = re.compile(r"\*\*([\d.,\s]+)\*\*")


class Class:
    """The shared state of one scenario: the server generation, when it is up, the records."""

    def __init__(self, base: str, server_pid: int | None = None):
        self.base, self.gen, self.server_pid = base, 0, server_pid
        self.up = asyncio.Event()
        self.up.set()
        self.acks: list[float] = []          # when each acknowledged answer came back
        self.acked: dict[str, str] = {}      # student id (?s=) -> the option acknowledged
        self.trips: list[float] = []         # round trips of acknowledged answers
        self.poll_trips: list[float] = []    # round trips of the students' polls (for scale)
        self.sent = self.in_flight = self.failed_joins = 0
        self.attempted: set[int] = set()    # students who answered or gave up
        self.errors: list[str] = []
        self.done = False


def _sid(i: int, code: str) -> str:
    return f"bench{code}{i:04d}"                     # the student's id in its URL (&s=)


async def _join(c: Class, page: str, code: str, sem: asyncio.Semaphore, sid: str):
    async with sem:
        s = LiveSession(c.base, page, f"room={code}&s={sid}")
        await s.open()
        r = await s.run(timeout_s=600)
    if r.radio_id is None or r.failure or r.exceptions:
        c.failed_joins += 1
        c.errors.append(r.failure or "; ".join(r.exceptions) or "no answer radio")
    return s, r, c.gen


async def _poll(s: LiveSession, polls: dict[str, float], next_at: dict[str, float],
                radio: Run | None = None, trips: list[float] | None = None) -> float:
    """Rerun every fragment whose interval elapsed, as the browser's auto_rerun timers do: each
    timer starts when the run that drew its fragment ended (`next_at`, set from Run.ended_at;
    200 timers started at one instant would poll in lockstep, which no class of browsers does)
    and keeps its phase (ticks passed while a run was in flight are skipped).
    The radio (its widget and fragment ids) is taken from the latest run that drew it. Returns
    when the next timer is due (perf_counter), so the caller sleeps until then."""
    for frag, every in list(polls.items()):
        due = next_at.setdefault(frag, time.perf_counter() + every)
        if time.perf_counter() < due:
            continue
        r = await s.run(fragment_id=frag, auto=True, timeout_s=POLL_TIMEOUT_S)
        next_at[frag] = _next_tick(due, every, r.ended_at)
        if trips is not None and r.finished:
            trips.append(r.seconds)
        if r.full:
            polls.clear()                         # a page rerun: only its fragments poll
            next_at.clear()
        for f, e in r.polls.items():
            if f not in polls:
                next_at[f] = r.ended_at + e       # a fragment this run drew: its timer starts
        polls.update(r.polls)
        for gone in r.stopped + ([frag] if not r.finished else []):
            polls.pop(gone, None)                 # a fragment of an earlier run: not rerun
            next_at.pop(gone, None)
        if radio is not None and r.radio_id is not None:
            radio.radio_id, radio.radio_fragment = r.radio_id, r.radio_fragment
    return min((next_at.get(f, 0.0) for f in polls), default=time.perf_counter() + 1.0)


async def _sleep_until(t: float, cap_s: float = 0.5) -> None:
    """Sleep until perf_counter reaches `t`, at most `cap_s` (to notice a restart or the end)."""
    await asyncio.sleep(min(cap_s, max(0.0, t - time.perf_counter())))


def _next_tick(t0: float, every: float, after: float) -> float:
    """The first t0 + k * every (k >= 1) later than `after`: a timer's next tick, in phase."""
    return t0 + every * max(1, math.floor((after - t0) / every) + 1)


def _timers(r: Run) -> dict[str, float]:
    """The join run's auto_rerun timers, started when that run ended (their next ticks)."""
    return {f: _next_tick(r.ended_at, every, time.perf_counter()) for f, every in r.polls.items()}


async def _student(c: Class, i: int, page: str, code: str, start: float, offset: float,
                   sem: asyncio.Semaphore, joined) -> None:
    s, r, gen = joined
    if r.radio_id is None:                           # no question to answer (a failed join)
        c.attempted.add(i)
        await s.close()
        return
    polls, next_at = dict(r.polls), _timers(r)
    while time.perf_counter() < start + offset:
        wake = start + offset
        if c.gen == gen and c.up.is_set():
            wake = min(wake, await _poll(s, polls, next_at, r, c.poll_trips))
        await _sleep_until(wake)
    if c.gen != gen or not c.up.is_set():            # the server restarted: join again
        await c.up.wait()
        await s.close()
        s, r, gen = await _join(c, page, code, sem, _sid(i, code))
        if r.radio_id is None:
            c.attempted.add(i)
            await s.close()
            return
        polls, next_at = dict(r.polls), _timers(r)
    choice = r.radio_options[i % len(r.radio_options)]
    c.sent += 1
    a = await s.run((r.radio_id, choice), r.radio_fragment, timeout_s=30)
    if a.finished and a.successes:
        c.acks.append(time.perf_counter())
        c.acked[_sid(i, code)] = choice
        c.trips.append(a.seconds)
    elif a.sent and a.failure:
        c.in_flight += 1                             # sent, the server died: unknown
    else:
        c.errors.append(a.failure or "; ".join(a.warnings + a.exceptions) or "no ack")
    c.attempted.add(i)
    while not c.done:                                # stay in the class, polling
        wake = time.perf_counter() + 0.5
        if c.gen == gen and c.up.is_set():
            wake = await _poll(s, polls, next_at)
        await _sleep_until(wake)
    await s.close()


async def _presenter(c: Class, page: str, code: str, secret: str, seen: list) -> None:
    """The lecturer's count, as its fragment shows it, rerun as the browser does: a
    setInterval of run_every s started when the count was drawn (Streamlit's frontend,
    handleAutoRerun), ticks passed while a run was in flight skipped."""
    p = LiveSession(c.base, page, f"room={code}&key={secret}")
    await p.open()
    r = await p.run(timeout_s=600)
    frag = next((f for f, t in r.texts if f and COUNT_RE.search(t) and "👥" in t), None)
    every = r.polls.get(frag, 1.5) if frag else 1.5
    due = _next_tick(r.ended_at, every, time.perf_counter())
    while frag and not c.done:
        await _sleep_until(due, cap_s=every)
        if time.perf_counter() < due:
            continue
        r = await p.run(fragment_id=frag, auto=True, timeout_s=120)
        for _, text in r.texts:
            if "👥" in text and (m := COUNT_RE.search(text)):
                seen.append((r.ended_at, int(re.sub(r"\D", "", m.group(1)))))
        due = _next_tick(due, every, r.ended_at)
    await p.close()


def _lost(store: ClassStore, code: str, qid: str, acked: dict[str, str]) -> int:
    """Acknowledged answers the store does not hold as acknowledged: no answer under that
    student's id, or not the option chosen (the radio shows labels, the store keeps option
    codes: each label must map to one code and no two labels to the same code)."""
    held = {sid: store.own_answer(code, sid, qid) for sid in acked}
    lost = sum(o is None for o in held.values())
    codes: dict[str, set] = {}
    for sid, label in acked.items():
        codes.setdefault(label, set()).add(held[sid])
    mixed = [label for label, cs in codes.items() if len(cs - {None}) > 1]
    shared = len({c for cs in codes.values() for c in cs - {None}}) < \
        sum(bool(cs - {None}) for cs in codes.values())
    return lost + sum(len([s for s in acked if acked[s] == label]) for label in mixed) + int(shared)


def _lags(acks: list[float], seen: list[tuple[float, int]]) -> list[float]:
    """For the k-th acknowledged answer: how long until the lecturer's count reached k."""
    out = []
    for k, t in enumerate(sorted(acks), start=1):
        later = [tp for tp, n in seen if tp >= t and n >= k]
        if later:
            out.append(min(later) - t)
    return out


async def _scenario(c: Class, page: str, code: str, secret: str, students: int, window_s: float,
                    seed: int, restart=None) -> dict:
    rng = random.Random(seed)
    sem = asyncio.Semaphore(JOIN_AT_ONCE)
    t0 = time.perf_counter()
    joined = await asyncio.gather(*(_join(c, page, code, sem, _sid(i, code)) for i in range(students)))
    join_s = time.perf_counter() - t0
    seen: list[tuple[float, int]] = []
    pres = asyncio.create_task(_presenter(c, page, code, secret, seen)) if restart is None else None
    await asyncio.sleep(2.0)
    start = time.perf_counter()
    tasks = [asyncio.create_task(_student(c, i, page, code, start, rng.uniform(0, window_s), sem,
                                          joined[i])) for i in range(students)]
    if restart is not None:
        await asyncio.sleep(window_s / 2)
        c.up.clear()
        c.base = await asyncio.to_thread(restart)
        c.gen += 1
        c.up.set()
    cpu0 = _cpu(c), LiveSession.runs
    deadline = time.perf_counter() + window_s + 600
    while len(c.attempted | {i for i, t in enumerate(tasks) if t.done()}) < students \
            and time.perf_counter() < deadline:
        await asyncio.sleep(0.2)
    while time.perf_counter() - (max(c.acks) if c.acks else start) < 4.0 and restart is None:
        await asyncio.sleep(0.2)                      # let the lecturer's count catch up
    cpu1, class_s = _cpu(c), time.perf_counter() - start
    c.done = True
    for x in await asyncio.gather(*tasks, *([pres] if pres else []), return_exceptions=True):
        if isinstance(x, BaseException):
            c.errors.append(f"{type(x).__name__}: {x}"[:300])
    lags = _lags(c.acks, seen)
    runs = LiveSession.runs - cpu0[1]
    return {"join_s": join_s, "lags": lags, "class_s": class_s, "runs": runs,
            "server_cpu_s": cpu1[0] - cpu0[0][0], "client_cpu_s": cpu1[1] - cpu0[0][1]}


def _cpu(c: Class) -> tuple[float, float]:
    """(CPU seconds of the server and its children so far, of this client process so far)."""
    server = 0.0
    if c.server_pid is not None:
        try:
            p = psutil.Process(c.server_pid)
            for q in [p] + p.children(recursive=True):
                t = q.cpu_times()
                server += t.user + t.system
        except psutil.Error:
            pass
    return server, time.process_time()


def run(port: int = 8610, students: int = 200, window_s: float = 10.0, seed: int = 0,
        restart: bool = True) -> dict:
    """Both scenarios on fresh servers; the figures as one flat dict (see the docstring)."""
    tmp = Path(tempfile.mkdtemp(prefix="llm-lab-live-"))
    url = f"sqlite:///{tmp}/classroom.db"
    env = {"LLM_LAB_CLASS_DB": url}
    log = open(tmp / "server.log", "w")
    proc, base = start_server(port, env=env, log=log)
    rss = PeakRss(proc.pid)
    store = ClassStore(url)
    qid = f"{PAGE}.{QUESTION}"
    out: dict = {"live_students": students, "live_window_s": window_s, "live_page": qid}
    try:
        k = store.create_room("en")
        store.set_page(k.code, k.secret, PAGE, {})
        c = Class(base, proc.pid)
        r = asyncio.run(_scenario(c, PAGE, k.code, k.secret, students, window_s, seed))
        out.update(live_join_s=round(r["join_s"], 1), live_sent=c.sent, live_acked=len(c.acks),
                   live_lost_acked=_lost(store, k.code, qid, c.acked),
                   live_counted=store.count(k.code, qid), live_failed_joins=c.failed_joins,
                   live_errors=sorted(set(c.errors))[:5],
                   live_answer_p50_s=statistics.median(c.trips) if c.trips else None,
                   live_answer_p95_s=p95(c.trips) if c.trips else None,
                   live_poll_p50_s=statistics.median(c.poll_trips) if c.poll_trips else None,
                   live_poll_p95_s=p95(c.poll_trips) if c.poll_trips else None,
                   live_presenter_lag_p95_s=p95(r["lags"]) if r["lags"] else None,
                   live_presenter_lag_max_s=max(r["lags"]) if r["lags"] else None,
                   live_presenter_lags_measured=len(r["lags"]),
                   live_class_s=round(r["class_s"], 1), live_runs=r["runs"],
                   live_server_cpu_s=round(r["server_cpu_s"], 1),
                   live_client_cpu_s=round(r["client_cpu_s"], 1),
                   live_server_cpu_ms_per_run=round(1e3 * r["server_cpu_s"] / max(1, r["runs"]), 2),
                   live_client_cpu_ms_per_run=round(1e3 * r["client_cpu_s"] / max(1, r["runs"]), 2))
        out["live_peak_rss_mb"] = round(rss.stop())
        if restart:
            k2 = store.create_room("en")
            store.set_page(k2.code, k2.secret, PAGE, {})
            state = {"proc": proc}
            peaks = [PeakRss(proc.pid)]

            def kill_and_restart() -> str:
                peaks[-1].stop()
                state["proc"].send_signal(signal.SIGKILL)
                state["proc"].wait(30)
                t = time.perf_counter()
                state["proc"], b = start_server(port, env=env, log=log)
                peaks.append(PeakRss(state["proc"].pid))
                out["restart_down_s"] = round(time.perf_counter() - t, 1)
                return b

            c2 = Class(base)
            asyncio.run(_scenario(c2, PAGE, k2.code, k2.secret, students, window_s, seed + 1,
                                  restart=kill_and_restart))
            proc = state["proc"]
            counted = store.count(k2.code, qid)
            out.update(restart_sent=c2.sent, restart_acked=len(c2.acks), restart_counted=counted,
                       restart_in_flight_at_kill=c2.in_flight,
                       restart_lost_acked=_lost(store, k2.code, qid, c2.acked),
                       restart_failed_joins=c2.failed_joins,
                       restart_errors=sorted(set(c2.errors))[:5],
                       restart_answer_p95_s=p95(c2.trips) if c2.trips else None,
                       restart_peak_rss_mb=round(max(p.stop() for p in peaks)))
    finally:
        store.close()
        stop_server(proc)
        log.close()
    return out
