"""The role groups (viewer, finance, platform, admin) and their fleet permissions.

The table is ``fleet.permissions.GRANTS``; planner's grants are planner's 0002_role_permissions.
"""

from django.db import migrations

from fleet.permissions import GRANTS_0002 as GRANTS  # the table as this migration applied it
from fleet.permissions import create_permissions_now, grant


def grant_roles(apps, schema_editor):
    create_permissions_now(apps, "fleet")
    grant(apps, "fleet", GRANTS)


def drop_grants(apps, schema_editor):
    grant(apps, "fleet", {})


class Migration(migrations.Migration):
    dependencies = [
        ("fleet", "0001_initial"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]
    operations = [
        migrations.AlterModelOptions(
            name="deployment",
            options={"ordering": ["slug"], "permissions": [("poll_deployment", "Can poll a deployment's endpoint now")]},
        ),
        migrations.RunPython(grant_roles, drop_grants),
    ]
