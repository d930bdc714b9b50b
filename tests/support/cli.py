"""The crawlcycle command as a user runs it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

EXE = str(Path(sys.executable).with_name("crawlcycle"))


def run_cli(*args: str, config: Path, stdin: str | None = None) -> subprocess.CompletedProcess:
    """``crawlcycle args --config config`` with no environment but PATH."""
    return subprocess.run([EXE, *args, "--config", str(config)], input=stdin, capture_output=True, text=True,
                          timeout=120, env={"PATH": "/usr/bin:/bin"})
