"""The hardware catalogue (resources/catalogue.json): device specs and name lookup."""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from core.errors import CatalogueError, WorkloadError
from core.hardware.links import parse_pcie, pcie_bps
from core.paths import resource_path
from core.validate import get_bool, get_choice, get_float, get_int, get_str, reject_unknown, require_mapping


@dataclass(frozen=True)
class DeviceSpec:
    """One candidate device. Rates in FLOP/s and bytes/s, sizes in bytes; None means unknown."""

    name: str
    kind: str  # "gpu", "cpu", "tpu" or "accelerator"
    fp32_flops: float
    tf32_flops: float | None = None
    half_flops: float | None = None  # dense FP16/BF16 tensor peak
    memory_bytes: int | None = None  # device memory; None for CPUs (host RAM is separate)
    bandwidth: float | None = None
    tdp_w: float | None = None
    price_usd: float | None = None
    price_date: str | None = None
    interconnect: str | None = None
    interconnect_bw: float | None = None  # device to device, per direction, bytes/s (all-reduce)
    host_link: str | None = None  # the PCIe link to host memory, e.g. "PCIe 3.0 x16"
    host_link_bw: float | None = None  # per direction, bytes/s
    cuda_cores: int | None = None
    clock_hz: float | None = None
    source: str = ""
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False)
    # where the device comes from: "catalogue" (shipped), "user" (your devices, in the database),
    # "workload" (a custom device in the workload file) or "this-machine" (detected here)
    origin: str = "catalogue"
    # for a detected device: the catalogue model it was matched to (its datasheet figures), if any
    catalogue_match: str | None = None
    fp8_flops: float | None = None  # dense FP8 tensor peak (Transformer Engine: Hopper, Ada, Blackwell)
    # how the part is built into a machine: "pcie" (a card), "sxm"/"oam" (sold on 4- or 8-GPU
    # baseboards), "superchip" (GH200: CPU and GPU on one module), "socket" (a CPU), "cloud" (rented only)
    form_factor: str | None = None
    p2p: bool | None = None  # peer-to-peer between GPUs (GeForce cards have none: all-reduce goes through the host)
    availability: str | None = None  # "current", "end-of-life", "used-market" or "cloud-only"
    street_price_usd: float | None = None  # what a buyer pays now, beside the launch list price
    street_price_date: str | None = None
    cloud_usd_per_hour: float | None = None  # on-demand price of one device-hour in a public cloud
    cloud_price_date: str | None = None
    cloud_price_source: str | None = None
    # the user's own price for one device (a vendor's quote), set in the workload (hardware.prices),
    # converted to USD at the workload's exchange rate: it replaces the catalogue's estimates
    quoted_price_usd: float | None = None
    sm_count: int | None = None  # streaming multiprocessors (whitepaper): matrix products run in waves over them
    l2_bytes: float | None = None  # L2 cache, bytes

    @property
    def is_this_machine(self) -> bool:
        return self.origin == "this-machine"

    def owned(self, count: int) -> bool:
        """``count`` of this device are already here: this machine's CPU, or no more of its GPU than it has
        (``extra["units_here"]``, one where not recorded). Nothing is bought or rented for them."""
        return self.is_this_machine and count <= int(self.extra.get("units_here", 1))

    @property
    def nvlink(self) -> bool:
        """Devices joined by NVLink (or AMD Infinity Fabric, Gaudi's RoCE links), not only PCIe."""
        text = (self.interconnect or "").lower()
        return any(k in text for k in ("nvlink", "infinity fabric", "roce", "ici", "neuronlink"))

    def purchase_price(self) -> tuple[float, str, str | None] | None:
        """USD per device to buy it, its kind ("quoted", "street" or "launch") and date: the user's
        own price when the workload sets one, else the catalogue's street price when it has one, else
        the launch list price — both estimates with their dates; None when it cannot be bought."""
        if self.quoted_price_usd is not None:
            return self.quoted_price_usd, "quoted", None
        if self.street_price_usd is not None:
            return self.street_price_usd, "street", self.street_price_date
        if self.price_usd is not None:
            return self.price_usd, "launch", self.price_date
        return None

    @property
    def runs_cuda(self) -> bool:
        """An NVIDIA GPU (or a user's GPU that names no other vendor): CUDA's context and launch
        overheads apply to it and to nothing else."""
        return self.kind == "gpu" and str(self.extra.get("vendor") or "NVIDIA").upper() == "NVIDIA"

    @property
    def geforce(self) -> bool:
        """A GeForce card: its datasheet gives half-rate FP16/TF32 tensor peaks (FP32 accumulate),
        which its training throughput does not show (docs/accuracy.md)."""
        return self.runs_cuda and "geforce" in self.name.lower()

    def peak_flops(self, precision: str) -> float:
        """Dense peak for the training precision; devices without tensor cores fall back to FP32."""
        if precision == "tf32" and self.tf32_flops:
            return self.tf32_flops
        if precision in ("fp16_mixed", "bf16_mixed") and self.half_flops:
            return self.half_flops
        return self.fp32_flops


GIB = 2**30


def device_memory_bytes(entry: Mapping[str, Any]) -> int | None:
    """Device memory in bytes: ``memory_bytes`` (the catalogue's, NVML's total where recorded), else
    ``memory_gb`` read as GiB — vendors' "24 GB" of GDDR or HBM is 24 GiB (binary chip and stack
    sizes), not 24·10⁹ B. None for a CPU, whose RAM is the host's."""
    if entry.get("kind") == "cpu":
        return None
    if entry.get("memory_bytes"):
        return int(entry["memory_bytes"])
    gb = entry.get("memory_gb")
    return round(float(gb) * GIB) if gb else None


def host_link_of(entry: Mapping[str, Any]) -> tuple[str, float] | None:
    """The PCIe link a device reaches host memory over, and its bytes/s per direction: the entry's
    ``host_link``, else a PCIe ``interconnect`` (a card on the bus); None when not known (TPUs,
    Trainium, a user's device without either)."""
    for text in (entry.get("host_link"), entry.get("interconnect")):
        pcie = parse_pcie(text)
        if pcie:
            return f"PCIe {pcie[0]}.0 x{pcie[1]}", pcie_bps(*pcie)
    return None


def device_from_entry(entry: Mapping[str, Any], origin: str = "catalogue") -> DeviceSpec:
    tera = 1e12
    boost = entry.get("boost_clock_mhz")
    # TPUs publish no FP32 matmul rate: XLA runs FP32 matmuls as BF16 passes by default
    fp32 = entry.get("fp32_tflops") or entry.get("fp16_tflops")
    if not fp32:
        raise CatalogueError(f"device {entry.get('name')!r} has neither fp32_tflops nor fp16_tflops")
    host = host_link_of(entry)
    return DeviceSpec(
        name=str(entry["name"]),
        kind=str(entry["kind"]),
        fp32_flops=float(fp32) * tera,
        tf32_flops=entry["tf32_tflops"] * tera if entry.get("tf32_tflops") else None,
        half_flops=entry["fp16_tflops"] * tera if entry.get("fp16_tflops") else None,
        memory_bytes=device_memory_bytes(entry),
        bandwidth=entry["memory_bandwidth_gbs"] * 1e9 if entry.get("memory_bandwidth_gbs") else None,
        tdp_w=entry.get("tdp_w"),
        price_usd=entry.get("price_usd"),
        price_date=entry.get("price_date"),
        interconnect=entry.get("interconnect"),
        interconnect_bw=entry["interconnect_gbs"] * 1e9 if entry.get("interconnect_gbs") else None,
        host_link=host[0] if host else None,
        host_link_bw=host[1] if host else None,
        cuda_cores=entry.get("cuda_cores"),
        clock_hz=boost * 1e6 if boost else None,
        source=str(entry.get("source", "")),
        extra=dict(entry),
        origin=origin,
        fp8_flops=entry["fp8_tflops"] * tera if entry.get("fp8_tflops") else None,
        form_factor=entry.get("form_factor") or _default_form_factor(entry),
        p2p=entry.get("p2p"),
        availability=entry.get("availability"),
        street_price_usd=entry.get("street_price_usd"),
        street_price_date=entry.get("street_price_date"),
        cloud_usd_per_hour=entry.get("cloud_usd_per_hour"),
        cloud_price_date=entry.get("cloud_price_date"),
        cloud_price_source=entry.get("cloud_price_source"),
        sm_count=int(entry["sm_count"]) if entry.get("sm_count") else None,
        l2_bytes=float(entry["l2_cache_mb"]) * 2**20 if entry.get("l2_cache_mb") else None,
    )


FORM_FACTORS = ("pcie", "sxm", "oam", "superchip", "socket", "cloud")


def _default_form_factor(entry: Mapping[str, Any]) -> str:
    """A user's device without a form factor: a CPU sits in a socket, an accelerator with no purchase
    price is rented, and anything else is a PCIe card."""
    if entry.get("kind") == "cpu":
        return "socket"
    if entry.get("kind") in ("tpu", "accelerator") and entry.get("price_usd") is None:
        return "cloud"
    return "pcie"


@lru_cache(maxsize=4)
def _load(path: Path) -> tuple[DeviceSpec, ...]:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        return tuple(device_from_entry(e) for e in doc["devices"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise CatalogueError(f"the hardware catalogue {path} cannot be read: {exc}") from exc


def load_catalogue(path: Path | None = None) -> tuple[DeviceSpec, ...]:
    return _load(path or resource_path("catalogue.json"))


def catalogue_entries(path: Path | None = None) -> list[dict[str, Any]]:
    return [dict(d.extra) for d in load_catalogue(path)]


def find_device(name: str, devices: Sequence[DeviceSpec]) -> DeviceSpec:
    """Match ``name`` case-insensitively: an exact name, else a unique part of one name.

    ``4090`` finds the RTX 4090 and ``Tesla P40`` the P40; an unknown or ambiguous name raises
    CatalogueError listing the closest entries.
    """
    wanted = " ".join(name.lower().split())
    if not wanted:
        raise CatalogueError("an empty device name matches nothing")
    exact = [d for d in devices if d.name.lower() == wanted]
    if exact:
        return exact[0]
    parts = [d for d in devices if wanted in d.name.lower()]
    if len(parts) == 1:
        return parts[0]
    if parts:
        names = ", ".join(d.name for d in parts)
        raise CatalogueError(f"device {name!r} is ambiguous; it matches: {names}")
    close = difflib.get_close_matches(wanted, [d.name.lower() for d in devices], n=5, cutoff=0.3)
    by_lower = {d.name.lower(): d.name for d in devices}
    hint = ", ".join(by_lower[c] for c in close) if close else ", ".join(d.name for d in devices[:8])
    raise CatalogueError(f"no device matches {name!r}; closest entries: {hint}")


_VENDOR_WORDS = {"nvidia", "geforce", "tesla", "quadro", "rtx", "gb", "amd", "intel"}


def _tokens(name: str) -> set[str]:
    import re

    return {t for t in re.split(r"[^a-z0-9]+", name.lower()) if t}


def match_detected_gpu(name: str, memory_bytes: int | None, devices: Sequence[DeviceSpec]) -> DeviceSpec | None:
    """The catalogue GPU an NVML name denotes, e.g. "NVIDIA H100 80GB HBM3" → H100 SXM.

    The model token (h100, 4090, p40, …) must match; among several entries (H100 SXM and PCIe)
    the one sharing more name tokens, then the closest memory size, wins. None if nothing fits.
    """
    detected = _tokens(name)
    best: tuple[float, DeviceSpec] | None = None
    for d in devices:
        if d.kind != "gpu":
            continue
        model_tokens = _tokens(d.name) - _VENDOR_WORDS
        key = [t for t in model_tokens if _is_model_token(t)]
        required = {t for t in model_tokens if t not in _OPTIONAL_WORDS and not _is_size_token(t)}
        if not key or not required <= detected:
            continue
        # NVML names carry the form factor or memory type ("H100 PCIe", "H100 80GB HBM3")
        score = float(len((model_tokens | _tokens(str(d.extra.get("memory_type", "")))) & detected))
        if memory_bytes and d.memory_bytes:
            score -= abs(d.memory_bytes - memory_bytes) / max(d.memory_bytes, memory_bytes)
        if best is None or score > best[0]:
            best = (score, d)
    return best[1] if best else None


_OPTIONAL_WORDS = {"sxm", "sxm2", "sxm4", "sxm5", "pcie", "hgx"}  # form factors NVML may leave out


def _is_size_token(t: str) -> bool:
    return t.endswith("gb") or (t.isdigit() and len(t) < 3)


def _is_model_token(t: str) -> bool:
    """h100, p40, t4, 4090, m4000 — not memory sizes such as 12 or 80gb."""
    if t.endswith("gb") or not any(c.isdigit() for c in t):
        return False
    return not t.isdigit() or len(t) >= 3


DEVICE_KINDS = ("gpu", "cpu", "tpu", "accelerator")


def normalise_device_entry(entry: Any, path: str) -> dict[str, Any]:
    """Validate a user's device (custom in a workload, or added to the catalogue).

    Required: ``name``, ``fp32_tflops`` and, for anything but a CPU, ``memory_gb`` (read as GiB, as
    vendors mean it for device memory: 24 → 25,769,803,776 B). Optional
    figures are checked for range. Raises WorkloadError naming the key path.
    """
    e = dict(require_mapping(entry, path))
    reject_unknown(e, USER_DEVICE_KEYS, path)
    e["name"] = get_str(e, "name", path)
    _check_device_name(e["name"], f"{path}.name" if path else "name")
    e["kind"] = get_choice(e, "kind", path, DEVICE_KINDS, default="gpu")
    e["fp32_tflops"] = get_float(e, "fp32_tflops", path, minimum=0, exclusive_min=True, maximum=1e6)
    if e["kind"] != "cpu":
        e["memory_gb"] = get_float(e, "memory_gb", path, minimum=0, exclusive_min=True, maximum=1e6)
    for key in (
        "tf32_tflops",
        "fp16_tflops",
        "fp8_tflops",
        "memory_bandwidth_gbs",
        "tdp_w",
        "price_usd",
        "street_price_usd",
        "cloud_usd_per_hour",
        "interconnect_gbs",
        "power_limit_w",
    ):
        if e.get(key) is not None:
            e[key] = get_float(e, key, path, minimum=0, exclusive_min=True, maximum=1e7)
    if e.get("architecture") is not None:  # e.g. "Hopper": the kernel model's flash-attention efficiency
        e["architecture"] = get_str(e, "architecture", path)
    if e.get("form_factor") is not None:
        e["form_factor"] = get_choice(e, "form_factor", path, FORM_FACTORS, default=None)
    if e.get("p2p") is not None:
        e["p2p"] = get_bool(e, "p2p", path, default=False)
    if e.get("l2_cache_mb") is not None:
        e["l2_cache_mb"] = get_float(e, "l2_cache_mb", path, minimum=0, exclusive_min=True, maximum=1e5)
    for key in ("cuda_cores", "boost_clock_mhz", "sm_count"):
        if e.get(key) is not None:
            e[key] = get_int(e, key, path, maximum=10**7)
    e.setdefault("tf32_tflops", None)
    e.setdefault("fp16_tflops", None)
    e.setdefault("source", "user entry")
    return e


USER_DEVICE_KEYS = (
    "name",
    "kind",
    "vendor",
    "fp32_tflops",
    "tf32_tflops",
    "fp16_tflops",
    "memory_gb",
    "memory_bandwidth_gbs",
    "tdp_w",
    "price_usd",
    "price_date",
    "street_price_usd",
    "street_price_date",
    "cloud_usd_per_hour",
    "cloud_price_date",
    "fp8_tflops",
    "form_factor",
    "p2p",
    "interconnect",
    "interconnect_gbs",
    "host_link",
    "cuda_cores",
    "boost_clock_mhz",
    "sm_count",
    "l2_cache_mb",
    "power_limit_w",
    "architecture",
    "source",
)


def _check_device_name(name: str, path: str) -> None:
    """A name the user can type back: no control characters, not "this-machine" (which names the
    detected machine)."""
    if not name.strip():
        raise WorkloadError(path, "must not be empty")
    if any(ord(c) < 32 or ord(c) == 127 for c in name):
        raise WorkloadError(path, f"{name!r} contains a line break or control character; give a name you can type")
    if name.strip().lower().replace("-", " ") == "this machine":
        raise WorkloadError(path, f"{name!r} names the machine TrainRig detects; give your device another name")


def merge_user_devices(shipped: Sequence[DeviceSpec], user_entries: Sequence[Mapping[str, Any]]) -> list[DeviceSpec]:
    """Shipped devices followed by the user's, each marked; a user entry never replaces a shipped one."""
    names = {d.name.lower() for d in shipped}
    merged = list(shipped)
    for entry in user_entries:
        if entry["name"].lower() in names:
            continue  # refused when added; an old database may still hold one: the shipped entry wins
        merged.append(
            device_from_entry(
                {**entry, "user": True, "source": f"user entry: {entry.get('source', '')}"}, origin="user"
            )
        )
    return merged


def check_user_device_name(name: str, shipped: Sequence[DeviceSpec]) -> None:
    """Refuse a user device's name that would take a shipped device's place: its very name, or a part of one
    (a user device named "4090" was sized wherever the README's ``-c 4090`` meant the RTX 4090)."""
    key = " ".join(name.lower().split())
    if any(d.name.lower() == key for d in shipped):
        raise WorkloadError("name", f"{name!r} is a shipped catalogue device; give your entry another name")
    part_of = [d.name for d in shipped if key in d.name.lower()]
    if part_of:
        raise WorkloadError(
            "name",
            f"{name!r} is part of the shipped {part_of[0]}'s name and would be found in its place; "
            "give your entry a name of its own",
        )


def match_detected_cpu(model: str, devices: Sequence[DeviceSpec]) -> DeviceSpec | None:
    """The catalogue CPU whose name's every token appears in the model string /proc/cpuinfo gives.

    "Intel(R) Xeon(R) CPU E5-2683 v3 @ 2.00GHz" → Intel Xeon E5-2683 v3.
    """
    detected = _tokens(model)
    for d in devices:
        if d.kind == "cpu" and (_tokens(d.name) - {"intel", "amd"}) <= detected:
            return d
    return None
