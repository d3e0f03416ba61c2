"""Lists and counts decided for every paper the filters admit (`questions.membership: judged`, issue 63): the
cheap stage's candidates, each judged by the learned judge shipped in rag/answering/judge.json. Over a real slice
of the ICLR 2025 list (every oral and some posters that mention mixture-of-experts, 40 other papers)."""

from __future__ import annotations

import hashlib
import json
import re

from conftest import MOE, settings_for

from rag.answering.membership import FEATURES, JUDGE_FILE
from rag.core.config import PROJECT_ROOT
from rag.service import RagService


def test_the_shipped_judge_was_trained_on_the_training_file_as_it_is_and_on_today_s_features():
    model = json.loads(JUDGE_FILE.read_text(encoding="utf-8"))
    trained_on = PROJECT_ROOT / model["trained_on"]["file"]
    assert hashlib.sha256(trained_on.read_bytes()).hexdigest() == model["trained_on"]["sha256"], (
        "tests/eval/judge_train.jsonl changed since judge.json was trained: python -m benchmarks.train_judge"
    )
    assert tuple(model["features"]) == FEATURES and len(model["weights"]) == len(FEATURES)


def test_a_judged_count_is_not_bounded_by_the_list_cap_and_lists_every_paper_in_its_sources(moe_index, embeddings):
    settings = settings_for(moe_index, questions={"membership": "judged", "list_cap": 5})
    answer = RagService(settings, embeddings=embeddings).answer("How many papers use mixture-of-experts?")
    assert answer.kind == "count" and not answer.refused
    assert answer.count == len(answer.listed) == len(answer.sources) > 5  # counted past the cap of 5 shown
    head, *lines = answer.text.splitlines()
    assert head == f"{answer.count} papers match “mixture-of-experts”:"
    assert len([line for line in lines if re.match(r"\d+\. ", line)]) == 5
    assert (
        lines[-1]
        == f"… and {answer.count - 5} more: the first 5 shown, every one in the answer's sources and its exports."
    )
    about = [s for s in answer.listed if re.search(MOE, f"{s.title} {s.text}", re.IGNORECASE)]
    assert len(about) >= 0.8 * answer.count, [s.title for s in answer.listed]
    assert answer.line.startswith("judged: the relevance judge")
