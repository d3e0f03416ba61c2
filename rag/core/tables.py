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
    of: tuple[int, ...] = ()  # for shares: each row's papers out of how many ("the acceptance rate per area")

    def share(self, row: int) -> float:
        """Row `row`'s papers as a percentage of its `of`."""
        return 100 * self.rows[row][1] / self.of[row] if self.of[row] else 0.0

    def to_dict(self) -> dict[str, Any]:
        """The table as the APIs return it: its columns, its rows as [group, papers] pairs (with, for shares, the
        papers they are out of and the percentage: [group, papers, of, share]), and what it counted."""
        shares = (
            [[self.of[i], round(self.share(i), 1)] for i in range(len(self.rows))] if self.of else [[]] * len(self.rows)
        )
        return {
            "columns": [self.group, "papers", *(["of", "share"] if self.of else [])],
            "field": self.field,
            "rows": [[name, count, *extra] for (name, count), extra in zip(self.rows, shares, strict=True)],
            "counted": self.counted,
            "groups": self.groups,
            "what": self.what,
        }

    def plain(self) -> str:
        """The rows as aligned plain-text columns, for a terminal or a screen reader (each name as `terminal_text`
        shows it, so a control sequence in a stored name moves no column)."""
        rows = [(terminal_text(name), count) for name, count in self.rows]
        width = max([len(self.group), *(len(name) for name, _ in rows)])
        lines = [f"{self.group.ljust(width)}  papers" + ("      of   share" if self.of else "")]
        lines += [
            f"{name.ljust(width)}  {count:>6,}" + (f"  {self.of[i]:>6,}  {self.share(i):5.1f}%" if self.of else "")
            for i, (name, count) in enumerate(rows)
        ]
        if len(self.rows) < self.groups:
            lines.append(f"({len(self.rows)} of {self.groups:,} shown)")
        return "\n".join(lines)
