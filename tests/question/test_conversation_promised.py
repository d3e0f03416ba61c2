"""Follow-ups the README promises (issue 66), asked as a user types them into `rag chat` from a file, over the
real seed index: a compare of the paper in focus with one it names, "more like this one", "anything similar?", a
stored field asked by pronoun ("did it get in?", "whose paper is it?"), and which of a list's papers have code."""

from __future__ import annotations

from pathlib import Path

import pytest
from clirun import rag

pytestmark = pytest.mark.slow

RXNFLOW = "Generative Flows on Synthetic Pathway for Drug Design"
NEXT_MOL = "NExT-Mol: 3D Diffusion Meets 1D Language Modeling for 3D Molecule Generation"


def chat(seeded, tmp_path: Path, *questions: str) -> dict[str, str]:
    """Each question's answer as `rag chat FILE` prints it (its lines up to the next question)."""
    asked = tmp_path / "questions.txt"
    asked.write_text("\n".join(questions) + "\n", encoding="utf-8")
    done = rag("chat", str(asked), index=Path(seeded.config.vectorstore.path))
    assert done.returncode == 0, done.stderr
    turns = done.stdout.split("\n> ")
    return {turn.partition("\n")[0].lstrip("> "): turn.partition("\n")[2] for turn in turns}


def test_a_compare_of_the_paper_in_focus_with_one_it_names_sets_both_side_by_side(seeded, tmp_path):
    said = chat(seeded, tmp_path, "Tell me about RxnFlow", "how does it compare to NExT-Mol?")
    compared = said["how does it compare to NExT-Mol?"]
    assert "no indexed abstract is about it" not in compared
    assert compared.startswith(f"RxnFlow (“{RXNFLOW}”)") and f"\nNExT-Mol (“{NEXT_MOL}”)" in compared, compared
    # side by side on what each found too, each cited: RxnFlow's result holds its numbers
    assert "\n  result: Furthermore, RxnFlow achieves state-of-the-art performance on CrossDocked2020" in compared
    assert compared.count("\n  result: ") == 2 and "34.8% synthesizability. [1]" in compared, compared


@pytest.mark.parametrize("follow_up", ["more like this one", "anything similar?"])
def test_more_like_the_paper_in_focus_lists_related_papers(seeded, tmp_path, follow_up):
    said = chat(seeded, tmp_path, "Tell me about RxnFlow", follow_up)[follow_up]
    assert said.startswith(f"Papers related to “{RXNFLOW}” [1]"), said[:300]
    assert f"1. {NEXT_MOL} [2]" in said


def test_a_stored_field_asked_by_pronoun_is_answered_from_the_paper_in_focus(seeded, tmp_path):
    said = chat(seeded, tmp_path, "Tell me about RxnFlow", "did it get in?", "whose paper is it?")
    assert said["did it get in?"].startswith(f"“{RXNFLOW}” [1]: status Poster (accepted)."), said["did it get in?"]
    whose = said["whose paper is it?"]
    assert whose.startswith(f"“{RXNFLOW}” [1]: authors") and "Seonghwan Seo" in whose, whose


def test_which_of_a_list_s_papers_release_code_is_answered_for_every_paper_of_the_list(seeded, tmp_path):
    said = chat(seeded, tmp_path, "Which papers generate molecules?", "which of these release code?")
    code = said["which of these release code?"]
    assert code.startswith("2 of these 2 papers link their code in the abstract:"), code
    assert "code at https://github.com/SeonghwanSeo/RxnFlow" in code and "https://github.com/acharkq/NExT-Mol" in code


def test_a_list_streams_a_line_at_a_time_and_the_lines_make_the_answer(seeded):
    *pieces, answer = seeded.stream_answer("Which papers generate molecules?")
    assert answer.kind == "list" and len(pieces) == len(answer.text.splitlines()) > 2
    assert "".join(pieces) == answer.text and all(piece.count("\n") <= 1 for piece in pieces)


def test_who_wrote_a_paper_named_by_a_word_of_its_title_is_answered_from_its_stored_authors(seeded, tmp_path):
    said = chat(seeded, tmp_path, "who wrote the Hanabi paper?")["who wrote the Hanabi paper?"]
    assert said.startswith("“A Generalist Hanabi Agent” [1]: authors") and "Sarath Chandar" in said, said
