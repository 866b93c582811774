"""What every benchmark prints about the machine it ran on."""

from __future__ import annotations

import subprocess
from pathlib import Path
from statistics import median


def cpu_model() -> str:
    """The CPU model from ``/proc/cpuinfo`` ("unknown CPU" where there is none)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def tool_version(command: list[str]) -> str:
    """The first line ``command`` prints (its version), or "not installed"."""
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return "not installed"
    return (done.stdout.strip().splitlines() or ["?"])[0]


def print_rates(rates: dict[str, list[float]], width: int = 20) -> None:
    """One line per case: the median of its runs, then every run (events/s)."""
    for label, values in rates.items():
        print(f"  {label:{width}}{median(values):10,.0f}   rounds: "
              + ", ".join(f"{v:,.0f}" for v in values))
