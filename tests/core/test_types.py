"""Source's typed passages, and the JSON shape `rag ask --json` keeps from before they were typed."""

from rag.core.types import Match, Passage, Source, Span


def test_a_source_joins_its_passages_and_shows_spans_and_match_under_metadata_as_before():
    passages = (Passage("One. Two.", Span(0, 9, 0.61)), Passage("Five.", Span(30, 35, 0.4)))
    match = Match(ranks={"dense": 2, "bm25": 1}, bm25=3.2, fused=0.31, relevance=0.9, coverage=0.5)
    source = Source("p", "P", passages, 0.61, {"title": "P", "url": ""}, match)
    assert source.text == "One. Two. … Five." == source.to_payload()["passage"]
    assert source.relevance == 0.9
    assert source.to_dict() == {
        "paper_id": "p",
        "title": "P",
        "text": "One. Two. … Five.",
        "score": 0.61,
        "metadata": {
            "title": "P",
            "url": "",
            "passages": [{"start": 0, "end": 9, "score": 0.61}, {"start": 30, "end": 35, "score": 0.4}],
            "match": {"dense_rank": 2, "bm25_rank": 1, "bm25": 3.2, "fused": 0.31, "relevance": 0.9, "coverage": 0.5},
        },
    }
    assert list(source.to_dict()["metadata"]) == ["title", "url", "passages", "match"]


def test_a_source_whose_chunks_vanished_knows_only_its_coverage():
    source = Source("p", "p", (Passage(""),), 0.0, match=Match(coverage=0.25))
    assert source.to_dict()["metadata"] == {"match": {"coverage": 0.25}}
    assert source.text == "" and source.relevance == 0.0


def test_a_source_from_text_holds_one_passage_without_span():
    source = Source.from_text("p", "P", "A whole abstract … with an ellipsis.", 0.5)
    assert source.passages == (Passage("A whole abstract … with an ellipsis."),)
    assert source.text == "A whole abstract … with an ellipsis."


def test_a_share_table_carries_what_each_row_is_out_of_to_the_apis_and_the_terminal():
    from rag.core.tables import Table

    table = Table("primary area", "primary_area", (("theory", 3), ("vision", 1)), 12, 2, "papers", of=(4, 8))
    assert table.to_dict()["columns"] == ["primary area", "papers", "of", "share"]
    assert table.to_dict()["rows"] == [["theory", 3, 4, 75.0], ["vision", 1, 8, 12.5]]
    assert table.plain().splitlines()[1].split() == ["theory", "3", "4", "75.0%"]
    counts = Table("primary area", "primary_area", (("theory", 3),), 3, 1, "papers")
    assert counts.to_dict()["rows"] == [["theory", 3]] and "share" not in counts.plain()
