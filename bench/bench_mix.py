"""The load test's mix, in-process: CPU milliseconds per route and what each route weighs in the mix.

Run from the repository root (PostgreSQL on 127.0.0.1:5432, user ``postgres``, trust auth):

    .venv/bin/python bench/bench_mix.py                      # 25 clusters, 125 deployments, 12,500 polls
    .venv/bin/python bench/bench_mix.py --profile 30         # and a cProfile of the whole weighted mix

The load benchmark (``bench/bench_load.py``) measures the web processes' CPU per request under 50 users,
but not where it goes. This script builds the same fixture (``bench/pages_data.py``, in a database of
its own: ``bench/throwaway.py``), imports the locust users of ``bench/load/locustfile.py`` (so the
routes, bodies and task weights are the load test's own, never a copy) and calls every task in-process
with ``django.test.Client``: pages with a session (``force_login``), the API with an API token, one user
of each role in turn, as the load test spreads its users. Each task runs ``--repeat`` times after 2
warm-ups; it reports the median CPU ms of this process per route, the route's weight in the mix and its
share of the mix's CPU, and the weighted mean CPU per request: the in-process counterpart of the load
test's "web CPU per request" (without gunicorn and the socket). ``DEBUG`` is off. ``--profile N`` prints
the N costliest functions of one pass over the weighted mix (each task as many times as its weight), by
own time and by cumulative time.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import statistics
import sys
import tempfile
import time
import types
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from pages_data import build_data, setup_django
from throwaway import ThrowawayDatabase

WARMUPS = 2
ROLES = ("viewer", "platform", "finance", "admin")


class InProcessPerson:
    """Stands in for the locust user: ``page()`` and ``api()`` call Django's test client instead."""

    def __init__(self, role: str, client: Any, token: str) -> None:
        self.role = role
        self.client = client
        self.token = token
        self.last: tuple[str, int] = ("", 0)

    def page(self, name: str, url: str, extra: dict[str, str] | None = None) -> None:
        headers = {"HX-Request": "true"} if extra else {}
        response = self.client.get(url, headers=headers)
        self._check(f"page {name}", response.status_code, 200)

    def api(self, method: str, name: str, url: str, body: dict | None = None, expect: int = 200) -> None:
        headers = {"Authorization": f"Token {self.token}"}
        if method == "GET":
            response = self.client.get(url, headers=headers)
        else:
            response = self.client.post(url, data=json.dumps(body), content_type="application/json", headers=headers)
        self._check(f"api {method} {name}", response.status_code, expect, response)

    def _check(self, name: str, status: int, expect: int, response: Any = None) -> None:
        self.last = (name, status)
        if status != expect:
            detail = response.content[:300] if response is not None else b""
            raise SystemExit(f"{name} answered {status} (expected {expect}): {detail!r}")


def people(data: dict[str, Any]) -> list[InProcessPerson]:
    from django.contrib.auth.models import User
    from django.test import Client

    from fleet.tokens import create_token

    out = []
    for role in ROLES:
        user = User.objects.filter(groups__name=role).order_by("-pk").first()
        if user is None:
            raise SystemExit(f"no {role} user in the fixture")
        client = Client(HTTP_HOST="localhost")
        client.force_login(user)
        out.append(InProcessPerson(role, client, create_token(user, name="bench", scope="write", days=1).key))
    return out


def load_tasks(targets: dict[str, Any], folder: str) -> list[tuple[str, int, Any]]:
    """(task name, weight, function) of the locust user, read from the locustfile itself."""
    users_file = Path(folder) / "users.json"
    users_file.write_text(json.dumps({"users": [], "targets": targets}))
    os.environ["LOAD_USERS_FILE"] = str(users_file)
    # locust itself is not imported: it monkey-patches the process with gevent, which Django's test
    # client and database connections do not survive. A stand-in records each task's weight.
    stand_in = types.ModuleType("locust")

    def task(weight: int = 1) -> Any:
        def mark(function: Any) -> Any:
            function.mix_weight = weight
            return function

        return mark

    stand_in.task = task
    stand_in.constant = lambda seconds: seconds
    stand_in.FastHttpUser = type("FastHttpUser", (), {})
    sys.modules["locust"] = stand_in
    import locustfile  # bench/load/locustfile.py

    return [
        (name, function.mix_weight, function)
        for name, function in vars(locustfile.Person).items()
        if hasattr(function, "mix_weight")
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clusters", type=int, default=25)
    parser.add_argument("--deployments", type=int, default=125)
    parser.add_argument("--polls", type=int, default=12_500)
    parser.add_argument("--plans", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=8, help="timed calls per task and role (after 2 warm-ups)")
    parser.add_argument("--profile", type=int, default=0, metavar="N", help="print the N costliest functions")
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parent / "load"))

    var_dir = tempfile.mkdtemp(prefix="fleetcap-bench-mix-")
    database = ThrowawayDatabase("mix")
    try:
        database.create()
        print(f"Database: {database.name} (this run's own; dropped at the end)", flush=True)
        setup_django(var_dir, database.url)
        from django.core.management import call_command

        call_command("ensure_demo_users", stdout=io.StringIO())  # demo-admin and the other roles' logins
        data = build_data(args.clusters, args.deployments, args.polls, args.plans)
        from django.utils import timezone

        deployment = data["deployment"]
        targets = {
            "cluster": deployment.cluster.slug,
            "deployment": deployment.slug,
            "model": deployment.model.slug,
            "plan": str(data["plan"].pk),
            "month": timezone.now().strftime("%Y-%m"),
            "workload": "coding-agent",
        }
        tasks = load_tasks(targets, var_dir)
        persons = people(data)
        print("Load average before measuring: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()), flush=True)

        rows = []
        for name, weight, function in tasks:
            cpu: list[float] = []
            routes: list[str] = []
            for person in persons:
                for n in range(WARMUPS + args.repeat):
                    start = time.process_time()
                    function(person)
                    if n >= WARMUPS:
                        cpu.append((time.process_time() - start) * 1000)
                if person.last[0] not in routes:
                    routes.append(person.last[0])
            rows.append((name, " / ".join(routes), weight, statistics.median(cpu)))
        total_weight = sum(r[2] for r in rows)
        mix_cpu = sum(r[2] * r[3] for r in rows)
        print(f"\n{args.repeat} timed calls per task and role ({', '.join(ROLES)}) after {WARMUPS} warm-ups\n")
        print("| route | weight | CPU ms (median) | share of the mix's CPU |")
        print("|---|---|---|---|")
        for _name, route, weight, ms in sorted(rows, key=lambda r: -r[2] * r[3]):
            print(f"| {route} | {weight} | {ms:.1f} | {100 * weight * ms / mix_cpu:.0f}% |")
        print(f"\nweighted mean CPU per request: {mix_cpu / total_weight:.1f} ms over {total_weight} weighted tasks")
        print("Load average after measuring: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))

        if args.profile:
            profiler = cProfile.Profile()
            profiler.enable()
            for person in persons:
                for _name, weight, function in tasks:
                    for _ in range(weight):
                        function(person)
            profiler.disable()
            out = io.StringIO()
            stats = pstats.Stats(profiler, stream=out)
            print(f"\n--- cProfile of the weighted mix x {len(persons)} roles ---")
            stats.sort_stats("tottime").print_stats(args.profile)
            stats.sort_stats("cumulative").print_stats(args.profile)
            print(out.getvalue())
    finally:
        database.drop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
