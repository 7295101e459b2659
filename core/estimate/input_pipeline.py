"""The input pipeline on the host: a sample's size on disk, the CPU time to decode and augment it,
and the data-loader cores that keep a device fed (docs/sizing.md, "Input pipeline").

One sample costs one CPU core, in one thread (a PyTorch DataLoader worker):

    decode (by format, per stored value: pixel × channel) + augmentation (image inputs)

The augmentation is the usual ResNet-style training pipeline: RandomResizedCrop to the network's
input, RandomHorizontalFlip, to-tensor, to float, Normalize. Loader cores per device =
samples/s the device consumes × CPU seconds per sample. Every figure below comes from a published
measurement named beside it; none was measured on this project's machines.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from core.spec.workload import DataSpec
from core.vocabulary import INPUT_DTYPES

# ImageNet (ILSVRC 2012) training set: 1,281,167 images; ILSVRC2012_img_train.tar is
# 147,897,477,120 bytes (the size the ImageNet download page gives as "138GB", i.e. GiB; tar headers
# add < 1 %). Its images average 469 × 387 pixels, the figure ImageNet users quote and the size
# torchvision's transform benchmark uses as "average size of images in ImageNet"
# (pmeier/detection-reference-benchmark, datasets.py). FFCV's RAW ImageNet (docs.ffcv.io
# "ImageNet Benchmarks": 788.97 GB of uint8 pixels at up to 1,600 px) gives 0.205 Mpixel, 13 % more.
IMAGENET_TRAIN_IMAGES = 1_281_167
IMAGENET_TRAIN_TAR_BYTES = 147_897_477_120
IMAGENET_MEAN_PIXELS = 469 * 387
# Inputs of at least ImageNet's training crop on their short side are taken as crops of photos:
# stored as photos of at least ImageNet's average size (RandomResizedCrop's setting).
PHOTO_CROP_SIDE = 224
# Files that hold 8-bit images (JPEG baseline is 8-bit; PNG and TIFF photos are 8-bit RGB as a rule).
IMAGE_FILE_FORMATS = ("jpeg", "png", "tiff")
# Bytes on disk per stored value (an 8-bit pixel channel for image files; one element of the
# data's dtype otherwise):
# - jpeg: ImageNet as distributed, 147,897,477,120 B / (1,281,167 images × 469 × 387 × 3) = 0.212
#   (≈ 115 KB an image; JPEG at quality 90 re-encoded by FFCV: 0.10);
# - png: libpng on the QOI benchmark suite's photographs (photo_kodak 0.563, photo_tecnick 0.501,
#   photo_wikipedia 0.566 of the RGB bytes; nigeltao/qoir doc/full_benchmarks.txt, 2023): 0.54;
# - tiff: uncompressed (Pillow's default; Panaite & Leba 2024 compare TIFF, PNG and JPEG);
# - csv: text, about 2.5 characters per byte of the values (TrainRig estimate, unchanged).
FORMAT_SIZE_FACTOR = {
    "raw": 1.0,
    "npy": 1.0,
    "tiff": 1.0,
    "png": 0.54,
    "jpeg": IMAGENET_TRAIN_TAR_BYTES / (IMAGENET_TRAIN_IMAGES * IMAGENET_MEAN_PIXELS * 3),
    "csv": 2.5,
}

# CPU seconds per stored value to decode, one thread:
# - jpeg: Pillow (libjpeg-turbo) decoding ImageNet validation images (about 500 × 400) from memory:
#   537, 577 and 726 images/s on AMD EPYC 9B14, Intel Xeon Platinum 8581C and AMD EPYC 9B45
#   (Iglovikov & Kosarevsky 2026, arXiv 2605.08731, ternaus/imread_benchmark README, runs of
#   2026-04-22); the median 577 images/s → 2.9 ns per value (8.7 ns per RGB pixel);
# - png: libpng, 43.7–47.1 Mpixel/s on the suite's photographs on an Intel i5-10210U (qoir
#   full_benchmarks.txt): 45.8 Mpixel/s → 7.3 ns per value;
# - tiff (uncompressed), raw, npy: nothing to decode (the bytes are the values);
# - csv: nothing per step: a CSV dataset is parsed once when it is loaded (pandas.read_csv), not
#   per sample each epoch. Once: about 63 MB/s of text on one core (pandas' default reader, 18.2 GB
#   of NYC taxi CSV in 288.6 s; hluska.ca data report "NumPy versus PyArrow: NYC TLC read_csv").
DECODE_S_PER_VALUE = {
    "jpeg": 1 / (577 * 500 * 400 * 3),
    "png": 1 / (45.8e6 * 3),
    "tiff": 0.0,
    "raw": 0.0,
    "npy": 0.0,
    "csv": 0.0,
}
# Augmentation, one thread: torchvision's "classification-simple" pipeline on PIL images of
# 469 × 387 (transforms v2, medians; pmeier/detection-reference-benchmark,
# results/20230811144705-main-cab01fc.log): RandomResizedCrop's crop 147 µs and resize 766 µs
# (they scale with the stored image), RandomHorizontalFlip 82 µs, PILToTensor 109 µs,
# ConvertImageDtype 95 µs, Normalize 529 µs (they scale with the 224 × 224 output): 1.73 ms.
AUGMENT_S_PER_STORED_VALUE = (147 + 766) * 1e-6 / (IMAGENET_MEAN_PIXELS * 3)
AUGMENT_S_PER_OUTPUT_VALUE = (82 + 109 + 95 + 529) * 1e-6 / (224 * 224 * 3)

# Data-loader cores per device. At least: a few per GPU (SPEC 3.5, after Wünsche 2016; TrainRig
# counts four, PyTorch DataLoader workers of one core each), one on a CPU (every loader core is
# taken from the training threads). At most what a host gives a GPU: 16, NVIDIA's DGX A100 (two
# 64-core AMD EPYC 7742 for 8 GPUs; the DGX H100 gives 14). Beyond it steps wait for data unless
# the GPU decodes (NVIDIA DALI with nvJPEG).
LOADER_CORES_PER_GPU = 4
MIN_LOADER_CORES_CPU = 1
MAX_LOADER_CORES_PER_DEVICE = 16
GPU_DECODE_ADVICE = "decode on the GPU (NVIDIA DALI with nvJPEG) or store the images smaller or pre-decoded"


@dataclass(frozen=True)
class DecodeCost:
    """CPU seconds of one core (one thread) to turn one stored sample into the network's input."""

    format: str
    stored_pixels: int | None  # of an image input's stored image; None: not an image input
    decode_s: float
    augment_s: float

    @property
    def per_sample_s(self) -> float:
        return self.decode_s + self.augment_s

    def describe(self) -> str:
        """What is counted, e.g. "decoding JPEG (469 × 387 average) and augmenting"."""
        what = {"png": "decoding PNG", "jpeg": "decoding JPEG"}.get(self.format, "")
        what = what or f"reading {self.format.upper() if self.format in ('tiff', 'csv') else self.format}"
        if self.stored_pixels is not None and self.format in IMAGE_FILE_FORMATS:
            what += f" ({self.stored_pixels / 1e6:.2g} Mpixel images)"
        return what + (" and augmenting (random-resized-crop, flip, normalise)" if self.augment_s else "")


def image_channels(d: DataSpec) -> int | None:
    return d.image_shape[0] if d.image_shape else None


def stored_pixels(d: DataSpec) -> int | None:
    """Pixels of one stored image of an image input [C, H, W]: ``data.stored_resolution`` when
    given; else, for image files (JPEG, PNG, TIFF) of 3-channel inputs at least ImageNet's crop
    (224) on their short side, photos of at least ImageNet's average 469 × 387 (networks train on
    random crops of larger photos); else the network's own H × W (MNIST, CIFAR, arrays prepared
    at the network's size). None when the input is not an image."""
    if d.image_shape is None:
        return None
    if d.stored_resolution is not None:
        return d.stored_resolution[0] * d.stored_resolution[1]
    c, h, w = d.image_shape
    if d.format in IMAGE_FILE_FORMATS and c == 3 and min(h, w) >= PHOTO_CROP_SIDE:
        return max(h * w, IMAGENET_MEAN_PIXELS)
    return h * w


def stored_values(d: DataSpec) -> int:
    """Values (pixel × channel, or elements) one sample stores."""
    px = stored_pixels(d)
    return d.features if px is None else px * (image_channels(d) or 1)


def sample_bytes_on_disk(d: DataSpec) -> float:
    """Bytes of one sample as stored: the workload's own figure, else its stored values × bytes per
    value (1 for image files, which hold 8-bit samples; the data's dtype otherwise) × the format's
    size factor (FORMAT_SIZE_FACTOR). An input that is not an image keeps its features × dtype."""
    if d.bytes_per_sample_on_disk:
        return float(d.bytes_per_sample_on_disk)
    per_value = 1 if d.format in IMAGE_FILE_FORMATS else INPUT_DTYPES[d.dtype]
    return stored_values(d) * per_value * FORMAT_SIZE_FACTOR[d.format]


def dataset_bytes_on_disk(d: DataSpec) -> float:
    """Bytes of the whole dataset as stored (sample_bytes_on_disk × samples)."""
    return d.samples * sample_bytes_on_disk(d)


def decode_cost(d: DataSpec) -> DecodeCost:
    """CPU seconds per sample on one core: decoding its format (DECODE_S_PER_VALUE) plus, for an
    image input stored as image files or at another size than the network's, the ResNet-style
    augmentation (AUGMENT_S_PER_*; its crop and resize scale with the stored image, the rest with
    the network's input)."""
    px = stored_pixels(d)
    decode = stored_values(d) * DECODE_S_PER_VALUE[d.format]
    augment = 0.0
    if d.image_shape is not None and px is not None:
        c, h, w = d.image_shape
        if d.format in IMAGE_FILE_FORMATS or px != h * w:
            augment = px * c * AUGMENT_S_PER_STORED_VALUE + c * h * w * AUGMENT_S_PER_OUTPUT_VALUE
    return DecodeCost(d.format, px, decode, augment)


def loader_cores_needed(samples_per_s: float, cost: DecodeCost) -> float:
    """Cores that decode ``samples_per_s`` samples a second (samples/s × CPU seconds per sample)."""
    return samples_per_s * cost.per_sample_s


def loader_cores(needed: float, device_kind: str) -> int:
    """Loader cores the sizing gives a device: what it needs, at least LOADER_CORES_PER_GPU on an
    accelerator (MIN_LOADER_CORES_CPU on a CPU), at most MAX_LOADER_CORES_PER_DEVICE."""
    floor = MIN_LOADER_CORES_CPU if device_kind == "cpu" else LOADER_CORES_PER_GPU
    want = math.ceil(needed - 1e-9) if math.isfinite(needed) else MAX_LOADER_CORES_PER_DEVICE
    return min(MAX_LOADER_CORES_PER_DEVICE, max(floor, want))


def input_note(cost: DecodeCost | None, pace: float, needed: float, cores: int, kind: str, decode_bound: bool) -> str:
    """The assumption the sizing shows about the loader: what a sample costs, the cores that keep up
    and the cores the step counts; when they cannot keep up, why and what to do."""
    if cost is None or not cost.per_sample_s:
        return ""
    per = "GPU" if kind != "cpu" else "device"
    text = (
        f"input pipeline: {cost.describe()} takes {cost.per_sample_s * 1e3:.3g} ms of one CPU core per sample "
        f"(published figures, docs/sizing.md); at {pace:,.0f} samples/s per {per} that needs "
        f"{needed:.1f} loader cores per {per}; the step counts {cores}"
    )
    if needed > MAX_LOADER_CORES_PER_DEVICE:
        waits = "steps wait for the decoding; " if decode_bound else ""
        if kind == "cpu":
            text += f", the most TrainRig gives a device: {waits}store the data smaller or already decoded"
        else:
            text += (
                f", the most a host gives a GPU ({MAX_LOADER_CORES_PER_DEVICE}, an 8-GPU DGX A100's share): "
                f"{waits}{GPU_DECODE_ADVICE}"
            )
    return text
