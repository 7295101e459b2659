"""The workload document: parse and validate what the user describes."""
