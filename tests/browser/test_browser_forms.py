"""Issue 28's forms in Chromium: a new record's slug fills itself from the name until it is edited by hand
(static/js/slugs.js), and an imported config.json kept across a refusal of another input."""

from __future__ import annotations

from pathlib import Path

import pytest

from fleet.models import ModelSpec

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

HF = Path(__file__).resolve().parent.parent / "fixtures" / "hf-configs"


@pytest.fixture
def platform(make_user):
    make_user("platform", "platform")


def test_the_slug_follows_the_name_until_edited(open_page, live_server, platform):
    page = open_page("platform")
    page.goto(f"{live_server.url}/workloads/new/")
    page.fill("#id_name", "Coding Agent (EU) #2")
    assert page.input_value("#id_slug") == "coding-agent-eu-2"
    page.fill("#id_slug", "agent-eu")  # by hand: the name no longer moves it
    page.fill("#id_name", "Something else")
    assert page.input_value("#id_slug") == "agent-eu"
    page.fill("#id_slug", "")  # emptied: it follows the name again
    page.type("#id_name", "!")
    assert page.input_value("#id_slug") == "something-else"
    page.fill("#id_name", "x" * 200)
    assert page.input_value("#id_slug") == "x" * int(page.get_attribute("#id_slug", "maxlength"))


def test_an_uploaded_config_survives_a_refusal(open_page, live_server, platform):
    page = open_page("platform")
    page.goto(f"{live_server.url}/models/import/")
    page.set_input_files("#id_config_file", str(HF / "Qwen--Qwen3-0.6B_config.json"))
    page.fill("#id_name", "Qwen3 0.6B")
    page.fill("#id_slug", "")  # refused: a slug is required
    page.click("main form button[type=submit]")
    page.wait_for_selector(".has-error #id_slug")
    assert '"model_type"' in page.input_value("#id_config_text")
    assert page.locator("text=no need to choose it again").count() == 1
    page.fill("#id_slug", "qwen3-06b")  # no file chosen again
    page.click("main form button[type=submit]")
    page.wait_for_url(f"{live_server.url}/models/qwen3-06b/")
    assert ModelSpec.objects.filter(slug="qwen3-06b").exists()
