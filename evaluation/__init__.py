"""Evaluation and benchmarking code: dataset loaders, IR metrics, temp index builders, the retrieval evaluation CLI
(``python -m evaluation.retrieval``) and the answerability calibration (``python -m evaluation.calibrate``).

This package sits above the serving packages: it may import ``core``, ``retrieval``, ``ingestion`` and
``app.generation``; none of them imports it (``tests/unit/test_layering.py``).
"""
