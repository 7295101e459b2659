"""`experiment` from the command line: a 3-value batch-size sweep of a tiny MLP trained on this
CPU, its runs stored, the summary one row per value with the measured time and accuracy."""

from __future__ import annotations

import json
import os

import pytest

from core.storage.store import Store
from tests.conftest import TINY_MLP

pytestmark = pytest.mark.skipif(os.name != "posix", reason="process groups and signals as on POSIX")

TINY = TINY_MLP


def test_a_batch_size_sweep_trains_each_value_and_tabulates_them(cli, write_json, _isolated_db) -> None:
    code, out, err = cli("experiment", str(write_json(TINY)), "--vary", "training.batch_size=16,32,64", "--json")
    assert code == 0, out + err
    summary = json.loads(out[out.index("{") :])
    rows = summary["rows"]
    assert [r["value"] for r in rows] == [16, 32, 64]
    for r in rows:
        assert r["runs"] == 1 and r["failed"] == 0
        assert r["training_time_s"]["mean"] > 0 and 0 <= r["accuracy"]["mean"] <= 1
        assert r["step_s"]["mean"] > 0 and r["predicted_step_s"] > 0
    assert "run 3/3 (training.batch_size=64)" in err
    store = Store.open(_isolated_db)
    names = [store.run(i)["name"] for i in summary["run_ids"]]
    assert names == [f"tiny MLP: training.batch_size={b}" for b in (16, 32, 64)]
    batches = [store.run(i)["workload"]["trainer"]["batch_size"] for i in summary["run_ids"]]
    assert batches == [16, 32, 64]
    # the experiment groups its runs: the results browser lists it, with its summary
    (row,) = store.results(kind="experiment")
    assert row["name"] == "tiny MLP: training.batch_size" and row["status"] == "finished"
    exp = store.experiment(summary["experiment_id"])
    assert exp["run_ids"] == summary["run_ids"] and exp["kind"] == "one-factor"
    assert [r["value"] for r in exp["summary"]["rows"]] == [16, 32, 64]


def test_a_bad_value_is_refused_before_anything_runs(cli, write_json, _isolated_db) -> None:
    code, _out, err = cli("experiment", str(write_json(TINY)), "--vary", "training.batch_size=16,0")
    assert code == 2 and "training.batch_size=0" in err
    assert Store.open(_isolated_db).runs() == []  # nothing was trained


def test_an_option_that_sets_the_varied_field_is_refused(cli, write_json, _isolated_db) -> None:
    code, _out, err = cli("experiment", str(write_json(TINY)), "--vary", "epochs=1,3", "--epochs", "1")
    assert code == 2 and "--epochs sets what --vary epochs varies: give one of them" in err
    code, _out, err = cli("experiment", str(write_json(TINY)), "--vary", "data.samples=100,1000", "--samples", "100")
    assert code == 2 and "--samples sets what --vary data.samples varies" in err
    assert Store.open(_isolated_db).runs() == []
