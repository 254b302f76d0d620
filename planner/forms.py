"""Page forms for the planner. Validation is the models' own (``full_clean``) and the engine's."""

from __future__ import annotations

import json

from django import forms

from fleet.models import ModelSpec


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
        fields = ["name", "slug", "total_params", "active_params", "expert_params", "n_routed_experts",
                  "n_active_experts", "n_shared_experts", "hidden_size", "vocab_size", "max_context_tokens",
                  "attention_heads", "weight_format", "expert_weight_format", "layer_groups", "source"]  # fmt: skip

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.pk and not self.is_bound:
            self.initial["layer_groups"] = json.dumps(self.instance.layer_groups, indent=1)
