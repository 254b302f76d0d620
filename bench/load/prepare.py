"""Fill the load test's fresh database and write the locust users' credentials (run by bench/bench_load.py).

Runs with the environment ``bench/bench_load.py`` sets (``DATABASE_URL`` of the run's own throwaway
database, ``FLEETCAP_VAR_DIR``, ``FLEETCAP_SECRET_KEY``, ``FLEETCAP_REDIS_KEY_PREFIX``) so the sessions it
makes are the ones gunicorn accepts; it refuses any database but a run's
(``fleetcap_bench_load_<pid>_<8 hex digits>``, bench/throwaway.py), so it never fills someone's real one.
What ``make run`` does (migrate, ``load_catalog``, ``ensure_demo_users``, ``ensure_demo_fleet``), plus a
fleet of ``--clusters`` / ``--deployments`` / ``--polls`` built by ``bench/pages_data.py`` (its
deployments are pointed at the loopback fake endpoint and disabled: nothing is polled beyond this
machine), then ``--users`` logins spread over the four roles, each with an API token and a session
(``Client.force_login``: no password, so django-axes never sees a login), written to ``--out`` as JSON
with the slugs the locustfile asks about.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

BENCH = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(BENCH.parent))

ROLES = ("viewer", "finance", "platform", "admin")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="JSON file for the locustfile")
    parser.add_argument("--users", type=int, default=50)
    parser.add_argument("--clusters", type=int, default=25)
    parser.add_argument("--deployments", type=int, default=125)
    parser.add_argument("--polls", type=int, default=12_500)
    parser.add_argument("--plans", type=int, default=10)
    parser.add_argument("--fake-endpoint", default="http://127.0.0.1:8100")
    args = parser.parse_args()
    from throwaway import RUN_NAME

    name = urlsplit(os.environ.get("DATABASE_URL", "")).path.lstrip("/")
    if not (RUN_NAME.fullmatch(name) and name.startswith("fleetcap_bench_load_")):
        raise SystemExit(
            f"prepare.py fills a load run's own database (bench/bench_load.py makes it); DATABASE_URL names {name!r}"
        )

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "fleet.project.settings")
    import django

    django.setup()
    from django.contrib.auth.models import Group, User
    from django.core.management import call_command
    from django.test import Client
    from django.utils import timezone

    from fleet.management.commands.ensure_demo_fleet import DEMO_MODEL_ID
    from fleet.models import Cluster, Deployment
    from fleet.tokens import create_token
    from planner.models import Plan

    t0 = time.perf_counter()
    quiet = io.StringIO()
    call_command("migrate", verbosity=0)
    call_command("load_catalog", stdout=quiet)
    call_command("ensure_demo_users", stdout=quiet)
    plan_id = None
    if args.clusters and args.deployments:
        from pages_data import build_data

        data = build_data(args.clusters, args.deployments, args.polls, args.plans)
        plan_id = str(data["plan"].pk)
        # Never poll the bulk fleet's made-up addresses: loopback fake endpoint, and disabled.
        Deployment.objects.update(base_url=args.fake_endpoint, enabled=False)
    call_command("ensure_demo_fleet", "--endpoint", args.fake_endpoint, stdout=quiet)
    call_command("collectstatic", "--noinput", verbosity=0)

    groups = {g.name: g for g in Group.objects.filter(name__in=ROLES)}
    users = []
    for n in range(args.users):
        role = ROLES[n % len(ROLES)]
        user = User.objects.create_user(username=f"load-{n:03d}-{role}", password=None, is_staff=True)
        user.groups.add(groups[role])
        client = Client()
        client.force_login(user)
        users.append(
            {
                "username": user.username,
                "role": role,
                "token": create_token(user, name="load test", scope="write", days=1).key,
                "sessionid": client.cookies["sessionid"].value,
            }
        )
    deployment = Deployment.objects.filter(model__slug="kimi-k3", workload__isnull=False).order_by("slug").first()
    deployment = deployment or Deployment.objects.get(slug="demo-llama-70b")
    cluster = deployment.cluster
    plan_id = plan_id or (str(p.pk) if (p := Plan.objects.order_by("-created").first()) else None)
    targets = {
        "cluster": cluster.slug,
        "deployment": deployment.slug,
        "model": deployment.model.slug,
        "plan": plan_id,
        "month": timezone.now().strftime("%Y-%m"),
        "workload": "coding-agent",
        "demo_model_id": DEMO_MODEL_ID,
        "counts": {"clusters": Cluster.objects.count(), "deployments": Deployment.objects.count()},
    }
    Path(args.out).write_text(json.dumps({"users": users, "targets": targets}, indent=1))
    print(f"prepared in {time.perf_counter() - t0:.1f} s: {args.users} users, {targets}")


if __name__ == "__main__":
    main()
