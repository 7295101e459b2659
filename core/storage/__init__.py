"""Storage: the SQLite database of sizings, inventories, calibrations and user devices."""
