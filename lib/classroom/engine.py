"""Where the live class's database is and how it is opened.

`resolve_url(url)`: an explicit URL, else `$LLM_LAB_CLASS_DB`, else the embedded SQLite file
`<cache folder>/classroom.db` (cache folder: `$LLM_LAB_CACHE`, default
~/.cache/llm-inference-lab, the same rule as lib.model.bundled_model.cache_root, repeated here
so this layer does not import torch). `postgresql://` and `postgres://` URLs get the psycopg 3
driver.

`open_engines(url)` -> (reader, writer). On PostgreSQL both are one engine. On SQLite the file
is put in WAL mode with synchronous=FULL (a commit is on disk before it returns, so an
acknowledged answer survives a killed server and a power cut); the writer begins every
transaction with BEGIN IMMEDIATE (it takes the write lock before its first read, so a check and
the write after it cannot interleave with another writer), the reader with a plain BEGIN (WAL
readers never wait for the writer).
"""
from __future__ import annotations

import os
from pathlib import Path

from sqlalchemy import Engine, create_engine, event

CLASS_DB_ENV = "LLM_LAB_CLASS_DB"
CACHE_ENV = "LLM_LAB_CACHE"
SQLITE_FILE = "classroom.db"
BUSY_TIMEOUT_S = 30.0


def default_sqlite_path() -> Path:
    """<cache folder>/classroom.db."""
    root = Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "llm-inference-lab")
    return root / SQLITE_FILE


def resolve_url(url: str | None = None) -> str:
    """The SQLAlchemy URL to open (see the module docstring for the order)."""
    url = url or os.environ.get(CLASS_DB_ENV) or ""
    if not url:
        path = default_sqlite_path()
        path.parent.mkdir(parents=True, exist_ok=True)
        return f"sqlite:///{path}"
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix):]
    return url


def _sqlite_engine(url: str, begin: str) -> Engine:
    engine = create_engine(url, pool_size=8, max_overflow=24, pool_timeout=60,
                           connect_args={"check_same_thread": False, "timeout": BUSY_TIMEOUT_S})

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn, _record) -> None:          # noqa: ANN001 (DB-API objects)
        dbapi_conn.isolation_level = None                   # we emit BEGIN ourselves
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute("PRAGMA synchronous=FULL")
        cur.execute("PRAGMA foreign_keys=ON")
        cur.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT_S * 1000)}")
        cur.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn) -> None:                            # noqa: ANN001
        conn.exec_driver_sql(begin)

    return engine


def open_engines(url: str) -> tuple[Engine, Engine]:
    """(reader, writer) engines for `url` (already resolved)."""
    if url.startswith("sqlite"):
        if url in ("sqlite://", "sqlite:///:memory:"):
            raise ValueError("an in-memory SQLite database is not shared between connections; "
                             "use a file")
        return _sqlite_engine(url, "BEGIN"), _sqlite_engine(url, "BEGIN IMMEDIATE")
    engine = create_engine(url, pool_size=10, max_overflow=30, pool_timeout=60,
                           pool_pre_ping=True)
    return engine, engine
