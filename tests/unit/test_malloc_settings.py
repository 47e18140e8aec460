"""The server pins glibc's mmap threshold (lib.ui.startup._tame_malloc): a large block freed by
one session goes back to the OS instead of staying in a heap for ever. Each case runs in a
fresh Python, because malloc's settings are process-wide and only the first ones count."""
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import sys
import numpy as np
if sys.argv[1] == "tamed":
    from lib.ui import startup
    startup._tame_malloc()

def anon_mb():
    for line in open("/proc/self/status"):
        if line.startswith("RssAnon"):
            return int(line.split()[1]) / 1024

start = anon_mb()
for _ in range(5):
    a = np.ones(8 << 20, dtype=np.uint8)     # 8 MB, every page touched (a batch of logits, say)
    del a
print(anon_mb() - start)
"""


def _left_behind_mb(mode: str) -> float:
    out = subprocess.run([sys.executable, "-c", PROBE, mode], cwd=ROOT, capture_output=True, text=True,
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, timeout=120)
    assert out.returncode == 0, out.stderr[-800:]
    return float(out.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(not Path("/proc/self/status").exists() or sys.platform != "linux", reason="glibc on Linux")
@pytest.mark.slow  # starts two Python processes (glibc's default, tamed) that import torch and free 8 MB blocks
def test_freed_large_blocks_go_back_to_the_os():
    default, tamed = _left_behind_mb("default"), _left_behind_mb("tamed")
    assert tamed < 2, f"{tamed:.1f} MB still resident after freeing every 8 MB block"
    # and the setting is what makes the difference: glibc's own adaptive threshold keeps one
    assert default > 6, f"glibc's default kept only {default:.1f} MB: this test would not see a regression"
