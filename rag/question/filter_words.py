"""The words that state a filter: a decision ("accepted", "orals", "desk-rejected"), a primary area in the short
forms researchers type ("RL", "the probabilistic methods area"), an author ("by Yoshua Bengio", "Kun Zhang's
papers") and code ("with code"). Exact by design: a filter is a stored value, read as such, and only where it
qualifies the papers asked about (understand.py).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from rag.core.text import EVIDENCE_STOPWORDS

PAPERS = r"(?:papers?|works?|submissions?|articles?|ones)"
ACCEPTED = ("Oral", "Spotlight", "Poster")
STATUS_WORDS = {  # word -> stored statuses; longest first, so "desk-rejected" wins over "rejected"
    r"desk[- ]rejected": ("Desk Rejected",),
    r"accepted": ACCEPTED,
    r"rejected": ("Reject",),
    r"withdrawn": ("Withdrawn",),
    r"orals?": ("Oral",),
    r"spotlights?": ("Spotlight",),
    r"posters?": ("Poster",),
}
# Short forms researchers type for the primary areas (stored strings, "&amp;" included).
AREA_WORDS = {
    r"RL|reinforcement[- ]learning": "reinforcement learning",
    r"safety|alignment|fairness|privacy": "alignment, fairness, safety, privacy, and societal considerations",
    r"generative(?:[- ]model(?:s|ing)?)?": "generative models",
    r"graphs?(?:[- ]learning)?|geometric(?:[- ]learning)?|geometry": (
        "learning on graphs and other geometries &amp; topologies"
    ),
    r"time[- ]series": "learning on time series and dynamical systems",
    r"(?:learning[- ])?theory|theoretical": "learning theory",
    r"optimi[sz]ation": "optimization",
    r"interpretability|explainab(?:le|ility)(?:[- ]AI)?|XAI": "interpretability and explainable AI",
    r"causal(?:ity|[- ]reasoning)?": "causal reasoning",
    r"robotics?": "applications to robotics, autonomy, planning",
    r"neuroscience|cognitive[- ]science": "applications to neuroscience &amp; cognitive science",
    r"(?:physical[- ])?sciences?|physics|chemistry|biology|AI4Science": (
        "applications to physical sciences (physics, chemistry, biology, etc.)"
    ),
    r"datasets?(?:[- ]and[- ]benchmarks?)?|benchmarks?": "datasets and benchmarks",
    r"representation[- ]learning|self[- ]supervised": (
        "unsupervised, self-supervised, semi-supervised, and supervised representation learning"
    ),
    r"transfer[- ]learning|meta[- ]learning|continual[- ]learning|lifelong[- ]learning": (
        "transfer learning, meta learning, and lifelong learning"
    ),
    r"probabilistic|bayesian": "probabilistic methods (Bayesian methods, variational inference, sampling, UQ, etc.)",
    r"neurosymbolic": "neurosymbolic &amp; hybrid AI systems (physics-informed, logic &amp; formal reasoning, etc.)",
    r"(?:ML[- ])?systems|infrastructure": "infrastructure, software libraries, hardware, systems, etc.",
    r"LLM|foundation[- ]models?|frontier[- ]models?": "foundation or frontier models, including LLMs",
    r"vision|computer[- ]vision|audio|NLP": "applications to computer vision, audio, language, and other modalities",
}
STATUS = "|".join(STATUS_WORDS)
AREA = "|".join(f"(?:{words})" for words in AREA_WORDS)
# Status and area words qualify the papers when they stand before the noun ("accepted RL papers"),
# or when "papers" is followed by "that were accepted" / "in the RL area".
BEFORE_PAPERS = re.compile(
    rf"\b(?P<words>(?:(?:{STATUS}|{AREA})(?:\s*(?:,|and|or|/)\s*|\s+)){{1,3}}){PAPERS}\b"
    r"(?!\s+(?:too|included|as\s+well)\b)",  # "rejected ones too": kept, not filtered to
    re.IGNORECASE,
)
STATUS_AFTER = re.compile(
    rf"(?P<cut>\b(?:that|which)\s+(?:were|was|got|have\s+been|are)\s+(?P<words>{STATUS}))\b", re.I
)
# "How many papers were withdrawn?", "papers on diffusion that got accepted": a decision said of the papers.
STATUS_OF_PAPERS = re.compile(
    rf"\b{PAPERS}(?:\s+[\w-]+){{0,4}}?(?P<cut>\s+(?:were|was|got|have\s+been)\s+"
    r"(?P<words>accepted|rejected|withdrawn|desk[- ]rejected))\b",
    re.I,
)
STATUS_AT = re.compile(r"(?P<cut>\b(?P<words>accepted|rejected)\s+(?:at|to|by)\s+ICLR(?:\s*2025)?)\b", re.IGNORECASE)
# "in the RL area", "in the probabilistic methods area", "in the alignment and safety area", "in the physical
# sciences track": cut whole. Words between the area's and "area" only: "the geometric GNN track" of particle
# physics is no area.
AREA_NAMED = re.compile(
    rf"(?P<cut>\b(?:(?:in|from|under|within)\s+(?:the\s+)?(?P<words>{AREA})"
    r"(?:(?:\s+[\w&,-]+){0,3}?\s+(?:primary\s+)?area|\s+(?:primary\s+)?(?:area|track))"
    rf"|(?P<bare>{AREA})(?:[- ]area|\s+(?:primary\s+)?(?:area|track))))\b",
    re.IGNORECASE,
)


def said_names(stored: str) -> set[str]:
    """The ways a stored area name is said in full: whole, before its parenthesis, or its first items of two or
    more ("alignment, fairness, safety"; "applications to computer vision"), with "&" or "and"."""
    name = stored.replace("&amp;", "&")
    items = name.partition(" (")[0].removesuffix(", etc.").split(", ")
    prefixes = {", ".join(items[:k]).removeprefix("and ") for k in range(1, len(items) + 1)}
    said = {name} | {p for p in prefixes if "," in p or len(p.split()) >= 3} | {name.partition(" (")[0]}
    return {p.replace("&", joined) for p in said for joined in ("&", "and") if len(p.split()) >= 2}


# An area's stored name said in full anywhere ("learning on time series and dynamical systems", "probabilistic
# methods", "alignment, fairness, safety"): the area, with "in the … area" around it. Not the names that are
# also topics' words ("papers on generative models" are about them).
TOPIC_LIKE = {"generative models", "reinforcement learning", "learning theory", "causal reasoning"}
AREA_NAMES = {said.casefold(): stored for stored in AREA_WORDS.values() for said in said_names(stored) - TOPIC_LIKE}
AREA_FULL = re.compile(
    r"(?P<cut>\b(?:(?:in|from|under|within)\s+(?:the\s+)?)?"
    rf"(?P<words>{'|'.join(re.escape(name) for name in sorted(AREA_NAMES, key=len, reverse=True))})"
    r"(?:\s+(?:primary\s+)?(?:area|track))?)(?!\w)",
    re.IGNORECASE,
)
# "spotlight papers in learning theory", "How many orals are in optimization?", "In optimisation, how many …":
# papers said to be in an area, with nothing after it that would make it a topic's words.
AREA_IN = re.compile(
    rf"(?:\b(?:{PAPERS}|orals|spotlights|posters|authors)\s+(?:are\s+|were\s+)?|^\W*)"
    rf"(?P<cut>(?:in|within|under)\s+(?:the\s+)?(?P<words>{AREA}))"
    r"(?=\s*(?:$|[?.!,;:—–]|\b(?:that|which|who|by|vs\.?|versus|and|or|with|about|on)\b))",
    re.IGNORECASE,
)
PLURAL_STATUS = re.compile(r"\b(?P<words>orals|spotlights|posters)\b", re.IGNORECASE)  # "which orals ..."
# A decision said as a rate or as events: "the acceptance rate", "the share of withdrawals" (not "rejection
# sampling" nor "acceptance probability", where the word belongs to a topic).
SHARE_WORDS = r"rates?|ratios?|shares?|percentages?|fractions?|proportions?"
RATE = re.compile(
    r"\b(?P<words>(?:desk[- ])?(?:acceptance|accept|rejection|reject|withdrawal|oral|spotlight|poster)"
    rf"(?=\s+(?:{SHARE_WORDS})\b)|(?:desk[- ])?(?:acceptances|rejections|withdrawals))\b",
    re.IGNORECASE,
)
DECISIONS = {"acceptance": "accepted", "accept": "accepted", "rejection": "rejected", "reject": "rejected"}
DECISIONS |= {"withdrawal": "withdrawn"}  # the nouns as STATUS_WORDS
# A decision said anywhere, for a question about many papers where no pattern above placed it ("withdrawn
# gaussian splatting papers", "single-cell papers, accepted only", "… that got in", "desk rejects per area"); not
# "rejected ones too" (a list that keeps them).
SAID_STATUS = re.compile(
    r"\b(?P<words>(?:accepted|got\s+in|made\s+it(?:\s+in)?)\s+as\s+(?:an?\s+)?(?P<tier>orals?|spotlights?|posters?)"
    rf"|{STATUS}|desk[- ]rejects?|rejects?|(?:got|made\s+it)\s+in|made\s+it|didn['’]?t\s+make\s+it)\b"
    r"(?!\s+(?:ones\s+)?(?:too|included|as\s+well|or\s+not)\b)(?:\s+only\b)?",
    re.IGNORECASE,
)
SAID = {r"desk[- ]rejects?": "desk rejected", r"rejects?": "rejected", r"(?:got|made\s+it)(?:\s+in)?": "accepted"}
SAID |= {r"didn['’]?t\s+make\s+it": "rejected"}
NAME = r"[A-Z][a-zà-ÿ'’-]+"
FULL_NAME = rf"{NAME}(?:\s+(?:[A-Z]\.\s+)?{NAME}){{0,2}}"  # "Yoshua Bengio", "Ruslan R. Salakhutdinov"
TWO_NAMES = rf"{NAME}(?:\s+(?:[A-Z]\.\s+)?{NAME}){{1,2}}"  # a first name and a last: "Kun Zhang", not "Adam"
AUTHOR = re.compile(
    rf"\b(?:(?:written|authored|co-authored)\s+)?by\s+(?P<author>{FULL_NAME})"
    rf"|\bwith\s+(?P<with>{FULL_NAME})\s+(?:as|among\s+the)\s+(?:an?\s+)?(?:co-?)?authors?\b"
    rf"|\b(?P<owner>{TWO_NAMES})['’]s?(?!\w)"  # "Kun Zhang's papers", "Yoshua Bengio' papers"
    rf"|\bdid\s+(?P<did>{TWO_NAMES})\s+(?:have|submit|write|publish|author|get)\b"  # "papers did Yejin Choi have"
)
WITH_CODE = re.compile(
    r"(?:\b(?:that\s+)?comes?\s+with|\bwith|\bw/|\b(?:that\s+)?(?:have|has|release[sd]?|share[sd]?|provided?s?|"
    r"link(?:s|ed)?\s+to)(?:\s+(?:released|a|their|its))?)\s*(?:(?:public|open[- ]source|released|available)\s+)?"
    r"(?:code|github(?:\s+(?:repos?(?:itories)?|links?|code))?)\b(?:\s+(?:available|released|online))?"
    r"(?!\s+(?:generation|completion|LLMs?|models?|reasoning|editing|search|synthesis|data|tasks?|agents?)\b)"
    r"|\bcode\s+(?:released|available)\b",
    re.IGNORECASE,
)


# A word a name may hold ("Ming-Hsuan", "T.", "Günnemann", "Zhang's"), its possessive or full stop aside.
NAME_WORD = re.compile(r"[^\W\d_][\w.'’-]*")
NAME_END = re.compile(r"(?:['’]s?|(?<=\w\w)\.)$")
BY_WORD = re.compile(r"\b(?:by|from)\s+$", re.IGNORECASE)


def stored_author(question: str, authors: Mapping[str, str]) -> tuple[str, tuple[int, int]] | None:
    """The longest run of two to four words of the question that is a stored author's whole name, case aside
    ("sergey levine offline rl papers", "Papers from Song Han on …"), as stored, with its span and the "by" or
    "from" before it; None if no run is. Exact by design: a name is a stored value. A run holding a word of the
    question's own (`REQUEST_WORDS`: "what", "is", "many", "show"; an initial aside) is no name, whatever a record
    stores."""
    found = [(m.start(), m.end(), NAME_END.sub("", m.group())) for m in NAME_WORD.finditer(question)]
    for size in (4, 3, 2):
        for i in range(len(found) - size + 1):
            run = found[i : i + size]
            if any(len(word) > 1 and word.casefold() in REQUEST_WORDS for _, _, word in run):
                continue  # the question's own words ("What is", "How many", "show me all"), whatever is stored
            if name := authors.get(" ".join(word for _, _, word in run).casefold()):
                start = run[0][0]
                by = BY_WORD.search(question[:start])
                return name, (by.start() if by else start, run[-1][1])
    return None


def decision(words: str) -> str:
    """A decision's noun as its adjective ("desk rejections" -> "desk rejected"); other words as they are."""
    return re.sub(
        r"\b(acceptance|accept|rejection|reject|withdrawal)s?\b",
        lambda m: DECISIONS[m[1].lower()],
        words,
        flags=re.IGNORECASE,
    )


def said_statuses(question: str) -> list[str]:
    """The stored statuses a question says anywhere (`SAID_STATUS`); "accepted as posters" says Poster."""
    found: list[str] = []
    for match in SAID_STATUS.finditer(question):
        said = match["tier"] or match["words"]
        words = next((word for pattern, word in SAID.items() if re.fullmatch(pattern, said, re.I)), said)
        found.extend(status for status in statuses_in(words) if status not in found)
    return found


def statuses_in(words: str) -> list[str]:
    """The stored statuses the words name ("accepted" -> Oral, Spotlight, Poster), in the order named."""
    found: list[str] = []
    for word in re.findall(rf"\b(?:{STATUS})\b", words, re.IGNORECASE):
        for pattern, stored in STATUS_WORDS.items():
            if re.fullmatch(pattern, word, re.IGNORECASE):
                found.extend(s for s in stored if s not in found)
                break
    return found


# Acronyms (RL, LLM, NLP) only in capitals: "rl" inside a word never counts, "llm" typed lower does not. One
# pattern, so that words one area's name takes are not another's ("cognitive science" is no physical science).
AREA_WORD = re.compile(
    "|".join(
        rf"(?P<a{i}>{pattern})" if pattern.split("|")[0].isupper() else rf"(?i:(?P<a{i}>{pattern}))"
        for i, pattern in enumerate(AREA_WORDS)
    )
)
AREA_STORED = list(AREA_WORDS.values())


def areas_in(words: str) -> list[str]:
    """The stored areas the words name, in the order named: a stored name as such, else its short forms."""
    found: list[str] = []
    for match in re.finditer(rf"\b(?:{AREA_WORD.pattern})\b", words):
        stored = AREA_STORED[int(next(name for name, value in match.groupdict().items() if value)[1:])]
        if stored not in found:
            found.append(stored)
    return found


NOT_MODIFIERS = EVIDENCE_STOPWORDS | {"many", "among", "show", "list", "find", "give", "get", "count", "rank", "sort"}
NOT_MODIFIERS |= {"top", "number", "total", "all", "name"}


def modified_area(question: str, match: re.Match) -> int | None:
    """Where the area's words of a "… papers" match begin when a word before them makes them a topic's ("offline
    RL papers", "bilevel optimization papers", "Jure Leskovec graph papers") or name two areas as one ("causal
    representation learning papers"); None when they stand first ("RL papers", "the learning theory
    submissions", "accepted RL papers")."""
    words = match["words"]
    first = re.search(rf"\b(?:{AREA_WORD.pattern})\b", words)
    if first is None:
        return None
    if len(areas_in(words)) > 1 and not re.search(r",|\b(?:and|or)\b|/", words):
        return match.start("words") + first.start()  # "bayesian optimization works": one topic's words
    before = re.findall(r"[\w'’-]+", question[: match.start("words") + first.start()])
    previous = before[-1].lower() if before else ""
    modified = previous and previous not in NOT_MODIFIERS and not statuses_in(previous)
    return match.start("words") + first.start() if modified else None


# The words of a question that ask for papers and name none: what is left of "show me all accepted papers by
# Sergey Levine" or "What has Aviral Kumar had accepted this year?" once its filters' words are cut.
REQUEST_WORDS = EVIDENCE_STOPWORDS | set(
    "show list give find get pull display enumerate name me all every everything any anything paper papers work "
    "works submission submissions article articles one ones pls please up out has have had got put submit "
    "submitted wrote written write did do does this that cycle year iclr 2025 co-author co-authored author "
    "authored authors their her his its it there".split()
)


def names_nothing(text: str) -> bool:
    """Whether the text holds request words alone (`REQUEST_WORDS`): "show me all papers", "What has had this
    year?"."""
    return not set(re.findall(r"[\w-]+", text.lower())) - REQUEST_WORDS
