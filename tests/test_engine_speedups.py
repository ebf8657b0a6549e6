"""The drop-ins of autograder/engine/speedups.py, kernel_speedups.py and kernel_messaging.py give
the verdicts and values of the code they stand in for."""

from datetime import UTC

import jsonschema
import pytest
from nbgrader.nbgraderformat.v3 import MetadataValidatorV3

from autograder.engine.speedups import _CompiledOnce


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

    from autograder.engine.kernel_messaging import extract_dates

    moment = datetime(2026, 11, 23, 9, 30, 5, 123456, tzinfo=UTC)
    texts = [
        jsonutil.json_default(moment),  # as a message header carries it: ...Z
        jsonutil.json_default(moment.replace(microsecond=0)),
        moment.astimezone(timezone(timedelta(hours=-5))).isoformat(),
        "2026-11-23T09:30:05",  # no zone: jupyter_client makes it local time
        "2026-11-23",
        "not a date",
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

    from autograder.engine import speedups

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
