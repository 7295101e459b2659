"""GUI-free core of TrainRig: workloads, sizing maths, catalogue, cost, store."""

__version__ = "0.1.0"  # keep in step with pyproject.toml (tests/unit/test_packaging.py checks)
