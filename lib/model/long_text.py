"""Long human-written text available offline on a fresh machine.

Debian (and Streamlit Community Cloud's Debian image) ships the GNU GPL version 3 at
/usr/share/common-licenses/GPL-3 (~35,000 characters, ~7,500 Gemma tokens). Where that file
does not exist we fall back to the licence text that every CPython installation ships
(LICENSE.txt in the standard library folder), and say which one was used."""
from __future__ import annotations

import sysconfig
from pathlib import Path

CANDIDATES = (
    ("GNU General Public License v3 (Debian: /usr/share/common-licenses/GPL-3)",
     Path("/usr/share/common-licenses/GPL-3")),
    ("Python licence (LICENSE.txt of this Python)", Path(sysconfig.get_paths()["stdlib"]) / "LICENSE.txt"),
)


def long_text_source() -> tuple[str, str]:
    """(description, text) of the first available long text."""
    for name, path in CANDIDATES:
        if path.exists():
            return name, path.read_text(encoding="utf-8", errors="replace")
    raise FileNotFoundError("no long text found on this machine: " + ", ".join(str(p) for _, p in CANDIDATES))


def long_text() -> str:
    return long_text_source()[1]
