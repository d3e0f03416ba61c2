"""A count per group of papers: what a tally answer counted, in one typed table every front door shows.

The CLI prints it as plain columns (`plain`), `--json`, `/v1` (the `rag` field) and MCP carry it as JSON
(`to_dict`), the chat page as a table and a bar chart.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rag.core.text import terminal_text


@dataclass(frozen=True)
class Table:
    """Papers counted per group of one stored field, most first (fewest first when that was asked).

    `rows` may be the top of `groups` groups; a paper with several authors counts once for each."""

    group: str  # the field grouped by, in words ("primary area", "author", "status")
    field: str  # its stored metadata key ("primary_area", "authors", "status")
    rows: tuple[tuple[str, int], ...]
    counted: int  # the papers counted
    groups: int  # the groups in all
    what: str  # which papers were counted, in words

    def to_dict(self) -> dict[str, Any]:
        """The table as the APIs return it: its columns, its rows as [group, papers] pairs, and what it counted."""
        return {
            "columns": [self.group, "papers"],
            "field": self.field,
            "rows": [[name, count] for name, count in self.rows],
            "counted": self.counted,
            "groups": self.groups,
            "what": self.what,
        }

    def plain(self) -> str:
        """The rows as aligned plain-text columns, for a terminal or a screen reader (each name as `terminal_text`
        shows it, so a control sequence in a stored name moves no column)."""
        rows = [(terminal_text(name), count) for name, count in self.rows]
        width = max([len(self.group), *(len(name) for name, _ in rows)])
        lines = [f"{self.group.ljust(width)}  papers"]
        lines += [f"{name.ljust(width)}  {count:>6,}" for name, count in rows]
        if len(self.rows) < self.groups:
            lines.append(f"({len(self.rows)} of {self.groups:,} shown)")
        return "\n".join(lines)
