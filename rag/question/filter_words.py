"""The words that state a filter: a decision ("accepted", "orals", "desk-rejected"), a primary area in the short
forms researchers type ("RL", "the probabilistic methods area"), an author ("by Yoshua Bengio", "Kun Zhang's
papers") and code ("with code"). Exact by design: a filter is a stored value, read as such, and only where it
qualifies the papers asked about (understand.py).
"""

from __future__ import annotations

import re

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
    r"graph(?:[- ]learning)?|geometric(?:[- ]learning)?": "learning on graphs and other geometries &amp; topologies",
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
    rf"\b(?P<words>(?:(?:{STATUS}|{AREA})(?:\s*(?:,|and|or|/)\s*|\s+)){{1,3}}){PAPERS}\b", re.IGNORECASE
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
    rf"(?P<cut>\b(?:in|from|under)\s+the\s+(?P<words>{AREA})"
    r"(?:(?:\s+[\w&,-]+){0,3}?\s+(?:primary\s+)?area|\s+(?:primary\s+)?(?:area|track)))\b",
    re.IGNORECASE,
)
PLURAL_STATUS = re.compile(r"\b(?P<words>orals|spotlights|posters)\b", re.IGNORECASE)  # "which orals ..."
# A decision said as a rate or as events: "the acceptance rate", "the share of withdrawals" (not "rejection
# sampling" nor "acceptance probability", where the word belongs to a topic).
RATE = re.compile(
    r"\b(?P<words>(?:desk[- ])?(?:acceptance|rejection|withdrawal|oral|spotlight|poster)(?=\s+rates?\b)"
    r"|(?:desk[- ])?(?:acceptances|rejections|withdrawals))\b",
    re.IGNORECASE,
)
DECISIONS = {"acceptance": "accepted", "rejection": "rejected", "withdrawal": "withdrawn"}  # the nouns as STATUS_WORDS
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
    r"\b(?:(?:that\s+)?comes?\s+with|with|that\s+(?:have|has|release|releases|share|shares|provide|provides|link\s+to))\s+"
    r"(?:(?:public|open[- ]source|released|available)\s+)?(?:code|github(?:\s+repos?(?:itories)?)?)\b"
    r"(?:\s+(?:available|released|online))?",
    re.IGNORECASE,
)


def decision(words: str) -> str:
    """A decision's noun as its adjective ("desk rejections" -> "desk rejected"); other words as they are."""
    return re.sub(
        r"\b(acceptance|rejection|withdrawal)s?\b", lambda m: DECISIONS[m[1].lower()], words, flags=re.IGNORECASE
    )


def statuses_in(words: str) -> list[str]:
    """The stored statuses the words name ("accepted" -> Oral, Spotlight, Poster), in the order named."""
    found: list[str] = []
    for word in re.findall(rf"\b(?:{STATUS})\b", words, re.IGNORECASE):
        for pattern, stored in STATUS_WORDS.items():
            if re.fullmatch(pattern, word, re.IGNORECASE):
                found.extend(s for s in stored if s not in found)
                break
    return found


def areas_in(words: str) -> list[str]:
    found = []
    for pattern, stored in AREA_WORDS.items():
        # Acronyms (RL, LLM, NLP) only in capitals: "rl" inside a word never counts, "llm" typed lower does not.
        flags = 0 if pattern.split("|")[0].isupper() else re.IGNORECASE
        if re.search(rf"\b(?:{pattern})\b", words, flags) and stored not in found:
            found.append(stored)
    return found
