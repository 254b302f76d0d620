"""Issue 28, "Reading": every page as a person reads it. Each page of the apps (tests/page_walk.py, the
records of tests/test_page_fuzz.py) is rendered and its visible text read for raw floats (more than 4
decimals), byte counts of a million or more written as bytes rather than in binary units, and record slugs
in its h1/h2 headlines (a headline names a record by its name)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from page_walk import html_pages, read
from test_page_fuzz import fast_password_hashing, quiet_refusals, world  # noqa: F401 (fixtures)

#: A float written raw: five decimals or more (``2.82094``, ``0.0000123``), not part of a version or address.
RAW_FLOAT = re.compile(r"(?<![\w.:/-])\d+\.\d{5,}(?![\w.])")
#: A byte count of a million or more written in bytes (``40,108,032 B``, ``40108032 bytes``); the exact bytes
#: in brackets after a figure in binary units (``19.13 MiB (20,054,016 B)``) are allowed.
RAW_BYTES = re.compile(r"(?<!\()\b(\d{1,3}(?:,\d{3}){2,}|\d{7,}) (?:B|bytes)\b(?!\))")
#: Pages whose findings are another change's to fix (printed, not failed): none since issue 28's pages were merged.
ELSEWHERE: tuple[str, ...] = ()


def _slugs() -> set[str]:
    """The slugs of every record a headline may name, those that read as slugs (a hyphen, or not the name
    lower-cased): ``llama-3.1-70b``, not ``pool`` for the cluster named ``Pool``."""
    from fleet.models import ApiPrice, Cluster, Deployment, HardwareSku, ModelSpec, Workload

    found = set()
    names = {ApiPrice: "model_name", Deployment: "slug"}
    for model in (ApiPrice, Cluster, Deployment, HardwareSku, ModelSpec, Workload):
        for slug, name in model.objects.values_list("slug", names.get(model, "name")):
            if "-" in slug or model is Deployment or slug != str(name).lower():
                found.add(slug)
    return found


def findings(html: str, path: str, slugs: set[str]) -> list[str]:
    """What a page writes that a person should not have to read."""
    page = read(html, path)
    text = page.visible
    found = [f"raw float {m.group(0)!r}" for m in RAW_FLOAT.finditer(text)]
    found += [f"raw bytes {m.group(0)!r}" for m in RAW_BYTES.finditer(text)]
    for headline in page.headlines:
        words = set(re.findall(r"[\w.-]+", headline))
        found += [f"slug {s!r} in headline {headline!r}" for s in sorted(words & slugs)]
    return found


@pytest.mark.django_db
def test_no_page_writes_raw_floats_raw_bytes_or_slugs_in_headlines(world: Any) -> None:  # noqa: F811
    slugs = _slugs()
    client = world.clients["admin"]  # the role that sees every control and figure
    problems, elsewhere, seen = [], [], 0
    for page, path, html in html_pages(client, world.keys):
        seen += 1
        for problem in findings(html, path, slugs):
            (elsewhere if page.name in ELSEWHERE else problems).append(f"{page.name} {path}: {problem}")
    assert seen > 30, seen
    if elsewhere:
        print("\n".join(["Found on the pages reworked elsewhere:", *elsewhere]))
    assert not problems, "\n".join(problems)


def test_the_readers_find_what_they_look_for() -> None:
    html = (
        "<h1>Deployment llama-3.1-70b</h1><p>State padding 2.82094; 40,108,032 B; 19.13 MiB (20,054,016 B)</p>"
        '<p title="1,073,741,824 bytes">1.00 GiB</p><script>var x = 0.123456;</script><p>vllm 0.15.0, 3.35 TB/s</p>'
    )
    assert findings(html, "/x/", {"llama-3.1-70b"}) == [
        "raw float '2.82094'",
        "raw bytes '40,108,032 B'",
        "slug 'llama-3.1-70b' in headline 'Deployment llama-3.1-70b'",
    ]
