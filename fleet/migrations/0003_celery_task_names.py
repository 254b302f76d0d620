"""Scheduled tasks stored by django-celery-beat follow the task renames (fleet.tasks.poll_cycle ->
fleet.poll_cycle, ...); the beat-sent heartbeat task is gone (each worker beats by itself now).

django-celery-beat copies CELERY_BEAT_SCHEDULE into its table at start-up but never removes an
entry, so without this a database from before the renames would keep sending unknown task names.
"""

from django.db import migrations

RENAMED = {
    "fleet.tasks.poll_cycle": "fleet.poll_cycle",
    "fleet.tasks.poll_batch": "fleet.poll_batch",
    "fleet.tasks.poll_one": "fleet.poll_one",
    "fleet.tasks.prune_polls": "fleet.prune_polls",
    "planner.tasks.run_plan": "planner.run_plan",
}
REMOVED = ["fleet.tasks.heartbeat"]


def forwards(apps, schema_editor):
    PeriodicTask = apps.get_model("django_celery_beat", "PeriodicTask")
    PeriodicTask.objects.filter(task__in=REMOVED).delete()
    for old, new in RENAMED.items():
        PeriodicTask.objects.filter(task=old).update(task=new)


def backwards(apps, schema_editor):
    PeriodicTask = apps.get_model("django_celery_beat", "PeriodicTask")
    for old, new in RENAMED.items():
        PeriodicTask.objects.filter(task=new).update(task=old)


class Migration(migrations.Migration):
    dependencies = [
        ("fleet", "0002_roles"),
        ("django_celery_beat", "0019_alter_periodictasks_options"),
    ]

    operations = [migrations.RunPython(forwards, backwards)]
