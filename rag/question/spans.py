"""Whether the learned reader's topic span may stand for the topic the rules read (understand.py `_learned_kind`)."""

from __future__ import annotations

import re

from rag.core.text import EVIDENCE_STOPWORDS, SEARCH_STOPWORDS

LONG_TOPIC = 6  # words: a longer topic is a description ("generate DAGs by combining …"), not a name
# Where a rules' topic runs on past its own words into the rest of the question: punctuation, a dash between
# spaces, "and which/what/how …".
CLAUSE_BREAK = re.compile(r"[,;:?!]|\s[-–—]\s|\band\s+(?:which|what|how|who|where|when)\b", re.IGNORECASE)


def trims(topic: str, span: str) -> bool:
    """Whether a learned topic `span` only trims words off the `topic` the rules read, all of the span's among them:
    off a description (more than `LONG_TOPIC` words: the tagger drops words, "design 2D architectural floor plans"
    lost "plans"), or a search word of a topic of one clause (a qualifier: "defenses against backdoor attacks" is
    not "attacks", issue 63); then the rules' topic stands. A rules' topic the span is not inside is leftovers ("how
    many X papers are there": "there"), and a span that trims only words no search reads ("methods") is the
    topic, as is one of a topic that runs on into another clause ("LLM agents, and which ones were they")."""
    described = set(re.findall(r"[\w-]+", topic.lower())) - EVIDENCE_STOPWORDS
    spanned = set(re.findall(r"[\w-]+", span.lower())) - EVIDENCE_STOPWORDS
    dropped = described - spanned - SEARCH_STOPWORDS
    one_clause = not CLAUSE_BREAK.search(topic)
    return spanned <= described and (len(described) > LONG_TOPIC or bool(dropped) and one_clause)
