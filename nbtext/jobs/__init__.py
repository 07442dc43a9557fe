"""The jobs: training, calibration, evaluation, cross-validation, merging, the online protocol,
loading and learning a few messages, over forked workers or a Dask cluster."""
