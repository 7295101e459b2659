"""The workload document (docs/workload.md): model, data, training, hardware, cost.

``parse_workload`` validates a JSON object and returns a frozen ``Workload``; every error names
the key path and the allowed values or range.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from core.errors import WorkloadError
from core.hardware.catalogue import normalise_device_entry
from core.network.model import ModelAnalysis, analyze_model
from core.network.presets import get_preset
from core.spec.large import DEFAULT_LARGE, LARGE_KEYS, LargeModelSpec, parse_checkpointing, parse_large
from core.spec.loop import LoopSpec, parse_loop
from core.validate import (
    get_bool,
    get_choice,
    get_float,
    get_int,
    get_str,
    read_json_file,
    reject_unknown,
    require_mapping,
)
from core.vocabulary import INPUT_DTYPES, OPTIMIZER_STATES, PRECISION_BYTES, SHARDINGS

DATA_FORMATS = ("raw", "npy", "csv", "jpeg", "png", "tiff")
STORAGE_TIERS = ("hdd", "hdd_10k", "sata_ssd", "nvme", "ramdisk", "network")
SCALING_MODELS = (
    "analytic",
    "wuensche-cntk",
    "wuensche-mxnet",
    "wuensche-caffe",
    "wuensche-torch",
    "wuensche-tensorflow",
)
MAX_SAMPLES = 10**13
MAX_EPOCHS = 10**7


@dataclass(frozen=True)
class DataSpec:
    samples: int  # S
    features: int  # N, elements per input sample
    outputs: int  # N_M
    dtype: str
    format: str
    storage: str
    bytes_per_sample_on_disk: int | None
    # [H, W] of one stored image, when the workload gives it (data.stored_resolution)
    stored_resolution: tuple[int, int] | None = None
    # (C, H, W) of the network's input when it is an image; None for other inputs
    image_shape: tuple[int, int, int] | None = None


@dataclass(frozen=True)
class TrainingSpec:
    batch_size: int  # global batch, split over data-parallel devices
    epochs: int
    optimizer: str
    precision: str
    checkpointing: bool
    sharding: str
    nodes: int
    reserve_percent: float  # Jamgharyan's +25–30 % for reverse-engineering overfitted models
    scaling_model: str
    # samples per device in one forward/backward pass; the batch per device is reached by gradient
    # accumulation. None: the largest micro-batch that fits (the whole batch per device when it fits)
    micro_batch_size: int | None = None
    # used by local training runs (`run`, the Telemetry tab), never by sizing; None: the trainer's
    # default for the optimizer
    learning_rate: float | None = None
    # how the training loop feeds the device (core/estimate/host.py); None: the default for the data
    # (a DataLoader over in-memory data, or one that decodes files for image formats)
    loop: LoopSpec | None = None
    # the layout of image tensors: "contiguous" (PyTorch's NCHW default) or "channels_last" (NHWC:
    # cuDNN's tensor-core convolutions need no transposes); and whether the model is compiled with
    # torch.compile (elementwise chains fused). Both change the GPU kernel model's step time.
    memory_format: str = "contiguous"
    compile: bool = False
    # in fp32, whether cuDNN runs convolutions and LSTM/GRU layers on TF32 tensor cores (Ampere and
    # later GPUs): PyTorch's default (torch.backends.cudnn.allow_tf32 True) when true; TrainRig prices
    # IEEE fp32 unless told (false: its recorded fp32 steps ran so). Linear layers stay IEEE fp32
    # either way (torch.backends.cuda.matmul.allow_tf32 False by default)
    cudnn_tf32: bool = False
    # whether the training code turns on cuDNN's algorithm search (torch.backends.cudnn.benchmark =
    # True: cuDNN times its algorithms for each convolution shape and keeps the fastest); PyTorch's
    # default is off. Changes IEEE fp32 convolutions most (Winograd and FFT kernels, small tiles)
    cudnn_benchmark: bool = False
    # the large-model settings (core/spec/large.py): checkpointing policy, attention kernel, precision
    # layout, fp8, offload, optimizer implementation, tensor/pipeline/sequence/context parallelism
    large: LargeModelSpec = DEFAULT_LARGE

    @property
    def checkpoint_policy(self) -> str:
        """ "none", "selective", "selective_op" or "full" (full when ``checkpointing`` is set)."""
        if self.checkpointing:
            return "full"
        if self.large.alternate_matmuls:
            return "selective_op"
        return "selective" if self.large.selective_checkpointing else "none"


@dataclass(frozen=True)
class HardwareSpec:
    candidates: tuple[str, ...]
    counts: tuple[int, ...]
    custom: tuple[Mapping[str, Any], ...] = ()
    # the user's price for one device, by device name, in the workload's currency (a vendor's quote)
    prices: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True)
class CostSpec:
    """Money settings. Amounts the user gives (electricity, host, cloud price, budget) are in
    ``currency``; catalogue prices and the USD defaults are converted at ``per_usd``."""

    currency: str = "USD"
    electricity_per_kwh: float = 0.20
    pue: float = 1.2
    utilisation: float = 0.7
    amortisation_years: float = 3.0
    # None: each device's own dated on-demand price from the catalogue; a figure overrides them all
    cloud_per_gpu_hour: float | None = None
    # None: the platform's (core/hardware/platforms.py); a figure is per machine, without accelerators
    host_cost: float | None = None
    host_power_w: float | None = None
    maintenance_percent: float = 5.0
    deadline_hours: float | None = None
    budget: float | None = None
    per_usd: float = 1.0  # units of ``currency`` per US dollar, set by the user
    rate_date: str | None = None  # the day ``per_usd`` was taken
    # the expected use that buying is weighed against renting for: ``runs`` runs of this workload,
    # or, when set, ``hours_per_year`` hours of training a year over the amortisation period
    runs: int = 1
    hours_per_year: float | None = None
    rent_allowed: bool = True  # false: the data must stay on site, renting is not an option

    def from_usd(self, usd: float) -> float:
        return usd * self.per_usd

    @property
    def rate_text(self) -> str:
        if self.currency == "USD":
            return "prices in USD, as the catalogue gives them"
        return f"1 USD = {self.per_usd:g} {self.currency} on {self.rate_date}"


HOURS_PER_YEAR = 8760.0

PURPOSES = ("scratch", "finetune", "hpo", "reverse_engineering")


@dataclass(frozen=True)
class GoalSpec:
    purpose: str = "scratch"  # train from scratch, fine-tune, hyperparameter study, reverse-engineer
    concurrent_runs: int = 1  # networks training at the same time on one machine


@dataclass(frozen=True)
class Workload:
    name: str
    model_ref: str | None  # preset name, if the model came from one
    model: Mapping[str, Any] = field(repr=False)
    analysis: ModelAnalysis = field(repr=False)
    data: DataSpec = field()
    training: TrainingSpec = field()
    hardware: HardwareSpec = field()
    cost: CostSpec = field()
    goal: GoalSpec = field(default_factory=GoalSpec)

    @property
    def model_key(self) -> str:
        """The network's identity (its resolved description, hashed): local runs of the same network
        correct its later sizings on this machine."""
        text = json.dumps(self.model, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def read_workload_document(path: str | Path) -> Any:
    """The JSON document of a workload file; WorkloadError names what is wrong with the file."""
    return read_json_file(Path(path), "workload file")


MAX_NAME_CHARS = 200  # a 100,000-character name made a 90-page report
_BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def _name(name: str) -> str:
    """A workload's name as reports and terminals show it: a line of at most MAX_NAME_CHARS characters,
    without control characters (a NUL reached the terminal) or the marks that reverse text's direction
    (U+202E shows a name other than the one stored)."""
    if len(name) > MAX_NAME_CHARS:
        raise WorkloadError("name", f"is {len(name):,} characters long; give at most {MAX_NAME_CHARS}")
    if any(ord(c) < 32 or 127 <= ord(c) < 160 or c in _BIDI_CONTROLS for c in name):
        raise WorkloadError("name", f"{name!r} contains a line break, a control character or a direction mark")
    return name


def parse_workload(doc: Any) -> Workload:
    doc = require_mapping(doc, "workload")
    reject_unknown(doc, {"name", "goal", "model", "data", "training", "hardware", "cost", "description"}, "")
    name = _name(get_str(doc, "name", "", default="unnamed workload"))
    model_doc = require_mapping(doc.get("model"), "model") if "model" in doc else None
    if model_doc is None:
        raise WorkloadError("model", "is required (a preset, or input_shape and layers)")
    preset: dict[str, Any] = {}
    model_ref = None
    if "preset" in model_doc:
        reject_unknown(model_doc, {"preset"}, "model")
        preset = get_preset(model_doc["preset"], "model.preset")
        model_ref = preset["name"]
        model = preset["model"]
    elif "torch" in model_doc:
        raise WorkloadError("model.torch", "a PyTorch model must be traced first (telemetry/tracer.py does it)")
    elif "onnx" in model_doc:
        raise WorkloadError("model", "ONNX model files are not supported by this version")
    else:
        model = model_doc
    analysis = analyze_model(model, "model" if model_ref is None else f"preset {model_ref}.model")
    data = _data({**preset.get("data", {}), **require_mapping(doc.get("data", {}), "data")}, analysis)
    training = _training({**preset.get("training", {}), **require_mapping(doc.get("training", {}), "training")})
    if training.batch_size > data.samples:  # a batch of 10^8 over 80,909 samples was sized in 63 micro-batches
        b, n, micro = training.batch_size, data.samples, training.micro_batch_size
        training = replace(training, batch_size=n, micro_batch_size=None if micro is None else min(micro, n))
        note = f"training.batch_size {b:,} is more than the {n:,} samples: each epoch is one batch of {n:,}, as sized"
        analysis = replace(analysis, notes=(*analysis.notes, note))
    hardware = _hardware(require_mapping(doc.get("hardware", {}), "hardware"))
    cost = _cost(require_mapping(doc.get("cost", {}), "cost"))
    goal = _goal(require_mapping(doc.get("goal", {}), "goal"))
    return Workload(name, model_ref, model, analysis, data, training, hardware, cost, goal)


def _goal(g: Mapping[str, Any]) -> GoalSpec:
    reject_unknown(g, {"purpose", "concurrent_runs"}, "goal")
    return GoalSpec(
        purpose=get_choice(g, "purpose", "goal", PURPOSES, default="scratch"),
        concurrent_runs=get_int(g, "concurrent_runs", "goal", default=1, maximum=1000),
    )


DATA_KEYS = {
    "samples",
    "features",
    "outputs",
    "dtype",
    "format",
    "storage",
    "bytes_per_sample_on_disk",
    "stored_resolution",
}
MAX_STORED_SIDE = 100_000  # pixels on a side of a stored image (a 10-gigapixel scan)


def _data(d: Mapping[str, Any], model: ModelAnalysis) -> DataSpec:
    reject_unknown(d, DATA_KEYS, "data")
    # a class score vector → its classes; a sequence of scores → one target per position
    shape = model.output_shape
    default_outputs = shape[-1] if len(shape) == 1 else math.prod(shape[:-1])
    dtype = get_choice(d, "dtype", "data", INPUT_DTYPES, default=model.input_dtype)
    image = image_shape(model.input_shape)
    outputs = get_int(d, "outputs", "data", default=default_outputs, maximum=10**9)
    if outputs > math.prod(shape):  # a billion targets for 10 scores sized a 294 TiB dataset
        raise WorkloadError(
            "data.outputs", f"is {outputs:,}, more than the {math.prod(shape):,} values the model gives a sample"
        )
    return DataSpec(
        samples=get_int(d, "samples", "data", maximum=MAX_SAMPLES),
        features=get_int(d, "features", "data", default=model.input_elems, maximum=10**12),
        outputs=outputs,
        dtype=dtype,
        format=get_choice(d, "format", "data", DATA_FORMATS, default="npy"),
        storage=get_choice(d, "storage", "data", STORAGE_TIERS, default="nvme"),
        bytes_per_sample_on_disk=(
            get_int(d, "bytes_per_sample_on_disk", "data", maximum=10**12) if "bytes_per_sample_on_disk" in d else None
        ),
        stored_resolution=_stored_resolution(d, image),
        image_shape=image,
    )


IMAGE_CHANNELS = (1, 2, 3, 4)  # gray, gray + alpha, RGB, RGBA


def image_shape(input_shape: tuple[int, ...]) -> tuple[int, int, int] | None:
    """(C, H, W) of a network input that is an image: three dimensions, 1 to 4 channels first."""
    if len(input_shape) == 3 and input_shape[0] in IMAGE_CHANNELS:
        return input_shape[0], input_shape[1], input_shape[2]
    return None


def _stored_resolution(d: Mapping[str, Any], image: tuple[int, int, int] | None) -> tuple[int, int] | None:
    """``data.stored_resolution``: [H, W] of the stored images of an image input [C, H, W]."""
    path = "data.stored_resolution"
    if "stored_resolution" not in d:
        return None
    value = d["stored_resolution"]
    if not isinstance(value, list) or len(value) != 2:
        raise WorkloadError(path, "must be [height, width] in pixels of the stored images, e.g. [387, 469]")
    for i, side in enumerate(value):
        if isinstance(side, bool) or not isinstance(side, int) or side < 1:
            raise WorkloadError(f"{path}[{i}]", f"must be a positive integer (pixels), got {side!r}")
        if side > MAX_STORED_SIDE:
            raise WorkloadError(f"{path}[{i}]", f"{side} is out of range (at most {MAX_STORED_SIDE:,} pixels)")
    if image is None:
        raise WorkloadError(
            path, "needs an image input [C, H, W] in the model; for other inputs give data.bytes_per_sample_on_disk"
        )
    return value[0], value[1]


MEMORY_FORMATS = ("contiguous", "channels_last")


def _training(t: Mapping[str, Any]) -> TrainingSpec:
    allowed = {
        "batch_size",
        "epochs",
        "optimizer",
        "precision",
        "checkpointing",
        "sharding",
        "nodes",
        "reserve_percent",
        "scaling_model",
        "learning_rate",
        "micro_batch_size",
        "loop",
        "memory_format",
        "compile",
        "cudnn_tf32",
        "cudnn_benchmark",
        *LARGE_KEYS,
    }
    reject_unknown(t, allowed, "training")
    lr = get_float(t, "learning_rate", "training", maximum=100.0) if "learning_rate" in t else None
    batch = get_int(t, "batch_size", "training", maximum=10**8)
    micro = None
    if "micro_batch_size" in t:
        micro = get_int(t, "micro_batch_size", "training", maximum=10**8)
        if micro > batch:
            raise WorkloadError(
                "training.micro_batch_size", f"{micro} is larger than the batch ({batch}): at most training.batch_size"
            )
    full, _ = parse_checkpointing(t)
    sharding = get_choice(t, "sharding", "training", SHARDINGS, default="none")
    precision = get_choice(t, "precision", "training", PRECISION_BYTES, default="fp32")
    return TrainingSpec(
        batch_size=batch,
        epochs=get_int(t, "epochs", "training", maximum=MAX_EPOCHS),
        optimizer=get_choice(t, "optimizer", "training", OPTIMIZER_STATES, default="adam"),
        precision=precision,
        checkpointing=full,
        sharding=sharding,
        nodes=get_int(t, "nodes", "training", default=1, maximum=10**4),
        reserve_percent=get_float(t, "reserve_percent", "training", default=0.0, maximum=100.0),
        scaling_model=get_choice(t, "scaling_model", "training", SCALING_MODELS, default="analytic"),
        micro_batch_size=micro,
        learning_rate=lr,
        loop=parse_loop(t["loop"]) if "loop" in t else None,
        memory_format=get_choice(t, "memory_format", "training", MEMORY_FORMATS, default="contiguous"),
        compile=get_bool(t, "compile", "training", default=False),
        cudnn_tf32=get_bool(t, "cudnn_tf32", "training", default=False),
        cudnn_benchmark=get_bool(t, "cudnn_benchmark", "training", default=False),
        large=parse_large(t, sharding, precision),
    )


def _hardware(h: Mapping[str, Any]) -> HardwareSpec:
    reject_unknown(h, {"candidates", "gpu_count", "custom", "prices"}, "hardware")
    cands = h.get("candidates", [])
    if not isinstance(cands, list) or not all(isinstance(c, str) and c.strip() for c in cands):
        raise WorkloadError("hardware.candidates", 'must be a list of device names (or "this-machine")')
    counts: tuple[int, ...] = (1,)
    if "gpu_count" in h:
        gc = h["gpu_count"]
        if isinstance(gc, Mapping):
            reject_unknown(gc, {"min", "max"}, "hardware.gpu_count")
            lo = get_int(gc, "min", "hardware.gpu_count", default=1, maximum=4096)
            hi = get_int(gc, "max", "hardware.gpu_count", default=lo, maximum=4096)
            if hi < lo:
                raise WorkloadError("hardware.gpu_count.max", f"{hi} is below min {lo}")
            counts = tuple(sorted({lo, hi} | {2**k for k in range(13) if lo <= 2**k <= hi}))
        else:
            counts = (get_int(h, "gpu_count", "hardware", maximum=4096),)
    custom = h.get("custom", [])
    if not isinstance(custom, list):
        raise WorkloadError("hardware.custom", "must be a list of device objects")
    entries = tuple(normalise_device_entry(c, f"hardware.custom[{i}]") for i, c in enumerate(custom))
    return HardwareSpec(tuple(c.strip() for c in cands), counts, entries, _prices(h.get("prices", {})))


def _prices(prices: Any) -> tuple[tuple[str, float], ...]:
    """``hardware.prices``: {"NVIDIA GeForce RTX 4090": 1799, …}, one device's price in the
    workload's currency by the device's name."""
    if not isinstance(prices, Mapping):
        raise WorkloadError("hardware.prices", 'must be an object of device name to price, e.g. {"RTX 4090": 1799}')
    out = []
    for name, value in prices.items():
        if not str(name).strip():
            raise WorkloadError("hardware.prices", "a price needs the device's name")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 1e9:
            raise WorkloadError(f"hardware.prices.{name}", f"must be a price above 0, got {value!r}")
        out.append((str(name).strip(), float(value)))
    return tuple(out)


def _cost(c: Mapping[str, Any]) -> CostSpec:
    allowed = {
        "currency",
        "electricity_per_kwh",
        "pue",
        "utilisation",
        "amortisation_years",
        "cloud_per_gpu_hour",
        "host_cost",
        "host_power_w",
        "maintenance_percent",
        "deadline_hours",
        "budget",
        "exchange_rate",
        "runs",
        "hours_per_year",
        "rent_allowed",
    }
    reject_unknown(c, allowed, "cost")
    d = CostSpec()
    currency = get_str(c, "currency", "cost", default=d.currency).strip().upper()  # "eur" and "€€" were taken
    if not (len(currency) == 3 and currency.isascii() and currency.isalpha()):
        raise WorkloadError("cost.currency", f"{currency!r} is not a three-letter ISO 4217 code (USD, EUR, JPY, …)")
    per_usd, rate_date = _exchange_rate(c, currency)
    return CostSpec(
        currency=currency,
        per_usd=per_usd,
        rate_date=rate_date,
        electricity_per_kwh=get_float(
            c, "electricity_per_kwh", "cost", default=d.electricity_per_kwh * per_usd, maximum=100
        ),
        pue=get_float(c, "pue", "cost", default=d.pue, minimum=1.0, maximum=5.0),
        utilisation=get_float(
            c, "utilisation", "cost", default=d.utilisation, minimum=0, exclusive_min=True, maximum=1
        ),
        amortisation_years=get_float(
            c, "amortisation_years", "cost", default=d.amortisation_years, minimum=0, exclusive_min=True, maximum=50
        ),
        cloud_per_gpu_hour=(
            get_float(c, "cloud_per_gpu_hour", "cost", maximum=1e4) if "cloud_per_gpu_hour" in c else None
        ),
        host_cost=get_float(c, "host_cost", "cost", maximum=1e9) if "host_cost" in c else None,
        host_power_w=get_float(c, "host_power_w", "cost", maximum=1e6) if "host_power_w" in c else None,
        runs=get_int(c, "runs", "cost", default=1, minimum=1, maximum=10**6),
        rent_allowed=get_bool(c, "rent_allowed", "cost", default=True),
        hours_per_year=(
            get_float(c, "hours_per_year", "cost", minimum=0, exclusive_min=True, maximum=HOURS_PER_YEAR)
            if "hours_per_year" in c
            else None
        ),
        maintenance_percent=get_float(c, "maintenance_percent", "cost", default=d.maintenance_percent, maximum=100),
        deadline_hours=(
            get_float(c, "deadline_hours", "cost", minimum=0, exclusive_min=True, maximum=1e7)
            if "deadline_hours" in c
            else None
        ),
        budget=get_float(c, "budget", "cost", minimum=0, exclusive_min=True, maximum=1e12) if "budget" in c else None,
    )


def _exchange_rate(c: Mapping[str, Any], currency: str) -> tuple[float, str | None]:
    """``cost.exchange_rate`` = {"per_usd": 0.92, "date": "2026-11-01"}: what one US dollar costs in
    ``currency`` on that day. Required for any currency but USD (catalogue prices are USD)."""
    path = "cost.exchange_rate"
    if currency.upper() == "USD":
        if "exchange_rate" in c:
            raise WorkloadError(path, "currency USD takes no exchange rate (catalogue prices are in USD)")
        return 1.0, None
    if "exchange_rate" not in c:
        raise WorkloadError(
            path,
            f"currency {currency} needs the rate per USD and its date, "
            'e.g. {"per_usd": 0.92, "date": "2026-11-01"} (catalogue prices are in USD)',
        )
    r = require_mapping(c["exchange_rate"], path)
    reject_unknown(r, {"per_usd", "date"}, path)
    per_usd = get_float(r, "per_usd", path, minimum=0, exclusive_min=True, maximum=1e9)
    date = get_str(r, "date", path)
    try:
        dt.date.fromisoformat(date)
    except ValueError:
        raise WorkloadError(f"{path}.date", f"must be a date as YYYY-MM-DD, got {date!r}") from None
    return per_usd, date
