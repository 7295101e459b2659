"""The command-line interface: ``python main.py <command>``, the core without a window."""
