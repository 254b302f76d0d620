"""Calibration benchmark: CPU to calibrate from a 5 MiB startup log, worst cases included (issue 29).

Cases, each just under ``MAX_LOG_BYTES`` (5 MiB), built from the real fixture logs
(tests/fixtures/startup_logs) and from lines made to make regexes backtrack:

- ``real logs repeated``: every fixture log, again and again (every line one the parser reads);
- ``startup + request noise``: the Qwen3-Next tp 2 log, then engine request-log lines;
- ``tiny lines``: ``x`` on 2.6 million lines (the most lines 5 MiB can hold);
- ``trigger on every line``: ``vllm`` on a million lines (past the lines the parser reads in full);
- ``every trigger, every line``: lines naming every figure the parser reads, nothing else;
- ``repeated prefixes``: 64 KiB lines each one prefix repeated (``max_total_num_tokens=1,``,
  ``Mamba Cache is allocated.``, ``Model architectures [``, ...), the shapes the former patterns
  restarted a scan from at every repeat;
- ``secret shapes``: the same for the redaction rules (``-``, ``TOKEN``, ``a.``, ``'key_``, ``sk-``,
  ``'key': [``), each after the Qwen3-Next log so that the calibration goes on to store it;
- ``one 5 MiB line``: one line of ``-`` after the log.

For each: CPU (``time.process_time``, this process) of ``parse_startup_log``, of ``redacted_head``
(what is stored), of the whole ``calibrate()`` service (SQLite in a temporary folder, with a
deployment, so the prediction runs and the record is written), and of ``POST /api/v1/calibrations/``
and the deployment page's form (Django's test client: middleware, body checks, serializer or form,
service, response). Best and median of ``--runs`` runs. ``--engine-only`` measures the parser and
the redaction without Django; ``--parser-from FILE`` loads them from another copy of
``planner/engine/startup_log.py`` (the former one: ``git show 2efc524:planner/engine/startup_log.py``),
each case stopped after ``--timeout`` seconds.

Usage: ``.venv/bin/python bench/bench_calibration.py [--runs 3]``. Results: docs/benchmarks.md,
"Calibration". Budget: docs/api.md, "Calibrations from startup logs".
"""

from __future__ import annotations

import argparse
import importlib.util
import io
import json
import os
import secrets
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from planner.engine import MAX_LOG_BYTES  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures" / "startup_logs"
QWEN3_NEXT = FIXTURES / "vllm-0.10.2-Qwen3-Next-80B-A3B-Instruct-tp2.log"
#: The stated budget (docs/api.md): CPU for one calibration request of a 5 MiB log.
BUDGET_S = 1.0
SIZE = MAX_LOG_BYTES - 4096
LINE = 64 * 1024 - 16


def fill(head: str, unit: str, size: int = SIZE) -> str:
    """``head``, then ``unit`` repeated up to ``size`` bytes (UTF-8)."""
    room = size - len(head.encode())
    return head + unit * (room // len(unit.encode()))


def long_lines(head: str, units: tuple[str, ...]) -> str:
    """``head``, then lines of ``LINE`` characters, each one unit repeated, the units in turn."""
    lines = [(u * (LINE // len(u) + 1))[:LINE] + "\n" for u in units]
    body, k, room = [], 0, SIZE - len(head.encode())
    while room > len(lines[k % len(lines)].encode()):
        body.append(lines[k % len(lines)])
        room -= len(body[-1].encode())
        k += 1
    return head + "".join(body)


def cases() -> dict[str, str]:
    real = "".join(p.read_text(encoding="utf-8") for p in sorted(FIXTURES.glob("*.log")))
    log = QWEN3_NEXT.read_text(encoding="utf-8")
    every = (
        "vllm sglang vLLM LLM engine (v non-default args: {'model': 'x'} server_args=ServerArgs(tp_size=1) "
        "Available KV cache memory: 1 GiB Maximum concurrency for 1 tokens per request: 1x █ version 1.0 "
        "Model architectures ['X'] Unsupported architectures: X Resolved architecture: X Using max model len 1 "
        "Setting attention block size to 1 tokens Padding mamba page size by 1% Model loading took 1 GiB "
        "Loading model weights took 1 GB GPU KV cache size: 1 tokens # GPU blocks: 1 num_gpu_blocks is: 1 "
        "total_gpu_memory (1GiB) Free memory on device (1/1 GiB) Total GPU memory: 1 GiB Available memory: 1, "
        "total memory: 1 gpu_memory_utilization=0.9 Desired GPU memory utilization is (0.9, "
        "Load weight end. type=X max_total_num_tokens=1, max_running_requests=1, context_len=1 "
        "KV Cache is allocated. #tokens: 1, K size: 1 GB, V size: 1 GB Mamba Cache is allocated. "
        "max_mamba_cache_size: 1, conv_state size: 1GB, ssm_state size: 1GB\n"
    )
    noise = "(APIServer pid=1) INFO 09-12 10:00:00 [loggers.py:123] Engine 000: Avg prompt throughput: 0.0 tokens/s\n"
    return {
        "real logs repeated": fill("", real),
        "startup + request noise": fill(log, noise),
        "tiny lines": fill("", "x\n"),
        "trigger on every line": fill("", "vllm\n"),
        "every trigger, every line": fill("", every),
        "repeated prefixes": long_lines(
            log,
            (
                "max_total_num_tokens=1,",
                "Mamba Cache is allocated.",
                "Model architectures [",
                "Initializing a V1 LLM engine (v1.1",
                "GPU KV cache size: 1,",
            ),
        ),
        "secret shapes": long_lines(log, ("-", "TOKEN", "a.", "'key_", "sk-", "'key': [")),
        "one 5 MiB line": fill(log, "-"),
    }


class Timeout(Exception):
    pass


def cpu(call: Callable[[], object], runs: int, timeout: float | None = None) -> tuple[float, float] | None:
    """(best, median) CPU seconds of ``runs`` calls; None when one call ran past ``timeout`` seconds
    (the regex engine checks for signals, so SIGALRM stops a backtracking pattern)."""
    times = []
    for _ in range(runs):
        if timeout:
            signal.setitimer(signal.ITIMER_REAL, timeout)
        start = time.process_time()
        try:
            call()
        except Timeout:
            return None
        except Exception:  # a log the parser refuses still cost its parse
            pass
        finally:
            if timeout:
                signal.setitimer(signal.ITIMER_REAL, 0)
        times.append(time.process_time() - start)
    return min(times), statistics.median(times)


def show(figure: tuple[float, float] | None, timeout: float | None = None) -> str:
    if figure is None:
        return f"> {timeout:g} s"
    return f"{figure[0] * 1000:,.0f} / {figure[1] * 1000:,.0f}"


def load_parser(path: str | None):
    """``(parse_startup_log, head redaction)`` from ``path`` (another copy of the module), or ours."""
    if not path:
        from planner.engine import parse_startup_log, redacted_head

        return parse_startup_log, lambda text: redacted_head(text, 256 * 1024)
    spec = importlib.util.spec_from_file_location("planner.engine._bench_startup_log", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    # The former service redacted the whole log, then kept its first 256 KiB.
    return module.parse_startup_log, lambda text: module.redact_startup_log(text)[: 256 * 1024]


def setup(var_dir: str) -> None:
    os.environ["FLEETCAP_VAR_DIR"] = var_dir
    os.environ.pop("DATABASE_URL", None)
    os.environ.setdefault("FLEETCAP_SECRET_KEY", secrets.token_urlsafe(50))
    os.environ["FLEETCAP_DEBUG"] = "0"
    os.environ.setdefault("FLEETCAP_LOG_LEVEL", "ERROR")
    for name in ("API_THROTTLE_USER", "THROTTLE_CALIBRATION"):
        os.environ[f"FLEETCAP_{name}"] = "1000000/min"
    os.environ["DJANGO_SETTINGS_MODULE"] = "fleet.project.settings"
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    call_command("load_catalog", stdout=io.StringIO())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--engine-only", action="store_true", help="parser and redaction only (no Django)")
    parser.add_argument("--parser-from", help="another copy of planner/engine/startup_log.py to time")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds before a case is stopped")
    args = parser.parse_args()
    signal.signal(signal.SIGALRM, lambda *_: (_ for _ in ()).throw(Timeout()))
    parse, redact = load_parser(args.parser_from)
    logs = cases()
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())} ({os.cpu_count()} CPUs)")
    rows = []
    if args.engine_only:
        print("\n| case | MiB | lines | parse CPU ms best / median | stored head redacted CPU ms |")
        print("|---|---|---|---|---|")
        for name, text in logs.items():
            p = cpu(lambda text=text: parse(text), args.runs, args.timeout)
            r = cpu(lambda text=text: redact(text), args.runs, args.timeout)
            print(
                f"| {name} | {len(text.encode()) / 2**20:.2f} | {text.count(chr(10)):,} | "
                f"{show(p, args.timeout)} | {show(r, args.timeout)} |",
                flush=True,
            )
        print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        return 0
    with tempfile.TemporaryDirectory(prefix="fleetcap-bench-calibration-") as var_dir:
        setup(var_dir)
        from django.contrib.auth.models import Group, User
        from django.test import Client

        import fleet.project.wsgi  # noqa: F401 (the web process's start-up: its GC thresholds)
        from fleet.models import Cluster, Deployment, HardwareSku, ModelSpec, Provider
        from fleet.tokens import create_token
        from planner.calibrations import CalibrationRequest, calibrate
        from planner.models import Calibration

        cluster = Cluster.objects.create(
            slug="bench-h200", name="bench", sku=HardwareSku.objects.get(slug="h200-141gb"), nodes=1,
            provider=Provider.objects.ensure("bench"), team="t",
        )  # fmt: skip
        deployment = Deployment.objects.create(
            slug="bench-qwen3-next", cluster=cluster, model=ModelSpec.objects.get(slug="qwen3-next-80b-a3b"),
            tp=2, engine="vllm", max_model_len=262144,
        )  # fmt: skip
        user = User.objects.create_user("bench-platform", password="x")
        user.groups.add(Group.objects.get(name="platform"))
        key = create_token(user, name="bench", scope="write", days=1).key
        api = Client(HTTP_AUTHORIZATION=f"Token {key}", HTTP_HOST="localhost")
        page = Client(HTTP_HOST="localhost")
        page.force_login(user)
        page_url = f"/deployments/{deployment.slug}/calibrate/"
        statuses: dict[str, set[int]] = {}

        def service(text: str) -> None:
            calibrate(CalibrationRequest(text, deployment_slug=deployment.slug), user)

        def post_api(name: str, body: str) -> None:
            r = api.post("/api/v1/calibrations/", body, content_type="application/json")
            statuses.setdefault(f"{name} api", set()).add(r.status_code)

        def post_page(name: str, text: str) -> None:
            r = page.post(page_url, {"log": text}, HTTP_HX_REQUEST="true")
            statuses.setdefault(f"{name} page", set()).add(r.status_code)

        service(QWEN3_NEXT.read_text(encoding="utf-8"))  # warm: imports, the engine's memo
        print(f"\nCPU ms of one call, best / median of {args.runs}:\n")
        print(
            "| case | MiB | lines | parse | stored head redacted | `calibrate()` | "
            "`POST /api/v1/calibrations/` | page form (HTMX) | answers (API, page) |"
        )
        print("|---|---|---|---|---|---|---|---|---|")
        for name, text in logs.items():
            body = json.dumps({"log": text, "deployment": deployment.slug})
            figures = [
                cpu(lambda text=text: parse(text), args.runs),
                cpu(lambda text=text: redact(text), args.runs),
                cpu(lambda text=text: service(text), args.runs),
                cpu(lambda name=name, body=body: post_api(name, body), args.runs),
                cpu(lambda name=name, text=text: post_page(name, text), args.runs),
            ]
            rows.append((name, figures))
            answers = ", ".join("/".join(map(str, sorted(statuses[f"{name} {door}"]))) for door in ("api", "page"))
            print(
                f"| {name} | {len(text.encode()) / 2**20:.2f} | {text.count(chr(10)):,} | "
                + " | ".join(show(f) for f in figures)
                + f" | {answers} |",
                flush=True,
            )
        print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        print(f"calibrations stored: {Calibration.objects.count()}")
        worst = max(max(f[3][0], f[4][0]) for _, f in rows)
        verdict = "within" if worst < BUDGET_S else "OVER"
        print(f"\nworst request (best of {args.runs}): {worst * 1000:,.0f} ms CPU: {verdict} the {BUDGET_S:g} s budget")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
