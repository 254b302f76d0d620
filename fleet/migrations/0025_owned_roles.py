from django.db import migrations


def grant_roles(apps, schema_editor):
    """The platform team and finance write an owned cluster's costs (running costs, purchases, the sites'
    electricity prices); every role reads them; admins hold the rest (fleet.permissions.GRANTS_0025)."""
    from fleet.permissions import GRANTS_0025, create_permissions_now, grant

    create_permissions_now(apps, "fleet")
    grant(apps, "fleet", GRANTS_0025)


def drop_grants(apps, schema_editor):
    from fleet.permissions import GRANTS_0023, grant

    grant(apps, "fleet", GRANTS_0023)


class Migration(migrations.Migration):
    dependencies = [("fleet", "0024_owned_clusters")]

    operations = [migrations.RunPython(grant_roles, drop_grants)]
