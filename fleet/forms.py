"""Page forms for the inventory. Validation is the models' own (``full_clean``), and for a
deployment the registration checks too (``fleet.registration``)."""

from __future__ import annotations

from django import forms

from fleet import registration
from fleet.errors import InputError
from fleet.models import Cluster, Deployment


class ClusterForm(forms.ModelForm):
    effective_from = forms.DateField(
        required=False,
        widget=forms.DateInput(attrs={"type": "date"}),
        help_text="When this registration or change takes effect, for spend (default: today).",
    )

    class Meta:
        model = Cluster
        fields = ["name", "slug", "sku", "nodes", "gpus_per_node", "provider", "region", "team", "hours_per_day",
                  "status"]  # fmt: skip

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
        fields = ["slug", "cluster", "model", "workload", "replicas", "tp", "pp", "dp", "ep", "engine", "base_url",
                  "served_model_id", "kv_cache_dtype", "max_model_len", "gpu_memory_utilization", "poll_interval_s",
                  "enabled"]  # fmt: skip

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
