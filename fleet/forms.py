"""Page forms for fleet's records, and ``add_service_errors`` (a service's domain errors beside
the fields). Validation is the models' own (``full_clean``) and, for a deployment, the
registration checks too (``fleet.registration``)."""

from __future__ import annotations

import functools
import json
import re
from typing import Any

from django import forms
from django.apps import apps
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.forms.models import ModelFormMetaclass
from django.forms.utils import pretty_name

from fleet import inputs, registration
from fleet.errors import ConflictError, InputError
from fleet.limits import record_bound
from fleet.models import (
    ApiPrice,
    Cluster,
    ClusterPurchase,
    Deployment,
    ElectricityPrice,
    GpuQuote,
    HardwareSku,
    ModelSpec,
    OwnedCosts,
    Provider,
    Workload,
)
from fleet.models.bills import RATE_MAX_AGE_DAYS
from fleet.pickers import PickField
from fleet.polling import display_url
from fleet.registration import MAX_API_KEY_CHARS, MAX_CONFIG_BYTES
from planner.engine import MAX_PARAMS, WEIGHT_FORMATS, EngineInputError


class UploadField(forms.FileField):
    """A file a page reads once (a config.json, a startup log, a trace): a plain file input. Django's
    default widget, the clearable one, reads a ``<name>-clear`` checkbox meant for a stored file these
    forms never have; ticked, it made the field ``False`` where the forms expect a file or None (a 500)."""

    widget = forms.FileInput


def keep_upload_text(form: forms.Form, upload_field: str, text_field: str, text: str) -> None:
    """An upload read into text also fills ``text_field`` (the form's paste box, or a hidden field), so
    a form refused for another input shows it back and the next submit uses it: a browser never keeps a
    chosen file. Bounded as the text field is (at most the upload's own size limit)."""
    form.data = form.data.copy()
    form.data[form.add_prefix(text_field)] = text
    kept = "Read: its text is kept in this form; no need to choose it again."
    form.fields[upload_field].help_text = form[upload_field].help_text = kept  # the bound field copied it


class BoundedNumberText:
    """A number field that refuses text longer than ``fleet.inputs.MAX_NUMBER_DIGITS`` characters
    before parsing it: ``int()`` spends quadratic time on a 4,000-digit integer and refuses one of
    4,301 with a ValueError; no figure here has a hundred digits."""

    def to_python(self, value: Any) -> Any:
        if isinstance(value, str) and (message := inputs.number_text_message(value)):
            raise forms.ValidationError(message, code="too_long")
        return super().to_python(value)  # type: ignore[misc]


class BoundedIntegerField(BoundedNumberText, forms.IntegerField):
    """``forms.IntegerField`` refusing over-long text unparsed (``BoundedNumberText``)."""


class BoundedFloatField(BoundedNumberText, forms.FloatField):
    """``forms.FloatField`` refusing over-long text unparsed (``BoundedNumberText``); NaN and the
    infinities are refused by Django's own ``FloatField``."""


class BoundedDecimalField(BoundedNumberText, forms.DecimalField):
    """``forms.DecimalField`` refusing over-long text unparsed (``BoundedNumberText``)."""


def bound_number(field: forms.IntegerField, high: int | float) -> None:
    """Give a number field ``high`` as its maximum (and ``-high`` as its minimum) unless it has a tighter
    one already: validators, and the widget's ``min`` and ``max`` for the browser."""
    if isinstance(field, forms.IntegerField) and not isinstance(field, forms.FloatField):
        high = int(high)
    if field.max_value is None or field.max_value > high:
        field.max_value = high
        field.validators.append(MaxValueValidator(high))
        field.widget.attrs["max"] = high
    if field.min_value is None or field.min_value < -high:
        field.min_value = -high
        field.validators.append(MinValueValidator(-high))
        field.widget.attrs["min"] = -high


class BoundedJSONField(forms.JSONField):
    """Django's JSONField, refusing as field errors, before parsing: JSON nested deeper than
    ``fleet.inputs.MAX_JSON_DEPTH`` (Python's parser would recurse until a RecursionError), numbers
    longer than ``fleet.inputs.MAX_NUMBER_DIGITS`` (Python refuses integers of more than 4,300 digits
    with a ValueError Django does not catch: a 500), more than ``fleet.inputs.MAX_JSON_FIELD_CHARS``
    of text, and control characters."""

    def to_python(self, value: Any) -> Any:
        if isinstance(value, str) and not self.disabled:
            if inputs.json_depth(value) > inputs.MAX_JSON_DEPTH:
                raise forms.ValidationError(inputs.DEPTH_MESSAGE, code="too_deep")
            if inputs.has_long_number(value):
                raise forms.ValidationError(inputs.DIGITS_MESSAGE, code="too_many_digits")
            if len(value) > inputs.MAX_JSON_FIELD_CHARS:
                raise forms.ValidationError(inputs.JSON_SIZE_MESSAGE, code="too_large")
            message = inputs.control_character_message(value)
            if message:
                raise forms.ValidationError(message, code="control_character")
        return super().to_python(value)

    def bound_data(self, data: Any, initial: Any) -> Any:
        if isinstance(data, str) and (
            len(data) > inputs.MAX_JSON_FIELD_CHARS
            or inputs.json_depth(data) > inputs.MAX_JSON_DEPTH
            or inputs.has_long_number(data)
        ):
            return forms.fields.InvalidJSONInput(data)
        return super().bound_data(data, initial)


def bounded_formfield(db_field: models.Field, **kwargs: Any) -> forms.Field | None:
    """A record field's form field, bounded as every door that writes records bounds it: numbers by
    ``fleet.limits.record_bound`` and read by the ``Bounded*Field`` classes (text too long refused
    unparsed), JSON by ``BoundedJSONField``, free text by ``fleet.inputs.MAX_TEXT_CHARS``."""
    if not db_field.choices:
        if isinstance(db_field, models.DecimalField):
            kwargs.setdefault("form_class", BoundedDecimalField)
        elif isinstance(db_field, models.FloatField):
            kwargs.setdefault("form_class", BoundedFloatField)
        elif isinstance(db_field, models.IntegerField):
            kwargs.setdefault("form_class", BoundedIntegerField)
        elif isinstance(db_field, models.JSONField):
            kwargs.setdefault("form_class", BoundedJSONField)
        elif isinstance(db_field, models.TextField):
            kwargs.setdefault("max_length", inputs.MAX_TEXT_CHARS)
    field = db_field.formfield(**kwargs)
    if isinstance(field, BoundedNumberText):
        bound_number(field, record_bound(db_field.name, money=isinstance(db_field, models.DecimalField)))
    return field


class BoundedModelFormMetaclass(ModelFormMetaclass):
    """Builds every ``BoundedModelForm``'s fields with ``bounded_formfield`` (a form's own ``Meta``
    need not say so)."""

    def __new__(mcs, name: str, bases: tuple[type, ...], attrs: dict[str, Any]) -> type:
        meta = attrs.get("Meta")
        if meta is not None and not hasattr(meta, "formfield_callback"):
            meta.formfield_callback = staticmethod(bounded_formfield)
        return super().__new__(mcs, name, bases, attrs)


class BoundedModelForm(forms.ModelForm, metaclass=BoundedModelFormMetaclass):
    """A ModelForm whose record fields have the bounds every door gives them (``bounded_formfield``:
    ``fleet.limits.RECORD_BOUNDS``, as the API's serializers), so a 1e308 or a 5,000-digit integer
    never reaches the engine and an oversized input is an error beside it."""


class SlugFromName:
    """A form with a name and a slug: on a new record, the slug input says it follows the name
    (``data-slug-from``, read by ``static/js/slugs.js``, which fills it until it is edited by hand);
    never on a stored record's form. The server's validation of the slug stays the authority."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[call-arg]
        fields = self.fields  # type: ignore[attr-defined]
        stored = getattr(getattr(self, "instance", None), "pk", None) is not None
        if not stored and "name" in fields and "slug" in fields:
            fields["slug"].widget.attrs["data-slug-from"] = self["name"].auto_id  # type: ignore[index]


class ProviderChoiceField(forms.ModelChoiceField):
    """A provider picked from the list of records, by name (the page's values read as names)."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("queryset", Provider.objects.order_by("name"))
        super().__init__(to_field_name="name", **kwargs)

    def label_from_instance(self, obj: Provider) -> str:
        return f"{obj.name} ({obj.get_kind_display()})"


class ClusterForm(SlugFromName, BoundedModelForm):
    provider = ProviderChoiceField(
        help_text="Who rents or runs it: its price in force is this provider's quote for the SKU (else its "
        "public list price). A provider not listed is added on the providers list first."
    )
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
            "ownership",
        ]
        help_texts = {
            "ownership": "Rented: its price in force is the provider's quote for the SKU (else its public list "
            "price). Owned: its own cost instead (depreciation of its purchases, energy at the site's electricity "
            "price, colocation, support, staff), from the purchases and running costs entered on the cluster's "
            "page; until they are there it is unpriced, and the provider's quotes no longer price it.",
        }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["ownership"].required = False  # left out of a post: as it was (a new cluster: rented)

    def clean_ownership(self) -> str:
        return self.cleaned_data.get("ownership") or self.instance.ownership or Cluster.Ownership.RENTED

    def save(self, commit: bool = True) -> Cluster:
        cluster = super().save(commit=False)
        if commit:
            cluster.save(effective_from=self.cleaned_data.get("effective_from"))
        return cluster


#: The layout fields a suggested layout fills in (the form's ids ``id_tp``, ...), one replica of it.
LAYOUT_FIELDS = ("tp", "pp", "dp", "ep")


def _suggestion(layout: Any) -> dict[str, str]:
    """A layout a refusal suggests, as the form's one-click button fills it in (``data-fill``: field id -> value)."""
    fill = {f"id_{name}": getattr(layout, name) for name in LAYOUT_FIELDS} | {"id_replicas": 1}
    return {"text": registration.layout_words(layout), "fill": json.dumps(fill)}


class DeploymentForm(BoundedModelForm):
    """The API key is write-only: never rendered back; blank keeps the stored one. The cluster and the
    workload are picked by slug (``fleet.pickers``: there is one of each per team, not a catalogue)."""

    cluster = PickField("clusters", instance=True)
    workload = PickField(
        "workloads", instance=True, required=False, placeholder="none (slug or name)",
        help_text=Deployment._meta.get_field("workload").help_text,
    )  # fmt: skip
    api_key = forms.CharField(
        label="API key",
        required=False,
        max_length=MAX_API_KEY_CHARS,
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
        # The labels are the fields' verbose names ("KV cache dtype", not "Kv cache dtype").

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if not (self.instance.pk and self.instance.has_api_key):
            # Nothing stored to keep or remove: no removal box, and the help says only what applies.
            del self.fields["clear_api_key"]
            self.fields["api_key"].help_text = "Write-only: never shown again. Blank: the endpoint takes none."
        if self.instance.pk and registration.has_credentials(self.instance.base_url):
            # A row stored before such URLs were refused: never render the secret back; saving keeps
            # only the server's root (the key belongs in the write-only field).
            self.initial["base_url"] = self.instance.shown_base_url

    def _post_clean(self) -> None:
        # After ModelForm has built the instance and run full_clean(): the registration checks
        # (endpoint guard, sizing) on that instance, their messages beside the fields.
        super()._post_clean()
        try:
            registration.check_deployment(self.instance, valid=not self.errors)
        except InputError as exc:
            self.fitting_layouts = [
                {
                    "text": registration.layout_words(lay),
                    "fill": json.dumps({f"id_{k}": getattr(lay, k) for k in LAYOUT_FIELDS}),
                }
                for lay in getattr(exc, "fitting", [])
            ]
            add_service_errors(self, exc)
        if "base_url" in self.errors and registration.has_credentials(self.data.get("base_url", "")):
            # The refused URL is shown back without the secret it carried.
            self.data = self.data.copy()
            self.data["base_url"] = display_url(self.data["base_url"])

    def save(self, commit: bool = True) -> Deployment:
        deployment = super().save(commit=False)
        if self.cleaned_data.get("clear_api_key"):
            deployment.set_api_key("")
        elif self.cleaned_data.get("api_key"):
            deployment.set_api_key(self.cleaned_data["api_key"].strip())
        if commit:
            deployment.save()
        return deployment


class ModelSpecForm(SlugFromName, BoundedModelForm):
    """Layer groups are edited as JSON; errors name the item and key (``layer_groups.1.kv_heads``)."""

    layer_groups = BoundedJSONField(
        widget=forms.Textarea(attrs={"rows": 8, "class": "mono"}),
        help_text='A list like [{"kind": "full", "count": 80, "kv_heads": 8, "head_dim": 128}]. Kinds: full '
        "(kv_heads, head_dim), sliding (+ window), mla (kv_lora_rank, qk_rope_head_dim), linear (key_heads, "
        "value_heads, key_dim, value_dim, conv_kernel, optional state_dtype, conv_dtype).",
    )

    weight_parts = BoundedJSONField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 6, "class": "mono"}),
        help_text='Weights by module class, as the config.json importer reads them: [{"part": "routed_experts", '
        '"format": "mxfp4", "params": 2722740830208, "bits": 4.25}, ...]. They must add up to total parameters '
        "(and the routed experts' to their count); leave empty to count every weight in the weight format (the "
        "routed experts in theirs).",
    )

    class Meta:
        model = ModelSpec
        fields = [
            "name",
            "slug",
            "hf_model_id",
            *ModelSpec.FIGURES,
            "modalities",
            "source",
        ]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.pk and not self.is_bound:
            self.initial["layer_groups"] = json.dumps(self.instance.layer_groups, indent=1)
            self.initial["weight_parts"] = json.dumps(self.instance.weight_parts, indent=1)
        self.fields["modalities"].required = False  # left blank: text, the model's default

    def clean_weight_parts(self) -> list:
        return self.cleaned_data.get("weight_parts") or []

    def clean_modalities(self) -> str:
        return self.cleaned_data.get("modalities") or "text"


def parse_json_object(raw: bytes | str, what: str) -> tuple[dict | None, str | None]:
    """``(object, None)`` from JSON text, or ``(None, message)``: too large, not JSON, not an object."""
    size = len(raw.encode() if isinstance(raw, str) else raw)
    if size > MAX_CONFIG_BYTES:
        return None, f"{what} is {size:,} bytes; the limit is {MAX_CONFIG_BYTES:,}."
    try:
        text = raw.decode("utf-8-sig") if isinstance(raw, bytes) else raw
        value = inputs.loads(text)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        return None, f"{what} is not valid JSON ({str(exc)[:120]})."
    if not isinstance(value, dict):
        return None, f"{what} must be a JSON object ({{...}}), not {type(value).__name__}."
    return value, None


class ModelImportForm(SlugFromName, forms.Form):
    """Import a model from its config.json (pasted or uploaded): the service derives the rest."""

    config_text = forms.CharField(
        label="config.json",
        required=False,
        max_length=MAX_CONFIG_BYTES,
        widget=forms.Textarea(attrs={"rows": 12, "class": "mono", "placeholder": '{"model_type": "qwen3", ...}'}),
        help_text="Paste the model's config.json, or upload it below (at most 2 MB).",
    )
    config_file = UploadField(label="or upload config.json", required=False)
    quant_config_file = UploadField(
        label="hf_quant_config.json (optional)",
        required=False,
        help_text="NVIDIA ModelOpt checkpoints ship their quantisation beside config.json.",
    )
    #: The quantisation file's text once read, carried across a refusal (it has no paste box).
    quant_config_text = forms.CharField(required=False, max_length=MAX_CONFIG_BYTES, widget=forms.HiddenInput)
    name = forms.CharField(max_length=100)
    slug = forms.CharField(max_length=64)
    hf_model_id = forms.CharField(
        label="Hugging Face model id", required=False, max_length=200, help_text="owner/name; default: from the config."
    )
    total_params = BoundedIntegerField(
        required=False, min_value=1, max_value=MAX_PARAMS, help_text="Default: counted from the config's dimensions."
    )
    active_params = BoundedIntegerField(
        required=False, min_value=1, max_value=MAX_PARAMS, help_text="Default: counted."
    )
    weight_format = forms.ChoiceField(
        required=False,
        choices=[("", "as the config's quantisation says"), *((f, f) for f in WEIGHT_FORMATS)],
    )

    def clean(self) -> dict:
        data = super().clean()
        text, upload = data.get("config_text") or "", data.get("config_file")
        if text.strip() and upload and upload.size <= MAX_CONFIG_BYTES and self._same_text(upload, text):
            text = ""  # the box holds this very file's text, kept from a refused submit: the file is read
        if text.strip() and upload:
            self.add_error("config_file", "Paste the config or upload it, not both.")
        elif not text.strip() and not upload:
            self.add_error("config_text", "Paste the config.json or upload it.")
        else:
            raw = self.read_upload("config_file", upload) if upload else text
            if raw is not None:
                config, problem = parse_json_object(raw, "config.json")
                if problem:
                    self.add_error("config_file" if upload else "config_text", problem)
                elif upload:
                    keep_upload_text(self, "config_file", "config_text", raw.decode("utf-8-sig"))
                data["config"] = config
        quant, kept = data.get("quant_config_file"), data.get("quant_config_text") or ""
        data["quant_config"] = None
        raw = self.read_upload("quant_config_file", quant) if quant else kept or None
        if raw is not None:
            data["quant_config"], problem = parse_json_object(raw, "hf_quant_config.json")
            if problem:
                self.add_error("quant_config_file", problem)
            else:
                text = raw.decode("utf-8-sig") if isinstance(raw, bytes) else raw
                keep_upload_text(self, "quant_config_file", "quant_config_text", text)
        return data

    @staticmethod
    def _same_text(upload: Any, text: str) -> bool:
        """Whether ``upload`` (within the size limit) holds ``text`` (the form's newlines aside)."""
        raw = upload.read()
        upload.seek(0)
        try:
            return raw.decode("utf-8-sig").replace("\r\n", "\n") == text.replace("\r\n", "\n")
        except UnicodeDecodeError:
            return False

    def read_upload(self, field: str, upload) -> bytes | None:
        """An upload's bytes, or ``None`` with an error beside ``field`` when it is too large."""
        if upload.size > MAX_CONFIG_BYTES:
            self.add_error(field, f"The file is {upload.size:,} bytes; the limit is {MAX_CONFIG_BYTES:,}.")
            return None
        return upload.read()

    def to_request(self) -> registration.ImportModelRequest:
        return registration.ImportModelRequest.from_fields(self.cleaned_data)

    def add_import_errors(self, exc: InputError | ConflictError) -> None:
        """The service's errors beside the inputs: the config's keys beside the config (named), a
        taken slug beside the slug."""
        if isinstance(exc, ConflictError):
            self.add_error("slug", str(exc))
            return
        config_field = "config_file" if self.cleaned_data.get("config_file") else "config_text"
        rest: dict[str, list[str]] = {}
        for field, messages in exc.errors.items():
            if field == "config" or field.startswith("config."):
                where = field.removeprefix("config.") if field != "config" else ""
                for message in messages:
                    self.add_error(config_field, f"{where}: {message}" if where else message)
            elif field == "quant_config" or field.startswith("quant_config."):
                for message in messages:
                    self.add_error("quant_config_file", message)
            else:
                rest[field] = messages
        if rest:
            add_service_errors(self, InputError(rest))


#: A code name in a message: snake_case (``input_cache_hit_usd_per_mtok``) or a dotted path
#: (``layer_groups.1.kv_heads``, ``breakeven.gpus``); one-word names read as words and are left alone.
CODE_NAME = re.compile(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)*(?:\.[a-z0-9_]+)+\b|\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b")


@functools.cache
def record_labels() -> dict[str, str]:
    """Record fields' verbose names by field name (``input_cache_hit_usd_per_mtok`` -> ``Input, cache hit
    (USD / M tokens)``), for a service's message naming a field the page's form does not have; a name
    two records label differently is left out."""
    seen: dict[str, set[str]] = {}
    for model in apps.get_models():
        if model._meta.app_label in ("fleet", "planner"):
            for field in model._meta.concrete_fields:
                words = str(field.verbose_name)
                if words != field.name.replace("_", " "):
                    seen.setdefault(field.name, set()).add(words[:1].upper() + words[1:])
    return {name: labels.pop() for name, labels in seen.items() if len(labels) == 1}


def field_words(form: forms.Form, text: str, prefix: str = "") -> str:
    """``text`` with the form's field code names (and dotted paths into them) as the fields' labels,
    e.g. ``api_price`` -> ``API price``, ``layer_groups.1.kv_heads`` -> ``Layer groups (1.kv_heads)``;
    a name the form lacks, as its record field's verbose name (``record_labels``), else left as it is."""

    def label(match: re.Match[str]) -> str:
        code = match.group(0)
        head, _, rest = code.removeprefix(prefix).partition(".")
        field = form.fields.get(head)
        words = str(field.label or pretty_name(head)) if field is not None else record_labels().get(head)
        if words is None:
            return code
        return f"{words} ({rest})" if rest else words

    return CODE_NAME.sub(label, text)


def labelled_errors(form: forms.Form) -> dict[str, list[str]]:
    """A form's errors keyed by its fields' labels, not their code names (a list's refused filters,
    said above the table)."""
    return {
        (str(form.fields[name].label or pretty_name(name)) if name in form.fields else name): [
            field_words(form, message) for message in messages
        ]
        for name, messages in form.errors.items()
    }


def add_service_errors(form: forms.Form, exc: InputError | EngineInputError, prefix: str = "") -> None:
    """Put a service's field errors beside the form's fields (others above the form), the fields'
    code names in the messages read as their labels (``field_words``). ``prefix`` strips a dotted
    path's head, e.g. ``breakeven.`` for a decision's comparison."""
    for field, messages in exc.errors.items():
        name = field.removeprefix(prefix).split(".")[0]
        words = [field_words(form, message, prefix) for message in messages]
        if name in form.fields:
            for message in words:
                form.add_error(name, message)
        elif field in ("__all__", "non_field_errors"):
            form.add_error(None, " ".join(words))
        else:
            form.add_error(None, f"{field_words(form, field, prefix)}: {' '.join(words)}")


DATE_INPUT = forms.DateInput(attrs={"type": "date"}, format="%Y-%m-%d")


class GpuQuoteForm(BoundedModelForm):
    """A new dated GPU quote (a changed price is a new row: ``fleet.prices``)."""

    provider = ProviderChoiceField(
        required=False,
        empty_label="(none: an assumption, never in force)",
        help_text="Who quoted it. None: an assumption no provider issued: it is never the price in force, "
        "though a comparison may pick it.",
    )

    class Meta:
        model = GpuQuote
        fields = [
            "sku",
            "provider",
            "usd_per_gpu_hour",
            "pricing_kind",
            "quoted_on",
            "valid_until",
            "list_price",
            "source",
        ]
        labels = {"sku": "SKU", "usd_per_gpu_hour": "USD per GPU-hour", "valid_until": "Valid until (inclusive)"}
        help_texts = {
            "quoted_on": "The day the provider published or quoted this price; in force from then on.",
            "valid_until": "Blank: until a newer quote of the same provider and kind supersedes it.",
            "source": "The price list's URL or the document the quote came in, and what the figure covers.",
        }
        widgets = {"quoted_on": DATE_INPUT, "valid_until": DATE_INPUT, "source": forms.Textarea(attrs={"rows": 3})}


class GpuQuoteEndForm(BoundedModelForm):
    """What may change on a stored quote: its end date and its source note (never its price or date)."""

    class Meta:
        model = GpuQuote
        fields = ["valid_until", "source"]
        labels = {"valid_until": "Valid until (inclusive)"}
        help_texts = {"valid_until": "End the quote: it is not in force after this day (past spend keeps it)."}
        widgets = {"valid_until": DATE_INPUT, "source": forms.Textarea(attrs={"rows": 3})}


class ApiPriceForm(BoundedModelForm):
    """A new dated hosted-API price (USD per million tokens)."""

    class Meta:
        model = ApiPrice
        fields = ["slug", "provider", "model_name", "model", *ApiPrice.PRICES, "context_window", "quoted_on", "source"]
        labels = {"model_name": "Model name (as the provider's API takes it)", "model": "Model spec priced"}
        widgets = {"quoted_on": DATE_INPUT, "source": forms.Textarea(attrs={"rows": 3})}


class ApiPriceNoteForm(BoundedModelForm):
    """What may change on a stored API price: the model it prices, its context window, its source."""

    class Meta:
        model = ApiPrice
        fields = ["model", "context_window", "source"]
        labels = {"model": "Model spec priced"}
        widgets = {"source": forms.Textarea(attrs={"rows": 3})}


class HardwareSkuForm(SlugFromName, BoundedModelForm):
    class Meta:
        model = HardwareSku
        fields = [
            "name",
            "slug",
            "vendor",
            *HardwareSku.FIGURES,
            "hbm_reported_source",
            "tdp_watts",
            "idle_watts",
            "power_source",
            "source",
        ]
        widgets = {"source": forms.Textarea(attrs={"rows": 3}), "power_source": forms.Textarea(attrs={"rows": 2})}


def known_sites() -> list[str]:
    """Sites named by an owned cluster's running costs or an electricity price (a form's suggestions)."""
    named = set(OwnedCosts.objects.values_list("site", flat=True))
    named |= set(ElectricityPrice.objects.values_list("site", flat=True))
    return sorted(named)


def _with_sites(help_text: str) -> str:
    sites = known_sites()
    return f"{help_text} Sites on record: {', '.join(sites)}." if sites else help_text


class OwnedCostsForm(BoundedModelForm):
    """An owned cluster's running costs (one per cluster: the view sets the cluster)."""

    class Meta:
        model = OwnedCosts
        fields = list(OwnedCosts.FIGURES)
        widgets = {"source": forms.Textarea(attrs={"rows": 3})}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["site"].help_text = _with_sites(self.fields["site"].help_text)


class ClusterPurchaseForm(BoundedModelForm):
    """Nodes of an owned cluster bought on a day (the view sets the cluster); checked as the engine
    takes a purchase (``ClusterPurchase.clean``: a residual value above the price is refused)."""

    class Meta:
        model = ClusterPurchase
        fields = list(ClusterPurchase.FIGURES)
        labels = {"price_per": "Price is", "useful_life_months": "Useful life (months)"}
        help_texts = {
            "price": "In the purchase's currency, per node or per GPU as said below.",
            "currency": "ISO 4217 (USD, EUR, ...): another currency than USD needs an exchange rate on record "
            f"for the day it was bought (or up to {RATE_MAX_AGE_DAYS} days before).",
        }
        widgets = {"bought_on": DATE_INPUT, "source": forms.Textarea(attrs={"rows": 3})}

    def clean_currency(self) -> str:
        return (self.cleaned_data.get("currency") or "").strip().upper()


class ElectricityPriceForm(BoundedModelForm):
    """A site's electricity price from a day (a new price is a new dated row; the latest on or before a
    day is in force)."""

    class Meta:
        model = ElectricityPrice
        fields = ["site", "valid_from", "usd_per_kwh", "source"]
        help_texts = {"valid_from": "In force from this day until the site's next price."}
        widgets = {"valid_from": DATE_INPUT, "source": forms.Textarea(attrs={"rows": 3})}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["site"].help_text = _with_sites("The site as an owned cluster's running costs name it.")


class WorkloadForm(SlugFromName, BoundedModelForm):
    class Meta:
        model = Workload
        fields = ["name", "slug", "team", *Workload.FIGURES]
        labels = {"p95_context_tokens": "p95 context (tokens)", "prefix_cache_hit_rate": "Prefix cache hit rate (0-1)"}


class BillUploadForm(forms.Form):
    """Upload a FOCUS cost and usage CSV (``fleet.bills.submit_bill`` stores it and queues its import)."""

    file = UploadField(label="FOCUS CSV", help_text="A FOCUS 1.0-1.2 cost and usage export (UTF-8 CSV).")
    tag_key = forms.CharField(
        label="Cluster tag key",
        required=False,
        max_length=128,
        help_text="The tag whose value is a cluster's slug, for rows whose ResourceId is not one "
        "(default fleetcap-cluster).",
    )


class ApiTokenForm(forms.Form):
    """A new API token of one's own (``fleet.tokens.create_token`` checks and makes it)."""

    ON_A_DATE = "date"

    name = forms.CharField(max_length=100, help_text="What will use it: a script, a dashboard, a scrape job.")
    scope = forms.ChoiceField(
        choices=[("read", "read: GET, HEAD, OPTIONS only"), ("write", "write: whatever your permissions allow")],
        initial="read",
    )
    expires_in_days = forms.ChoiceField(label="Expires", initial="90")
    expires_on = forms.DateField(
        label="Expiry date",
        required=False,
        widget=forms.DateInput(attrs={"type": "date"}),
        help_text="With 'on a date': the last day the token works.",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        from fleet import tokens

        super().__init__(*args, **kwargs)
        choices = [(str(d), f"in {d} days") for d in tokens.expiry_choices()]
        self.fields["expires_in_days"].choices = [*choices, (self.ON_A_DATE, "on a date")]
        if self.fields["expires_in_days"].initial not in dict(choices):
            self.fields["expires_in_days"].initial = choices[0][0]

    def service_kwargs(self) -> dict[str, Any]:
        data = self.cleaned_data
        on_a_date = data["expires_in_days"] == self.ON_A_DATE
        return {
            "name": data["name"],
            "scope": data["scope"],
            "days": None if on_a_date else int(data["expires_in_days"]),
            "expires_on": data.get("expires_on") if on_a_date else None,
        }


class ApiTokenFilterForm(forms.Form):
    """Whose tokens an admin's list shows, and in which state (a GET form)."""

    user = forms.CharField(required=False, max_length=150, label="User", help_text="A username; blank: everybody.")
    state = forms.ChoiceField(
        required=False,
        choices=[("", "any"), ("active", "active"), ("expired", "expired"), ("revoked", "revoked")],
    )
