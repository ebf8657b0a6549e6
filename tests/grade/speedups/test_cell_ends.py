"""Cells that end by count (autograder/grade/speedups/cell_ends.py): a warm kernel answers a grading
worker's execute request with its reply and the number of IOPub messages it sent, instead of an
idle status, and the worker ends the cell once it has them all, as nbclient would on the idle
status."""

import asyncio
import time
from datetime import datetime

import nbformat
import pytest
from warm_client import warm_client

from autograder import notebooks
from autograder.grade import speedups
from autograder.grade.speedups.cell_ends import COUNT_OUTPUTS, OUTPUTS_SENT, QUIET_SECONDS, CellEnds
from autograder.grade.worker.execute import execute_notebook

pytestmark = pytest.mark.nbgrader


def _message(msg_type: str, request: str, **fields) -> dict:
    header = {"msg_id": f"{msg_type}-{time.monotonic_ns()}", "msg_type": msg_type}
    header |= {"session": "s", "username": "u", "version": "5.4", "date": None}
    return {"header": header, "msg_type": msg_type, "parent_header": {"msg_id": request}, **fields}


def _reply(request: str, count: int, idle: str = "2026-11-29T03:00:00.000123+00:00") -> dict:
    return _message(
        "execute_reply", request, metadata={OUTPUTS_SENT: {"count": count, "idle": idle}}
    )


def test_a_cell_ends_once_the_reply_and_every_counted_output_are_in():
    for reply_first in (True, False):
        ends = CellEnds(iopub=object(), shell=object())
        ends.replies_due.add("r1")
        outputs = [_message("stream", "r1"), _message("display_data", "r1")]
        if reply_first:
            ends.took_reply(_reply("r1", 2))
        ends.took_iopub(outputs[0])
        ends.took_iopub(_message("stream", "another request"))  # not counted for r1
        assert not ends.idle_due
        ends.took_iopub(outputs[1])
        assert bool(ends.idle_due) is reply_first
        if not reply_first:
            ends.took_reply(_reply("r1", 2))
        (idle,) = ends.idle_due
        assert idle["msg_type"] == idle["header"]["msg_type"] == "status"
        assert idle["content"] == {"execution_state": "idle"}
        assert idle["parent_header"] == {"msg_id": "r1"}
        # The kernel's time, as a received message's header carries it (a datetime).
        assert idle["header"]["date"] == datetime.fromisoformat("2026-11-29T03:00:00.000123+00:00")
        assert not ends.replies_due and not ends.expected


def test_a_reply_without_a_count_ends_nothing():
    ends = CellEnds(iopub=object(), shell=object())
    ends.took_reply(_message("execute_reply", "r1", metadata={}))
    assert not ends.idle_due and ends.quiet_deadline() is None


def test_a_cell_whose_outputs_were_lost_ends_after_a_quiet_spell():
    ends = CellEnds(iopub=object(), shell=object())
    ends.took_reply(_reply("r1", 3))
    ends.took_iopub(_message("stream", "r1"))
    deadline = ends.quiet_deadline()
    assert deadline == pytest.approx(time.monotonic() + QUIET_SECONDS, abs=0.5)
    ends.end_overdue()
    assert [m["parent_header"]["msg_id"] for m in ends.idle_due] == ["r1"]


def _notebook(sources: list[str]) -> str:
    return nbformat.writes(notebooks.new_notebook([nbformat.v4.new_code_cell(s) for s in sources]))


def test_a_warm_kernel_counts_instead_of_going_idle_only_when_asked(tmp_path):
    # With a plain jupyter_client client: asked, the reply counts every IOPub message of the
    # request and no idle status comes; not asked, the kernel answers as stock.
    code = "print('a', flush=True)\ndisplay(1)\nprint('b')\n2"

    async def run(client, metadata):
        request = client.session.msg("execute_request", {"code": code, "silent": False})
        request["metadata"].update(metadata)
        client.shell_channel.send(request)
        reply = await client.get_shell_msg(timeout=30)
        assert reply["parent_header"]["msg_id"] == request["msg_id"]
        seen, deadline = [], time.monotonic() + 1.5
        while time.monotonic() < deadline:
            try:
                message = await client.get_iopub_msg(timeout=0.2)
            except Exception:  # queue.Empty
                continue
            if message["parent_header"].get("msg_id") == request["msg_id"]:
                seen.append(message["msg_type"] + message["content"].get("execution_state", ""))
        return reply, seen

    async def both():
        async with warm_client(tmp_path) as client:
            return await run(client, {COUNT_OUTPUTS: True}), await run(client, {})

    (asked, asked_seen), (stock, stock_seen) = asyncio.run(both())
    outputs = ["stream", "display_data", "stream", "execute_result"]
    assert asked_seen == outputs
    assert asked["metadata"][OUTPUTS_SENT]["count"] == len(outputs)
    assert stock_seen == [*outputs, "statusidle"]
    assert OUTPUTS_SENT not in stock["metadata"]


def test_a_flood_of_outputs_arrives_whole(tmp_path):
    # 5000 outputs in a burst overflowed zmq's default queue of 1000 for the worker: outputs
    # were lost, the error that fails a test cell among them. None is lost now. (That a cell ends
    # by its count of outputs, not after QUIET_SECONDS, the tests above check by message.)
    speedups.install("worker")  # what grading workers run with (execute.py)
    flood = "for i in range(5000):\n    display(i)\nraise ValueError('after the flood')"
    ran = nbformat.reads(execute_notebook(_notebook([flood]), str(tmp_path)).notebook, 4)
    outputs = ran.cells[0].outputs
    assert [o.data["text/plain"] for o in outputs[:-1]] == [str(i) for i in range(5000)]
    assert outputs[-1].output_type == "error" and outputs[-1].evalue == "after the flood"


@pytest.mark.parametrize("sandbox", ["bwrap", "off"])
def test_a_forked_childs_output_is_counted_with_its_cells(tmp_path, monkeypatch, sandbox):
    # ipykernel forwards what a forked child prints as it arrives, not through Session.send; a
    # reply that did not count it ended some cells before the parent's own output was in. The
    # forwarding goes over TCP on 127.0.0.1: a sandboxed kernel has a loopback of its own for
    # it (without one, the child's output was lost and each cell took about 6 s).
    from autograder.grade.kernels.template_client import Zygote

    speedups.install("worker")
    monkeypatch.setenv("HOOKLAB_SANDBOX", sandbox)
    zygote = Zygote()
    monkeypatch.setattr(Zygote, "_current", zygote)
    assert zygote.info["sandboxed"] == (sandbox == "bwrap"), zygote.weaker
    setup = "import multiprocessing, time\ndef child():\n    print('child', flush=True)"
    # The child's output reaches the parent's IOPub thread over TCP at its own pace: a stock
    # kernel too drops it from the cell if it comes in after the idle status. The pause lets it
    # come in first, also on a loaded machine; it is still forwarded before the parent's output.
    cell = (
        "process = multiprocessing.get_context('fork').Process(target=child)\n"
        "process.start()\nprocess.join()\ntime.sleep(0.1)\nprint('parent')"
    )
    try:
        ran = execute_notebook(_notebook([setup] + [cell] * 30), str(tmp_path)).notebook
    finally:
        zygote.stop()
    printed = ["".join(o.text for o in c.outputs) for c in nbformat.reads(ran, 4).cells[1:]]
    # Both outputs in every cell; how the two processes' writes interleave is up to timing.
    missing = [text for text in printed if "child" not in text or "parent" not in text]
    assert len(printed) == 30 and missing == []
