"""The one home of what makes raw input unusable, for every front door (API parsers, the
middleware that reads URLs, page form fields): control characters in text, and JSON nested too
deep. Pure Python; the callers turn a problem into their audience's field error."""

from __future__ import annotations

import json
import re
from typing import Any

#: C0 control characters (NUL included) except tab, newline and carriage return. PostgreSQL text
#: cannot hold NUL at all (psycopg refuses the query), and the rest are never meant in a name, a
#: slug or a note.
CONTROL_CHARACTERS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff]")
CONTROL_MESSAGE = "Contains a control character (U+{code:04X}); only tab, newline and carriage return are allowed."
#: A lone surrogate (JSON may escape one, ``"\ud800"``) is no character: UTF-8 cannot encode it,
#: so PostgreSQL cannot store it.
SURROGATE_MESSAGE = "Contains a lone surrogate (U+{code:04X}), which is not a character."

#: The deepest JSON a request may nest (objects and arrays); our deepest real body (a model import's
#: config.json) nests 4. Python's parser recurses, so 100,000 levels would be a RecursionError.
MAX_JSON_DEPTH = 64
DEPTH_MESSAGE = f"JSON nested more than {MAX_JSON_DEPTH} levels deep."

#: The longest run of digits a JSON number may have: no figure here needs more than a few dozen, and
#: Python refuses to read an integer of more than 4,300 digits (a ValueError, not a JSON error).
MAX_NUMBER_DIGITS = 100
DIGITS_MESSAGE = f"A number has more than {MAX_NUMBER_DIGITS} digits; no figure here needs that many."
_LONG_NUMBER = re.compile(rf"\d{{{MAX_NUMBER_DIGITS + 1},}}")


def has_long_number(text: str) -> bool:
    """Whether ``text`` (raw JSON) holds a run of more than ``MAX_NUMBER_DIGITS`` digits outside its
    strings: a number too long to be a figure (checked before parsing, so it costs no parse)."""
    return bool(_LONG_NUMBER.search(without_strings(text, '""')))


def without_strings(text: str, instead: str = "") -> str:
    """``text`` (raw JSON) with each string replaced by ``instead``: its escaped backslashes and quotes
    dropped, then every other stretch between two quotes. Four passes in C (a regex over the strings
    stepped through every escape: 0.3 s for a 5 MiB log of short lines). On valid JSON it is the JSON
    lexer's view; on invalid text it agrees with the lexer up to the first error, past which the
    parser reads nothing (a string left open swallows the rest, as the parser would stop there)."""
    if '"' not in text:
        return text
    return instead.join(text.replace("\\\\", "").replace('\\"', "").split('"')[::2])


#: The longest text a page's number field reads: more characters than any figure has digits, so a
#: 5,000-digit integer (which ``int()`` spends quadratic time on up to Python's 4,300-digit limit,
#: and then refuses with a ValueError) is refused before it is parsed.
NUMBER_TEXT_MESSAGE = f"More than {MAX_NUMBER_DIGITS} characters: no figure here has that many digits."


def number_text_message(text: str) -> str | None:
    """The message for a number's text too long to be a figure (checked before parsing), or None."""
    return NUMBER_TEXT_MESSAGE if len(text.strip()) > MAX_NUMBER_DIGITS else None


_ASCII_DIGITS = re.compile(r"[0-9]+")


def whole_number(text: str | None, max_digits: int = 18) -> int | None:
    """The whole number ``text`` spells in ASCII digits (a record's id in a query or a path), or None:
    not one, or longer than ``max_digits`` (never parsed). ``str.isdigit()`` is no such test: it is
    true of "²" and of 5,000 digits, both a ValueError in ``int()``."""
    if text is None or len(text) > max_digits or not _ASCII_DIGITS.fullmatch(text):
        return None
    return int(text)


#: The longest free text a record keeps (a source note): the catalogue's longest is under 500.
MAX_TEXT_CHARS = 10_000

#: The largest JSON a record's field holds (layer groups, assumptions), as JSON text: the catalogue's
#: largest is about 1 KB, and 64 KB holds thousands of layer groups.
MAX_JSON_FIELD_CHARS = 64 * 1024
JSON_SIZE_MESSAGE = f"More than {MAX_JSON_FIELD_CHARS:,} characters of JSON; no record here needs that much."


_BRACKET = re.compile(r"[\[\]{}]")


#: Fields that hold an engine's startup log as pasted from a terminal: ANSI colour and cursor
#: sequences (``ESC [ 1 ; 36 m``) are what such logs carry (vLLM colours its process prefixes) and the
#: log parser strips them (``planner.engine.startup_log``), so there, and only there, they are allowed.
LOG_FIELDS = frozenset({"log"})
ANSI_SEQUENCE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b[@-_]")


def control_character_message(value: str, *, log: bool = False) -> str | None:
    """The message for the first refused control character (or lone surrogate) in ``value``, or
    None when clean; ``log``: ANSI escape sequences are not refused (``LOG_FIELDS``)."""
    if log and "\x1b" in value:
        value = ANSI_SEQUENCE.sub("", value)
    found = CONTROL_CHARACTERS.search(value)
    if found is None:
        return None
    code = ord(found.group())
    return (SURROGATE_MESSAGE if 0xD800 <= code <= 0xDFFF else CONTROL_MESSAGE).format(code=code)


def control_character_errors(data: Any, path: str = "") -> dict[str, list[str]]:
    """Field path (dotted, list items by index) -> message for every string in parsed data (keys
    included) holding a refused control character."""
    errors: dict[str, list[str]] = {}
    if isinstance(data, str):
        message = control_character_message(data, log=not LOG_FIELDS.isdisjoint(path.split(".")))
        if message:
            errors[path or "non_field_errors"] = [message]
    elif isinstance(data, dict):
        for key, value in data.items():
            key_text = str(key)
            where = f"{path}.{key_text}" if path else key_text
            if control_character_message(key_text):
                clean = CONTROL_CHARACTERS.sub("?", where)
                errors[clean] = ["The field name contains a control character."]
            else:
                errors.update(control_character_errors(value, where))
    elif isinstance(data, (list, tuple)):
        for index, value in enumerate(data):
            errors.update(control_character_errors(value, f"{path}.{index}" if path else str(index)))
    return errors


def json_depth(text: str, limit: int = MAX_JSON_DEPTH) -> int:
    """How deep ``text`` nests arrays and objects, counting up to ``limit + 1`` (then it stops).
    Brackets inside strings do not count; the text need not be valid JSON."""
    depth = deepest = 0
    for bracket in _BRACKET.findall(without_strings(text)):
        if bracket in "[{":
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > limit:
                    break
        else:
            depth -= 1
    return deepest


def loads(text: str | bytes, limit: int = MAX_JSON_DEPTH) -> Any:
    """``json.loads`` that refuses nesting deeper than ``limit`` (ValueError with DEPTH_MESSAGE)."""
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    if json_depth(text, limit) > limit:
        raise ValueError(DEPTH_MESSAGE)
    return json.loads(text)
