"""Every page of the apps rendered as each role, for the tests that read pages whole (tests/test_page_numbers.py,
tests/test_page_controls.py): the page list and its records are tests/test_page_fuzz.py's (``PAGES``,
``sample_path``, its ``world`` fixture); an HTML reader gives a page's visible text, headlines and controls."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any

from django.db import transaction
from django.test import Client
from test_page_fuzz import PAGES, Page, sample_path

#: Pages that are not HTML pages of the app (exports, the API's schema pages) are skipped by content type.
HTML = "text/html"


@dataclass(frozen=True)
class Control:
    """Something a person can press: a POST form, an HTMX request, a link to an add, edit or delete page."""

    kind: str  # "form", "hx", "link"
    method: str  # "POST" or "GET"
    target: str  # the path it sends to
    text: str  # what it shows (for the failure message)


#: The ends of the paths whose links are actions (a form page), not reading.
ACTION_ENDS = ("/new/", "/edit/", "/delete/", "/add/", "/import/", "/start/", "/upload/", "/revoke/", "/cancel/")


@dataclass
class Reading(HTMLParser):
    """A page's visible text (no tags, attributes, scripts or styles), its h1/h2 headlines and its controls."""

    page: str = ""
    text: list[str] = field(default_factory=list)
    headlines: list[str] = field(default_factory=list)
    controls: list[Control] = field(default_factory=list)
    _skip: int = 0
    #: Inside an element of class ``source`` (a record's quoted source: its figures are the source's words).
    _quote: list[str] = field(default_factory=list)
    _headline: list[str] | None = None
    _form: dict[str, Any] | None = None
    _link: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        HTMLParser.__init__(self, convert_charrefs=True)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if (self._quote and tag == self._quote[0]) or (not self._quote and "source" in a.get("class", "").split()):
            self._quote.append(tag)
        if tag in ("script", "style", "template"):
            self._skip += 1
        elif tag in ("h1", "h2"):
            self._headline = []
        elif tag == "form":
            method = a.get("method", "get").upper()
            target = a.get("hx-post") or a.get("action") or self.page
            self._form = {"method": "POST" if a.get("hx-post") else method, "target": target, "text": []}
        elif tag == "a" and a.get("href", "").split("?")[0].endswith(ACTION_ENDS):
            self._link = {"target": a["href"].split("#")[0], "text": []}
        for verb in ("post", "put", "patch", "delete"):
            if f"hx-{verb}" in a and tag != "form":
                self.controls.append(Control("hx", verb.upper(), a[f"hx-{verb}"] or self.page, tag))

    def handle_endtag(self, tag: str) -> None:
        if self._quote and tag == self._quote[0]:
            self._quote.pop()
        if tag in ("script", "style", "template"):
            self._skip = max(0, self._skip - 1)
        elif tag in ("h1", "h2") and self._headline is not None:
            self.headlines.append(" ".join("".join(self._headline).split()))
            self._headline = None
        elif tag == "form" and self._form is not None:
            if self._form["method"] == "POST":
                text = " ".join("".join(self._form["text"]).split())
                self.controls.append(Control("form", "POST", self._form["target"], text[:80]))
            self._form = None
        elif tag == "a" and self._link is not None:
            text = " ".join("".join(self._link["text"]).split())
            self.controls.append(Control("link", "GET", self._link["target"], text[:80]))
            self._link = None

    def handle_data(self, data: str) -> None:
        if self._skip:
            return
        if not self._quote:
            self.text.append(data)
        for part in (self._headline, (self._form or {}).get("text"), (self._link or {}).get("text")):
            if part is not None:
                part.append(data)

    @property
    def visible(self) -> str:
        return " ".join(" ".join(self.text).split())


def read(html: str, page: str) -> Reading:
    reading = Reading(page=page)
    reading.feed(html)
    reading.close()
    return reading


def get(client: Client, path: str) -> Any:
    """One GET in a savepoint rolled back after it (a page may store what it computed)."""
    with transaction.atomic():
        response = client.get(path)
        transaction.set_rollback(True)
    return response


def html_pages(client: Client, keys: dict[str, Any]) -> Iterator[tuple[Page, str, str]]:
    """``(page, path, html)`` of every page that answers ``client``'s GET with a 200 HTML page."""
    for page in PAGES:
        path = sample_path(page, keys)
        response = get(client, path)
        if response.status_code == 200 and response.get("Content-Type", "").startswith(HTML):
            yield page, path, response.content.decode()
