"""``python main.py runs``: the results list as a text table and as JSON, filters, and results
archives in and out from the command line."""

from __future__ import annotations

import json
from pathlib import Path

from core.storage.store import Store


def _fill(db: Path) -> None:
    store = Store.open(db)
    for name, acc, step in (("seed MLP baseline", 0.9134, 0.0042), ("seed MLP wide", 0.95, 0.0103)):
        rid = store.start_run("trained", name, device="cpu", sampling={"columns": ["cpu_percent"]})
        store.add_samples(rid, [(i / 10, [float(i)]) for i in range(12)])
        store.finish_run(
            rid,
            "finished",
            measured={"median_step_s": step, "training_memory_bytes": 3 * 2**20},
            metrics={"accuracy": acc},
        )
    store.set_tags("run", 2, ["paper"])
    store.save_sizing("llama", {"name": "llama"}, ["H100 SXM"], {"candidates": []})
    store.close()


def test_runs_lists_every_result_in_aligned_columns(cli, _isolated_db: Path) -> None:
    _fill(_isolated_db)
    code, out, err = cli("runs")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].split()[:3] == ["key", "name", "created"]
    assert len(lines) == 4 and {ln.split()[0] for ln in lines[1:]} == {"run:1", "run:2", "sizing:1"}
    wide = next(ln for ln in lines if ln.startswith("run:2"))
    assert "10.3 ms" in wide and "3 MiB" in wide and "0.950" in wide and wide.endswith("paper")
    # the figure columns are right-aligned: each ends where its header ends
    end = lines[0].index("meas. step") + len("meas. step")
    for ln in lines[1:]:
        if ln.startswith("run:"):
            assert ln[end - 1] != " " and ln[end] == " "


def test_runs_json_filters_by_kind_and_tag(cli, _isolated_db: Path) -> None:
    _fill(_isolated_db)
    code, out, _ = cli("runs", "--json", "--kind", "run")
    rows = json.loads(out)
    assert code == 0 and [r["name"] for r in rows] == ["seed MLP wide", "seed MLP baseline"]
    assert rows[1]["accuracy"] == 0.9134 and rows[1]["measured_step_s"] == 0.0042 and rows[1]["tags"] == []
    code, out, _ = cli("runs", "--json", "--tag", "PAPER")
    assert [r["key"] for r in json.loads(out)] == ["run:2"]
    code, out, _ = cli("runs", "--json", "--sort", "accuracy", "--ascending", "--kind", "run", "--kind", "sizing")
    assert [r["key"] for r in json.loads(out)] == ["run:1", "run:2", "sizing:1"]


def test_runs_without_a_database_says_so_and_creates_none(cli, _isolated_db: Path) -> None:
    code, out, _ = cli("runs")
    assert code == 0 and "does not exist yet" in out and not _isolated_db.exists()
    code, out, _ = cli("runs", "--json")
    assert code == 0 and json.loads(out) == []


def test_an_archive_moves_results_to_another_database(cli, _isolated_db: Path, tmp_path: Path) -> None:
    _fill(_isolated_db)
    archive = tmp_path / "lab.zip"
    code, out, err = cli("runs", "--kind", "run", "--export-archive", str(archive))
    assert code == 0, err
    assert out.strip() == f"wrote 2 result(s) to {archive}"
    other = tmp_path / "other.db"
    code, out, _ = cli("--db", str(other), "runs", "--import-archive", str(archive))
    assert code == 0 and out.strip() == f"imported 2 result(s) from {archive}"
    code, out, _ = cli("--db", str(other), "runs", "--import-archive", str(archive))
    assert code == 0 and "imported 0 result(s)" in out and "2 already in" in out
    code, out, _ = cli("--db", str(other), "runs", "--json")
    assert sorted(r["name"] for r in json.loads(out)) == ["seed MLP baseline", "seed MLP wide"]


def test_a_bad_archive_or_an_empty_export_is_an_error_that_names_it(cli, _isolated_db: Path, tmp_path: Path) -> None:
    _fill(_isolated_db)
    bad = tmp_path / "bad.zip"
    bad.write_text("not an archive")
    code, _, err = cli("runs", "--import-archive", str(bad))
    assert code == 2 and str(bad) in err and "not a TrainRig results archive" in err and "Traceback" not in err
    code, _, err = cli("runs", "--tag", "nothing-has-it", "--export-archive", str(tmp_path / "none.zip"))
    assert code == 2 and "no archive was written" in err and not (tmp_path / "none.zip").exists()


def test_a_bad_date_or_limit_is_refused_in_one_line(cli, _isolated_db: Path) -> None:
    _fill(_isolated_db)
    code, _, err = cli("runs", "--since", "last week")
    assert code == 2 and "'last week' is not a date" in err and "Traceback" not in err
    code, _, err = cli("runs", "--limit", "0")
    assert code == 2 and "--limit must be 1 or more" in err
    code, _, err = cli("runs", "--limit", "99999999999999999999")  # OverflowError from SQLite: "unexpected error"
    assert code == 2 and "at most 2^62" in err and "unexpected" not in err


def test_a_sizing_is_listed_with_the_candidate_it_recommends(cli, write_json, _isolated_db: Path) -> None:
    """With no price known the decision buys nothing, and the list showed the first candidate that fits (this
    machine's 4.92 ms) beside a recommendation of the user's own GPU × 2 (2.07 ms). (This machine is now
    advised where it does the job, so two custom GPUs stand in: the first listed is the slower.)"""
    gpu = {"memory_gb": 16, "memory_bandwidth_gbs": 900}
    doc = {
        "name": "unpriced",
        "model": {"preset": "lenet-5"},
        "hardware": {
            "candidates": ["OldGPU", "MyGPU"],
            "gpu_count": {"min": 1, "max": 2},
            "custom": [{"name": "OldGPU", "fp32_tflops": 2, **gpu}, {"name": "MyGPU", "fp32_tflops": 40, **gpu}],
        },
    }
    code, out, _ = cli("size", str(write_json(doc)), "--json")
    sized = json.loads(out)
    assert code == 0 and sized["recommended"] == {"device": "MyGPU", "count": 2, "nodes": 1}
    mine = next(c for c in sized["candidates"] if c["device"] == "MyGPU" and c["count"] == 2)
    code, out, _ = cli("runs", "--json", "--kind", "sizing")
    (row,) = json.loads(out)
    assert row["predicted_step_s"] == mine["step_time_s"] and row["training_time_s"] == mine["training_time_s"]


def test_a_sizing_nothing_fits_lists_no_figures(cli, write_json, _isolated_db: Path) -> None:
    """The list showed a candidate's 29.1 days and 158 GiB beside a sizing in which it does not fit."""
    doc = {"name": "too big", "model": {"preset": "llama-8b"}, "hardware": {"candidates": ["RTX 3060"]}}
    code, out, _ = cli("size", str(write_json(doc)), "--json")
    assert code == 0 and not any(c["fits"] for c in json.loads(out)["candidates"])
    code, out, _ = cli("runs", "--json", "--kind", "sizing")
    (row,) = json.loads(out)
    assert row["status"] == "no candidate fits"
    assert row["predicted_step_s"] is None and row["training_time_s"] is None and row["peak_memory_bytes"] is None
