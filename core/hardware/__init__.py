"""The hardware catalogue: devices with datasheet figures and their sources."""
