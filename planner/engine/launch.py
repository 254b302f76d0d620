"""Launch commands: the ``vllm serve`` / ``python -m sglang.launch_server`` command line and a Kubernetes
container fragment that start one replica of a deployment with the layout the app sized (``launch``).

Each flag names the option of the engine's own argument parser in the cited release and where that
parser defines it (``Flag.source``); tests/fixtures/engine_flags holds every option each release's
parser accepts, read by running the parser (tests/test_launch_commands.py checks every flag against
it). A layout the engine cannot express with its flags is said in ``notes``, never silently changed.

The mapping of the app's layout (``spec.Layout``: GPUs per replica = tp x pp x dp, ``dp`` being data-parallel
*attention* inside a replica, ``ep`` expert-parallel ranks over a stage's tp x dp GPUs):

- **vLLM 0.33.0** (``vllm/engine/arg_utils.py``, ``EngineArgs.add_cli_args``): ``--tensor-parallel-size
  tp --pipeline-parallel-size pp --data-parallel-size dp``; with ``ep > 1`` ``--enable-expert-parallel``,
  which shards the experts over all tp x dp ranks of a stage (vLLM has no EP size: EP = tp x dp), so
  an ``ep`` below tp x dp (expert tensor parallelism above 1) has no vLLM flag and is said;
- **SGLang 0.5.23** (``sglang/srt/arg_groups/fields/parallel.py``): attention DP runs inside the TP group,
  so ``--tp-size tp x dp --attn-dp-size dp`` (the deprecated ``--dp-size D --enable-dp-attention`` says the
  same), ``--pp-size pp``, ``--ep-size ep``.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .errors import EngineInputError
from .spec import Layout

__all__ = ["LAUNCH_RELEASES", "Flag", "LaunchCommand", "LaunchRequest", "launch_sglang", "launch_vllm"]

#: The release each engine's launch command is written for (the release its parser was read from).
LAUNCH_RELEASES: dict[str, str] = {"vllm": "0.33.0", "sglang": "0.5.23"}

VLLM_ARGS = "vllm 0.33.0 vllm/engine/arg_utils.py EngineArgs.add_cli_args"
VLLM_SERVE = "vllm 0.33.0 vllm/entrypoints/common/cli_args.py make_arg_parser (FrontendArgs)"
SGLANG_FIELDS = "sglang 0.5.23 sglang/srt/arg_groups/fields/{}.py ServerArgs field {}"

#: The address a launched server listens on: every interface of its pod or node (the seeds' SGLang command;
#: SGLang's own default, 127.0.0.1, is unreachable from a Kubernetes Service). The text of a command, not a bind.
LISTEN_ALL = "0.0.0.0"  # noqa: S104

#: The port each engine's server listens on by default (its parser's ``--port`` default).
DEFAULT_PORTS: dict[str, int] = {"vllm": 8000, "sglang": 30000}


@dataclass(frozen=True, slots=True)
class Flag:
    """One option of a launch command: ``option`` (as the parser spells it), its ``value`` (None: a switch),
    what it sets (``why``) and where the release's parser defines it (``source``)."""

    option: str
    value: str | None
    why: str
    source: str

    def argv(self) -> list[str]:
        return [self.option] if self.value is None else [self.option, self.value]

    def to_dict(self) -> dict[str, Any]:
        return {"option": self.option, "value": self.value, "why": self.why, "source": self.source}


@dataclass(frozen=True, slots=True)
class LaunchRequest:
    """What a launch command starts: ``model_id`` (the Hugging Face repository or a local path), one replica of
    ``layout``, with the deployment's serving settings (None: the engine's default, no flag)."""

    model_id: str
    layout: Layout
    replicas: int = 1
    kv_cache_dtype: str = "bf16"
    max_model_len: int | None = None
    gpu_memory_utilization: float | None = None
    block_size_tokens: int | None = None
    enable_prefix_caching: bool | None = None
    served_model_name: str | None = None
    gpus_per_node: int = 8


@dataclass(frozen=True, slots=True)
class LaunchCommand:
    """A replica's launch command (``argv``, ``shell``), its flags with their sources, the Kubernetes
    container fragment (``kubernetes``) and notes (what the flags cannot say, multi-node launches)."""

    engine: str
    release: str
    argv: tuple[str, ...]
    flags: tuple[Flag, ...]
    gpus_per_replica: int
    replicas: int
    port: int
    notes: tuple[str, ...] = field(default_factory=tuple)
    gpus_per_node: int = 8

    @property
    def shell(self) -> str:
        """The command as one shell line (arguments quoted where needed)."""
        return shlex.join(self.argv)

    @property
    def kubernetes(self) -> str:
        """A Kubernetes container fragment (YAML): the image's command and args and the ``nvidia.com/gpu``
        limit of one pod; a replica is one pod when it fits on a node, else ``pods_per_replica`` pods (a
        LeaderWorkerSet group, said in a comment)."""
        image = {"vllm": f"vllm/vllm-openai:v{self.release}", "sglang": f"lmsysorg/sglang:v{self.release}"}[self.engine]
        pods = self.pods_per_replica
        lines = [
            f"# {self.replicas} replica(s) of {self.gpus_per_replica} GPUs: "
            + ("one pod each" if pods == 1 else f"{pods} pods each (a LeaderWorkerSet group of size {pods})"),
            "containers:",
            f"  - name: {self.engine}",
            f"    image: {image}",
            "    command: " + _yaml_list(self.argv[: self._program_words]),
            "    args:",
            *(f"      - {_yaml_scalar(a)}" for a in self.argv[self._program_words :]),
            "    ports:",
            f"      - containerPort: {self.port}",
            "    resources:",
            "      limits:",
            f'        nvidia.com/gpu: "{min(self.gpus_per_replica, self.gpus_per_node)}"',
        ]
        return "\n".join(lines) + "\n"

    @property
    def pods_per_replica(self) -> int:
        """Pods (nodes) one replica spans."""
        return -(-self.gpus_per_replica // self.gpus_per_node)

    @property
    def _program_words(self) -> int:
        return 2 if self.engine == "vllm" else 3  # "vllm serve" / "python -m sglang.launch_server"

    def to_dict(self) -> dict[str, Any]:
        return {
            "engine": self.engine,
            "release": self.release,
            "command": self.shell,
            "argv": list(self.argv),
            "flags": [f.to_dict() for f in self.flags],
            "gpus_per_replica": self.gpus_per_replica,
            "replicas": self.replicas,
            "kubernetes": self.kubernetes,
            "pods_per_replica": self.pods_per_replica,
            "notes": list(self.notes),
        }


def _yaml_scalar(value: str) -> str:
    """``value`` as a YAML scalar: quoted (JSON-style) unless it is plain and cannot read as another type."""
    plain = value and all(c.isalnum() or c in "-_./:" for c in value) and not value[0].isdigit()
    return (
        value if plain and value.lower() not in ("true", "false", "null", "yes", "no", "on", "off") else _quoted(value)
    )


def _quoted(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _yaml_list(values: tuple[str, ...]) -> str:
    return "[" + ", ".join(_quoted(v) for v in values) + "]"


def _check(request: LaunchRequest) -> None:
    if not request.model_id or any(c.isspace() for c in request.model_id):
        raise EngineInputError.single("model_id", "Give the model's Hugging Face repository (or path), without spaces.")
    if request.replicas < 1:
        raise EngineInputError.single("replicas", "Must be at least 1.")


def _multi_node(request: LaunchRequest, engine: str) -> list[str]:
    gpus = request.layout.gpus
    if gpus <= request.gpus_per_node:
        return []
    nodes = -(-gpus // request.gpus_per_node)
    how = {
        "vllm": "vLLM spans nodes with a Ray cluster (or --nnodes/--node-rank with --data-parallel-size-local): "
        "start it on the head node once the workers have joined",
        "sglang": "run the same command on every node with --nnodes "
        f"{nodes} --node-rank <0..{nodes - 1}> --dist-init-addr <head>:<port>",
    }[engine]
    return [f"One replica needs {gpus} GPUs, {nodes} nodes of {request.gpus_per_node}: {how}."]


#: vLLM's --kv-cache-dtype for the app's KV cache dtypes (values vLLM 0.33.0's CacheConfig accepts).
VLLM_KV: dict[str, str] = {
    "bf16": "bfloat16",
    "fp16": "float16",
    "fp8": "fp8",
    "fp8_e4m3": "fp8_e4m3",
    "fp8_e5m2": "fp8_e5m2",
}
#: SGLang's --kv-cache-dtype for them (its parser's choices in 0.5.23; fp16 has none of its own: "auto",
#: the checkpoint's dtype, said in the notes).
SGLANG_KV: dict[str, str] = {
    "bf16": "bf16",
    "fp16": "auto",
    "fp8": "fp8_e4m3",
    "fp8_e4m3": "fp8_e4m3",
    "fp8_e5m2": "fp8_e5m2",
}


def _kv(table: dict[str, str], dtype: str, engine: str) -> str:
    if dtype not in table:
        raise EngineInputError.single(
            "kv_cache_dtype", f"{engine} has no KV cache dtype for {dtype!r}; use one of {', '.join(table)}."
        )
    return table[dtype]


def launch_vllm(request: LaunchRequest) -> LaunchCommand:
    """``vllm serve`` for one replica of ``request`` (vLLM 0.33.0's flags; see the module)."""
    _check(request)
    lay = request.layout
    flags = [
        Flag("--tensor-parallel-size", str(lay.tp), "tensor parallel size (tp)", VLLM_ARGS),
        Flag("--pipeline-parallel-size", str(lay.pp), "pipeline parallel size (pp)", VLLM_ARGS),
    ]
    notes: list[str] = []
    if lay.dp > 1:
        flags.append(Flag("--data-parallel-size", str(lay.dp), "data-parallel attention ranks (dp)", VLLM_ARGS))
    if lay.ep > 1:
        flags.append(
            Flag(
                "--enable-expert-parallel",
                None,
                f"experts sharded over the tp x dp = {lay.tp * lay.dp} ranks",
                VLLM_ARGS,
            )
        )
        if lay.ep != lay.tp * lay.dp:
            notes.append(
                f"vLLM's expert parallel size is tp x dp = {lay.tp * lay.dp} when enabled; ep {lay.ep} (expert tensor "
                f"parallel {lay.expert_tp}) has no vLLM flag, so this command runs EP {lay.tp * lay.dp}."
            )
    kv = _kv(VLLM_KV, request.kv_cache_dtype, "vLLM")
    flags.append(Flag("--kv-cache-dtype", kv, f"KV cache dtype ({request.kv_cache_dtype})", VLLM_ARGS))
    if request.max_model_len:
        flags.append(Flag("--max-model-len", str(request.max_model_len), "longest sequence (tokens)", VLLM_ARGS))
    if request.gpu_memory_utilization is not None:
        value = f"{request.gpu_memory_utilization:g}"
        flags.append(Flag("--gpu-memory-utilization", value, "share of GPU memory vLLM may use", VLLM_ARGS))
    if request.block_size_tokens:
        flags.append(Flag("--block-size", str(request.block_size_tokens), "KV cache block (tokens)", VLLM_ARGS))
    if request.enable_prefix_caching is not None:
        option = "--enable-prefix-caching" if request.enable_prefix_caching else "--disable-prefix-caching"
        flags.append(Flag(option, None, "automatic prefix caching", VLLM_ARGS))
    if request.served_model_name:
        flags.append(Flag("--served-model-name", request.served_model_name, "the model name clients send", VLLM_ARGS))
    port = DEFAULT_PORTS["vllm"]
    flags.append(Flag("--host", LISTEN_ALL, "listen on every interface (a pod's address)", VLLM_SERVE))
    flags.append(Flag("--port", str(port), "HTTP port", VLLM_SERVE))
    argv = ("vllm", "serve", request.model_id, *(a for f in flags for a in f.argv()))
    notes.extend(_multi_node(request, "vllm"))
    return LaunchCommand(
        "vllm", LAUNCH_RELEASES["vllm"], argv, tuple(flags), lay.gpus, request.replicas, port, tuple(notes)
    )


def _sglang_source(group: str, name: str) -> str:
    return SGLANG_FIELDS.format(group, name)


def launch_sglang(request: LaunchRequest) -> LaunchCommand:
    """``python -m sglang.launch_server`` for one replica of ``request`` (SGLang 0.5.23's flags; see the module)."""
    _check(request)
    lay = request.layout
    flags = [
        Flag("--model-path", request.model_id, "the checkpoint", _sglang_source("model", "model_path")),
        Flag(
            "--tp-size",
            str(lay.tp * lay.dp),
            "tensor parallel group: tp x dp GPUs",
            _sglang_source("parallel", "tp_size"),
        ),
    ]
    if lay.pp > 1:
        flags.append(
            Flag("--pp-size", str(lay.pp), "pipeline parallel size (pp)", _sglang_source("parallel", "pp_size"))
        )
    if lay.dp > 1:
        flags.append(
            Flag(
                "--attn-dp-size",
                str(lay.dp),
                "data-parallel attention groups inside the TP group (dp)",
                _sglang_source("parallel", "attn_dp_size"),
            )
        )
    if lay.ep > 1:
        flags.append(Flag("--ep-size", str(lay.ep), "expert parallel size (ep)", _sglang_source("parallel", "ep_size")))
    kv = _kv(SGLANG_KV, request.kv_cache_dtype, "SGLang")
    flags.append(
        Flag(
            "--kv-cache-dtype",
            kv,
            f"KV cache dtype ({request.kv_cache_dtype})",
            _sglang_source("model", "kv_cache_dtype"),
        )
    )
    if request.max_model_len:
        flags.append(
            Flag(
                "--context-length",
                str(request.max_model_len),
                "longest sequence (tokens)",
                _sglang_source("model", "context_length"),
            )
        )
    if request.gpu_memory_utilization is not None:
        flags.append(
            Flag(
                "--mem-fraction-static",
                f"{request.gpu_memory_utilization:g}",
                "share of GPU memory for weights and KV cache",
                _sglang_source("schedule", "mem_fraction_static"),
            )
        )
    if request.block_size_tokens:
        flags.append(
            Flag(
                "--page-size",
                str(request.block_size_tokens),
                "KV cache page (tokens)",
                _sglang_source("schedule", "page_size"),
            )
        )
    if request.enable_prefix_caching is False:
        flags.append(
            Flag(
                "--disable-radix-cache",
                None,
                "no prefix (radix) cache",
                _sglang_source("memory", "disable_radix_cache"),
            )
        )
    if request.served_model_name:
        flags.append(
            Flag(
                "--served-model-name",
                request.served_model_name,
                "the model name clients send",
                _sglang_source("serving", "served_model_name"),
            )
        )
    port = DEFAULT_PORTS["sglang"]
    flags.append(
        Flag("--host", LISTEN_ALL, "listen on every interface (a pod's address)", _sglang_source("serving", "host"))
    )
    flags.append(Flag("--port", str(port), "HTTP port", _sglang_source("serving", "port")))
    argv = ("python", "-m", "sglang.launch_server", *(a for f in flags for a in f.argv()))
    notes = _multi_node(request, "sglang")
    if request.kv_cache_dtype == "fp16":
        notes.append("SGLang has no fp16 KV cache dtype of its own: auto keeps the checkpoint's dtype.")
    if request.gpu_memory_utilization is not None:
        notes.append(
            "SGLang's --mem-fraction-static is the deployment's GPU memory utilization: the share of memory for "
            "weights and the KV cache pool, as the sizing engine's SGLang profile reads it."
        )
    return LaunchCommand(
        "sglang",
        LAUNCH_RELEASES["sglang"],
        argv,
        tuple(flags),
        lay.gpus,
        request.replicas,
        port,
        tuple(notes),
        request.gpus_per_node,
    )


#: The launch-command builder of each engine that has one (the serving-engine registry names them).
Builder = Callable[[LaunchRequest], LaunchCommand]
