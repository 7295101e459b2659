"""Advice: the recommendation rules, their expression language and the bill of materials."""
