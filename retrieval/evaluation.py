"""Moved: the retrieval evaluation lives in ``evaluation/`` (``python -m evaluation.retrieval``), outside the serving
packages. ``python -m retrieval.evaluation ...`` still works for scripts written before the move; nothing imports this
module (it does its work only when run as ``__main__``)."""

if __name__ == "__main__":
    import runpy

    runpy.run_module("evaluation.retrieval", run_name="__main__", alter_sys=True)
