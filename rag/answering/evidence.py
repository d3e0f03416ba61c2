"""Evidence first, then words: the sentences that answer a question, picked before any model writes.

Every sentence of the sources that earned their place (each passes the refusal rule on its own)
is scored for this question:

- its cosine similarity to the question (the embedding model, vectors cached across questions);
- the share of the question's content words it holds, each word weighted by how rare it is among
  the candidate sentences (a word every sentence has tells nothing);
- what kind of answer the question asks for: a number for "how many / how much", a name for
  "which method / framework / agent", a result for "does / how well"; a sentence of the right kind
  gains, one without it loses;
- where it sits: the opening sentence of an abstract is usually background ("Large language models
  have achieved ...") and loses a little; sources ranked lower lose a little per rank.

The best sentence leads; a second or third joins only when it scores close to the first. A question
of two or more asks ("which dataset …, and how large is it?", asks.py) gets one sentence of the best
sentence's paper per ask instead, in the order asked: each scored for its ask by a ranker learned from the dev
questions' asks (`EvidencePicker.ask_score`), a different sentence for each (asks.best_assignment). Both the
extractive answer and the model's prompt are built from these sentences, and the key tokens of the
best one (its numbers and names that the question asks about) are what a model answer must keep
(acceptance.py). A paper's name comes from rag/text/naming.py; the words compared, from
rag/text/words.py.
"""

from __future__ import annotations

import math
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from functools import partial

import numpy as np
from langchain_core.embeddings import Embeddings

from rag.answering.ask_ranker import AskRanker, ask_features
from rag.answering.asks import CODE_LINK, NUMBER, best_assignment, hand_ask_score, held_by, wanted, without_name
from rag.answering.background import is_background, proposal_position, work_start
from rag.answering.quoting import with_earlier_steps, with_sentence_before
from rag.answering.refusal import refusal_reason
from rag.answering.sentence_ranker import SentenceRanker
from rag.core.config import AnswerConfig, RetrievalConfig
from rag.core.markers import split_sentences
from rag.core.types import Source
from rag.question.asks import Ask, AskKind
from rag.question.question import Question
from rag.text.naming import RELEASE, mentions, named_by, paper_name, says_name
from rag.text.words import acronyms, content_stems, source_sentences, spelled_out

# The share of a sentence's content words a sentence of an earlier answer holds when it says the same.
REPEATED = 0.8


@dataclass(frozen=True)
class Evidence:
    """One sentence picked to answer the question: from which source, and how well it scored."""

    number: int  # the source's `[n]`
    sentence: str
    score: float
    before: str = ""  # the sentence before it in its abstract, when it points back at that one ("It leverages …")


class EvidencePicker:
    """Scores the sentences of the sources that passed refusal, and keeps the best one to three."""

    def __init__(self, embeddings: Embeddings, answer: AnswerConfig, retrieval: RetrievalConfig):
        self.embeddings = embeddings  # a CachedEmbeddings: the same papers come back for related questions
        self.answer = answer
        self.retrieval = retrieval
        self._ranker: AskRanker | None = None  # the learned ask scores, read on the first question of two asks
        self._sentence_ranker: SentenceRanker | None = None  # read on the first question answered

    def pick(self, question: Question, sources: list[Source]) -> list[Evidence]:
        """The best sentence, then those close to it; for a question about several papers ("which
        papers …"), the best sentence of each paper close enough instead; for a question of two or
        more asks, one sentence of the answering paper per ask, in the order asked.

        A follow-up's `said` (what the conversation's answers said): the best sentence answers even when
        it was said (it is what is asked now); a sentence close to it joins only if it was not. Its `focus`:
        the papers it asks about (`sources`), which it names as "it" or "they"."""
        candidates = self.candidates(question, sources)
        scored = ranked(candidates, self.answer)
        if len(question.asks) > 1 and not question.several and scored:
            if scored[0].score < self.answer.min_sentence_score:
                return []
            name = paper_name(sources[scored[0].number - 1])
            named = name if question.focus or mentions(question.text, name) else ""
            own = [c for c in candidates if c.number == scored[0].number]
            linkless = [c for c in own if not unasked_link(question, c.sentence)]  # as for one ask
            each = self.for_each_ask(list(question.asks), linkless or own, named)
            return with_sentence_before(question, each, sources)
        chosen = self.learned_choice(question, self.chosen(question, scored, sources), candidates)
        if question.wants.expands:  # "what does CLuST stand for?"
            chosen = self.spelling_out(chosen, candidates)
        how = question.wants.how_or_why
        if how:  # "how does X work": a sentence that says how, and a method's steps from the first
            chosen = self.saying_how(chosen, candidates)
            if how.kind is AskKind.MECHANISM:
                chosen = with_earlier_steps(chosen, sources, self.answer.evidence_sentences)
        return with_sentence_before(question, chosen, sources)

    def learned_choice(
        self, question: Question, chosen: list[Evidence], candidates: list[SentenceCandidate]
    ) -> list[Evidence]:
        """The chosen sentences, the answering paper's (the first one's) chosen by the learned ranker: the hand score
        picks the paper, how many of its sentences join and which leads; the ranker which ones, and those it is surer
        of than `answer.sentence_gate` join them, unless a number or a name alone is asked. They follow the lead in
        the abstract's order, then other papers'. Not for a follow-up (the ranker learned from questions alone)."""
        if self.answer.sentence_choice == "weights" or not chosen or question.focus or question.said:
            return chosen
        if self._sentence_ranker is None:
            self._sentence_ranker = SentenceRanker.load()
        number = chosen[0].number
        own = [c for c in candidates if c.number == number]
        count = sum(item.number == number for item in chosen)
        wants = question.wants  # a number or a name alone is answered by the sentence that holds it (blind dev)
        room = 0 if (wants.number or wants.name) and not wants.how_or_why else self.answer.gated_sentences - len(chosen)
        takes = self._sentence_ranker.choose(own, count, room, self.answer, partial(may_quote, question), wants.why)
        if takes is None:
            return chosen
        lead, *rest = ranked([own[i] for i in takes], self.answer)
        at = {own[i].sentence: i for i in takes}
        rest.sort(key=lambda item: at[item.sentence])  # after the lead, the abstract's order: they read on
        return [lead, *rest, *(item for item in chosen if item.number != number)]

    def spelling_out(self, chosen: list[Evidence], candidates: list[SentenceCandidate]) -> list[Evidence]:
        """The answering paper's sentence that spells the asked acronym out leads the chosen ones, when they
        lack it: a sentence that only uses the acronym matches the question as closely."""
        spelled = next((c for c in candidates if chosen and c.number == chosen[0].number and c.kind > 0), None)
        if spelled is None or any(e.sentence == spelled.sentence for e in chosen):
            return chosen
        return [*ranked([spelled], self.answer), *chosen[: self.answer.evidence_sentences - 1]]

    def saying_how(self, chosen: list[Evidence], candidates: list[SentenceCandidate]) -> list[Evidence]:
        """For a one-ask "how/why" question: the chosen sentences and, when none of them says how or why, the
        answering paper's best sentence that does, not background ("Our approach involves three key innovations:
        (1) a sparse-grid Stein derivative estimator …" after "This paper proposes a … back-propagation-free
        framework"), in place of the last when there are as many as an answer has."""
        kinds = {(c.number, c.sentence): c.kind for c in candidates}
        if not chosen or any(kinds.get((e.number, e.sentence), 0) > 0 for e in chosen):
            return chosen
        own = [c for c in candidates if c.number == chosen[0].number and c.kind > 0 and not c.background]
        ways = ranked(own, self.answer)
        if not ways or ways[0].score < self.answer.min_sentence_score:
            return chosen
        return [*chosen[: self.answer.evidence_sentences - 1], ways[0]]

    def for_each_ask(self, asks: list[Ask], own: list[SentenceCandidate], named: str = "") -> list[Evidence]:
        """For each ask, in the order asked, a sentence of `own` (the best sentence's paper's): the sentences, one per
        ask and each a different one, whose ask scores add up highest. While the answer has room
        (`answer.evidence_sentences`), a further one within `answer.evidence_margin` of an ask's own follows it: the
        runner-up, where the best one often misses the asked detail."""
        scores = self.ask_scores(asks, own, named)
        choice = best_assignment(scores)
        picked, taken = list(enumerate(choice)), set(choice)
        runners_up = sorted(
            ((scores[a][i] - scores[a][choice[a]], a, i) for a in range(len(asks)) for i in range(len(own))),
            reverse=True,
        )
        for gap, a, i in runners_up:
            if len(picked) >= self.answer.evidence_sentences or gap < -self.answer.evidence_margin:
                break
            if i not in taken:
                picked.append((a, i))
                taken.add(i)
        picked.sort(key=lambda pair: (pair[0], pair[1] != choice[pair[0]]))  # by ask; its own sentence first
        return [Evidence(own[i].number, own[i].sentence, round(scores[a][i], 4)) for a, i in picked]

    def ask_scores(self, asks: list[Ask], own: list[SentenceCandidate], named: str = "") -> list[list[float]]:
        """For each ask, how well each of the paper's sentences answers it (`ask_score`)."""
        return [[self.ask_score(row) for row in table] for table in self.ask_features(asks, own, named)]

    def ask_features(self, asks: list[Ask], own: list[SentenceCandidate], named: str = "") -> list[list[list[float]]]:
        """For each ask, the features (ask_ranker.FEATURES) of each of the paper's sentences. The paper's name,
        when the question gives it, picks no sentence: it is left out of the ask's words."""
        sentences = [c.sentence for c in own]
        vectors = np.asarray(self.embeddings.embed_documents([c.wording for c in own]))
        tables = []
        for ask in asks:
            similarity = vectors @ np.asarray(self.embeddings.embed_query(without_name(ask.text, named)))
            words = rarity_weights(ask.text, sentences, ignore=content_stems(named))
            tables.append(
                [
                    ask_features(
                        c,
                        float(cos),
                        covered(c.wording, words),
                        held_by(ask, c.sentence, c.introduces, c.proposes, named),
                        bool(CODE_LINK.search(c.sentence)),
                    )
                    for c, cos in zip(own, similarity)
                ]
            )
        return tables

    def ask_score(self, features: list[float]) -> float:
        """How well a sentence answers an ask: the learned ranker's probability (ask_ranker.py), or under
        `answer.ask_scorer: weights` the hand weights' score (`hand_ask_score`)."""
        if self.answer.ask_scorer == "weights":
            return hand_ask_score(features, self.answer)
        if self._ranker is None:
            self._ranker = AskRanker.load()
        return self._ranker.score(features)

    def chosen(self, question: Question, scored: list[Evidence], sources: list[Source]) -> list[Evidence]:
        """The sentences `pick` keeps of those scored, best first; none close to the best that was `said` already."""
        scored = [e for e in scored if not unasked_link(question, e.sentence)] or scored
        if not scored or scored[0].score < self.answer.min_sentence_score:
            return []
        numbers_only = question.opens_with_amount
        if numbers_only and not NUMBER.search(scored[0].sentence):  # "how many …?": its paper's best number leads
            counted = next((e for e in scored if e.number == scored[0].number and NUMBER.search(e.sentence)), None)
            scored = [counted, *(e for e in scored if e is not counted)] if counted else scored
        best = scored[0]
        if question.several:  # each paper that passed refusal on its own gets its best sentence, if close
            firsts: dict[int, Evidence] = {}
            for item in scored:
                firsts.setdefault(item.number, item)
            close = [
                e
                for e in firsts.values()
                if e is not best
                and e.score >= best.score - self.answer.evidence_margin
                and self.passes(sources[e.number - 1])
            ]
        else:
            widen = 2 if question.two_asks else 1  # "what does X optimize, and on which tasks"
            # "how many …?" is answered by numbers: a sentence without one doesn't join
            joins = [
                e
                for e in scored[1:]
                if not repeats(e.sentence, question.said) and not (numbers_only and not NUMBER.search(e.sentence))
            ]
            close = [e for e in joins if e.score >= best.score - widen * self.margin(e, best)]
        return [best, *close][: self.answer.evidence_sentences]

    def margin(self, item: Evidence, best: Evidence) -> float:
        """How far below the best sentence another may score and still join it. A question about one
        paper is answered by it: another paper's sentence must come much closer, except one of the
        paper retrieval ranked first, when the best sentence is not its own."""
        if item.number == best.number:
            return self.answer.paper_margin
        if item.number == 1:
            return self.answer.evidence_margin / 2
        return self.answer.other_paper_margin

    def passes(self, source: Source) -> bool:
        """A source that would not be refused on its own has earned its place in an answer."""
        return refusal_reason([source], self.retrieval) is None

    def scored(self, question: Question, sources: list[Source]) -> list[Evidence]:
        """Every candidate sentence with its score, best first."""
        return ranked(self.candidates(question, sources), self.answer)

    def candidates(self, asked: Question, sources: list[Source]) -> list[SentenceCandidate]:
        """Every sentence of the sources that earned their place, with what its score is made of; for a
        follow-up about the papers in focus, the sources are those papers, as if it named them."""
        question, focused, wants = asked.text, bool(asked.focus), asked.wants
        sentences = [
            (number, position, sentence)
            for number, source in enumerate(sources, start=1)
            if number == 1 or self.passes(source) or named_by(question, source)
            for position, sentence in enumerate(source_sentences(source))
        ]
        if not sentences:
            return []
        numbers = sorted({number for number, _, _ in sentences})  # each source once, not once per sentence
        names = {number: paper_name(sources[number - 1]) for number in numbers}
        # A paper's name in the question picks the paper (retrieval did that); it doesn't pick a sentence.
        given = {number: name for number, name in names.items() if focused or mentions(question, name)}
        # Each sentence is compared with its acronyms spelled out as its abstract defines them ("CMI" holds "mutual").
        # (Not the paper's own name, "energy distribution-based detector (EDBD)": a name picks no sentence.)
        defined = {n: {a: w for a, w in acronyms(sources[n - 1].text).items() if a not in names[n]} for n in numbers}
        wordings = [spelled_out(sentence, defined[number]) for number, _, sentence in sentences]
        question_vector = np.asarray(self.embeddings.embed_query(without_name(question, *given.values())))
        similarity = np.asarray(self.embeddings.embed_documents(wordings)) @ question_vector
        named = " ".join(given.values())
        words = rarity_weights(question, [sentence for _, _, sentence in sentences], ignore=content_stems(named))
        stems = content_stems(question)
        proposals = {number: proposal_position(sources[number - 1]) for number in numbers}
        starts = {number: work_start(sources[number - 1], proposals[number]) for number in numbers}
        # Places below the first source; a paper the question names counts as first.
        ranks = {number: 0 if says_name(question, names[number]) else number - 1 for number in numbers}
        candidates = []
        for (number, position, sentence), cosine, wording in zip(sentences, similarity, wordings):
            introduces = position == proposals[number] or mentions(sentence, names[number])
            kind = wanted(wants, sentence, introduces, position == proposals[number], given.get(number, ""))
            proposal = introduces and not wants.number and not named and not wants.name
            background = position < starts[number] or is_background(position, sentence)
            candidates.append(
                SentenceCandidate(
                    number,
                    ranks[number],
                    sentence,
                    float(cosine),
                    covered(wording, words),
                    novelty(sentence, stems),
                    kind,
                    proposal,
                    background,
                    introduces,
                    position == proposals[number],
                    wording,
                )
            )
        # The first paper, when a question about one paper calls it by its own name ("How many reaction
        # templates does SynFlowNet use?"), is the one asked about: another paper's sentence, however close
        # (RxnFlow's "71 reaction templates"), answers nothing. Scored among all as before; only the others' are
        # left out. (Any paper so called was too many: "CLIP" and "Weisfeiler-Lehman" name papers too;
        # researcher dev fact recall 0.795 -> 0.744. This: blind dev 0.755 -> 0.761, nothing else moved.)
        if 1 in names and says_name(question, names[1]) and not asked.several:
            return [candidate for candidate in candidates if candidate.number == 1]
        return candidates


@dataclass(frozen=True)
class SentenceCandidate:
    """A sentence an answer could quote, and what its score is made of: `AnswerConfig` weighs the parts."""

    number: int  # its source's `[n]`
    rank: int  # places below the first source; 0 for a paper the question names
    sentence: str
    cosine: float  # similarity to the question
    words: float  # the weighted share of the question's telling words it holds
    novelty: float  # the share of its words the question lacks
    kind: int  # +1 for each kind of answer asked for that it holds (a number, a name, a result), -1 for each it lacks
    proposal: bool  # it says what its paper proposes, or names it
    background: bool  # it comes before the proposal, or opens like background
    introduces: bool = False  # it is the proposal sentence or names the paper (what a 'which method' ask wants)
    proposes: bool = False  # it is the sentence that says what the paper proposes ('We introduce X, …')
    wording: str = ""  # the sentence with its paper's acronyms spelled out, whose words are compared

    def score(self, config: AnswerConfig) -> float:
        return round(
            self.cosine
            + config.word_weight * self.words
            + config.novelty_weight * self.novelty
            + config.kind_bonus * self.kind
            + config.proposal_bonus * self.proposal
            - config.background_penalty * self.background
            - config.rank_penalty * self.rank,
            4,
        )


def unasked_link(question: Question, sentence: str) -> bool:
    """A web address or a release the question doesn't ask for: "The code is available at https://…", "Code and
    model will be publicly released upon publication." answer only about code."""
    return not question.code_asked and bool(RELEASE.search(sentence))


def may_quote(question: Question, sentence: str) -> bool:
    """Whether a sentence may join an answer (`chosen`'s rules): no unasked link, a number for "how many"."""
    return not unasked_link(question, sentence) and not (question.opens_with_amount and not NUMBER.search(sentence))


def ranked(candidates: list[SentenceCandidate], config: AnswerConfig) -> list[Evidence]:
    """The candidates scored under `config`, best first."""
    evidence = [Evidence(c.number, c.sentence, c.score(config)) for c in candidates]
    return sorted(evidence, key=lambda e: -e.score)


def rarity_weights(question: str, sentences: list[str], ignore: AbstractSet[str] = frozenset()) -> dict[str, float]:
    """The question's content words (6-letter stems) that some candidate sentence holds, weighted
    by inverse sentence frequency: rare among the candidates means telling."""
    stems = content_stems(question) - ignore
    held = [content_stems(sentence) for sentence in sentences]
    weights = {}
    for stem in stems:
        count = sum(stem in sentence for sentence in held)
        if count:
            weights[stem] = math.log(1 + len(held) / count)
    return weights


def repeats(sentence: str, said: str) -> bool:
    """Whether a text says the sentence already: one of its sentences holds nearly all (REPEATED) of
    the sentence's content words, as a quote of it does whatever name or marker it was given."""
    stems = content_stems(sentence)
    if not stems or not said:
        return False
    return any(len(stems & content_stems(part)) >= REPEATED * len(stems) for part in split_sentences(said))


def novelty(sentence: str, asked: set[str]) -> float:
    """The share of a sentence's content words that the question doesn't have: a sentence that only
    restates the question ('We introduce X, which does what you asked') tells the asker little."""
    stems = content_stems(sentence)
    return len(stems - asked) / len(stems) if stems else 0.0


def covered(sentence: str, weights: dict[str, float]) -> float:
    """The weighted share of the question's telling words that the sentence holds (0..1)."""
    total = sum(weights.values())
    if not total:
        return 0.0
    stems = content_stems(sentence)
    return sum(weight for stem, weight in weights.items() if stem in stems) / total
