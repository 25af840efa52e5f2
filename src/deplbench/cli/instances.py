"""Instance sub-commands: ``generate``, ``validate``, ``schema``.

Usage::

    deplbench generate {realistic,knapsack,scaling,datasets} [--family F] [--class C]
                       [--n-items N] [--seed N] [--param KEY=VALUE ...] [-o FILE]
    deplbench validate FILE [FILE ...] [--quiet]
    deplbench schema [-o FILE]

Every user error (unknown family or parameter, a value out of range, a file
that is not a valid instance) surfaces as ``error: <message naming the
field>`` with exit status 2, never a traceback (:func:`deplbench.cli.main`).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from deplbench.errors import DeplbenchError, InstanceError

#: CLI flag → (generator parameter, family that accepts it).
_FAMILY_FLAGS = {
    "family": ("family", "realistic"),
    "item_class": ("item_class", "knapsack"),
    "n_items": ("n_items", "knapsack"),
}


def _parse_value(text: str) -> Any:
    """``--param`` values: JSON literals (numbers, true/false, null, lists),
    anything else as a plain string (``family=alexnet``)."""
    try:
        value = json.loads(text)
    except ValueError:
        return text
    return value


def parse_params(pairs: list[str]) -> dict[str, Any]:
    """Turn ``["k=v", ...]`` into a dict.

    Raises
    ------
    InstanceError
        For an entry without ``=`` or a key given twice.
    """
    params: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        key = key.strip().replace("-", "_")
        if not sep or not key:
            raise InstanceError(f"--param {pair!r}: expected KEY=VALUE")
        if key in params:
            raise InstanceError(f"--param {key}: given twice")
        params[key] = _parse_value(value.strip())
    return params


def _families_epilog() -> str:
    from deplbench.instances.generators import available_families, family_parameters

    lines = ["family parameters (--param KEY=VALUE; default in parentheses):"]
    for fam in available_families():
        params = ", ".join(f"{k} ({v})" for k, v in family_parameters(fam).items())
        lines.append(f"  {fam}: {params}")
    return "\n".join(lines)


def register(subparsers) -> None:
    """Add ``generate``, ``validate`` and ``schema`` to the deplbench CLI."""
    from deplbench.instances.generators import KNAPSACK_CLASSES, available_families

    g = subparsers.add_parser(
        "generate",
        help="generate a seeded instance (realistic, knapsack, scaling, datasets)",
        description="Generate one instance, reproducibly: the same family, parameters and seed give "
                    "byte-identical JSON. Assumptions are recorded in provenance.assumptions.",
        epilog=_families_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    g.add_argument("generator", choices=available_families(), metavar="FAMILY",
                   help="instance family: " + ", ".join(available_families()))
    g.add_argument("--family", dest="family", choices=["alexnet", "mobilenet", "pact-vgg11"],
                   help="realistic: DNN family (default alexnet)")
    g.add_argument("--class", dest="item_class", choices=list(KNAPSACK_CLASSES),
                   help="knapsack: Pisinger class (default uncorrelated)")
    g.add_argument("--n-items", dest="n_items", type=int, help="knapsack: number of items (default 10)")
    g.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    g.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                   help="family parameter (repeatable), e.g. loss_max=5 horizon=50")
    g.add_argument("-o", "--output", metavar="FILE", help="output file (default: standard output)")
    g.set_defaults(func=run_generate)

    v = subparsers.add_parser("validate", help="check instance files against the format and its rules")
    v.add_argument("files", nargs="+", metavar="FILE", help="instance JSON file(s)")
    v.add_argument("--quiet", action="store_true", help="print nothing for valid files")
    v.set_defaults(func=run_validate)

    s = subparsers.add_parser("schema", help="print the JSON Schema of the instance format")
    s.add_argument("-o", "--output", metavar="FILE", help="output file (default: standard output)")
    s.set_defaults(func=run_schema)


def _write(text: str, output: str | None) -> None:
    if output in (None, "-"):
        sys.stdout.write(text)
        return
    path = Path(output)
    if path.parent != Path("") and not path.parent.is_dir():
        raise InstanceError(f"--output {output}: directory {path.parent} does not exist")
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise InstanceError(f"--output {output}: cannot write ({exc.strerror})") from None


def run_generate(args: argparse.Namespace) -> int:
    """Handler of ``deplbench generate``.

    Raises
    ------
    InstanceError
        Unknown or misplaced parameters, or values out of range.
    """
    from deplbench.instances.generators import generate

    params = parse_params(args.param)
    for flag, (name, family) in _FAMILY_FLAGS.items():
        value = getattr(args, flag, None)
        if value is None:
            continue
        cli = "--" + {"item_class": "class", "n_items": "n-items"}.get(flag, flag)
        if args.generator != family:
            raise InstanceError(f"{cli}: only for the {family} family, not {args.generator}")
        if name in params:
            raise InstanceError(f"{cli}: also given as --param {name}")
        params[name] = value
    if "seed" in params:
        raise InstanceError("--param seed: use --seed")
    instance = generate(args.generator, seed=args.seed, **params)
    _write(instance.to_json(), args.output)
    if args.output not in (None, "-"):
        print(f"wrote {args.output}: {instance.name} ({instance.n_models} models, "
              f"{instance.n_clusters} clusters, {instance.n_datasets} datasets, K̄={instance.horizon})",
              file=sys.stderr)
    return 0


def run_validate(args: argparse.Namespace) -> int:
    """Handler of ``deplbench validate``: exit 0 iff every file is valid.

    Each invalid file prints ``error: <message>`` on stderr (the message
    names the file and the offending field); valid files print a one-line
    summary unless ``--quiet``.
    """
    from deplbench.instances.model import load_instance

    status = 0
    for name in args.files:
        try:
            inst = load_instance(name)
        except DeplbenchError as exc:
            msg = str(exc)
            print(f"error: {msg if msg.startswith(str(name)) else f'{name}: {msg}'}", file=sys.stderr)
            status = 2
            continue
        if not args.quiet:
            print(f"ok: {name}: {inst.name!r} — {inst.n_models} models, {len(inst.switches)} switches, "
                  f"{inst.n_clusters} clusters, {inst.n_datasets} datasets, K̄={inst.horizon}, "
                  f"ω={inst.omega:g}, ℓ(0)={inst.initial_loss:g}, ℓmax={inst.loss_max:g}, Tmax={inst.time_max:g}")
    return status


def run_schema(args: argparse.Namespace) -> int:
    """Handler of ``deplbench schema``."""
    from deplbench.instances.model import instance_schema

    _write(json.dumps(instance_schema(), indent=2, ensure_ascii=False) + "\n", args.output)
    return 0


__all__ = ["register", "parse_params", "run_generate", "run_validate", "run_schema"]
