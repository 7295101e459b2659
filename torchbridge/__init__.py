"""The only package that imports PyTorch (inside its functions): real modules built from layer
lists, and measurements of training steps — for the tests, the benchmarks and the workers. The app
(core, telemetry, reports, gui, cli) never imports it."""
