"""GUI-free core of TrainRig: workloads, sizing maths, catalogue, cost, store."""
