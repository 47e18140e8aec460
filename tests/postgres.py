"""A throwaway PostgreSQL cluster for the tests, from the machine's own server binaries.

`bindir()` finds initdb and pg_ctl: on PATH (here /usr/local/bin), else `pg_config --bindir`,
else the newest /usr/lib/postgresql/<v>/bin (Debian's place). `cluster()` makes a cluster in a
fresh temporary folder (trust authentication, fsync off: it is thrown away), starts it on a free
TCP port on 127.0.0.1 (its socket in that folder too), yields its URL and stops and deletes it.

initdb refuses to run as root, so as root every server command runs as the unprivileged user
`nobody` (runuser -u nobody --, or su -s /bin/sh nobody -c as a fallback) and the folder, under
/tmp, is handed to that user. Missing binaries raise PostgresMissing, whose message says what
to install (`make test` installs Debian's postgresql).
"""
from __future__ import annotations

import glob
import os
import pwd
import shlex
import shutil
import socket
import subprocess
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

INSTALL_HINT = ("PostgreSQL's server binaries (initdb, pg_ctl) are missing: the live-class "
                "tests run on PostgreSQL too. Install them (Debian: sudo apt-get install -y "
                "postgresql; `make test` does it when it can), or deselect: -m 'not postgres'.")


class PostgresMissing(RuntimeError):
    pass


def bindir() -> Path | None:
    """The folder holding initdb and pg_ctl, or None."""
    initdb, pg_ctl = shutil.which("initdb"), shutil.which("pg_ctl")
    if initdb and pg_ctl and Path(initdb).parent == Path(pg_ctl).parent:
        return Path(initdb).parent
    candidates = []
    if shutil.which("pg_config"):
        out = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True)
        candidates.append(out.stdout.strip())
    candidates += sorted(glob.glob("/usr/lib/postgresql/*/bin"),
                         key=lambda p: int(p.split("/")[-2]) if p.split("/")[-2].isdigit() else 0,
                         reverse=True)
    for c in candidates:
        if c and (Path(c) / "initdb").is_file() and (Path(c) / "pg_ctl").is_file():
            return Path(c)
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _as_server_user(argv: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return argv
    if shutil.which("runuser"):
        return ["runuser", "-u", "nobody", "--", *argv]
    return ["su", "-s", "/bin/sh", "nobody", "-c", shlex.join(argv)]


def _run(argv: list[str], timeout: float = 120) -> None:
    out = subprocess.run(_as_server_user(argv), capture_output=True, text=True, timeout=timeout)
    if out.returncode != 0:
        raise RuntimeError(f"{argv[0]} failed ({out.returncode}): {out.stdout}\n{out.stderr}")


@contextmanager
def cluster() -> Iterator[str]:
    """A running throwaway cluster; yields postgresql://postgres@127.0.0.1:<port>/postgres."""
    bins = bindir()
    if bins is None:
        raise PostgresMissing(INSTALL_HINT)
    root = Path(tempfile.mkdtemp(prefix="llm-lab-pg-", dir="/tmp" if os.geteuid() == 0 else None))
    if os.geteuid() == 0:
        nobody = pwd.getpwnam("nobody")
        os.chown(root, nobody.pw_uid, nobody.pw_gid)
    os.chmod(root, 0o700)
    data, port = root / "data", free_port()
    started = False
    try:
        _run([str(bins / "initdb"), "-D", str(data), "-U", "postgres", "-A", "trust", "-E", "UTF8",
              "--no-locale", "--no-sync"])
        opts = (f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off "
                f"-c synchronous_commit=off -c full_page_writes=off -c max_connections=200")
        _run([str(bins / "pg_ctl"), "-D", str(data), "-l", str(root / "server.log"), "-o", opts,
              "-w", "-t", "60", "start"])
        started = True
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
    finally:
        if started:
            try:
                _run([str(bins / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"])
            except Exception:                                  # noqa: BLE001 (best effort)
                pass
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    with cluster() as url:
        import psycopg

        with psycopg.connect(url) as conn:
            print(url, conn.execute("select version()").fetchone()[0])
