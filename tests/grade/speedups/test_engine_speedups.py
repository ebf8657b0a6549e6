"""The drop-ins of autograder/grade/speedups/ (schemas.py, dates.py, channels.py, tracebacks.py) give
the verdicts and values of the code they stand in for, as does the workers' notebook writer
(pipeline.writes_consuming); the collector pause (collector.py) ends."""

import copy
import gc
import json
from datetime import UTC

import jsonschema
import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output
from nbgrader.nbgraderformat.v3 import MetadataValidatorV3

from autograder.grade import collector
from autograder.grade.speedups.schemas import _CompiledOnce
from autograder.grade.worker.pipeline import writes_consuming


def test_metadata_validation_gives_jsonschemas_verdicts_and_compiles_each_schema_once():
    compiled = _CompiledOnce()
    good = {
        "grade": True,
        "grade_id": "a_test",
        "locked": True,
        "points": 1,
        "schema_version": 3,
        "solution": False,
        "task": False,
    }
    bad = {**good, "points": "one"}
    for _ in range(3):
        schema = MetadataValidatorV3().schema  # read anew for every notebook, as nbgrader does
        compiled.validate(good, schema)
        with pytest.raises(jsonschema.ValidationError) as ours:
            compiled.validate(bad, schema)
        with pytest.raises(jsonschema.ValidationError) as stock:
            jsonschema.validate(bad, schema)
        assert ours.value.message == stock.value.message
    assert len(compiled._validators) == 1


def test_message_dates_parse_as_jupyter_client_parses_them():
    from datetime import datetime, timedelta, timezone

    from jupyter_client import jsonutil

    from autograder.grade.speedups.dates import extract_dates

    moment = datetime(2026, 11, 23, 9, 30, 5, 123456, tzinfo=UTC)
    texts = [
        jsonutil.json_default(moment),  # as a message header carries it: ...Z
        jsonutil.json_default(moment.replace(microsecond=0)),
        moment.astimezone(timezone(timedelta(hours=-5))).isoformat(),
        "2026-11-23T09:30:05",  # no zone: jupyter_client makes it local time
        "2026-11-23",
        "not a date",
        "2026-11-23 is a long enough string",  # "-" fifth: goes to the pattern, no match
        "a string long enough but not a date",
    ]
    message = {"header": {"date": texts[0]}, "content": {"dates": texts, "n": 3}}
    ours, stock = extract_dates(message), jsonutil.extract_dates(message)
    assert ours == stock
    flat = [(type(a), str(a)) for a in ours["content"]["dates"]]
    assert flat == [(type(b), str(b)) for b in stock["content"]["dates"]]


def test_a_channel_takes_waiting_messages_at_once_and_still_waits_for_later_ones():
    import asyncio

    import zmq
    import zmq.asyncio
    from jupyter_client.channels import AsyncZMQSocketChannel
    from jupyter_client.session import Session

    from autograder.grade.speedups import channels as speedups

    async def scenario() -> None:
        context = zmq.asyncio.Context()
        session = Session(key=b"secret")

        def connected_pair(name: str) -> tuple:
            kernel_end, client_end = context.socket(zmq.PAIR), context.socket(zmq.PAIR)
            kernel_end.bind(f"inproc://{name}")
            client_end.connect(f"inproc://{name}")
            return kernel_end, client_end

        kernel_side, client_side = connected_pair("channel")
        channel = AsyncZMQSocketChannel(client_side, session)
        sent = [{"n": n, "text": "x" * n} for n in range(100)]
        for content in sent:
            session.send(kernel_side, "stream", content)
        await asyncio.sleep(0.05)  # all of them have arrived
        got = [(await speedups._get_msg(channel, timeout=1))["content"] for _ in sent]
        assert got == sent
        # Taken without the asyncio poller (which still lets the loop turn every 32 messages).
        assert 0 < channel._hooklab_taken <= speedups._TAKEN_BEFORE_A_TURN
        with pytest.raises(Exception) as empty:
            await speedups._get_msg(channel, timeout=0.05)
        assert type(empty.value).__name__ == "Empty"
        # After taking messages behind the poller's back, a later message still wakes it.
        later = asyncio.get_running_loop().call_later(
            0.1, session.send, kernel_side, "stream", {"late": True}
        )
        message = await asyncio.wait_for(speedups._get_msg(channel, timeout=5), timeout=10)
        assert message["content"] == {"late": True}
        later.cancel()
        # A channel given another socket (the first one closed) reads from that one.
        kernel_side.close(linger=0)
        client_side.close(linger=0)
        other_kernel, other_client = connected_pair("other")
        channel.socket = other_client
        session.send(other_kernel, "stream", {"other": True})
        await asyncio.sleep(0.05)
        assert (await speedups._get_msg(channel, timeout=1))["content"] == {"other": True}
        for socket in (other_kernel, other_client):
            socket.close(linger=0)
        context.term()

    asyncio.run(scenario())


def test_a_channel_waiting_without_a_time_limit_lets_timers_run_and_can_be_cancelled():
    # nbclient waits on IOPub with no time limit while the cell's time-out and the kernel-alive
    # check are timers and tasks of the same event loop: the wait must let them run.
    import asyncio
    import itertools
    import threading
    import time

    import zmq
    import zmq.asyncio
    from jupyter_client.channels import AsyncZMQSocketChannel
    from jupyter_client.session import Session

    from autograder.grade.speedups import channels as speedups

    async def scenario() -> None:
        context, plain_context = zmq.asyncio.Context(), zmq.Context()
        kernel_end, client_end = plain_context.socket(zmq.PAIR), context.socket(zmq.PAIR)
        port = kernel_end.bind_to_random_port("tcp://127.0.0.1")
        client_end.connect(f"tcp://127.0.0.1:{port}")
        session = Session(key=b"secret")
        channel = AsyncZMQSocketChannel(client_end, session)
        ticks = []
        # A wait that blocked the loop would never time out: this message ends it after 3 s,
        # and the test fails instead of hanging.
        rescue = threading.Timer(3.0, session.send, (kernel_end, "stream", {"late": True}))
        rescue.start()

        async def ticker() -> None:
            while True:
                ticks.append(time.monotonic())
                await asyncio.sleep(0.01)

        ticking = asyncio.ensure_future(ticker())
        start = time.monotonic()
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(speedups._get_msg(channel, timeout=None), timeout=0.5)
        waited = time.monotonic() - start
        ticking.cancel()
        rescue.cancel()
        assert waited < 2.0
        # The ticker ran all along: no gap much longer than a slice (slack for a busy machine).
        gaps = [later - earlier for earlier, later in itertools.pairwise(ticks)]
        assert len(ticks) >= 5 and max(gaps) < 0.3
        rescue.join()
        for socket in (kernel_end, client_end):
            socket.close(linger=0)
        context.term()
        plain_context.term()

    asyncio.run(scenario())


def test_the_collector_is_paused_for_imports_then_runs_as_before():
    assert gc.isenabled()
    try:
        with collector.paused_for_imports():
            assert not gc.isenabled()
            made_inside = [object()]
        assert gc.isenabled()
        assert gc.get_freeze_count() >= len(made_inside)  # frozen: later collections skip it
        gc.disable()  # a process that had it off keeps it off
        with collector.paused_for_imports():
            pass
        assert not gc.isenabled()
    finally:
        gc.unfreeze()
        gc.enable()


def test_writing_a_graded_notebook_in_place_gives_nbformats_text():
    outputs = [
        new_output("stream", name="stdout", text="first line\nsecond line é\n"),
        new_output("display_data", data={"text/plain": "a\nb", "image/png": "iVBORw0KGgo="}),
        new_output("execute_result", data={"text/plain": "3\n4"}, execution_count=2),
        new_output("error", ename="ValueError", evalue="bad", traceback=["line 1", "line 2"]),
    ]
    cells = [
        new_markdown_cell("# Title\nwith two lines", attachments={"a.txt": {"text/plain": "x\ny"}}),
        new_code_cell("x = 1\nprint(x)", outputs=outputs, metadata={"trusted": True, "tags": []}),
    ]
    nb = new_notebook(cells=cells, metadata={"orig_nbformat": 3, "signature": "abc"})
    expected = nbformat.v4.writes(nb)
    written = writes_consuming(copy.deepcopy(nb))
    assert written == expected
    assert json.loads(written)["cells"][1]["source"] == ["x = 1\n", "print(x)"]  # lines split
    assert "trusted" not in json.loads(written)["cells"][1]["metadata"]  # transient dropped


def test_highlighted_source_is_reused_only_for_the_same_code_marks_and_colours(monkeypatch):
    import stack_data.core
    from pygments.formatters.terminal256 import Terminal256Formatter
    from pygments.styles import get_style_by_name

    from autograder.grade.speedups import tracebacks

    stock = stack_data.core._pygmented_with_ranges
    monkeypatch.setattr(stack_data.core, "_pygmented_with_ranges", stock)  # put back after
    tracebacks._reuse_highlighting()
    reusing = stack_data.core._pygmented_with_ranges
    assert reusing is not stock
    code = "def f(x):\n    y = x + 1\n    return y * 2\n"
    for name in ("default", "monokai", "default", "monokai"):
        style = stack_data.core.style_with_executing_node(get_style_by_name(name), "bg:ansired")
        formatter = Terminal256Formatter(style=style)
        for ranges in ([(14, 23)], [(35, 40)], [(14, 23)], []):
            assert reusing(formatter, code, ranges) == stock(formatter, code, ranges)
