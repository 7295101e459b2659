"""The network: layer list or preset to a layer graph with parameters, FLOPs, tensor sizes."""
