"""Evidence first, then words: the sentences an answer is built from, and what a model answer must keep."""

from __future__ import annotations

from dataclasses import replace

import pytest

from rag.answering.acceptance import key_tokens, news, set_aside
from rag.answering.background import is_background, proposal_position
from rag.answering.citations import foreign_words, renumbered, ungrounded, unnamed
from rag.answering.evidence import Evidence, EvidencePicker, repeats
from rag.answering.quoting import (
    POINTS_BACK,
    evidence_sources,
    extractive_answer,
    tidy,
    with_earlier_steps,
    with_sentence_before,
)
from rag.core.config import AnswerConfig, RetrievalConfig
from rag.core.markers import split_sentences
from rag.core.types import SentenceCheck, Source
from rag.question.focus import Turn
from rag.question.followup import Standalone
from rag.question.question import lookup, read
from rag.text.naming import named_by, paper_name
from rag.text.words import acronyms, spelled_out

RXNFLOW = Source.from_text(
    "p1",
    "RxnFlow: Generative Flows on Synthetic Pathway for Drug Design",
    "Generative models for drug discovery often ignore synthesis. We use 1.2 million building blocks and "
    "71 reaction templates. RxnFlow improves docking scores.",
    0.7,
)
SEEDLIKE = Source.from_text(
    "p2",
    "We propose R3D2, a generalist agent for Hanabi …",
    "Hanabi is a cooperative card game. We propose R3D2, a generalist agent that plays with any number of players.",
    0.6,
)
FINEDEFICS = Source.from_text(
    "p6",
    "Analyzing and Boosting the Power of Fine-Grained Visual Recognition for Multi-modal Large Language Models",
    "MLLMs struggle with fine-grained recognition. To address this issue, we present Finedefics, an MLLM that adds "
    "attribute descriptions of objects during training.",
    0.5,
)


def test_the_paper_name_comes_from_the_title_or_from_what_the_abstract_proposes():
    assert paper_name(RXNFLOW) == "RxnFlow"
    assert paper_name(SEEDLIKE) == "R3D2"
    plain = Source.from_text("p3", "Learning to Rank Abstracts", "We study ranking.", 0.5)
    assert paper_name(plain) == "“Learning to Rank Abstracts”"
    assert paper_name(FINEDEFICS) == "Finedefics"
    # an acronym the abstract defines reads with what it stands for
    anomaly = Source.from_text(
        "p7",
        "Exploring Local Memorization",
        'We identify a novel "bright ending" (BE) anomaly. We propose to use BE.',
        0.5,
    )
    assert paper_name(anomaly) == "bright ending (BE)"
    # a compound that describes the framework is no name: the title stands for it
    described = Source.from_text(
        "p8",
        "Scalable Back-Propagation-Free Training of Optical PINNs",
        "PINNs are hard to train on chips. This paper proposes a completely back-propagation-free (BP-free) and "
        "scalable framework. It uses an LLM-based planner.",
        0.5,
    )
    assert paper_name(described) == "“Scalable Back-Propagation-Free Training of Optical PINNs”"


def test_an_abstract_s_acronyms_are_spelled_out_for_the_words_a_sentence_holds():
    text = (
        "We minimize the conditional mutual information (CMI). CMI is a case of Information Bottleneck (IB). "
        'A novel "bright ending" (BE) anomaly. Low-Rank Adaptation (LoRA) is popular; LoRA-Pro improves it.'
    )
    defined = acronyms(text)
    assert defined == {
        "CMI": "conditional mutual information",
        "IB": "Information Bottleneck",
        "BE": "bright ending",
        "LoRA": "Low Rank Adaptation",
    }
    assert spelled_out("CMI is a special case of IB.", defined).endswith(
        "conditional mutual information Information Bottleneck"
    )
    assert (
        spelled_out("LoRA-Pro adjusts gradients.", defined) == "LoRA-Pro adjusts gradients."
    )  # a compound is another name
    assert spelled_out("It adapts LoRAs.", defined).endswith("Low Rank Adaptation")


@pytest.mark.parametrize("text", ["$\\textit{Cis}$-regulatory elements (CREs), ", "the filter, - **(II)** then"])
def test_an_acronym_after_markup_or_a_lone_dash_is_read_without_failing(text):
    """Two abstracts of the full list: the markup taken out, the words before the acronym began with a dash, an
    empty word whose initial failed the answer of any question that retrieved them."""
    assert acronyms(text) == {}


def test_a_quoted_sentence_is_checked_without_the_name_put_before_it(seeded):
    """The extractive answer puts the paper's name before its first quote; a long title made the quote read
    unlike its own abstract, and the answer was refused as unsupported."""
    source = next(
        s for s in seeded.retrieve("specialist language models from generalist data") if s.paper_id == "p6ncr0eTKE"
    )
    quote = (
        "We also present ablation studies that examine the impact of dataset sizes, clustering configurations, "
        "and model sizes."
    )
    named = f"{paper_name(source)}: {quote}"
    assert len(named) > len(quote) + 60  # the stand-in name is the whole title, in quotes
    names = {paper_name(source).lower()}
    assert unnamed(named, names) == quote and unnamed(f"Another paper: {quote}", names) != quote
    assert seeded.checker.check(f"{named} [1]", [source])[1][0].supported


def test_a_quoted_sentence_loses_its_leading_link_word():
    assert tidy("However, the method fails.") == "The method fails."
    assert tidy("To address this, we propose X.") == "We propose X."
    assert tidy("We propose X.") == "We propose X."
    assert tidy("To overcome these challenges, we propose X.") == "We propose X."
    assert tidy("Then, we build a benchmark.") == "We build a benchmark."
    assert tidy("2) Subsequently, we propose FreeTraj.") == "Subsequently, we propose FreeTraj."
    assert tidy("(iii) Then, we prune.") == "We prune."
    assert tidy("(2024) is a year.") == "(2024) is a year."
    assert tidy("First-order logic is hard.") == "First-order logic is hard."  # a word, not a link


def test_the_extractive_answer_names_the_paper_once_and_cites_each_sentence():
    evidence = [Evidence(1, "We use 1.2 million building blocks and 71 reaction templates.", 1.0)]
    text = extractive_answer("How many templates does the GFlowNet use?", evidence, [RXNFLOW])
    assert text == "RxnFlow: We use 1.2 million building blocks and 71 reaction templates [1]."
    named = extractive_answer("How many templates does RxnFlow use?", evidence, [RXNFLOW])
    assert named.startswith("We use 1.2 million")


def test_key_tokens_are_the_numbers_or_names_the_question_asks_for():
    evidence = [Evidence(1, "We use 1.2 million building blocks and 71 reaction templates.", 1.0)]
    assert key_tokens(lookup("How many reaction templates does RxnFlow use?"), evidence, [RXNFLOW]) == ["71"]
    assert key_tokens(lookup("How large is RxnFlow's action space?"), evidence, [RXNFLOW]) == ["1.2", "71"]
    hanabi = [Evidence(1, "We propose R3D2, a generalist agent that plays with any number of players.", 1.0)]
    assert key_tokens(lookup("Which agent plays Hanabi with any number of players?"), hanabi, [SEEDLIKE]) == ["R3D2"]
    assert key_tokens(lookup("Which agent is R3D2?"), hanabi, [SEEDLIKE]) == []
    # a number the question says is not the one it asks for: it was "2" and "7", then dropped as the question's own
    gain = [Evidence(1, "Student-2B surpasses Teacher-7B with an average gain of 8.8%, using 0.3% of the data.", 1.0)]
    asked = "The 2B student surpasses Teacher-7B by what average gain, with what fraction of the data?"
    assert key_tokens(lookup(asked), gain, [RXNFLOW]) == ["8.8", "0.3"]


def test_a_number_or_name_the_cited_source_lacks_is_ungrounded():
    assert ungrounded("RxnFlow uses 71 reaction templates.", [RXNFLOW]) == []
    assert ungrounded("RxnFlow uses 10,248 reaction templates.", [RXNFLOW]) == ["10,248"]
    assert ungrounded("The flow model reaches 91% accuracy.", [RXNFLOW]) == ["91"]
    assert ungrounded("FakeShield uses 71 templates.", [RXNFLOW]) == ["FakeShield"]


def test_a_number_must_count_what_it_counts_in_the_source():
    assert ungrounded("RxnFlow uses 71 building blocks.", [RXNFLOW]) == ["71"]
    assert ungrounded("RxnFlow combines 1.2 million reaction templates.", [RXNFLOW]) == ["1.2"]
    assert ungrounded("RxnFlow uses 71 templates and 1.2 million blocks.", [RXNFLOW]) == []
    # Where either side doesn't say what a number counts, it is not held against it.
    scores = Source.from_text("s", "S", "GPT-4 and Claude solve 20 of 24 tasks, 87% of them at once.", 0.9)
    assert ungrounded("GPT-4 models solve 20 tasks with 87 percent of them at once.", [scores]) == []


def test_a_term_the_sentence_coins_must_be_in_its_source():
    assert ungrounded('RxnFlow uses a formula called "Causalization" for docking.', [RXNFLOW]) == ["Causalization"]
    assert ungrounded("RxnFlow assembles building blocks with Causalization.", [RXNFLOW]) == ["Causalization"]
    assert ungrounded('RxnFlow uses "reaction templates" for drug discovery.', [RXNFLOW]) == []


def test_a_sentence_mostly_in_words_its_source_lacks_is_not_supported():
    made_up = "RxnFlow is a type of dark mode anomaly that occurs when the light-dark ratio is not calibrated."
    assert len(foreign_words(made_up, [RXNFLOW])) > 5
    assert foreign_words("RxnFlow uses 71 reaction templates and building blocks for drug design.", [RXNFLOW]) == []
    assert foreign_words(made_up, []) != []  # nothing cited supports nothing


def test_an_abstract_that_never_says_what_it_proposes_has_no_proposal_sentence():
    assert proposal_position(SEEDLIKE) == 1
    plain = Source.from_text(
        "p3", "Specialist Models", "Specialist models are strong. We build them from generic data.", 0.5
    )
    assert proposal_position(plain) == -1  # its opening sentence is not taken for a proposal


def test_the_model_sees_only_the_evidence_and_its_markers_map_back():
    evidence = [Evidence(2, "We propose R3D2.", 1.0), Evidence(1, "We use 71 templates.", 0.9)]
    prompt = evidence_sources(evidence, [RXNFLOW, SEEDLIKE])
    assert [source.paper_id for source in prompt] == ["p2", "p1"]
    assert prompt[0].text == "We propose R3D2."
    assert renumbered("R3D2 plays Hanabi [1]. It uses 71 templates [2][3].", evidence) == (
        "R3D2 plays Hanabi [2]. It uses 71 templates [1][0]."
    )


BEST = [Evidence(1, "We use 1.2 million building blocks and 71 reaction templates.", 1.0)]
QUESTION = "Which reaction templates does RxnFlow use?"


@pytest.mark.parametrize(
    ("checks", "key", "reason"),
    [
        ([SentenceCheck("RxnFlow uses 1.2 million building blocks and 71 templates", (1,), True, 0.8)], ["71"], None),
        ([SentenceCheck("RxnFlow uses templates", (1,), True, 0.8)], ["71"], "left out 71"),
        ([SentenceCheck("RxnFlow uses 71 templates", (1,), False, 0.3)], ["71"], "no sentence"),
        # supported and holding the number, but it keeps none of "million building blocks", the best sentence's news
        ([SentenceCheck("RxnFlow uses 71 templates", (1,), True, 0.8)], ["71"], "kept 0 of the 3 words"),
    ],
)
def test_a_model_answer_is_set_aside_when_unsupported_or_missing_the_key_fact(checks, key, reason):
    found = set_aside(checks, key, news(lookup(QUESTION), BEST), keep=0.5)
    assert (found is None) if reason is None else (reason in found)


def test_the_news_are_the_best_sentence_words_the_question_lacks():
    assert news(lookup(QUESTION), BEST) == {"millio", "buildi", "blocks"}
    assert news(lookup(QUESTION), []) == set()
    assert news(lookup("How many reaction templates does RxnFlow use?"), BEST) == set()  # the number is the answer


@pytest.mark.parametrize(
    ("question", "fact"),
    [
        ("How many building blocks and reaction templates does the synthesizability-aware GFlowNet handle?", "71"),
        ("Which framework detects and localizes image tampering while explaining its judgment?", "FakeShield"),
        ("Which agent can play Hanabi with 2 to 5 players and cooperate with unfamiliar partners?", "R3D2"),
    ],
)
def test_the_issue_questions_get_their_fact_from_the_extractive_answer(seeded, question, fact):
    answer = seeded.answer(question)
    assert not answer.refused and answer.answered_by == "extractive"
    assert fact in split_sentences(answer.text)[0]  # the answer leads with it
    assert answer.text.count("[") <= AnswerConfig().gated_sentences  # 3, and one the ranker is sure of
    assert all(check.supported for check in answer.checks)


def test_another_papers_sentence_joins_only_when_it_scores_almost_as_well(embeddings):
    """A question about one paper is answered by it: the second paper's sentence on templates scores
    close to RxnFlow's own, yet joins only under a wide `other_paper_margin`, and never when the question calls
    RxnFlow by its name; the first-ranked paper joins a lower-ranked paper's best sentence within half the
    evidence margin."""
    other = Source.from_text(
        "p9", "SynFlow: Templates for Molecules", "SynFlow uses 80 reaction templates to build molecules.", 0.6
    )
    question = "How many reaction templates does the synthesizability-aware GFlowNet use?"

    def papers(question: str, other_margin: float, rank_penalty: float = 0.2) -> set[int]:
        config = AnswerConfig(other_paper_margin=other_margin, rank_penalty=rank_penalty)
        picker = EvidencePicker(embeddings, config, RetrievalConfig(min_evidence=0))
        return {item.number for item in picker.pick(lookup(question), [RXNFLOW, other])}

    assert papers(question, 0.0) == {1}
    assert papers(question, 1.0) == {1, 2}
    assert papers("How many reaction templates does RxnFlow use?", 1.0) == {1}  # called by its name
    # When the best sentence is a lower-ranked paper's (no rank penalty), the paper ranked first may still join.
    assert papers("Which templates build the molecules?", 0.0, rank_penalty=0.0) == {1, 2}
    assert papers("Which templates build the molecules?", 0.0) == {1}  # the rank penalty keeps it to one


def test_a_question_about_several_papers_quotes_those_that_score_close_to_the_best(seeded):
    # "Which approaches …" quotes each paper's best sentence, but only within the evidence margin of the best:
    # RxnFlow passes refusal for molecules, yet its best sentence says nothing of language models. Taken
    # literally (a look-up): read, "which approaches …" may be an overview, which lists instead.
    answer = seeded.answer("Which approaches use language models for molecules?", understand=False)
    assert answer.text.startswith("To combine these advantages for 3D molecule generation, we propose")
    titles = {source.paper_id: source.title for source in answer.sources}
    assert [titles[paper_id].split(":")[0] for paper_id in answer.cited] == ["NExT-Mol"], answer.text


def test_a_paper_named_in_quotes_or_latex_reads_as_text_and_each_sentence_keeps_its_marker():
    """The second sentence opens with its paper's title in curly quotes: it is a sentence of its own (it
    used to be merged into the first, both markers at the end), and a LaTeX name reads as text."""
    epsilon = Source.from_text(
        "p3", "$\\epsilon$-VAE: Denoising as Visual Decoding", "We replace the decoder with diffusion.", 0.6
    )
    rotation = Source.from_text(
        "p4", "Restructuring Vector Quantization with the Rotation Trick", "Gradients pass the quantizer.", 0.5
    )
    evidence = [
        Evidence(1, "We replace the decoder with diffusion.", 1.0),
        Evidence(2, "Gradients pass the quantizer.", 0.9),
    ]
    text = extractive_answer("How is an image decoded from latents?", evidence, [epsilon, rotation])
    assert split_sentences(text) == [
        "ϵ-VAE: We replace the decoder with diffusion [1].",
        "“Restructuring Vector Quantization with the Rotation Trick”: Gradients pass the quantizer [2].",
    ]


def test_a_paper_the_question_names_answers_though_it_shares_little_meaning_with_it(seeded):
    """The question names JYS by its name, and its other words are in the abstract: the answer comes from it,
    where the passage level (cosine 0.15) refused. Naming a paper doesn't answer what its abstract never says."""
    answer = seeded.answer("What does τ-leaping introduce according to Jump Your Steps?")
    assert not answer.refused
    assert "Compounding Decoding Error" in answer.text and "Jump Your Steps" in answer.sources[0].text
    assert seeded.answer("What GPU does Jump Your Steps train on?").refused


@pytest.mark.parametrize(
    ("question", "source", "named"),
    [
        ("How many reaction templates does RxnFlow use?", RXNFLOW, True),
        ("How many reaction templates does rxnflow use?", RXNFLOW, False),  # a name is matched with its case
        ("What GPU does RxnFlow train on?", RXNFLOW, False),  # its abstract never says
        ("Which agent plays Hanabi with any number of players?", SEEDLIKE, False),  # the name isn't in it
        (
            "What do diffusion models generate for proteins?",
            Source.from_text("p5", "Diffusion Models: A Survey", "Diffusion models generate proteins.", 0.5),
            False,
        ),
        # a one-word name a paper coined ("We present Finedefics, an MLLM …"), written with its capital mid-question
        ("What does Finedefics add during training?", FINEDEFICS, True),
        ("Finedefics: what does it add during training?", FINEDEFICS, False),  # a question's first word may be any
        ("What does finedefics add during training?", FINEDEFICS, False),
    ],
)
def test_a_question_names_a_paper_by_a_proper_name_and_asks_what_its_abstract_holds(question, source, named):
    assert named_by(question, source) is named


def test_a_paper_the_question_names_is_not_ranked_down(embeddings):
    """The rank penalty favours the first-ranked paper, except over the paper the question names
    ("ε-VAE", the title's "$\\epsilon$-VAE")."""
    rotation = Source.from_text(
        "p4", "Restructuring Vector Quantization with the Rotation Trick", "Encoder outputs rotate.", 0.6
    )
    epsilon = Source.from_text(
        "p3", "$\\epsilon$-VAE: Denoising as Visual Decoding", "We replace the decoder with diffusion.", 0.5
    )
    picker = EvidencePicker(embeddings, AnswerConfig(), RetrievalConfig(min_evidence=0))

    def ranks(question: str) -> dict[int, int]:
        return {c.number: c.rank for c in picker.candidates(lookup(question), [rotation, epsilon])}

    assert ranks("How does ε-VAE decode an image?") == {1: 0, 2: 0}
    assert ranks("How is an image decoded from latents?") == {1: 0, 2: 1}
    assert ranks("How does ε-vae decode an image?") == {1: 0, 2: 1}  # a name is matched with its case


def test_a_cited_sentence_ends_where_its_marker_does_whatever_follows():
    # A paper named by a lower-case phrase opens the next sentence of an extractive answer; read as one
    # sentence with the one before, it was checked against both papers and its markers ran together.
    text = "It beats gradient descent on stiff PDEs [2]. completely back-propagation-free (BP-free): "
    text += "It trains on chips [1]."
    assert split_sentences(text) == [
        "It beats gradient descent on stiff PDEs [2].",
        "completely back-propagation-free (BP-free): It trains on chips [1].",
    ]
    assert split_sentences("It uses e.g. sampling. it does not split [1]") == [
        "It uses e.g. sampling. it does not split [1]"
    ]


def test_a_sentence_is_said_when_a_sentence_of_the_text_holds_nearly_all_its_words():
    sentence = "We use 1.2 million building blocks and 71 reaction templates."
    assert repeats(sentence, "RxnFlow: We use 1.2 million building blocks and 71 reaction templates [1].")
    assert not repeats(sentence, "RxnFlow uses reaction templates [1]. It builds molecules from blocks [1].")
    assert not repeats(sentence, "")


def test_a_follow_up_s_evidence_leads_with_its_best_sentence_and_adds_none_the_last_answer_said(embeddings):
    picker = EvidencePicker(embeddings, AnswerConfig(evidence_margin=1.0), RetrievalConfig(min_evidence=0))
    question = "What does RxnFlow use to build molecules?"
    alone = [item.sentence for item in picker.pick(lookup(question), [RXNFLOW])]
    assert len(alone) > 1
    # What the last answer quoted joins no more; the best sentence answers, said before or not.
    said = f"RxnFlow: {alone[1]} [1]. RxnFlow: {alone[0]} [1]."
    after = [item.sentence for item in picker.pick(read(Standalone(question, said=said)), [RXNFLOW])]
    assert after[0] == alone[0] and alone[1] not in after and after[1:] == alone[2:]


POTEC = Source.from_text(
    "p8",
    "Large Action Spaces via Two-Stage Policy Decomposition",
    "Off-policy learning fails in large action spaces. To overcome these issues, we propose POTEC, a two-stage "
    "algorithm. It leverages clustering in the action space. This makes it fast. Experiments show large gains. "
    "They hold on every benchmark.",
    0.5,
)
LEVERAGES = "It leverages clustering in the action space."


def test_a_sentence_that_points_back_is_quoted_after_the_sentence_before_it():
    question = "How does POTEC handle large action spaces?"
    evidence = [Evidence(1, LEVERAGES, 1.0), Evidence(1, "Experiments show large gains.", 0.9)]
    read = with_sentence_before(lookup(question), evidence, [POTEC])
    assert read[0].before == "To overcome these issues, we propose POTEC, a two-stage algorithm."
    assert read[1] == evidence[1]
    assert extractive_answer(question, read, [POTEC]) == (
        "We propose POTEC, a two-stage algorithm [1]. It leverages clustering in the action space [1]. "
        "Experiments show large gains [1]."
    )
    # the model is given it too, in the abstract's order
    assert evidence_sources(read, [POTEC])[0].text.startswith("To overcome these issues, we propose POTEC")


def test_only_one_sentence_before_is_added_and_only_where_it_is_needed():
    both = [Evidence(1, "This makes it fast.", 1.0), Evidence(1, LEVERAGES, 0.9)]
    read = with_sentence_before(lookup("How does POTEC work?"), both, [POTEC])
    assert read[0].before == ""  # the sentence "This" points back at is in the answer already
    assert read[1].before.startswith("To overcome these issues")
    two = [Evidence(1, LEVERAGES, 1.0), Evidence(1, "They hold on every benchmark.", 0.9)]
    read = with_sentence_before(lookup("How does POTEC work?"), two, [POTEC])
    assert read[0].before and not read[1].before  # one sentence before at most: the answer grows by one
    fast = [Evidence(1, "This makes it fast.", 1.0)]
    assert with_sentence_before(lookup("How fast is POTEC?"), fast, [POTEC]) == fast  # "It leverages …" points back too
    # a "how many" answer is its number; "This paper …" and "It is known that …" point nowhere
    assert with_sentence_before(lookup("How many stages does POTEC have?"), both[:1], [POTEC]) == both[:1]
    assert not POINTS_BACK.match("This paper proposes POTEC.") and not POINTS_BACK.match("It is known that X.")
    assert POINTS_BACK.match("These results show gains.") and POINTS_BACK.match("Its policy is fast.")


def test_a_sentence_that_points_back_at_one_quoted_elsewhere_reads_right_after_it():
    gains, hold = Evidence(1, "Experiments show large gains.", 0.8), Evidence(1, "They hold on every benchmark.", 1.0)
    leverages = Evidence(1, LEVERAGES, 0.9)
    led = with_sentence_before(lookup("How well does POTEC do?"), [hold, leverages, gains], [POTEC])
    assert [(item.sentence, item.before) for item in led][:1] == [(hold.sentence, gains.sentence)]  # still the lead
    assert [item.sentence for item in led] == [hold.sentence, LEVERAGES]
    assert extractive_answer("How well does POTEC do?", led, [POTEC]).startswith(
        "Experiments show large gains [1]. They hold on every benchmark [1]."
    )
    later = with_sentence_before(lookup("How well does POTEC do?"), [gains, leverages, hold], [POTEC])
    assert [item.sentence for item in later] == [gains.sentence, hold.sentence, LEVERAGES]


def test_a_seed_follow_up_quotes_their_after_what_they_are(seeded):
    """It was "Bright ending (BE): Their inherent tendency to memorize and replicate training data …": whose?"""
    first = seeded.answer("What is the bright ending anomaly?")
    follow = seeded.answer(
        "What concern about replicating training data does the paper mention?", history=[Turn.of(first)]
    )
    sentences = [check.text for check in follow.checks]
    their = next(i for i, text in enumerate(sentences) if "inherent tendency to memorize" in text)
    assert their and "Text-to-image diffusion models have achieved" in sentences[their - 1]
    assert all(check.supported for check in follow.checks) and "copyright infringement" in follow.text


def test_what_the_authors_did_is_not_background():
    assert is_background(0, "We study ranking.")  # an abstract's first sentence is
    assert is_background(3, "Large language models have shown strong reasoning.")
    assert not is_background(6, "We reformulate the task using text, as language has been shown to improve transfer.")
    assert not is_background(6, "Our agent is the first that can play all game settings.")


def test_what_the_authors_do_or_find_before_their_proposal_sentence_is_not_background(embeddings):
    """CraftRTL's "To address these limitations, we enhance data curation by creating correct-by-construction
    data …" comes before "Additionally, we introduce …", and was background by its place; so was "We show that
    the MLM's objective implicitly learns a formal context …". What the authors find about earlier work before
    their proposal still is ("We show that current models …"), and so is what the paper studies ("This paper
    studies off-policy evaluation from …")."""
    source = Source.from_text(
        "p9",
        "Synthetic Data for Verilog",
        "Code models are strong. We show that current models fail on diagrams. To address these limitations, we "
        "create correct-by-construction data. Additionally, we introduce an error-report framework.",
        0.5,
    )
    picker = EvidencePicker(embeddings, AnswerConfig(), RetrievalConfig(min_evidence=0))
    background = {
        c.sentence.split()[0]: c.background for c in picker.candidates(lookup("How is the data made?"), [source])
    }
    assert background == {"Code": True, "We": True, "To": False, "Additionally,": False}
    # the authors' own finding, before their proposal, is not background either
    lattices = Source.from_text(
        "p12",
        "From Tokens to Lattices",
        "Language models encode concepts. Prior work relies on human-defined concepts. We show that the masked "
        "objective learns a formal context. We propose a framework for lattice construction.",
        0.5,
    )
    background = {c.sentence: c.background for c in picker.candidates(lookup("What is learned?"), [lattices])}
    assert [background[sentence] for sentence in split_sentences(lattices.text)] == [True, True, False, False]
    # what the paper studies is its topic, not a finding: it restates the question and stays background
    traces = Source.from_text(
        "p13",
        "Eligibility Traces for Off-Policy Evaluation",
        "Off-policy methods learn from logged data. This paper studies off-policy evaluation from confounded data "
        "without overlap. We propose two algorithms that use eligibility traces to bound the value.",
        0.5,
    )
    background = {c.sentence: c.background for c in picker.candidates(lookup("Can the value be bounded?"), [traces])}
    assert [background[sentence] for sentence in split_sentences(traces.text)] == [True, True, False]


PINN = Source.from_text(
    "p10",
    "Scalable Back-Propagation-Free Training of Optical Physics-Informed Neural Networks",
    "Physics-informed neural networks (PINNs) have shown promise in solving partial differential equations "
    "(PDEs), with growing interest in their energy-efficient, real-time training on edge devices. Photonic "
    "computing offers a potential solution due to its high operation speed. However, the lack of photonic memory "
    "and the large footprint of current photonic devices prevent training realistic-size PINNs on photonic chips. "
    "This paper proposes a completely back-propagation-free (BP-free) and highly salable framework to enable "
    "training real-size PINNs on silicon photonics platforms. Our approach involves three key innovations: (1) a "
    "sparse-grid Stein derivative estimator to avoid the BP in the loss evaluation of a PINN, (2) a "
    "dimension-reduced zeroth-order optimization via tensor-train decomposition to achieve better scalability and "
    "convergence in BP-free training, and (3) a scalable on-chip photonic PINN training accelerator design using "
    "photonic tensor cores. We validate the performance of our numerical methods in both low- and "
    "high-dimensional PDE benchmarks. Our framework addresses the fundamental challenges of photonic AI and will "
    "enable real-time training of real-size PINNs on photonic chips.",
    0.7,
)


def test_a_how_question_gets_a_sentence_that_says_how(embeddings):
    """The two best sentences restated the question ("… will enable real-time training of real-size PINNs on
    photonic chips"); the one that says how (the Stein estimator, zeroth-order optimization) scored too far below."""
    picker = EvidencePicker(embeddings, AnswerConfig(), RetrievalConfig(min_evidence=0))
    question = "How can physics-informed neural networks be trained on photonic chips without backpropagation?"
    picked = [item.sentence for item in picker.pick(lookup(question), [PINN])]
    assert any("Stein derivative estimator" in sentence for sentence in picked)
    assert len(picked) <= AnswerConfig().gated_sentences
    # a question that asks no "how" gets no such sentence
    asked = [item.sentence for item in picker.pick(lookup("Which chips can train physics-informed networks?"), [PINN])]
    assert not any("Stein" in sentence for sentence in asked)


DIFF_PROMPT = Source.from_text(
    "p11",
    "Diff-Prompt: Diffusion-Driven Prompt Generator with Mask Supervision",
    "Prompt learning has shown promise. We propose Diff-Prompt. Specifically, our approach consists of three stages. "
    "In the first stage, we train a Mask-VAE to compress the masks into latent space. In the second stage, we "
    "leverage an improved Diffusion Transformer (DiT) to train a prompt generator. In the third stage, we align the "
    "denoising process with the pre-trained model. The results validate our approach.",
    0.7,
)
THIRD = "In the third stage, we align the denoising process with the pre-trained model."


def test_a_later_step_of_a_method_told_stage_by_stage_is_quoted_after_the_steps_before_it(embeddings):
    """ "How does Diff-Prompt produce prompts?" was answered by its third stage alone: the Mask-VAE and the
    Diffusion Transformer, asked for, are the first two."""
    picker = EvidencePicker(embeddings, AnswerConfig(), RetrievalConfig(min_evidence=0))
    picked = [item.sentence for item in picker.pick(lookup("How does Diff-Prompt produce its prompts?"), [DIFF_PROMPT])]
    assert picked[:2] == [
        "In the first stage, we train a Mask-VAE to compress the masks into latent space.",
        "In the second stage, we leverage an improved Diffusion Transformer (DiT) to train a prompt generator.",
    ]
    third = [Evidence(1, THIRD, 1.0), Evidence(1, "The results validate our approach.", 0.9)]
    assert [item.sentence for item in with_earlier_steps(third, [DIFF_PROMPT], 2)] == [picked[0], THIRD]
    first = [Evidence(1, picked[0], 1.0)]  # the first step needs none before it
    assert with_earlier_steps(first, [DIFF_PROMPT], 3) == first


def test_a_seed_abstract_s_definition_after_what_the_authors_do_is_not_background(seeded):
    """The bright-ending abstract: "To address these, we identify a novel 'bright ending' (BE) anomaly …", then
    "BE refers to a distinct cross-attention pattern …", then "Equipped with this, we propose …". The definition
    was background by its place, and the abstract's opening came with it into the answer."""
    answer = seeded.answer("What is the 'bright ending' (BE) anomaly observed in text-to-image diffusion models?")
    sentences = [check.text for check in answer.checks] or split_sentences(answer.text)
    assert sentences[0].startswith("BE refers to a distinct cross-attention pattern")
    assert not any("unprecedented proficiency" in sentence for sentence in sentences)


def test_a_model_must_keep_the_news_of_the_sentence_a_quote_points_back_at():
    """The bundled model answered "It leverages clustering … via policy-gradient estimators" and kept half of that
    sentence's news, but not "two-stage", which the sentence it points back at says; the answer stood."""
    item = Evidence(1, LEVERAGES, 1.0, before="To overcome these issues, we propose POTEC, a two-stage algorithm.")
    told = news(lookup("How does POTEC handle large action spaces?"), [item])
    assert {"two-st", "algori", "levera", "cluste"} <= told
    restated = "POTEC handles large action spaces [1]. It leverages clustering in the action space [1]."
    checks = [SentenceCheck(text, (1,), True, 0.9) for text in split_sentences(restated)]
    assert set_aside(checks, [], told, 0.5)
    alone = news(lookup("How does POTEC handle large action spaces?"), [replace(item, before="")])
    assert not set_aside(checks, [], alone, 0.5)  # on the quoted sentence's news alone, it stood
