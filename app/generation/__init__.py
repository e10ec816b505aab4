"""Answer layer: prompt assembly, LLM backends, citations, answerability and the streaming answer pipeline.

Embedded default: ``extractive``. Measured by ``benchmarks/bench_answer.py --n 30`` on SQuAD v1.1 dev (2 cores shared,
load average ~12): extractive first sentence p50 0.64 s / p95 1.28 s, answer contains gold 0.85, citation precision
0.84; ``local`` with the packaged SmolLM2-135M GGUF first sentence p50 37 s / p95 63 s, contains gold 0.19, no valid
citations. Use ``local`` or ``vllm`` only with a stronger model.
"""
