"""planner's permissions for the role groups (the table as it was then: ``planner.permissions.GRANTS_0002``)."""

from django.db import migrations

from fleet.permissions import create_permissions_now, grant
from planner.permissions import GRANTS_0002 as GRANTS


def grant_roles(apps, schema_editor):
    create_permissions_now(apps, "planner")
    grant(apps, "planner", GRANTS)


def drop_grants(apps, schema_editor):
    grant(apps, "planner", {})


class Migration(migrations.Migration):
    dependencies = [("planner", "0001_initial"), ("fleet", "0002_roles")]
    operations = [migrations.RunPython(grant_roles, drop_grants)]
