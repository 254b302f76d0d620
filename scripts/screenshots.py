"""Refresh the README's screenshots (docs/screenshots/*.png) from a running ``make run``.

    make run &                                   # in one terminal (or any running fleetcap)
    .venv/bin/python scripts/screenshots.py      # http://127.0.0.1:8000, demo-admin, var/demo-password

Playwright drives Debian's Chromium (``FLEETCAP_CHROMIUM``, default /usr/bin/chromium), logs in with
the demo login, waits for each page's charts and saves a 1280-pixel-wide PNG of it. Which pages and
what they show is the ``PAGES`` table below; nothing here changes data.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "screenshots"
WHAT_IF = "model=kimi-k3&sku=h200-141gb&gpus=16&tp=8&dp=2&ep=16&kv_cache_dtype=fp8&context_tokens=131072&pool=unified"
#: (file name, path, a selector to wait for before the shot)
PAGES: tuple[tuple[str, str, str], ...] = (
    ("fleet.png", "/", "table"),
    ("what-if.png", f"/what-if/?{WHAT_IF}", "canvas"),
    ("rent-vs-api.png", "/rent-vs-api/", "main"),
    ("spend.png", "/spend/", "main"),
    (
        "route.png",
        "/route/?context_tokens=8192&prompt_tokens=4000&output_tokens=300&prefix_reuse_fraction=0.8"
        "&ttft_slo_ms=2000&tpot_slo_ms=50",
        "main",
    ),
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="http://127.0.0.1:8000")
    parser.add_argument("--user", default="demo-admin")
    parser.add_argument("--password-file", default=str(ROOT / "var" / "demo-password"))
    args = parser.parse_args()
    password = Path(args.password_file).read_text().strip()
    OUT.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=os.environ.get("FLEETCAP_CHROMIUM", "/usr/bin/chromium"),
            args=["--headless=new", "--no-sandbox", "--disable-gpu"],
        )
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(f"{args.url}/accounts/login/")
        page.fill("#id_username", args.user)
        page.fill("#id_password", password)
        page.click("button[type=submit]")
        page.wait_for_url(f"{args.url}/")
        for name, path, selector in PAGES:
            page.goto(f"{args.url}{path}")
            page.wait_for_selector(selector)
            page.wait_for_load_state("networkidle")
            page.wait_for_timeout(600)  # Chart.js animates in
            page.screenshot(path=str(OUT / name), full_page=True)
            print(f"saved {OUT / name}")
        browser.close()


if __name__ == "__main__":
    main()
