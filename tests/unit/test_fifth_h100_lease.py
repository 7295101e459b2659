"""A fifth lent H100 (2026-11-27), measured after every constant of the GPU step model was set: 93 training
steps of 60 random architectures of a seed nothing was fitted on (benchmarks/gpu_suite.py --random 60 --seed
2028 --random-only --shuffle 2028 --probe-every 1), each with the host probe before and after it and the time
the host took to issue it; and 16 of its convolutional steps again, each in a fresh process (--isolate).
What a user would notice: the step times TrainRig quotes for networks it never saw hold on this GPU, and a
short training run of a small CNN takes what the suite's long process measured."""

from __future__ import annotations

import statistics

from benchmarks.accuracy_suite_recorded import H100_FIFTH, H100_ISOLATED, cases, recorded


def _key(name: str, precision: str, batch: int) -> tuple[str, str, int]:
    return name, precision, batch


def _line_key(m: dict) -> tuple[str, str, int]:
    t = m["workload"]["training"]
    return _key(m["name"], t["precision"], t["batch_size"])


def test_every_line_carries_its_hosts_probes_and_issue_time() -> None:
    lines = recorded(H100_FIFTH)
    assert len(lines) == 93 and {m["device"] for m in lines} == {"NVIDIA H100 80GB HBM3"}
    assert all(m["name"].startswith("random-2028-") for m in lines)
    # a probe before and after each step (1.39–2.66 ms: the host 0.64–1.2 × the reference's 1.69 ms), and the
    # host's issue time, never more than the step
    assert all(1.2e-3 < m["host_probe_s"] < 2.8e-3 and 1.2e-3 < m["host_probe_after_s"] < 2.8e-3 for m in lines)
    assert all(0 < m["host_issue_s"] <= m["step_time_s"] for m in lines)
    assert all(m["optimizer_skipped"] == 0 for m in lines)  # learning rate 0: every step trained


def test_an_unseen_seed_on_a_fifth_h100_meets_spec_9_in_every_family() -> None:
    rows = cases(H100_FIFTH, calibrated=True)
    errors = [r["error"] for r in rows]
    # each at the mean of the probes on both sides of it: 90 of 93 (97 %) within 25 %, mean |error| 10.6 %
    # (88 and 11.3 % at the probe before it alone; SPEC 9: 90 %, 15 %)
    assert sum(abs(e) <= 0.25 for e in errors) >= 90 and statistics.mean(abs(e) for e in errors) <= 0.11
    families: dict[str, list[float]] = {}
    for r in rows:
        families.setdefault(r["family"], []).append(r["error"])
    assert set(families) == {"random mlp", "random cnn", "random encoder", "random decoder"}
    for family, errs in families.items():  # 16 of 16, 30 of 32, 15 of 15, 29 of 30
        assert sum(abs(e) <= 0.25 for e in errs) >= 0.9 * len(errs), family


def test_the_hosts_side_of_a_host_bound_step_is_what_the_host_took_to_issue_it() -> None:
    # the model's host seconds against the measured issue time (fp16 left out: GradScaler waits for the device)
    rows = [r for r in cases(H100_FIFTH, calibrated=True) if r["host_bound"] and r["precision"] != "fp16_mixed"]
    errors = [r["predicted_host_s"] / r["measured_host_s"] - 1 for r in rows]
    assert len(errors) == 37 and sum(abs(e) <= 0.25 for e in errors) >= 35  # 95 %, median −2 %
    assert abs(statistics.median(errors)) <= 0.03


def test_a_small_cnn_runs_as_fast_in_a_fresh_process_as_in_the_suites_long_one() -> None:
    # the last session's hypothesis, that the suite's long process ran small CNNs 17–26 % slow, refuted: the
    # same 16 steps in fresh processes took the same time (median ratio 1.00, 0.70–1.13)
    suite = {_line_key(m): m for m in recorded(H100_FIFTH)}
    isolated = recorded(H100_ISOLATED)
    assert len(isolated) == 16 and all(m["isolated"] and m["family"] == "random cnn" for m in isolated)
    ratios = [m["step_time_s"] / suite[_line_key(m)]["step_time_s"] for m in isolated]
    assert 0.97 <= statistics.median(ratios) <= 1.03
    # so the model reads them as fast in both (median −13 % in both): what it misses on
    # these CNNs is the host's, not the suite's process
    alone = {_key(r["name"], r["precision"], r["batch"]): r["error"] for r in cases(H100_ISOLATED, calibrated=True)}
    within = {_key(r["name"], r["precision"], r["batch"]): r["error"] for r in cases(H100_FIFTH, calibrated=True)}
    assert abs(statistics.median(alone.values()) - statistics.median(within[k] for k in alone)) <= 0.03
    assert sum(abs(e) <= 0.25 for e in alone.values()) >= 15  # 15 of 16 within 25 %
