"""Request body parsers with limits: no body can crash the server or exhaust its memory.

Every body is read up to a byte cap; JSON is refused when nested deeper than a few levels (Python's
decoder recurses once per level), when it uses NaN or Infinity (not JSON), when a number is beyond
every float, or when a string holds a NUL or a lone surrogate (PostgreSQL stores neither). A
refusal is a 400 naming the field: ``{"detail": …, "errors": {"title": [...]}}``, or ``"body"``
when the problem is the body as a whole.
"""

import codecs
import io
import json
import math
import sys
from typing import Any

from django.conf import settings
from rest_framework import parsers
from rest_framework.exceptions import ParseError

from releases.services.errors import ValidationFailed

DEFAULT_MAX_BODY_BYTES = 2 * 1024 * 1024
DEFAULT_MAX_JSON_DEPTH = 32


class BodyRefused(ParseError):
    """A body the API will not read, with the field paths it names (``errors``)."""

    def __init__(self, errors: dict[str, list[str]], detail: str = "Invalid input.") -> None:
        super().__init__(detail)
        self.errors = errors


def max_body_bytes() -> int:
    """Largest JSON or form body read, in bytes (``REST_FRAMEWORK["MAX_BODY_BYTES"]``)."""
    return int(settings.REST_FRAMEWORK.get("MAX_BODY_BYTES", DEFAULT_MAX_BODY_BYTES))


def max_json_depth() -> int:
    """Deepest nesting of arrays and objects accepted (``REST_FRAMEWORK["MAX_JSON_DEPTH"]``)."""
    return int(settings.REST_FRAMEWORK.get("MAX_JSON_DEPTH", DEFAULT_MAX_JSON_DEPTH))


def _read_bounded(stream, limit: int) -> bytes:
    """At most ``limit`` bytes of ``stream``; one byte more means the body is too large."""
    content = stream.read(limit + 1)
    if len(content) > limit:
        raise BodyRefused(
            {"body": [f"must be at most {limit:,} bytes"]}, detail="The request body is too large."
        )
    return content


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _path(parts: tuple) -> str:
    return ".".join(str(part) for part in parts) or "body"


def _text_problem(text: str) -> str | None:
    if "\x00" in text:
        return "must not contain a NUL character"
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            return "must be valid Unicode text (it contains a lone surrogate)"
    return None


def check_json_value(value: Any, *, max_depth: int) -> None:
    """Raise :class:`BodyRefused` naming the first field of ``value`` that the API cannot store
    or compute with: nesting deeper than ``max_depth``, a NUL or lone surrogate in a string or
    key, or a number beyond every float. Walks with an explicit stack, never recursing."""
    stack: list[tuple[Any, tuple, int]] = [(value, (), 0)]
    while stack:
        item, path, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth >= max_depth:
                raise BodyRefused(
                    {"body": [f"must not nest arrays and objects deeper than {max_depth} levels"]}
                )
            if isinstance(item, dict):
                for key, child in item.items():
                    problem = _text_problem(key)
                    if problem is not None:
                        raise BodyRefused({_path(path): [f"a key {problem}"]})
                    stack.append((child, (*path, key), depth + 1))
            else:
                stack.extend((child, (*path, index), depth + 1) for index, child in enumerate(item))
        elif isinstance(item, str):
            problem = _text_problem(item)
            if problem is not None:
                raise BodyRefused({_path(path): [problem]})
        elif isinstance(item, float) and not math.isfinite(item):
            # json turns 1e400 into inf: a number beyond every float.
            raise BodyRefused({_path(path): [_out_of_range()]})
        elif isinstance(item, int) and abs(item) > sys.float_info.max:
            raise BodyRefused({_path(path): [_out_of_range()]})


def _out_of_range() -> str:
    return f"must be a number between -{sys.float_info.max:.3g} and {sys.float_info.max:.3g}"


def parse_json_bytes(content: bytes, *, encoding: str = "utf-8") -> Any:
    """The JSON value in ``content``, checked by :func:`check_json_value`; :class:`ParseError`
    (a 400) for anything else, never another exception."""
    try:
        text = codecs.decode(content, encoding)
    except (UnicodeDecodeError, LookupError) as error:
        raise ParseError(f"JSON parse error - the body is not valid {encoding} text") from error
    try:
        value = json.loads(text, parse_constant=_refuse_constant)
    except RecursionError:
        # The decoder recurses once per level; a deep body reaches the interpreter's limit.
        raise BodyRefused(
            {"body": [f"must not nest arrays and objects deeper than {max_json_depth()} levels"]}
        ) from None
    except ValueError as error:
        raise ParseError(f"JSON parse error - {error}") from None
    check_json_value(value, max_depth=max_json_depth())
    return value


def _check_form_fields(data) -> None:
    for key, values in data.lists():
        problem = _text_problem(key)
        if problem is not None:
            raise BodyRefused({"body": [f"a field name {problem}"]})
        for text in values:
            problem = _text_problem(text)
            if problem is not None:
                raise BodyRefused({key: [problem]})


def _utf8_only(parser_context) -> str:
    """The body's declared charset, which must be UTF-8: other codecs decode differently (and
    some, such as punycode, slowly, or with errors that are not UnicodeDecodeError)."""
    encoding = parsers.get_encoding(parser_context or {})
    try:
        name = codecs.lookup(encoding).name
    except (LookupError, TypeError, ValueError):
        name = ""
    if name != "utf-8":
        raise BodyRefused({"body": ["unsupported charset; send UTF-8"]})
    return "utf-8"


class JSONParser(parsers.JSONParser):
    """DRF's JSON parser with the limits above."""

    def parse(self, stream, media_type=None, parser_context=None):
        encoding = _utf8_only(parser_context)
        return parse_json_bytes(_read_bounded(stream, max_body_bytes()), encoding=encoding)


class FormParser(parsers.FormParser):
    """DRF's form parser, reading at most the byte cap and refusing NUL characters in fields."""

    def parse(self, stream, media_type=None, parser_context=None):
        encoding = _utf8_only(parser_context)
        content = _read_bounded(stream, max_body_bytes())
        data = super().parse(io.BytesIO(content), media_type, {"encoding": encoding})
        _check_form_fields(data)
        return data


class MultiPartParser(parsers.MultiPartParser):
    """DRF's multipart parser for uploads: the whole body at most the largest upload plus the
    body cap (checked from its length before any of it is stored), and no NUL characters in its
    text fields."""

    def parse(self, stream, media_type=None, parser_context=None):
        request = (parser_context or {}).get("request")
        limit = settings.DATASET_MAX_UPLOAD_BYTES + max_body_bytes()
        if request is not None:
            try:
                length = int(request.META.get("CONTENT_LENGTH") or 0)
            except ValueError:
                length = 0
            if length > limit:
                raise BodyRefused(
                    {"body": [f"must be at most {limit:,} bytes"]},
                    detail="The request body is too large.",
                )
        result = super().parse(stream, media_type, parser_context)
        _check_form_fields(result.data)
        return result


JSON_OBJECT_MESSAGE = "must be a JSON object"


def json_object_body(request) -> dict:
    """The request's parsed body, which must be a JSON object: else a 400 naming ``body``."""
    if not isinstance(request.data, dict):
        raise ValidationFailed({"body": [JSON_OBJECT_MESSAGE]})
    return request.data
