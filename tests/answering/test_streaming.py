"""SentenceStream: a model's text in, token-sized pieces at a time; out, each complete sentence its cited
source supports, renumbered to the full source list. Real seed index, real embedding model."""

from __future__ import annotations

from rag.answering.streaming import SentenceStream, shown_text
from rag.question.question import lookup

QUESTION = "How many reaction templates does RxnFlow use?"


def fed(seeded, text: str, size: int = 3) -> tuple[list[list[str]], list[str], SentenceStream]:
    """What each piece of `text` (cut every `size` characters) let out, what the end let out, and the stream."""
    sources = seeded.retrieve(QUESTION)
    stream = SentenceStream(seeded.checker, sources, seeded.picker.pick(lookup(QUESTION), sources))
    out = [[shown_text(check) for check in stream.feed(text[i : i + size])] for i in range(0, len(text), size)]
    return out, [shown_text(check) for check in stream.finish()], stream


def test_a_sentence_comes_out_once_the_next_one_begins_and_the_last_at_the_end(seeded):
    text = (
        "RxnFlow assembles molecules with 71 reaction templates [1]. "
        "RxnFlow assembles molecules from building blocks [1]."
    )
    out, end, _ = fed(seeded, text)
    shown = [sentence for piece in out for sentence in piece]
    assert shown == ["RxnFlow assembles molecules with 71 reaction templates [1]."]
    assert out[-1] == [] and len([piece for piece in out if piece]) == 1  # not before the next sentence began
    assert end == ["RxnFlow assembles molecules from building blocks [1]."]


def test_unsupported_repeated_and_unfinished_sentences_never_come_out(seeded):
    text = (
        "RxnFlow assembles molecules with 71 reaction templates [1]. It was trained on 12,345 proteins [1]. "
        "RxnFlow assembles molecules with 71 reaction templates [1]. And then the model stops mid"
    )
    out, end, stream = fed(seeded, text, size=5)
    shown = [sentence for piece in out for sentence in piece] + end
    assert shown == ["RxnFlow assembles molecules with 71 reaction templates [1]."]
    assert [check.supported for check in stream.checks] == [True, False]  # the repeat is not checked again


def test_markers_are_renumbered_to_the_full_source_list(seeded):
    sources = seeded.retrieve(QUESTION)
    evidence = seeded.picker.pick(lookup(QUESTION), sources)
    stream = SentenceStream(seeded.checker, sources, evidence)
    [check] = stream.feed("RxnFlow assembles molecules with 71 reaction templates [1].") + stream.finish()
    assert check.cited == (evidence[0].number,) and check.supported


def test_a_sentence_that_only_shortens_an_evidence_sentence_comes_out_as_that_sentence_quoted(seeded):
    # "uses 71 reaction templates" says nothing the evidence sentence doesn't, and leaves out its 1.2 million
    # building blocks: the abstract's own words stand in its place, once, and count as quoted, not the model's.
    out, end, stream = fed(seeded, "RxnFlow uses 71 reaction templates [1]. RxnFlow uses 71 templates [1].")
    shown = [sentence for piece in out for sentence in piece] + end
    assert len(shown) == 1 and "1.2 million building blocks and 71 reaction templates" in shown[0]
    assert shown[0].endswith("[1].") and "uses" not in shown[0]
    assert stream.own == 0


def test_a_sentence_that_says_more_than_the_evidence_stays_in_the_models_words(seeded):
    _, end, stream = fed(seeded, "RxnFlow draws on 71 reaction templates to assemble molecules [1].")
    assert end == ["RxnFlow draws on 71 reaction templates to assemble molecules [1]."] and stream.own == 1
