"""Page forms for fleet's records, and ``add_service_errors`` (a service's domain errors beside
the fields). Validation is the models' own (``full_clean``) and, for a deployment, the
registration checks too (``fleet.registration``)."""

from __future__ import annotations

import json

from django import forms

from fleet import registration
from fleet.errors import InputError
from fleet.models import Cluster, Deployment, ModelSpec
from planner.engine import EngineInputError


class ClusterForm(forms.ModelForm):
    effective_from = forms.DateField(
        required=False,
        widget=forms.DateInput(attrs={"type": "date"}),
        help_text="When this registration or change takes effect, for spend (default: today).",
    )

    class Meta:
        model = Cluster
        fields = [
            "name",
            "slug",
            "sku",
            "nodes",
            "gpus_per_node",
            "provider",
            "region",
            "team",
            "hours_per_day",
            "status",
        ]

    def save(self, commit: bool = True) -> Cluster:
        cluster = super().save(commit=False)
        if commit:
            cluster.save(effective_from=self.cleaned_data.get("effective_from"))
        return cluster


class DeploymentForm(forms.ModelForm):
    """The API key is write-only: never rendered back; blank keeps the stored one."""

    api_key = forms.CharField(
        required=False,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        help_text="Write-only: never shown again. Leave blank to keep the stored key.",
    )
    clear_api_key = forms.BooleanField(required=False, label="Remove the stored API key")

    class Meta:
        model = Deployment
        fields = [
            *Deployment.REGISTERED,
            "poll_interval_s",
            "enabled",
        ]

    def _post_clean(self) -> None:
        # After ModelForm has built the instance and run full_clean(): the registration checks
        # (endpoint guard, sizing) on that instance, their messages beside the fields.
        super()._post_clean()
        try:
            registration.check_deployment(self.instance, valid=not self.errors)
        except InputError as exc:
            for name, messages in exc.errors.items():
                for message in messages:
                    self.add_error(name if name in self.fields else None, message)

    def save(self, commit: bool = True) -> Deployment:
        deployment = super().save(commit=False)
        if self.cleaned_data.get("clear_api_key"):
            deployment.set_api_key("")
        elif self.cleaned_data.get("api_key"):
            deployment.set_api_key(self.cleaned_data["api_key"].strip())
        if commit:
            deployment.save()
        return deployment


class ModelSpecForm(forms.ModelForm):
    """Layer groups are edited as JSON; errors name the item and key (``layer_groups.1.kv_heads``)."""

    layer_groups = forms.JSONField(
        widget=forms.Textarea(attrs={"rows": 8, "class": "mono"}),
        help_text='A list like [{"kind": "full", "count": 80, "kv_heads": 8, "head_dim": 128}]. Kinds: full '
        "(kv_heads, head_dim), sliding (+ window), mla (kv_lora_rank, qk_rope_head_dim), linear (key_heads, "
        "value_heads, key_dim, value_dim, conv_kernel, optional state_dtype, conv_dtype).",
    )

    class Meta:
        model = ModelSpec
        fields = [
            "name",
            "slug",
            *ModelSpec.FIGURES,
            "source",
        ]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.pk and not self.is_bound:
            self.initial["layer_groups"] = json.dumps(self.instance.layer_groups, indent=1)


def add_service_errors(form: forms.Form, exc: InputError | EngineInputError, prefix: str = "") -> None:
    """Put a service's field errors beside the form's fields (others above the form). ``prefix``
    strips a dotted path's head, e.g. ``breakeven.`` for a decision's comparison."""
    for field, messages in exc.errors.items():
        name = field.removeprefix(prefix).split(".")[0]
        if name in form.fields:
            for message in messages:
                form.add_error(name, message)
        else:
            form.add_error(
                None,
                f"{field}: {' '.join(messages)}"
                if field not in ("__all__", "non_field_errors")
                else " ".join(messages),
            )
