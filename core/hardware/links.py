"""Host links: the PCI Express rates a device reaches host memory at, defined once."""

from __future__ import annotations

import re

# Transfer rate per lane (GT/s) and line encoding of each PCI Express generation (PCI-SIG base
# specifications 1.0–5.0: 8b/10b up to gen 2, 128b/130b from gen 3).
PCIE_GT_PER_S = {1: 2.5, 2: 5.0, 3: 8.0, 4: 16.0, 5: 32.0}
PCIE_ENCODING = {1: 8 / 10, 2: 8 / 10, 3: 128 / 130, 4: 128 / 130, 5: 128 / 130}


def pcie_bps(generation: int, lanes: int) -> float:
    """Bytes/s per direction over ``lanes`` lanes: gen 3 ×16 = 8 GT/s × 128/130 / 8 × 16 = 15.75 GB/s."""
    return PCIE_GT_PER_S[generation] * 1e9 * PCIE_ENCODING[generation] / 8 * lanes


# What a link of unknown kind is taken to be (all-reduce between devices with no datasheet link):
# the slowest link any catalogue GPU has.
FALLBACK_LINK = "PCIe 3.0 x16"
FALLBACK_LINK_BPS = pcie_bps(3, 16)


def parse_pcie(text: str | None) -> tuple[int, int] | None:
    """(generation, lanes) from "PCIe 4.0 x16" or "PCIe Gen5 ×16"; None if it names no PCIe link."""
    m = re.search(r"pcie\s*(?:gen\s*)?(\d)(?:\.0)?\s*[x×]\s*(\d+)", (text or "").lower())
    return (int(m.group(1)), int(m.group(2))) if m and int(m.group(1)) in PCIE_GT_PER_S else None
