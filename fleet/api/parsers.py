"""Request parsers: DRF's, with the checks of ``fleet.inputs`` applied to every string a body
carries (keys included) and, for JSON, a depth cap and a cap on a number's digits checked before
parsing (Python spends quadratic time on a long integer and refuses one of 4,301 digits). Django's
``DATA_UPLOAD_MAX_MEMORY_SIZE`` caps the body's size (DRF reads JSON and form bodies through
``request.body``); a larger one is a 413 (``fleet.api.errors``). JSON's non-finite constants
(``Infinity``, ``NaN``) are refused, except in a model import's config (``ModelImportJSONParser``)."""

from __future__ import annotations

import codecs
import json
from typing import Any

from rest_framework import parsers
from rest_framework.exceptions import ParseError, ValidationError
from rest_framework.utils.json import strict_constant

from fleet import inputs
from planner.engine import finite_config


def _refuse_control_characters(data: Any) -> None:
    errors = inputs.control_character_errors(data)
    if errors:
        raise ValidationError(errors)


def _form_values(data: Any) -> dict[str, list[str]]:
    """A QueryDict's values (every value of a repeated key), keyed by name."""
    return {key: data.getlist(key) if len(data.getlist(key)) > 1 else data.get(key) for key in data}


class JSONParser(parsers.JSONParser):
    """JSON with at most ``fleet.inputs.MAX_JSON_DEPTH`` levels, no number of more than
    ``fleet.inputs.MAX_NUMBER_DIGITS`` digits and no control characters."""

    def parse(self, stream, media_type=None, parser_context=None) -> Any:
        encoding = parsers.get_encoding(parser_context or {})
        try:
            text = codecs.getreader(encoding)(stream).read()
        except (UnicodeDecodeError, LookupError) as exc:
            raise ParseError(f"JSON parse error - the body is not {encoding} text ({exc.reason}).") from None
        if inputs.json_depth(text) > inputs.MAX_JSON_DEPTH:
            raise ParseError(inputs.DEPTH_MESSAGE)
        if inputs.has_long_number(text):
            raise ParseError(inputs.DIGITS_MESSAGE)
        try:
            data = json.loads(text, parse_constant=strict_constant if self.strict else None)
        except ValueError as exc:
            raise ParseError(f"JSON parse error - {exc}") from None
        _refuse_control_characters(data)
        return data


class ModelImportJSONParser(JSONParser):
    """A model import's JSON body: ``Infinity``, ``-Infinity`` and ``NaN`` are read in ``config`` and
    ``quant_config`` (published config.json files carry them; the importer decides what they mean,
    ``planner.engine.hf_config.finite``) and refused, by field, everywhere else."""

    strict = False
    NON_FINITE_FIELDS = frozenset({"config", "quant_config"})

    def parse(self, stream, media_type=None, parser_context=None) -> Any:
        data = super().parse(stream, media_type, parser_context)
        if not isinstance(data, dict):
            if finite_config(data)[1]:
                raise ParseError("JSON parse error - Infinity and NaN are read only in the config.")
            return data
        errors = {
            path: [f"Must be a finite number (got {spelling})."]
            for key, value in data.items()
            if key not in self.NON_FINITE_FIELDS
            for path, spelling in finite_config(value, key)[1].items()
        }
        if errors:
            raise ValidationError(errors)
        return data


class FormParser(parsers.FormParser):
    def parse(self, stream, media_type=None, parser_context=None) -> Any:
        data = super().parse(stream, media_type, parser_context)
        _refuse_control_characters(_form_values(data))
        return data


class MultiPartParser(parsers.MultiPartParser):
    def parse(self, stream, media_type=None, parser_context=None) -> Any:
        parsed = super().parse(stream, media_type, parser_context)
        _refuse_control_characters(_form_values(parsed.data))
        return parsed
