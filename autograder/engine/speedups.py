"""Drop-in speed-ups for the library code every graded notebook passes through. Each computes the
same verdicts and values as the code it stands in for, only without repeating work:

* nbgrader validates every cell's metadata with `jsonschema.validate(meta, schema)`, which checks
  the schema itself on every call: here one compiled validator per schema (by content: nbgrader
  reads the schema file again for each notebook), and metadata already found valid is not
  validated again (the same released cells recur in every submission).
* nbformat validates each new output against its JSON schema with jsonschema: here with the
  schema compiled by fastjsonschema (which nbformat itself uses for whole notebooks); an output it
  rejects goes through nbformat's own validation, so the error raised is nbformat's.
* jupyter_client parses every date in every message header with dateutil: here as in kernels
  (kernel_messaging.extract_dates).
* jupyter_client's asyncio channels wait for every message through pyzmq's asyncio poller (a
  few futures and event-loop turns per message, most of a grading worker's CPU per cell). Here
  a channel takes a message that is there at once, and otherwise waits for its socket with a
  plain zmq poll, in slices of at most 50 ms between which the event loop turns: its other
  tasks (nbclient reads the shell and IOPub channels side by side) and timers (cell time-outs,
  the kernel-alive check) run as before, at most a slice late.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from queue import Empty
from typing import Any

import fastjsonschema
import jsonschema
import nbformat.v4
import nbformat.v4.nbbase as nbbase
import nbgrader.nbgraderformat.common as nbgrader_format
import zmq
from jupyter_client import session
from jupyter_client.channels import AsyncZMQSocketChannel
from nbformat.validator import _get_schema_json

from autograder.engine import kernel_messaging


class _CompiledOnce:
    """Stands in for the `jsonschema` module inside nbgrader's metadata validation."""

    def __init__(self) -> None:
        # nbgrader reads its schema file anew for every notebook: schemas are told apart by
        # their content, computed once per schema object (the last few are remembered).
        self._contents: dict[int, tuple[Any, str]] = {}  # id(schema) -> (schema, as JSON)
        self._validators: dict[str, Any] = {}  # schema as JSON -> its validator
        self._valid: set[tuple[str, str]] = set()  # (schema, metadata) as JSON, seen valid
        self._lock = threading.Lock()

    def _content(self, schema: Any) -> str:
        entry = self._contents.get(id(schema))
        if entry is None or entry[0] is not schema:
            if len(self._contents) >= 16:
                self._contents.clear()
            entry = self._contents[id(schema)] = (schema, json.dumps(schema, sort_keys=True))
        return entry[1]

    def validate(self, instance: Any, schema: Any, *args: Any, **kwargs: Any) -> None:
        if args or kwargs:
            return jsonschema.validate(instance, schema, *args, **kwargs)
        with self._lock:
            content = self._content(schema)
            try:
                key = (content, json.dumps(instance, sort_keys=True))
            except (TypeError, ValueError):
                key = None
            validator = self._validators.get(content)
            if validator is None:
                cls = jsonschema.validators.validator_for(schema)
                cls.check_schema(schema)
                validator = self._validators[content] = cls(schema)
            if key in self._valid:
                return None
        error = jsonschema.exceptions.best_match(validator.iter_errors(instance))
        if error is not None:
            raise error
        if key is not None:
            with self._lock:
                self._valid.add(key)
        return None

    def __getattr__(self, name: str) -> Any:
        return getattr(jsonschema, name)


_nbformat_validate = nbbase.validate
_compiled_refs: dict[str, Any] = {}


def _validate_node(node: Any, ref: str | None = None) -> Any:
    if ref is None:
        return _nbformat_validate(node, ref)
    check = _compiled_refs.get(ref)
    if check is None:
        v4 = nbformat.v4
        schema = dict(_get_schema_json(v4, version=4, version_minor=v4.nbformat_minor))
        schema["$ref"] = f"#/definitions/{ref}"
        check = _compiled_refs[ref] = fastjsonschema.compile(schema)
    try:
        check(node)
    except fastjsonschema.JsonSchemaException:
        return _nbformat_validate(node, ref)  # nbformat's own error
    return None


_original_get_msg = AsyncZMQSocketChannel.get_msg
# After this many messages taken at once, the channel lets the event loop turn (as every
# message did before), so a kernel that floods a channel cannot starve the grader's timers.
_TAKEN_BEFORE_A_TURN = 32
_WAIT_SLICE = 0.05  # seconds a channel waits for its socket before the loop turns


async def _get_msg(self: AsyncZMQSocketChannel, timeout: float | None = None) -> dict:
    socket = self.socket
    if socket is None or socket.closed:
        return await _original_get_msg(self, timeout)
    # A plain (blocking-API) socket on the same zmq socket: the asyncio one's recv returns a
    # future. Made again if the channel's socket is not the one it shadows.
    shadowed, plain = getattr(self, "_hooklab_plain", (None, None))
    if shadowed is not socket:
        plain = zmq.Socket.shadow(socket.underlying)
        self._hooklab_plain = (socket, plain)
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        taken = getattr(self, "_hooklab_taken", 0)
        if taken >= _TAKEN_BEFORE_A_TURN:
            self._hooklab_taken = 0
            await asyncio.sleep(0)
            continue
        try:
            frames = plain.recv_multipart(zmq.NOBLOCK)
        except zmq.Again:
            pass
        else:
            self._hooklab_taken = taken + 1
            _, message = self.session.feed_identities(frames)
            return self.session.deserialize(message)
        self._hooklab_taken = 0
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left <= 0:
            raise Empty
        wait = _WAIT_SLICE if left is None else min(_WAIT_SLICE, left)
        if not plain.poll(int(wait * 1000) or 1, zmq.POLLIN):
            await asyncio.sleep(0)


def install() -> None:
    if not isinstance(nbgrader_format.jsonschema, _CompiledOnce):
        nbgrader_format.jsonschema = _CompiledOnce()
    nbbase.validate = _validate_node
    session.extract_dates = kernel_messaging.extract_dates
    AsyncZMQSocketChannel.get_msg = _get_msg
