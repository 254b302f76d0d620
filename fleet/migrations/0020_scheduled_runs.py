"""When each job beat schedules last started on a worker (issue 29): the poll cycle's row tells the fleet page
and /healthz that beat stopped."""

from django.db import migrations, models


def grant_roles(apps, schema_editor):
    """Every role reads scheduled runs; admins hold the rest (fleet.permissions.GRANTS_0020)."""
    from fleet.permissions import GRANTS_0020, create_permissions_now, grant

    create_permissions_now(apps, "fleet")
    grant(apps, "fleet", GRANTS_0020)


def drop_grants(apps, schema_editor):
    from fleet.permissions import GRANTS_0018, grant

    grant(apps, "fleet", GRANTS_0018)


class Migration(migrations.Migration):

    dependencies = [
        ('fleet', '0019_deployment_enable_prefix_caching'),
    ]

    operations = [
        migrations.CreateModel(
            name='ScheduledRun',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('job', models.CharField(max_length=100, unique=True)),
                ('last_started', models.DateTimeField()),
                ('runs', models.PositiveBigIntegerField(default=0)),
            ],
            options={
                'ordering': ['job'],
            },
        ),
        migrations.RunPython(grant_roles, drop_grants),
    ]
