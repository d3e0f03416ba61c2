"""What a question may be restricted to, declared once.

Each field of `Filters` says, in its declaration, which stored metadata key it reads, how it
matches and how people set it. Everything else is derived from that: the Chroma `where` clause,
the BM25 mask (`matches` on the stored columns), the JSON schema the APIs take (`FilterSpec`), the
CLI options and the UI's pickers. A new filter is one more field here, and the loader that stores
its metadata key (`rag.ingest.papers.Paper.metadata`).
"""

from __future__ import annotations

import dataclasses
import re
import unicodedata
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from rag.core.errors import InputError, first_problem
from rag.core.text import not_text

Match = Literal["one_of", "person", "equals"]
# Values one list filter may hold: far more than there are statuses (7) or primary areas (about 20),
# and far fewer than the variables SQLite takes in one query (Chroma's `$in` is one variable a value).
MAX_FILTER_VALUES = 100


@dataclass(frozen=True)
class FilterField:
    """How one filter reads the stored metadata and how people set it."""

    name: str  # the attribute of Filters, and the key in JSON (APIs, MCP, LangChain)
    stored: str  # the metadata key of stored papers it matches
    match: Match  # one_of: the value is one of a list; person: one of the names (`same_person`); equals: the value
    help: str  # what it does, for the CLI, the APIs' schema and the UI
    option: str  # the CLI option
    label: str = ""  # the UI picker's label; one_of fields with a label get a picker of the stored values


def declared(*, stored: str, match: Match, help: str, option: str, label: str = "") -> dict[str, Any]:
    return {"filter": {"stored": stored, "match": match, "help": help, "option": option, "label": label}}


@dataclass(frozen=True)
class Filters:
    """Only papers matching every field given; empty fields restrict nothing."""

    status: tuple[str, ...] = dataclasses.field(
        default=(),
        metadata=declared(
            stored="status",
            match="one_of",
            help="only papers with one of these statuses, e.g. Oral",
            option="--status",
            label="Status",
        ),
    )
    primary_area: tuple[str, ...] = dataclasses.field(
        default=(),
        metadata=declared(
            stored="primary_area",
            match="one_of",
            help="only papers of one of these primary areas",
            option="--area",
            label="Primary area",
        ),
    )
    author: str = dataclasses.field(
        default="",
        metadata=declared(
            stored="authors",
            match="person",
            help="only papers by this person: a whole name, case, accents and initials aside (Y. Bengio)",
            option="--author",
        ),
    )
    has_code: bool | None = dataclasses.field(
        default=None,
        metadata=declared(
            stored="has_code",
            match="equals",
            help="true: only papers linking to GitHub; false: only those without",
            option="--has-code",
        ),
    )
    papers: tuple[str, ...] = dataclasses.field(
        default=(),
        metadata=declared(
            stored="paper_id",
            match="one_of",
            help="only these papers, by id (a conversation's follow-ups are held to the papers discussed)",
            option="--paper",
        ),
    )

    def __post_init__(self) -> None:
        # Checked here, where every interface's filters are made (CLI, /v1, MCP, the page, Python).
        for spec, value in self.active():
            if isinstance(value, tuple) and len(value) > MAX_FILTER_VALUES:
                raise InputError(
                    f"filter {spec.name}: {len(value):,} values; the limit is {MAX_FILTER_VALUES} values a filter"
                )
            texts = value if isinstance(value, tuple) else (value,) if isinstance(value, str) else ()
            if problem := next(filter(None, map(not_text, texts)), None):
                raise InputError(f"filter {spec.name}: a value {problem}")  # Chroma refuses it less clearly

    def active(self) -> Iterator[tuple[FilterField, Any]]:
        """The fields that restrict something, with their values."""
        for spec in FIELDS:
            value = getattr(self, spec.name)
            if value not in ((), "", None):
                yield spec, value

    @property
    def empty(self) -> bool:
        return next(self.active(), None) is None

    def labels(self) -> list[str]:
        """The fields that restrict something, in words, e.g. ['status: Oral or Spotlight', 'has_code: yes']."""
        shown = []
        for spec, value in self.active():
            if isinstance(value, tuple):
                value = " or ".join(part.replace("&amp;", "&") for part in value)
            elif isinstance(value, bool):
                value = "yes" if value else "no"
            shown.append(f"{spec.name}: {value}")
        return shown

    def to_json(self) -> dict[str, Any]:
        """The fields that restrict something, as the APIs take them (a `FilterSpec` dict)."""
        return {spec.name: list(value) if isinstance(value, tuple) else value for spec, value in self.active()}

    def where(self) -> dict[str, Any] | None:
        """The Chroma metadata filter for the fields Chroma can match itself (not a person's name)."""
        clauses: list[dict[str, Any]] = []
        for spec, value in self.active():
            if spec.match == "one_of":
                clauses.append({spec.stored: {"$in": list(value)}})
            elif spec.match == "equals":
                clauses.append({spec.stored: value})
        if not clauses:
            return None
        return clauses[0] if len(clauses) == 1 else {"$and": clauses}

    def matches(self, columns: Mapping[str, np.ndarray]) -> np.ndarray:
        """Which rows of stored metadata columns (see `column`) every field admits."""
        keep = np.ones(len(next(iter(columns.values()), ())), dtype=bool)
        for spec, value in self.active():
            stored = columns[spec.stored]
            if spec.match == "one_of":
                keep &= np.isin(stored, list(value))
            elif spec.match == "equals":
                keep &= stored == value
            else:
                said = name_words(value)
                keep &= np.fromiter((any(same_person(said, name) for name in names) for names in stored), bool)
        return keep

    @classmethod
    def of(cls, **values: Any) -> Filters:
        """Filters from values as JSON, argparse or a UI hold them (lists, None for nothing)."""
        converted: dict[str, Any] = {
            name: tuple(value or ()) if isinstance(value, list | tuple) else value for name, value in values.items()
        }
        return cls(**converted)

    @classmethod
    def from_pickers(cls, values: Sequence[list[str] | None]) -> Filters:
        """Filters from the UI's pickers' values, in the order of `PICKERS`."""
        return cls.of(**{spec.name: value or [] for spec, value in zip(PICKERS, values)})


FIELDS = tuple(FilterField(name=f.name, **f.metadata["filter"]) for f in dataclasses.fields(Filters))
PICKERS = tuple(spec for spec in FIELDS if spec.match == "one_of" and spec.label)


def column(spec: FilterField, values: list[Any]) -> np.ndarray:
    """Stored metadata values as the column `Filters.matches` reads for this field."""
    if spec.match == "equals":
        return np.asarray([bool(value) for value in values], dtype=bool)
    if spec.match == "person":  # "A; B" as stored -> each name's words
        column = np.empty(len(values), dtype=object)
        column[:] = [tuple(name_words(name) for name in str(value or "").split(";")) for value in values]
        return column
    return np.asarray([value or "" for value in values], dtype=object)


def name_words(name: str) -> tuple[str, ...]:
    """A person's name as the words it is matched by: case and accents aside, a hyphenated name one word, a full
    stop a space ("Ming-Hsuan Yang" -> minghsuan, yang; "Peter Richtárik" -> peter, richtarik; "R. Salakhutdinov"
    -> r, salakhutdinov)."""
    plain = unicodedata.normalize("NFKD", name.casefold().replace("-", "").replace("‐", ""))
    return tuple(re.findall(r"[^\W_]+", "".join(char for char in plain if not unicodedata.combining(char))))


def same_person(said: Sequence[str], name: Sequence[str]) -> bool:
    """Whether the words of a name said (`name_words`) name the person of a stored name's: the same last name; the
    same first name or its initial ("Y. Bengio"); each middle name said among theirs, and each of theirs said
    unless it is an initial ("Ruslan Salakhutdinov" is "Ruslan R. Salakhutdinov", "Xin Wang" is not "Xin Eric
    Wang"). One word is a last name. Never a name inside another ("Bo Li" is not "Aobo Li", "Bo Liu" nor "Tingbo
    Liang"), nor a hyphenated first name's part ("Min Zhang" is not "Min-Ling Zhang")."""
    if not said or not name or said[-1] != name[-1]:
        return False
    if len(said) == 1:
        return True
    if len(name) > 1 and "".join(said[:-1]) == "".join(name[:-1]):  # "Ming Hsuan Yang" for "Ming-Hsuan Yang"
        return True
    if len(name) == 1 or not _initial_or_same(said[0], name[0]):
        return False
    theirs, ours = name[1:-1], said[1:-1]
    return all(any(_initial_or_same(word, their) for their in theirs) for word in ours) and all(
        len(their) == 1 or any(_initial_or_same(word, their) for word in ours) for their in theirs
    )


def _initial_or_same(one: str, other: str) -> bool:
    return one == other or (len(one) == 1 or len(other) == 1) and one[0] == other[0]


def _json_field(spec: FilterField) -> tuple[Any, Any]:
    if spec.match == "one_of":
        return list[str], Field(default_factory=list, description=spec.help)
    if spec.match == "equals":  # strict: "yes" or 1 is refused, not read as true
        return bool | None, Field(None, strict=True, description=spec.help)
    return str, Field("", description=spec.help)


class _FilterSpecBase(BaseModel):
    # Unknown keys are refused, so a misspelt filter never silently matches all.
    model_config = ConfigDict(extra="forbid")

    def to_filters(self) -> Filters:
        return Filters.of(**{spec.name: getattr(self, spec.name) for spec in FIELDS})


if TYPE_CHECKING:  # the fields below are made from the declarations; a type checker sees the base

    class FilterSpec(_FilterSpecBase): ...

else:
    # `Filters` as the APIs take them in JSON (/v1, MCP tools, the LangChain retriever); its docstring
    # is what their schemas show.
    FilterSpec = create_model(
        "FilterSpec",
        __base__=_FilterSpecBase,
        __doc__="Only papers matching every field given.",
        **{spec.name: _json_field(spec) for spec in FIELDS},
    )


def as_filters(filters: Filters | BaseModel | dict[str, Any] | None) -> Filters:
    """Filters from any of the forms callers hold; a dict is checked as a `FilterSpec`."""
    if filters is None or isinstance(filters, Filters):
        return filters or Filters()
    spec = filters if isinstance(filters, FilterSpec) else FilterSpec.model_validate(filters)
    return spec.to_filters()


def given_filters(filters: object) -> Filters:
    """`as_filters` for what a caller of the Python API passes (`Filters`, a dict as the JSON APIs take it, or
    None); anything else, or a dict that doesn't fit, is an InputError in one sentence naming the field."""
    if filters is not None and not isinstance(filters, Filters | BaseModel | dict):
        raise InputError(f"filters: give a Filters or a dict of filter values, not {type(filters).__name__}")
    try:
        return as_filters(filters)
    except ValidationError as err:
        where, what = first_problem(err.errors())
        raise InputError(f"filters{'.' if where else ''}{where}: {what}") from None
