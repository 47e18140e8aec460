"""Results that survive a restart: the cache folder's `results/` (next to the prepared model,
lib.model.bundled_model.cache_root()), plus the two measures the memo needs.

- `code_version(fn)`: a hash of the source of every lib module `fn` can reach through imports
  (read statically, imports inside functions included; lib.ui and lib.serving excluded: they
  draw and serve, they do not compute). Editing any of them changes the version, so an old result is never served for new
  code.
- `nbytes(obj)`: the memory a result holds, estimated recursively (tensors, arrays,
  dataclasses, containers, strings), each object counted once.
- `ResultStore`: one pickle per result under results/<fn>/<code version>/<key hash>.pkl with
  when, where and how long it was computed. Files are written atomically (temp file + rename),
  so a reader never sees half a file; the folder is trusted like the prepared model next to it.
"""
from __future__ import annotations

import ast
import dataclasses
import hashlib
import os
import pickle
import socket
import sys
import tempfile
import time
from functools import lru_cache
from pathlib import Path

import numpy as np
import torch

LIB = Path(__file__).resolve().parents[1]          # .../lib
MAX_FILE_BYTES = 64 * 2**20                        # larger results stay in memory only
NOT_COMPUTING = ("ui", "serving")                  # lib layers left out of code versions


# ---- code version ------------------------------------------------------------------------------
def _module_file(name: str) -> Path | None:
    parts = name.split(".")
    if parts[0] != "lib" or (len(parts) > 1 and parts[1] in NOT_COMPUTING):
        return None
    base = LIB.joinpath(*parts[1:])
    for p in (base.with_suffix(".py"), base / "__init__.py"):
        if p.is_file():
            return p
    return None


def parse(path: Path) -> ast.AST:
    """ast.parse of a file, retried: CPython 3.11.7 can fail with "SystemError: AST constructor
    recursion depth mismatch" when two threads build ASTs at once."""
    source = path.read_text(encoding="utf-8")
    for attempt in range(5):
        try:
            return ast.parse(source, str(path))
        except SystemError:
            if attempt == 4:
                raise
            time.sleep(0.05 * (attempt + 1))
    raise AssertionError("unreachable")


def precompute_versions() -> int:
    """Code versions of every lib module now (at start, under the start lock), so no session
    thread parses sources later. Returns how many."""
    n = 0
    for p in LIB.rglob("*.py"):
        rel = p.relative_to(LIB).with_suffix("")
        parts = ["lib", *rel.parts]
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if len(parts) > 1 and parts[1] in NOT_COMPUTING:
            continue
        code_version(".".join(parts))
        n += 1
    return n


@lru_cache(maxsize=None)
def _imports(path: Path, module: str) -> frozenset[str]:
    """Names of lib modules imported anywhere in `path` (`from lib.x import y` may name a module
    lib.x.y or a function of lib.x: both are tried)."""
    out: set[str] = set()
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    for node in ast.walk(parse(path)):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            out.add(base)
            out.update(f"{base}.{a.name}" for a in node.names)
    return frozenset(m for m in out if m.startswith("lib."))


@lru_cache(maxsize=None)
def module_closure(module: str) -> tuple[Path, ...]:
    """Every lib source file `module` reaches through imports (itself included), sorted."""
    seen: dict[str, Path] = {}
    todo = [module]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        path = _module_file(name)
        if path is None:
            continue
        seen[name] = path
        # a submodule import also runs its packages' __init__
        parts = name.split(".")
        todo.extend(".".join(parts[:i]) for i in range(2, len(parts)))
        todo.extend(_imports(path, name))
    return tuple(sorted(set(seen.values())))


@lru_cache(maxsize=None)
def code_version(module: str) -> str:
    h = hashlib.sha256()
    for p in module_closure(module):
        h.update(str(p.relative_to(LIB)).encode())
        h.update(_file_digest(p))
    return h.hexdigest()[:16]


@lru_cache(maxsize=None)
def _file_digest(path: Path) -> bytes:
    return hashlib.sha256(path.read_bytes()).digest()


def fn_module(fn) -> str:
    return getattr(fn, "__module__", None) or "?"


def _outside_lib_file(fn) -> Path | None:
    """The source file of a function defined outside lib (a page script runs as __main__)."""
    if fn_module(fn).startswith("lib."):
        return None
    code = getattr(fn, "__code__", None)
    return Path(code.co_filename) if code is not None and Path(code.co_filename).is_file() else None


def fn_name(fn) -> str:
    qual = getattr(fn, "__qualname__", getattr(fn, "__name__", repr(fn)))
    outside = _outside_lib_file(fn)
    return f"{outside.stem}.{qual}" if outside is not None else f"{fn_module(fn)}.{qual}"


def fn_version(fn) -> str:
    """code_version of the function's module; for a function defined in a page, a hash of that
    page's source and of every lib module it imports."""
    outside = _outside_lib_file(fn)
    if outside is None:
        return code_version(fn_module(fn))
    h = hashlib.sha256(outside.read_bytes())
    for m in sorted(_imports(outside, "__main__")):
        h.update(code_version(m).encode())
    return h.hexdigest()[:16]


# ---- sizes -------------------------------------------------------------------------------------
def nbytes(obj, _seen: set | None = None, _depth: int = 0) -> int:
    """Estimated bytes held by `obj` (shared objects counted once)."""
    seen = set() if _seen is None else _seen
    if id(obj) in seen or _depth > 50:
        return 0
    seen.add(id(obj))
    if isinstance(obj, torch.Tensor):       # a view holds its whole storage
        return max(obj.numel() * obj.element_size(), obj.untyped_storage().nbytes()) + 80
    if isinstance(obj, np.ndarray):
        return obj.nbytes + 112
    if isinstance(obj, (str, bytes, bytearray, int, float, bool, complex, type(None))):
        return sys.getsizeof(obj)
    size = sys.getsizeof(obj, 64)
    if isinstance(obj, dict):
        return size + sum(nbytes(k, seen, _depth + 1) + nbytes(v, seen, _depth + 1) for k, v in obj.items())
    if isinstance(obj, (list, tuple, set, frozenset)):
        return size + sum(nbytes(v, seen, _depth + 1) for v in obj)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return size + sum(nbytes(getattr(obj, f.name, None), seen, _depth + 1) for f in dataclasses.fields(obj))
    if hasattr(obj, "__dict__"):
        return size + nbytes(vars(obj), seen, _depth + 1)
    return size


# ---- provenance and the folder -----------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Provenance:
    computed_at: float          # UNIX time when the computation finished
    host: str                   # machine that computed it
    pid: int                    # server process that computed it
    seconds: float              # how long the computation took
    load_avg: float             # 1-minute load average when it finished
    cpus: int

    @staticmethod
    def now(seconds: float) -> "Provenance":
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
        return Provenance(time.time(), socket.gethostname(), os.getpid(), seconds, load, os.cpu_count() or 1)

    @property
    def this_process(self) -> bool:
        return self.pid == os.getpid() and self.host == socket.gethostname()


def results_root() -> Path:
    from lib.model.bundled_model import cache_root

    return Path(os.environ.get("LLM_LAB_RESULTS") or cache_root() / "results")


def key_digest(key) -> str:
    return hashlib.sha256(repr(key).encode()).hexdigest()[:32]


class ResultStore:
    """Pickled results on disk, one file per (function, code version, key)."""

    def __init__(self, root: Path | None = None):
        self.root = Path(root) if root is not None else results_root()
        self.enabled = os.environ.get("LLM_LAB_PERSIST", "1") != "0"

    def path(self, fn, key) -> Path:
        return self.root / fn_name(fn) / fn_version(fn) / f"{key_digest(key)}.pkl"

    def load(self, fn, key):
        """(value, Provenance) or None. A stored key that differs (a hash collision) or an
        unreadable file is a miss."""
        if not self.enabled:
            return None
        p = self.path(fn, key)
        try:
            with p.open("rb") as f:
                stored_key, value, prov = pickle.load(f)
        except FileNotFoundError:
            return None
        except Exception:  # noqa: BLE001 - a damaged file is recomputed and rewritten
            return None
        return (value, prov) if stored_key == repr(key) else None

    def save(self, fn, key, value, prov: Provenance, size: int) -> bool:
        if not self.enabled or size > MAX_FILE_BYTES:
            return False
        p = self.path(fn, key)
        try:
            p.parent.mkdir(parents=True, exist_ok=True)
            data = pickle.dumps((repr(key), value, prov), protocol=pickle.HIGHEST_PROTOCOL)
            with tempfile.NamedTemporaryFile(dir=p.parent, delete=False, suffix=".tmp") as f:
                f.write(data)
                tmp = f.name
            os.replace(tmp, p)
            return True
        except Exception:  # noqa: BLE001 - an unpicklable result or a full disk: memory only
            return False
