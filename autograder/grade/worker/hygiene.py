"""What students and instructors see of an autograded notebook's outputs: no hidden test's code,
no seed, no markup that runs.

Every output of an executed notebook comes from the student's kernel, so any of them may carry
what the kernel saw (its input history holds every cell it ran, seeded test cells included) or
markup meant to run in the browser of whoever opens the feedback or the formgrader. After
execution the worker therefore replaces every copy of a secret (a seed, a line of a hidden test
cell's code) in any output with a placeholder, and sanitizes the outputs' HTML and Markdown
with nbconvert's own SanitizeHTML preprocessor (bleach), which also drops scripts
(application/javascript) and every mimetype it does not know to be safe.
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable
from typing import Any

import bleach
from nbconvert.preprocessors.sanitize import SanitizeHTML

HIDDEN = "[hidden by the grader]"
MIN_SECRET = 8  # characters: shorter lines of a hidden cell (`)`, `pass`) say nothing
# nbconvert's clean_html filter's tags (what its HTML exporter keeps with sanitize_html), plus
# the usual parts of a table and line breaks: a DataFrame or a formatted message stays readable.
TAGS = [*bleach.ALLOWED_TAGS, "div", "pre", "code", "span", "table", "thead", "tbody", "tr"]
TAGS += ["th", "td", "br", "p", "h1", "h2", "h3", "h4", "sub", "sup", "hr"]
ATTRIBUTES = {**bleach.ALLOWED_ATTRIBUTES, "*": ["class", "id"]}


def secret_lines(sources: Iterable[str]) -> set[str]:
    """The lines of hidden test cells worth hiding: every line of at least MIN_SECRET
    characters, stripped."""
    lines = {line.strip() for source in sources for line in source.splitlines()}
    return {line for line in lines if len(line) >= MIN_SECRET}


def _forms(secret: str) -> list[str]:
    """`secret` as outputs may show it: as is, in a repr or JSON string, HTML-escaped."""
    forms = [secret, json.dumps(secret)[1:-1], html.escape(secret)]
    forms.append(secret.replace("\\", "\\\\").replace("'", "\\'"))
    return sorted(set(forms), key=len, reverse=True)


def scrub(nb: Any, secrets: Iterable[str]) -> int:
    """Replace every copy of each secret in every output of `nb` (in place); how many."""
    forms = sorted({f for s in secrets if s for f in _forms(s)}, key=len, reverse=True)
    if not forms:
        return 0
    count = 0

    def clean(text: str) -> str:
        nonlocal count
        for form in forms:
            if form in text:
                count += text.count(form)
                text = text.replace(form, HIDDEN)
        return text

    for cell in nb.cells:
        for output in cell.get("outputs", []):
            _map_texts(output, clean)
    return count


def _map_texts(output: Any, clean) -> None:
    if "text" in output:
        output["text"] = _cleaned(output["text"], clean)
    if "evalue" in output:
        output["evalue"] = _cleaned(output["evalue"], clean)
    if "traceback" in output:
        output["traceback"] = [_cleaned(line, clean) for line in output["traceback"]]
    data = output.get("data", {})
    for key, value in list(data.items()):
        if isinstance(value, str | list):
            data[key] = _cleaned(value, clean)
        elif not key.startswith("image/"):  # JSON data: its strings are searched as text
            data[key] = json.loads(_cleaned(json.dumps(value), clean))


def _cleaned(value: Any, clean) -> Any:
    if isinstance(value, list):
        return [clean(v) if isinstance(v, str) else v for v in value]
    return clean(value) if isinstance(value, str) else value


def sanitize(nb: Any) -> None:
    """Sanitize the HTML and Markdown of every code cell's outputs of `nb` (in place), and drop
    the outputs' scripts and mimetypes nbconvert does not know to be safe. The widgets' state
    goes too: with their views dropped it draws nothing, yet it would make nbconvert's HTML load
    the widget manager from a CDN, and its size is not under the output cap."""
    nb.metadata.pop("widgets", None)
    sanitizer = SanitizeHTML(tags=TAGS, attributes=ATTRIBUTES)
    for cell in nb.cells:
        if cell.get("cell_type") == "code":
            cell.outputs = sanitizer.sanitize_code_outputs(cell.outputs)
