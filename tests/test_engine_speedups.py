"""The worker-side drop-ins (autograder/engine/speedups.py) give the verdicts of the code they
stand in for."""

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
