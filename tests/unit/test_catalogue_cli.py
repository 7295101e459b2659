"""`python main.py catalogue`: the shipped devices, and the user's own devices in the database."""

from __future__ import annotations

import json

import pytest

from core.hardware.platforms import load_platforms

GPU_FIELDS = (
    "name",
    "kind",
    "architecture",
    "compute_capability",
    "cuda_cores",
    "tensor_cores",
    "boost_clock_mhz",
    "fp32_tflops",
    "tf32_tflops",
    "fp16_tflops",
    "memory_gb",
    "memory_type",
    "memory_bandwidth_gbs",
    "tdp_w",
    "interconnect",
    "price_usd",
    "price_date",
    "source",
)


def test_catalogue_lists_its_42_devices_from_maxwell_to_blackwell(cli) -> None:
    code, out, _ = cli("catalogue", "--json")
    assert code == 0
    devices = json.loads(out)
    # 29 GPUs (the README's 21 plus RTX PRO 6000 Blackwell, RTX 5080/5070 Ti/5070/5060 Ti, H100 NVL,
    # GH200 and AMD MI300X), 7 CPUs, TPU v3/v4/v5e, Trainium 1/2 and Intel Gaudi 3
    assert len(devices) == 42
    kinds = [d["kind"] for d in devices]
    assert (kinds.count("gpu"), kinds.count("cpu"), kinds.count("tpu"), kinds.count("accelerator")) == (29, 7, 3, 3)
    names = {d["name"] for d in devices}
    for required in (
        "NVIDIA Quadro M4000",
        "NVIDIA Tesla P40",
        "NVIDIA T4",
        "NVIDIA Tesla V100 SXM2 32GB",
        "NVIDIA GeForce RTX 3060 12 GB",
        "NVIDIA GeForce RTX 3090",
        "NVIDIA GeForce RTX 4090",
        "NVIDIA RTX A6000",
        "NVIDIA L4",
        "NVIDIA L40S",
        "NVIDIA A100 40GB SXM",
        "NVIDIA A100 80GB SXM",
        "NVIDIA H100 PCIe",
        "NVIDIA H100 SXM",
        "NVIDIA H200 SXM",
        "NVIDIA B200 (HGX)",
        "Google TPU v3",
        "Google TPU v4",
        "Google TPU v5e",
        "AWS Trainium",
        "Intel Xeon E5-2683 v3",
        "AMD Ryzen 7 2700",
    ):
        assert required in names, required
    architectures = {d["architecture"] for d in devices if d["kind"] == "gpu"}
    assert {"Maxwell", "Pascal", "Volta", "Turing", "Ampere", "Ada Lovelace", "Hopper", "Blackwell"} <= architectures
    for d in (d for d in devices if d["kind"] == "gpu"):
        missing = [f for f in GPU_FIELDS if f not in d]
        assert not missing, (d["name"], missing)
        assert d["source"] and d["user"] is False


def test_kind_filter_and_text_table(cli) -> None:
    code, out, _ = cli("catalogue", "--kind", "tpu")
    assert code == 0
    lines = out.strip().splitlines()
    assert lines[0].split()[:2] == ["device", "kind"]
    assert [line.split("  ")[0] for line in lines[1:]] == ["Google TPU v3", "Google TPU v4", "Google TPU v5e"]


def test_user_device_is_added_listed_sized_and_removed(cli, write_json, seed_doc) -> None:
    dev = write_json({"name": "Lab GPU 16G", "fp32_tflops": 20, "memory_gb": 16, "price_usd": 900}, "dev.json")
    code, out, err = cli("catalogue", "--add", str(dev))
    assert code == 0, err
    code, out, _ = cli("catalogue", "--json")
    (mine,) = [d for d in json.loads(out) if d["user"]]
    assert mine["name"] == "Lab GPU 16G" and mine["kind"] == "gpu"
    code, out, _ = cli("size", str(write_json(seed_doc)), "-c", "lab gpu", "--json", "--no-save")
    (cand,) = json.loads(out)["candidates"]
    ws = load_platforms().by_id("desktop")  # a user's GPU is an actively cooled PCIe card: one in a desktop
    assert cand["device"] == "Lab GPU 16G" and cand["capex"] == 900 + ws.base_cost_usd + ws.cpu_cost_usd
    assert cand["capacity_bytes"] == 16 * 2**30  # memory_gb is GiB, as vendors mean it for device memory
    code, out, _ = cli("catalogue", "--remove", "Lab GPU 16G")
    assert code == 0
    code, out, err = cli("size", str(write_json(seed_doc)), "-c", "lab gpu", "--no-save")
    assert code == 2 and "no device matches" in err


def test_user_device_never_overrides_a_shipped_one(cli, write_json) -> None:
    dev = write_json({"name": "nvidia t4", "fp32_tflops": 99, "memory_gb": 99}, "dev.json")
    code, _, err = cli("catalogue", "--add", str(dev))
    assert code == 2 and "shipped catalogue device" in err
    code, out, _ = cli("catalogue", "--json")
    t4 = [d for d in json.loads(out) if d["name"].lower() == "nvidia t4"]
    assert len(t4) == 1 and t4[0]["fp32_tflops"] == 8.1


def test_a_user_device_cannot_take_a_shipped_devices_short_name(cli, write_json, seed_doc) -> None:
    """A user device named "4090" was found for the README's `-c 4090` in the RTX 4090's place."""
    dev = write_json({"name": "4090", "fp32_tflops": 1, "memory_gb": 1}, "dev.json")
    code, _, err = cli("catalogue", "--add", str(dev))
    assert code == 2 and "'4090' is part of the shipped NVIDIA GeForce RTX 4090's name" in err
    code, out, _ = cli("size", str(write_json(seed_doc)), "-c", "4090", "--no-save")
    assert code == 0 and "NVIDIA GeForce RTX 4090" in out


def test_bad_user_device_names_the_field(cli, write_json) -> None:
    dev = write_json([{"name": "ok", "fp32_tflops": 1, "memory_gb": 1}, {"name": "bad", "fp32_tflops": -2}], "d.json")
    code, _, err = cli("catalogue", "--add", str(dev))
    assert code == 2 and "devices[1].fp32_tflops" in err
    code, out, _ = cli("catalogue", "--json")
    assert not [d for d in json.loads(out) if d["user"]]  # nothing half-saved
    code, _, err = cli("catalogue", "--remove", "nothing-like-this")
    assert code == 2 and "no user device" in err


def test_options_that_would_be_passed_over_are_refused(cli, write_json) -> None:
    """--remove beside --add was ignored ("saved My GPU", the other still there), --remove "" listed the
    catalogue, and an empty list was "added" without a word."""
    dev = write_json({"name": "My lab GPU", "fp32_tflops": 5, "memory_gb": 8}, "dev.json")
    with pytest.raises(SystemExit) as stopped:  # argparse's own refusal, as for any usage error
        cli("catalogue", "--add", str(dev), "--remove", "My lab GPU 2")
    assert stopped.value.code == 2
    code, _, err = cli("catalogue", "--remove", "")
    assert code == 2 and "no user device named ''" in err
    code, _, err = cli("catalogue", "--add", str(write_json([], "none.json")))
    assert code == 2 and "none.json lists no devices: nothing was saved" in err
