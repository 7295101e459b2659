"""`python main.py size`: the JSON a script reads and the summary a person reads."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from core.storage.store import Store

ROOT = Path(__file__).resolve().parents[2]


def test_size_json_has_every_documented_field(cli, write_json, seed_doc) -> None:
    code, out, err = cli(
        "size", str(write_json(seed_doc)), "--candidate", "4090", "--candidate", "Tesla P40", "--json", "--no-save"
    )
    assert code == 0, err
    doc = json.loads(out)
    assert doc["parameters"] == 569_354
    assert doc["flops"]["forward_per_sample"] == 1_135_616  # 2·(75·512 + 2·512² + 512·10)
    assert doc["flops"]["train_total"] == 3 * 1_135_616 * 80_909 * 400
    mem = doc["memory"]
    for key in ("weights", "gradients", "optimizer_states", "activations", "data", "overhead", "total"):
        assert isinstance(mem[key], int) and mem[key] >= 0, key
    assert mem["weights"] == 569_354 * 4
    # at the peak, early in backward, only the output layer's gradients exist yet: 512 × 10 + 10 floats
    assert mem["peak_phase"] == "backward" and mem["gradients"] == (512 * 10 + 10) * 4
    parts = ("weights", "gradients", "optimizer_states", "activations", "data", "temporaries", "weight_copies")
    assert sum(mem[k] for k in (*parts, "workspace")) == mem["tensor_peak"]
    assert mem["optimizer_states"] == 2 * 569_354 * 4  # Adam: two moments
    assert mem["overhead"] > 0  # CUDA context on the 4090
    assert mem["device"] == "NVIDIA GeForce RTX 4090"
    seed = doc["seed"]
    for key in ("n_na_bytes", "k1", "t1_ops", "t2_ops", "peak_flops", "c_train_flop", "t_train_s", "k1_meaning"):
        assert key in seed
    assert [c["device"] for c in doc["candidates"]] == ["NVIDIA GeForce RTX 4090", "NVIDIA Tesla P40"]
    for c in doc["candidates"]:
        for key in (
            "count",
            "fits",
            "memory_per_device",
            "step_time_s",
            "training_time_s",
            "energy_kwh",
            "capex",
            "tco",
            "assumptions",
        ):
            assert key in c
        assert c["fits"] is True
        assert c["largest_batch"] > 512
        assert c["training_time_s"] == pytest.approx(c["step_time_s"] * 159 * 400)  # ceil(80909/512) = 159
    assert doc["dataset"]["bytes"] == 80_909 * 85 * 4
    assert doc["dataset"]["fits_in_ram"] is True and doc["dataset"]["fits_in_ramdisk"] is True
    assert all(c["dataset_fits_in_device_memory"] for c in doc["candidates"])
    # the P40 has no tensor cores and a third of the 4090's FP32 peak: it must be slower
    assert doc["candidates"][1]["step"]["compute_s"] > doc["candidates"][0]["step"]["compute_s"]


def test_default_candidate_is_this_machine(cli, write_json, seed_doc) -> None:
    code, out, _ = cli("size", str(write_json(seed_doc)), "--json", "--no-save")
    assert code == 0
    (cand,) = json.loads(out)["candidates"]
    assert cand["device"].startswith("this machine")


def test_human_summary_names_the_sources(cli, write_json, seed_doc) -> None:
    code, out, _ = cli("size", str(write_json(seed_doc)), "-c", "4090", "--no-save")
    assert code == 0
    assert "569,354 parameters" in out
    assert "Jamgharyan eq. 4" in out and "Hooda eq. 3" in out
    assert "NVIDIA GeForce RTX 4090 × 1: fits" in out


@pytest.mark.parametrize(("name", "words"), [("RTX 4900", "closest entries"), ("NVIDIA", "ambiguous")])
def test_unknown_or_ambiguous_candidate_exits_2(cli, write_json, seed_doc, name: str, words: str) -> None:
    code, out, err = cli("size", str(write_json(seed_doc)), "--candidate", name)
    assert code == 2
    assert words in err and out == ""


def test_list_presets_names_the_spec_presets(cli) -> None:
    code, out, _ = cli("size", "--list-presets", "--json")
    names = {p["name"] for p in json.loads(out)}
    assert code == 0
    assert {
        "seed-mlp",
        "rfcn-res50-pascal",
        "rfcn-res101-pascal",
        "ssd-pascal-vggvd-300",
        "ssd-pascal-vggvd-512",
        "ssd-pascal-mobilenet-ft",
        "lenet-5",
        "resnet-50",
        "lstm-lm",
        "bert-base",
        "gpt2-small",
        "llama-8b",
    } <= names


def test_preset_workload_with_multi_gpu_sharding(cli, write_json) -> None:
    doc = {"name": "llama", "model": {"preset": "llama-8b"}, "hardware": {"gpu_count": {"min": 1, "max": 8}}}
    code, out, err = cli("size", str(write_json(doc)), "-c", "H100 SXM", "--json", "--no-save")
    assert code == 0, err
    cands = json.loads(out)["candidates"]
    assert [c["count"] for c in cands] == [1, 2, 4, 8]
    per_device = [c["memory_per_device"]["total"] for c in cands]
    assert per_device == sorted(per_device, reverse=True)  # FSDP: more GPUs, less memory each
    assert cands[0]["fits"] is False and cands[-1]["fits"] is True


def test_sizing_is_recorded_in_the_database(cli, write_json, seed_doc, _isolated_db) -> None:
    code, _, _ = cli("size", str(write_json(seed_doc)), "-c", "4090", "--json")
    assert code == 0
    store = Store.open(_isolated_db)
    (row,) = store.sizings()
    assert row["name"] == "seed MLP" and "RTX 4090" in row["candidates"]
    store.close()


def test_main_py_runs_as_a_script_without_importing_torch_or_qt(tmp_path, write_json, seed_doc) -> None:
    code = (
        "import runpy, sys; sys.argv = ['main.py', '--db', sys.argv[1], 'size', sys.argv[2], '--json'];\n"
        "try:\n    runpy.run_path('main.py', run_name='__main__')\nexcept SystemExit as e:\n    rc = e.code\n"
        "print('MODULES', 'torch' in sys.modules, 'PySide6' in sys.modules, rc, file=sys.stderr)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "x.db"), str(write_json(seed_doc))],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "MODULES False False 0" in proc.stderr
    assert json.loads(proc.stdout)["parameters"] == 569_354


def test_an_unexpected_error_is_one_line_with_the_log_path_and_debug_shows_the_traceback(
    cli, write_json, seed_doc, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import cli.size as size_command

    def broken(args, store):
        raise ZeroDivisionError("division by zero in a bug")

    monkeypatch.setattr(size_command, "run", broken)  # the parser binds it when main() builds it
    code, out, err = cli("size", str(write_json(seed_doc)), "--no-save")
    log = tmp_path / "log" / "trainrig.log"
    assert code == 1 and out == ""
    assert err.strip().splitlines() == [
        f"trainrig size: unexpected error (ZeroDivisionError: division by zero in a bug); details in {log} "
        "— please report it"
    ]
    assert "Traceback (most recent call last)" in log.read_text() and "in broken" in log.read_text()
    code, out, err = cli("--debug", "size", str(write_json(seed_doc)), "--no-save")
    assert code == 1 and "Traceback (most recent call last)" in err and 'raise ZeroDivisionError("division' in err


def test_commands_that_paint_with_qt_say_so_when_pyside6_is_missing(cli, write_json, seed_doc, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "PySide6", None)  # as in an environment without it
    workload = str(write_json(seed_doc))
    code, out, err = cli(
        "report", workload, "-c", "4090", "--pdf", str(tmp_path / "r.pdf"), "--csv", str(tmp_path / "r.csv")
    )
    assert code == 2 and out == ""
    assert err.strip() == (
        "trainrig report: the PDF report needs PySide6: pip install -r requirements.txt (--csv alone works without it)"
    )
    assert list(tmp_path.glob("r.*")) == []  # nothing half-written
    code, out, err = cli("--self-test")
    assert code == 2 and err.strip() == "trainrig: the window needs PySide6: pip install -r requirements.txt"
    code, out, err = cli("report", workload, "-c", "4090", "--csv", str(tmp_path / "r.csv"))
    assert code == 0 and out.strip() == f"wrote {tmp_path / 'r.csv'}"


def test_inventory_save_says_what_it_saved(cli) -> None:
    # `inventory --save` printed the inventory and nothing about the snapshot it recorded
    code, out, err = cli("inventory", "--save")
    assert code == 0, err
    assert "saved: inventory snapshot #1 in " in out
    code, out, _ = cli("inventory")
    assert code == 0 and "saved:" not in out
