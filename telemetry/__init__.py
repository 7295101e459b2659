"""GUI-free machine probes and (later) the telemetry sampler."""
