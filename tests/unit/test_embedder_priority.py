"""Queries go before ingestion on a shared embedder (retrieval.embedders.PriorityLock and slicing)."""

import threading
import time

import pytest

from retrieval.embedders import BACKGROUND_SLICE, PriorityLock, _in_slices

pytestmark = pytest.mark.unit


def test_an_urgent_holder_goes_before_waiting_background_holders():
    lock = PriorityLock()
    order: list[str] = []
    first_in = threading.Event()

    def background(name: str) -> None:
        with lock.hold(urgent=False):
            order.append(name)
            if name == "bg0":
                first_in.set()
                time.sleep(0.2)  # hold while the others queue up

    threads = [threading.Thread(target=background, args=("bg0",))]
    threads[0].start()
    first_in.wait(5)
    threads += [threading.Thread(target=background, args=(f"bg{i}",)) for i in (1, 2)]
    for t in threads[1:]:
        t.start()
    time.sleep(0.05)

    def urgent() -> None:
        with lock.hold(urgent=True):
            order.append("query")

    q = threading.Thread(target=urgent)
    q.start()
    for t in [*threads, q]:
        t.join(5)
    assert order[0] == "bg0" and order[1] == "query", order
    assert sorted(order[2:]) == ["bg1", "bg2"]


def test_document_embedding_takes_the_lock_once_per_slice_and_keeps_order():
    import numpy as np

    holds: list[int] = []

    class CountingLock(PriorityLock):
        def hold(self, *, urgent: bool):  # noqa: ANN201
            assert urgent is False
            holds.append(1)
            return super().hold(urgent=urgent)

    texts = [str(i) for i in range(BACKGROUND_SLICE * 2 + 3)]
    out = _in_slices(texts, 1, CountingLock(), lambda part: np.array([[float(t)] for t in part], dtype=np.float32))
    assert len(holds) == -(-len(texts) // BACKGROUND_SLICE)  # one hold per slice, the last one partial
    assert out[:, 0].tolist() == [float(t) for t in texts]
    assert _in_slices([], 4, CountingLock(), lambda part: np.zeros((0, 4))).shape == (0, 4)
