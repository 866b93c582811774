"""What every benchmark prints about the machine it ran on."""

from __future__ import annotations

from pathlib import Path


def cpu_model() -> str:
    """The CPU model from ``/proc/cpuinfo`` ("unknown CPU" where there is none)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"
