"""Regenerate what the README and docs/ show from the code as it is, so that they cannot drift:

    python3 docs/make_samples.py            # README's `size` sample, the sample report, screenshots
    python3 docs/make_samples.py --check    # exit 1 when the README's sample differs from the code's

The README's `size` sample is the lines `sample_lines` picks from `size` of the seed MLP on two
catalogue GPUs (no "this machine": the figures are the same on every machine); tests/unit/
test_readme_sample.py fails when the README and the code disagree. The screenshots come from
`main.py --self-test --screenshots`, the sample report from `main.py report`, and the sample run
and experiment reports from a real experiment run here and `main.py runs --report`."""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
COMMAND = ["size", "examples/seed-mlp.json", "--candidate", "4090", "--candidate", "Tesla P40", "--no-save"]
START, END = "<!-- size-sample:start (docs/make_samples.py) -->", "<!-- size-sample:end -->"
# the self-test's screenshots that the README and docs show, by the names they get in docs/
SCREENSHOTS = {
    "2-sizing-wizard-2.png": "screenshot-model.png",
    "2-sizing-wizard-6.png": "screenshot-sizing.png",
}


def size_output() -> str:
    """What `python main.py size` prints for the sample, on an empty database."""
    sys.path.insert(0, str(ROOT))
    import main

    out = io.StringIO()
    with tempfile.TemporaryDirectory() as tmp, contextlib.redirect_stdout(out):
        code = main.main(["--db", str(Path(tmp) / "db"), *COMMAND])
    if code != 0:
        raise SystemExit(f"size exited with {code}")
    return out.getvalue()


def sample_lines(output: str) -> list[str]:
    """The workload's header, the first two seed formulas and the first candidate, with "..." where
    lines are left out."""
    lines = output.splitlines()
    seed = lines.index("Seed formulas (as published)")
    cand = lines.index("Candidates")
    first = [i for i in range(cand + 1, len(lines)) if lines[i].startswith("  ") and not lines[i].startswith("    ")]
    end = first[1] if len(first) > 1 else cand + 6
    return [*lines[:2], "  ...", *lines[seed : seed + 3], "  ...", *lines[cand:end], "  ..."]


def sample_block(output: str) -> str:
    shown = " ".join(a if " " not in a else f'"{a}"' for a in COMMAND)
    return "\n".join([START, "```console", f"$ python main.py {shown}", *sample_lines(output), "```", END])


def readme_block(text: str) -> str:
    start, end = text.index(START), text.index(END) + len(END)
    return text[start:end]


def result_reports(run: list[str], tmp: Path) -> None:
    """Real experiments on this machine: one-factor (the seed MLP at batch 64, 128 and 256, two
    repeats of each), thread scaling, 1 against 2 processes and storage (a temporary folder against
    the RAM disk); the first one's report and its
    first run's, as PDF and CSV; screenshots of each in the Results tab."""
    db = [*run, "--db", str(tmp / "runs.db")]
    quiet = {"cwd": ROOT, "check": True, "stdout": subprocess.DEVNULL}
    subprocess.run([*db, "inventory", "--save"], **quiet)
    vary = ["--vary", "training.batch_size=64,128,256", "--repeats", "2", "--epochs", "3", "--samples", "20000"]
    subprocess.run([*db, "experiment", "examples/seed-mlp.json", *vary], **quiet)  # experiment 1
    subprocess.run([*db, "experiment", "examples/seed-mlp.json", "--threads"], **quiet)  # 2
    processes = ["--processes", "1,2", "--epochs", "3", "--samples", "20000"]
    subprocess.run([*db, "experiment", "examples/seed-mlp.json", *processes], **quiet)  # 3
    folder = tmp / "data"
    folder.mkdir()
    storage = ["--storage", str(folder), "--samples", "4000", "--epochs", "2"]
    subprocess.run([*db, "experiment", "examples/seed-mlp.json", *storage], **quiet)  # 4
    for key, name in (("experiment:1", "sample-experiment-report"), ("run:1", "sample-run-report")):
        pdf, csv = f"docs/{name}.pdf", f"docs/{name}.csv"
        subprocess.run([*db, "runs", "--report", key, "--pdf", pdf, "--csv", csv], cwd=ROOT, check=True)
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    shots = [sys.executable, __file__, "--experiment-shots", str(tmp / "runs.db")]
    subprocess.run(shots, cwd=ROOT, check=True, env=env)


def experiment_shots(db: Path) -> None:
    """The Results tab on those experiments: the one-factor table (details), its six runs compared
    with the repeats as a mean ± band, and the two scaling experiments with their figures."""
    sys.path.insert(0, str(ROOT))
    from PySide6.QtCore import QCoreApplication
    from PySide6.QtWidgets import QApplication

    from core.storage.store import Store
    from gui.app import configure_app
    from gui.tabs.results_tab import ResultsTab

    app = QApplication([])
    configure_app(app)

    def settle(until: object = None, limit_s: float = 20.0) -> None:
        import time

        end = time.monotonic() + limit_s
        while time.monotonic() < end and not (until and until()):  # type: ignore[operator]
            QCoreApplication.processEvents()
            time.sleep(0.02)

    tab = ResultsTab(Store.open(db))
    tab.resize(1366, 900)
    tab.show()
    settle(lambda: tab.model.rowCount() > 0)
    tab.select_keys([("experiment", 1)])
    settle(lambda: "Per value of" in tab.details.text.toPlainText())
    tab.split.setSizes([200, 700])
    settle(limit_s=0.5)
    tab.grab().save(str(ROOT / "docs/screenshot-experiment-table.png"))
    tab.compare_selected()
    settle(lambda: len(tab.compare.runs) == 6)
    tab.compare.repeats.setChecked(True)
    settle(limit_s=0.5)
    tab.grab().save(str(ROOT / "docs/screenshot-experiment.png"))
    tab.pane.setCurrentWidget(tab.details)
    for eid, name in ((2, "screenshot-threads.png"), (3, "screenshot-processes.png"), (4, "screenshot-storage.png")):
        tab.select_keys([("experiment", eid)])
        settle(lambda: f"Experiment #{eid}" in tab.details.text.toPlainText())  # noqa: B023
        settle(limit_s=0.5)
        tab.grab().save(str(ROOT / "docs" / name))
    print("docs/screenshot-experiment*.png, -threads, -processes and -storage.png from the Results tab")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only check the README's sample")
    parser.add_argument("--experiment-shots", type=Path, help=argparse.SUPPRESS)  # the step above, in its own process
    args = parser.parse_args()
    if args.experiment_shots:
        experiment_shots(args.experiment_shots)
        return 0
    text = README.read_text(encoding="utf-8")
    block = sample_block(size_output())
    if args.check:
        same = readme_block(text) == block
        print("README's size sample is current" if same else "README's size sample differs from the code's")
        return 0 if same else 1
    README.write_text(text.replace(readme_block(text), block), encoding="utf-8")
    print("README: size sample rewritten")
    run = [sys.executable, str(ROOT / "main.py")]
    with tempfile.TemporaryDirectory() as tmp:
        report = [*run, "--db", f"{tmp}/db", "report", "examples/llama-8b-finetune.json"]
        subprocess.run(
            [*report, "--pdf", "docs/sample-report.pdf", "--csv", "docs/sample-report.csv"], cwd=ROOT, check=True
        )
        result_reports(run, Path(tmp))
        shots = Path(tmp) / "shots"
        env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
        subprocess.run([*run, "--self-test", "--screenshots", str(shots)], cwd=ROOT, check=True, env=env)
        for source, target in SCREENSHOTS.items():
            shutil.copyfile(shots / source, ROOT / "docs" / target)
            print(f"docs/{target} from the self-test's {source}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
