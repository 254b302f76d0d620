"""Providers become records (issue 24): the free-text provider of clusters, their dated states and
GPU quotes is moved onto ``Provider`` rows, names matched case-insensitively (the first spelling
met is kept). The seeds' ``seed-assumption`` quotes get no provider: an assumption no provider
issued, never in force. A cluster that named ``seed-assumption`` keeps a provider of that name."""

import django.db.models.deletion
import django.db.models.functions.text
from django.db import migrations, models

ASSUMPTION = "seed-assumption"
#: Kinds of the providers the catalogue and the seeds name; any other name is migrated as a cloud.
KNOWN_KINDS = {
    "aws": "cloud",
    "azure": "cloud",
    "google cloud": "cloud",
    "digitalocean": "cloud",
    "vultr": "cloud",
    "coreweave": "neo-cloud",
    "lambda": "neo-cloud",
    "nebius": "neo-cloud",
    "hyperstack": "neo-cloud",
    "runpod secure cloud": "neo-cloud",
    "runpod community cloud": "neo-cloud",
    "tensorwave": "neo-cloud",
}


def to_records(apps, schema_editor):
    Provider = apps.get_model("fleet", "Provider")
    made: dict[str, object] = {}

    def provider(name: str):
        name = (name or "").strip() or "unnamed"
        key = name.casefold()
        if key not in made:
            made[key] = Provider.objects.create(name=name, kind=KNOWN_KINDS.get(key, "cloud"))
        return made[key]

    for model_name in ("Cluster", "ClusterState"):
        model = apps.get_model("fleet", model_name)
        for row in model.objects.all().only("pk", "provider_name"):
            model.objects.filter(pk=row.pk).update(provider=provider(row.provider_name))
    GpuQuote = apps.get_model("fleet", "GpuQuote")
    for row in GpuQuote.objects.all().only("pk", "provider_name"):
        if row.provider_name != ASSUMPTION:
            GpuQuote.objects.filter(pk=row.pk).update(provider=provider(row.provider_name))


def grant_roles(apps, schema_editor):
    """Finance and platform add and change providers; every role reads them (fleet.permissions.GRANTS_0018,
    the table as this migration applied it)."""
    from fleet.permissions import GRANTS_0018, create_permissions_now, grant

    create_permissions_now(apps, "fleet")
    grant(apps, "fleet", GRANTS_0018)


def drop_grants(apps, schema_editor):
    from fleet.permissions import GRANTS_0014, grant

    grant(apps, "fleet", GRANTS_0014)


def to_text(apps, schema_editor):
    for model_name in ("Cluster", "ClusterState", "GpuQuote"):
        model = apps.get_model("fleet", model_name)
        for row in model.objects.select_related("provider"):
            name = row.provider.name if row.provider_id else ASSUMPTION
            model.objects.filter(pk=row.pk).update(provider_name=name)


class Migration(migrations.Migration):
    dependencies = [("fleet", "0017_daily_polls_left_out")]

    operations = [
        migrations.CreateModel(
            name="Provider",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("created", models.DateTimeField(auto_now_add=True)),
                ("updated", models.DateTimeField(auto_now=True)),
                (
                    "name",
                    models.CharField(
                        help_text="Unique whatever the case: 'CoreWeave' and 'coreweave' are one.", max_length=100
                    ),
                ),
                (
                    "kind",
                    models.CharField(
                        choices=[
                            ("cloud", "Cloud"),
                            ("neo-cloud", "Neo-cloud (GPU specialist)"),
                            ("own", "Own data centre"),
                        ],
                        default="cloud",
                        max_length=10,
                    ),
                ),
            ],
            options={
                "ordering": ["name"],
                "constraints": [
                    models.UniqueConstraint(
                        django.db.models.functions.text.Lower("name"), name="provider_name_unique_any_case"
                    )
                ],
            },
        ),
        migrations.RemoveIndex(model_name="cluster", name="fleet_clust_provide_ca1dca_idx"),
        migrations.RenameField(model_name="cluster", old_name="provider", new_name="provider_name"),
        migrations.RenameField(model_name="clusterstate", old_name="provider", new_name="provider_name"),
        migrations.RenameField(model_name="gpuquote", old_name="provider", new_name="provider_name"),
        migrations.AddField(
            model_name="cluster",
            name="provider",
            field=models.ForeignKey(
                null=True, on_delete=django.db.models.deletion.PROTECT, related_name="clusters", to="fleet.provider"
            ),
        ),
        migrations.AddField(
            model_name="clusterstate",
            name="provider",
            field=models.ForeignKey(
                null=True, on_delete=django.db.models.deletion.PROTECT, related_name="+", to="fleet.provider"
            ),
        ),
        migrations.AddField(
            model_name="gpuquote",
            name="provider",
            field=models.ForeignKey(
                blank=True,
                help_text="Who quoted it. Blank: an assumption no provider issued (never in force; a comparison may pick it).",
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="quotes",
                to="fleet.provider",
            ),
        ),
        migrations.RunPython(to_records, to_text),
        migrations.RunPython(grant_roles, drop_grants),
        # A default only so that the way back can re-add the text columns before filling them.
        *(
            migrations.AlterField(
                model_name=model, name="provider_name", field=models.CharField(default="", max_length=100)
            )
            for model in ("cluster", "clusterstate", "gpuquote")
        ),
        migrations.RemoveField(model_name="cluster", name="provider_name"),
        migrations.RemoveField(model_name="clusterstate", name="provider_name"),
        migrations.RemoveField(model_name="gpuquote", name="provider_name"),
        migrations.AlterField(
            model_name="cluster",
            name="provider",
            field=models.ForeignKey(
                help_text="Who rents or runs it: its price in force is this provider's quote for the SKU.",
                on_delete=django.db.models.deletion.PROTECT,
                related_name="clusters",
                to="fleet.provider",
            ),
        ),
        migrations.AlterField(
            model_name="clusterstate",
            name="provider",
            field=models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name="+", to="fleet.provider"),
        ),
        migrations.AlterField(
            model_name="gpuquote",
            name="list_price",
            field=models.BooleanField(
                default=False,
                help_text="A provider's published price list: it prices a cluster at this provider when the fleet "
                "holds no quote of its own from it, and a SKU when no provider quoted the fleet.",
                verbose_name="public list price",
            ),
        ),
    ]
