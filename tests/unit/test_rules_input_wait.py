"""What an input-bound step waits for — reading the samples from storage, or decoding and augmenting
them on the CPU — decides which findings print and what the bill's Storage line buys: RAID 0 and a
RAM disk only when reads bound the step; decoding on the GPU when decoding does (the CPU line says
the same). A RAM disk holds the dataset as stored, so its finding quotes the size on disk."""

from __future__ import annotations

from typing import Any

import pytest

from core.advice.bom import BomLine, recommend_bom
from core.advice.rule_context import rule_context
from core.advice.rules import Finding, evaluate_rules
from core.estimate.input_pipeline import dataset_bytes_on_disk
from core.estimate.sizing import SizingResult, size_workload
from core.hardware.catalogue import find_device, load_catalogue
from core.spec.workload import parse_workload
from core.units import fmt_bytes

CATALOGUE = load_catalogue()
RESNET: dict[str, Any] = {"model": {"preset": "resnet-50"}, "training": {"precision": "bf16_mixed"}}


def sized(data: dict[str, Any], device: str = "4090", samples: int | None = None) -> SizingResult:
    doc = {**RESNET, "data": {**data, **({"samples": samples} if samples else {})}}
    return size_workload(parse_workload(doc), [find_device(device, CATALOGUE)])


def findings(result: SizingResult) -> dict[str, Finding]:
    return {f.rule: f for f in evaluate_rules(result, None)}


def storage_line(result: SizingResult) -> BomLine:
    return next(line for line in recommend_bom(result) if line.item == "Storage")


# 5 million camera JPEGs of 1,760 × 1,080 on an NVMe drive: 5.5 TiB on disk, 711 GiB as the
# network's 224 × 224 tensors. An RTX 4090 trains about 1,270 images a second; decoding and
# augmenting one takes 26 ms of one core, so the 14 loader cores the desktop's 16 cores leave the
# GPU (one for the training process, one for the system) keep the steps waiting for the decoding
# (491 ms a step) while reading takes 103 ms.
DECODE_BOUND = {"storage": "nvme", "stored_resolution": [1080, 1760]}


def test_a_decode_bound_step_gets_no_raid_or_ram_disk_advice() -> None:
    result = sized(DECODE_BOUND, samples=5_040_000)
    st = result.candidates[0].step
    assert st.bound == "input pipeline" and st.decode_s > 4 * st.read_s
    assert rule_context(result)["best_input_wait"] == "decode"
    found = findings(result)
    # before: "Steps wait for data (...): stripe the dataset over drives — RAID 0 ..." and "putting the
    # data there does: the dataset (711 GiB)", while the CPU line said to decode on the GPU
    assert "storage-raid-throughput" not in found and "ramdisk-data-not-programs" not in found
    storage_advice = ("stripe the dataset", "putting the data there")
    assert not [f.message for f in found.values() if any(words in f.message for words in storage_advice)]
    decode = found["input-decode-bound"].message
    assert st.loader_cores == 14
    assert decode.startswith("Steps wait for decoding and augmenting the JPEG samples on the CPU (491 ms of 491 ms")
    assert "14 loader cores per device" in decode and "reading them from the NVMe SSD takes 103 ms" in decode
    assert "a faster drive, RAID or a RAM disk would not shorten them" in decode and "NVIDIA DALI" in decode
    line = storage_line(result)
    assert "RAID" not in line.spec and line.spec.endswith("TB NVMe SSD")
    assert "steps wait for decoding on the CPU (491 ms a step), not for reads (103 ms)" in line.reason
    cpu = next(x for x in recommend_bom(result) if x.item == "CPU")
    assert "DALI" in cpu.reason  # the bill and the findings name the same way out


def test_a_read_bound_step_stripes_the_drives_and_says_which_tier_waits() -> None:
    # the same photos on a SATA SSD: 3.56 MB a sample at 520 MB/s is 1.75 s a step, decoding 1.24 s
    result = sized({"storage": "sata_ssd", "stored_resolution": [2048, 2730]}, samples=1_200_000)
    st = result.candidates[0].step
    assert st.bound == "input pipeline" and st.read_s > st.decode_s
    found = findings(result)
    assert "input-decode-bound" not in found
    assert found["storage-raid-throughput"].message.startswith(
        "Steps wait for the data to be read from the SATA SSD (1.75 s of 1.75 s per step on NVIDIA GeForce RTX 4090)"
    )
    line = storage_line(result)
    assert line.spec == "16 TB NVMe SSD, 2 drives in RAID 0 (or 4 in RAID 10 for redundancy)"
    assert "steps wait for reads from the workload's SATA SSD (1.75 s of each 1.75 s step at 520 MB/s)" in line.reason


def test_the_ram_disk_finding_quotes_the_dataset_as_stored() -> None:
    # ImageNet's JPEGs on a 1 GbE share: an H100 SXM's steps wait for the network (an RTX 4090 at
    # about 770 images/s keeps pace with its 110 MB/s). A RAM disk holds the 138 GiB of JPEG files,
    # not the 181 GiB of decoded 224 × 224 tensors
    result = sized({"storage": "network"}, "H100 SXM")
    assert rule_context(result)["best_input_wait"] == "read"
    on_disk = fmt_bytes(dataset_bytes_on_disk(result.workload.data))
    assert (on_disk, fmt_bytes(result.dataset_bytes)) == ("138 GiB", "181 GiB")
    message = findings(result)["ramdisk-data-not-programs"].message
    assert message.endswith("putting the data there does: the dataset as stored (138 GiB of jpeg).")
    assert "181 GiB" not in message
    iterated = findings(result)["storage-iterated-data"].message
    assert iterated.startswith("The dataset (138 GiB of jpeg) is read 90 times from the network share")


def test_the_bill_says_why_it_buys_nvme_instead_of_the_workloads_sata_ssd() -> None:
    # ImageNet on a SATA SSD feeds an A100 in time (the step does not wait for input): the bill still
    # asks for NVMe, as it does above 50 GB of data, and now says so instead of silently changing tier
    result = sized({"storage": "sata_ssd"}, device="A100 80GB")
    assert result.candidates[0].step.bound != "input pipeline"
    assert not {"storage-raid-throughput", "ramdisk-data-not-programs", "input-decode-bound"} & set(findings(result))
    line = storage_line(result)
    assert line.spec == "0.5 TB NVMe SSD"
    assert (
        "NVMe rather than the workload's SATA SSD: TrainRig's choice above 50 GB of data (138 GiB here; about 3 GB/s "
        "a drive against 520 MB/s); the training times assume the SATA SSD, whose reads do not hold up these steps"
    ) in line.reason


@pytest.mark.parametrize("storage", ["nvme", "hdd"])
def test_the_workloads_own_tier_needs_no_excuse(storage: str) -> None:
    line = storage_line(sized({"storage": storage, "format": "npy"}, samples=10_000))
    assert "rather than" not in line.reason
