"""Extract the accepted command-line option strings of vLLM `vllm serve` and
SGLang `python -m sglang.launch_server` by building each engine's own argparse
parser from the installed release, and write JSON fixtures.

Not part of `make test`: run it with the interpreter of a scratch venv (outside the project) holding the
engine release, installed with `--no-deps` beside a CPU torch, to refresh tests/fixtures/engine_flags:
  VLLM_TARGET_DEVICE=cpu /work/scratch/vllm33/bin/python bench/engine_flags.py vllm
  /work/scratch/sgl523/bin/python bench/engine_flags.py sglang
(then copy /tmp/engine_flags/*.json into tests/fixtures/engine_flags/). tests/test_launch_commands.py checks
every flag of planner/engine/launch.py against the fixtures.

"options" = every key of parser._option_string_actions, i.e. every option
string argparse will match (this includes the `--no-X` negations that
BooleanOptionalAction adds, and, for vLLM, the `--no-enable-X`/`--no-disable-X`
forms that vLLM's EnableDisableAction keeps registered but hides from help).
"""

import argparse
import enum
import importlib.metadata
import json
import os
import sys

OUT_DIR = "/tmp/engine_flags"

VLLM_DETAIL = [
    "--tensor-parallel-size",
    "--pipeline-parallel-size",
    "--data-parallel-size",
    "--enable-expert-parallel",
    "--kv-cache-dtype",
    "--max-model-len",
    "--gpu-memory-utilization",
    "--block-size",
    "--enable-prefix-caching",
    "--served-model-name",
    "--trust-remote-code",
    "--port",
    "--host",
]
SGLANG_DETAIL = [
    "--model-path",
    "--tp-size",
    "--tensor-parallel-size",
    "--pp-size",
    "--dp-size",
    "--ep-size",
    "--expert-parallel-size",
    "--enable-dp-attention",
    "--kv-cache-dtype",
    "--context-length",
    "--mem-fraction-static",
    "--page-size",
    "--served-model-name",
    "--trust-remote-code",
    "--port",
    "--host",
    "--disable-radix-cache",
]


def jsonable(v):
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if v is argparse.SUPPRESS:
        return "==SUPPRESS=="
    if isinstance(v, enum.Enum):
        return v.value if isinstance(v.value, (str, int, float)) else v.name
    if isinstance(v, dict):
        return {str(k): jsonable(x) for k, x in v.items()}
    if isinstance(v, (set, frozenset)):
        return sorted((jsonable(x) for x in v), key=str)
    if isinstance(v, (list, tuple)) or type(v).__name__ in ("dict_keys", "dict_values"):
        return [jsonable(x) for x in v]
    return repr(v)


def collect(parser, detail_opts):
    osa = parser._option_string_actions
    accepted = sorted(osa)
    visible = {s for a in parser._actions for s in a.option_strings}
    hidden = sorted(set(accepted) - visible)
    details = {}
    for opt in detail_opts:
        a = osa.get(opt)
        if a is None:
            details[opt] = None  # not accepted by this release
            continue
        details[opt] = {
            "dest": a.dest,
            "default": jsonable(a.default),
            "choices": jsonable(a.choices),
            "metavar": jsonable(a.metavar),
            "type": getattr(a.type, "__name__", repr(a.type)) if a.type else None,
            "option_strings": list(a.option_strings),
            "action": type(a).__name__,
        }
    positionals = [a.dest for a in parser._actions if not a.option_strings]
    # Accepted strings of actions registered with help=argparse.SUPPRESS.
    suppressed = sorted(s for s, a in osa.items() if a.help == argparse.SUPPRESS and s not in ("-h", "--help"))
    hidden = sorted(set(hidden) | set(suppressed))
    return accepted, hidden, details, positionals


def vllm():
    import vllm.entrypoints.cli.serve as serve
    from vllm.entrypoints.common.cli_args import make_arg_parser
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    # Same as vllm/entrypoints/cli/main.py: top-level FlexibleArgumentParser,
    # subparsers, then ServeSubcommand.subparser_init -> make_arg_parser.
    top = FlexibleArgumentParser(description="vLLM CLI")
    subparsers = top.add_subparsers(required=False, dest="subparser")
    parser = serve.ServeSubcommand().subparser_init(subparsers)
    accepted, hidden, details, positionals = collect(parser, VLLM_DETAIL)

    # Cross-check: building make_arg_parser on a bare parser gives the same set.
    direct = make_arg_parser(FlexibleArgumentParser())
    assert sorted(direct._option_string_actions) == accepted

    import typing

    from vllm.config.cache import KV_CACHE_DTYPES, CacheDType
    from vllm.platforms import current_platform

    kv = details.get("--kv-cache-dtype")
    if kv is not None:
        # argparse has choices=None here (any string parses); the accepted set
        # is checked later by CacheConfig._validate_cache_dtype against
        # KV_CACHE_DTYPES (the CacheDType Literal + backend-registered ones).
        kv["values_accepted_by_CacheConfig"] = list(KV_CACHE_DTYPES)
        kv["CacheDType_literal"] = list(typing.get_args(CacheDType))

    return {
        "engine": "vllm",
        "release": importlib.metadata.version("vllm"),
        "how": "top=FlexibleArgumentParser(); sp=top.add_subparsers(dest='subparser'); "
        "parser=vllm.entrypoints.cli.serve.ServeSubcommand().subparser_init(sp); "
        "options=sorted(parser._option_string_actions)  "
        "# run with VLLM_TARGET_DEVICE=cpu, torch 2.13.0+cpu, vllm installed --no-deps",
        "source": "vllm/entrypoints/cli/serve.py ServeSubcommand.subparser_init -> "
        "vllm/entrypoints/common/cli_args.py make_arg_parser "
        "(FrontendArgs.add_cli_args + AsyncEngineArgs.add_cli_args) -> "
        "vllm/engine/arg_utils.py EngineArgs.add_cli_args; "
        "parser class vllm/utils/argparse_utils.py FlexibleArgumentParser",
        "options": accepted,
        "hidden_from_help": hidden,
        "positionals": positionals,
        "details": details,
        "notes": [
            "FlexibleArgumentParser.parse_args also accepts underscore spellings "
            "(--tensor_parallel_size), --opt=value, dotted JSON sub-keys "
            "(--compilation-config.mode 3) and -O<n> for --optimization-level; "
            "those are rewritten before matching and are not listed. "
            "allow_abbrev=True, so unambiguous prefixes also parse.",
            "hidden_from_help: accepted strings that --help does not show "
            "(EnableDisableAction's --no-enable-X/--no-disable-X, help=SUPPRESS).",
            f"parser built with current_platform={type(current_platform).__name__} "
            "(no GPU here); on a CUDA host --mm-processor-device choices gain 'cuda'.",
        ],
        "python": sys.version.split()[0],
    }


def sglang():
    from sglang.srt.server_args import ServerArgs

    # Same as sglang/srt/server_args.py prepare_server_args (used by
    # sglang/launch_server.py).
    parser = argparse.ArgumentParser(prog="sglang serve")
    ServerArgs.add_cli_args(parser)
    accepted, hidden, details, positionals = collect(parser, SGLANG_DETAIL)
    return {
        "engine": "sglang",
        "release": importlib.metadata.version("sglang"),
        "how": "parser=argparse.ArgumentParser(prog='sglang serve'); "
        "sglang.srt.server_args.ServerArgs.add_cli_args(parser); "
        "options=sorted(parser._option_string_actions)",
        "source": "sglang/srt/server_args.py ServerArgs.add_cli_args "
        "(add_cli_args_from_dataclass in sglang/srt/arg_groups/arg_utils.py "
        "+ explicit add_argument calls), called by prepare_server_args "
        "from sglang/launch_server.py",
        "options": accepted,
        "hidden_from_help": hidden,
        "positionals": positionals,
        "details": details,
        "notes": [
            "hidden_from_help: accepted strings registered with help=SUPPRESS.",
            "plain argparse.ArgumentParser (allow_abbrev=True): unambiguous prefixes "
            "of these options also parse; they are not listed.",
            "`sglang serve` (sglang/cli/serve.py) first strips --model-type "
            "(backend selector) and turns a leading positional into --model-path, "
            "then calls the same prepare_server_args for LLMs.",
            "no sglang plugins installed (load_plugins could add options).",
        ],
        "python": sys.version.split()[0],
    }


def main():
    which = sys.argv[1]
    data = {"vllm": vllm, "sglang": sglang}[which]()
    os.makedirs(OUT_DIR, exist_ok=True)
    path = os.path.join(OUT_DIR, f"{data['engine']}-{data['release']}.json")
    with open(path, "w") as f:
        json.dump(data, f, indent=1, sort_keys=False)
        f.write("\n")
    print(path, len(data["options"]), "options,", len(data["hidden_from_help"]), "hidden")
    print(json.dumps(data["details"], indent=1))


if __name__ == "__main__":
    main()
