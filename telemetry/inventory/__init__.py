"""What this machine offers for training, read in well under a second (SPEC section 4).

``collect_inventory()`` returns plain JSON-ready data: every value has an entry in ``sources``
saying where it came from, and every value that could not be read is None with a reason in
``unknown``. Linux reads /proc and /sys directly (py-cpuinfo's clock measurement takes a second);
other systems get what psutil and platform give, with the rest marked unknown, never a crash.
"""

from __future__ import annotations

from telemetry.inventory.collect import SystemRoots, collect_inventory, fingerprint
from telemetry.inventory.text import inventory_to_text

__all__ = ["SystemRoots", "collect_inventory", "fingerprint", "inventory_to_text"]
