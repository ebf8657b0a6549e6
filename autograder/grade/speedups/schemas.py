"""Schema validation that gives the verdicts of the code it stands in for, without repeating work:

* nbgrader validates every cell's metadata with `jsonschema.validate(meta, schema)`, which checks
  the schema itself on every call: here one compiled validator per schema (by content: nbgrader
  reads the schema file again for each notebook), and metadata already found valid is not
  validated again (the same released cells recur in every submission).
* nbformat validates each new output against its JSON schema with jsonschema: here with the
  schema compiled by fastjsonschema (which nbformat itself uses for whole notebooks); an output it
  rejects goes through nbformat's own validation, so the error raised is nbformat's.
"""

from __future__ import annotations

import json
import threading
from typing import Any

import fastjsonschema
import jsonschema
import nbformat.v4
import nbformat.v4.nbbase as nbbase
import nbformat.validator

from autograder.grade.speedups.base import need


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


_compiled_refs: dict[str, Any] = {}


def _validate_node(node: Any, ref: str | None = None) -> Any:
    if ref is None:
        return _nbformat_validate(node, ref)
    check = _compiled_refs.get(ref)
    if check is None:
        v4 = nbformat.v4
        schema = dict(
            nbformat.validator._get_schema_json(v4, version=4, version_minor=v4.nbformat_minor)
        )
        schema["$ref"] = f"#/definitions/{ref}"
        check = _compiled_refs[ref] = fastjsonschema.compile(schema)
    try:
        check(node)
    except fastjsonschema.JsonSchemaException:
        return _nbformat_validate(node, ref)  # nbformat's own error
    return None


def install_metadata_validation() -> None:
    import nbgrader.nbgraderformat.common as nbgrader_format

    need(nbgrader_format, "jsonschema")
    need(jsonschema.validators, "validator_for")
    if not isinstance(nbgrader_format.jsonschema, _CompiledOnce):
        nbgrader_format.jsonschema = _CompiledOnce()


_nbformat_validate: Any = None  # nbformat's own, once installed


def install_output_validation() -> None:
    global _nbformat_validate
    need(nbbase, "validate")
    need(nbformat.validator, "_get_schema_json")
    if nbbase.validate is not _validate_node:
        _nbformat_validate = nbbase.validate
        nbbase.validate = _validate_node
