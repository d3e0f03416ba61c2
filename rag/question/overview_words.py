"""What a question about a field looks like: "what are the main approaches to X", "what are the trends
in X", "summarize the work on X", "how do papers evaluate X". Such a question wants an overview (the
topic's papers grouped into themes, rag/answering/overview.py), not one paper's answer nor a plain list.

`OVERVIEW` finds the lead-in, `overview_topic` cuts it from the ranking text, leaving the topic; and
`asks_about_evaluation` tells a question about how a field evaluates (its themes then group the papers'
evaluation sentences rather than their proposals). Rules, tested in tests/question/test_overview_words.py.
"""

from __future__ import annotations

import re

WAYS = (
    r"(?:approach(?:es)?|methods|techniques|directions|ideas|strategies|lines?\s+of\s+(?:work|research)|"
    r"families|themes|trends|paradigms|solutions|research\s+directions)"
)
ABOUT = r"(?:to|for|in|on|of|about|around|within|behind)"
THE = r"(?:the\s+)?"
OVERVIEW = re.compile(
    rf"^\W*(?:(?:what|which)\s+(?:are|were|'re)\s+{THE}(?:main\s+|key\s+|major\s+|common\s+|different\s+|dominant\s+|"
    rf"leading\s+|current\s+|recent\s+|emerging\s+|popular\s+)*{WAYS}\s+{ABOUT}\s+"
    rf"|what(?:'s|\s+is)\s+new\s+{ABOUT}\s+"
    rf"|what\s+(?:are\s+)?{THE}(?:recent\s+|latest\s+|main\s+)*(?:advances|progress|developments|trends)\s+{ABOUT}\s+"
    rf"|(?:please\s+)?(?:summari[sz]e|survey|overview|review)\s+{THE}(?:recent\s+)?(?:work|research|papers|"
    rf"literature|field|progress|state\s+of\s+the\s+art)\s+{ABOUT}\s+"
    rf"|(?:please\s+)?(?:give\s+(?:me\s+)?)?(?:an?\s+)?(?:overview|summary|survey|map|landscape)\s+{ABOUT}\s+{THE}"
    rf"(?:(?:work|research|papers|field|literature)\s+{ABOUT}\s+)?"
    rf"|what\s+{WAYS}\s+do\s+(?:[\w-]+\s+){{0,2}}(?:papers|works|submissions)\s+(?:propose|use|take|offer)\s+{ABOUT}\s+"
    r"|how\s+do\s+(?:the\s+)?(?:papers|works|researchers|people|authors|methods|submissions)\s+(?:\w+\s+)?"
    r"(?:evaluate|measure|benchmark|assess|approach|tackle|address|handle|solve|study|do)\s+)",
    re.IGNORECASE,
)
EVALUATION = re.compile(r"\b(?:evaluat\w*|measur\w*|benchmark\w*|assess\w*)\b", re.IGNORECASE)


def asks_for_overview(question: str) -> bool:
    """True when the question asks about a field rather than about one paper or for a list."""
    return bool(OVERVIEW.search(question))


def overview_topic(text: str) -> str:
    """The topic of an overview question: the text without its lead-in ("What are the main approaches
    to machine unlearning for LLMs?" -> "machine unlearning for LLMs")."""
    return OVERVIEW.sub("", text, count=1).strip(" ?.!") or text


def asks_about_evaluation(question: str) -> bool:
    """True for "how do papers evaluate / measure / benchmark X": themes then group how papers evaluate."""
    lead = OVERVIEW.search(question)
    return bool(lead and EVALUATION.search(lead.group()))
