"""What the machine was doing while a benchmark ran, one helper for every benchmark.

The benchmarks run as scripts (`python benchmarks/load.py`), so this sits beside them and they
import it by name.
"""

from __future__ import annotations

import os


def load_average() -> list[float]:
    """The 1, 5 and 15 minute load averages, rounded to hundredths."""
    return [round(value, 2) for value in os.getloadavg()]


def load_line() -> str:
    """The load averages and the core count as one line of a report: '0.52 0.61 0.70 (2 cores)'."""
    return " ".join(f"{value:.2f}" for value in load_average()) + f" ({os.cpu_count()} cores)"
