"""The sizing wizard: goal → model → data → training → candidates → results."""
