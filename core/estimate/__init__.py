"""Estimates: peak memory, step and training time, cost, the seed formulas, sizing per candidate."""
