"""evaluation.lodo's dense pseudo-relevance feedback table on a toy BEIR set (real tantivy BM25, a fake embedder)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evaluation.beir import load_beir
from evaluation.lodo import DEFAULT_BM25, PRF_GRID, SetRuns, bm25_runs, dense_runs, prf_table
from tests.fakes import FakeTopicEmbedder

pytestmark = pytest.mark.unit


def _toy(folder: Path) -> None:
    folder.mkdir()
    docs = {"d1": "Thermostat battery lasts two years", "d2": "Camera night vision uses infrared light",
            "d3": "Thermostat wiring needs a C-wire", "d4": "Hub setup takes five minutes"}
    (folder / "corpus.jsonl").write_text("\n".join(json.dumps({"_id": k, "title": "", "text": v})
                                                   for k, v in docs.items()))
    (folder / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "thermostat battery"}) + "\n" +
                                          json.dumps({"_id": "q2", "text": "camera at night"}))
    (folder / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t1\n")


def test_prf_table_prints_every_setting_and_the_held_out_choice(tmp_path: Path) -> None:
    _toy(tmp_path / "toy")
    ds = load_beir(tmp_path / "toy")
    embedder = FakeTopicEmbedder(["thermostat"])
    runs = SetRuns(ds, bm25_runs(ds, tmp_path / "bm25"), {}, dense_runs(ds, embedder, tmp_path / "cache"))
    table = prf_table([runs], embedder, tmp_path / "cache", DEFAULT_BM25)
    rows = {line.split(" | ")[0].strip("| "): line for line in table.splitlines() if line.startswith("| ")}
    assert "off" in rows and all(f"k={k},beta={b:g}" in rows for k, b in PRF_GRID)
    # both queries find their one relevant document first with BM25 and the topic embedder: nDCG@10 1.0 everywhere
    assert rows["off"].split(" | ")[1] == "1.0000"
    assert "| toy |" in table  # the leave-one-dataset-out row (with one set, chosen on that set)
