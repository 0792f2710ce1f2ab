"""``medallion``: validate, draw, run, watch and report on pipelines.

Exit codes: 0 success, 1 the pipeline or update failed, 2 bad usage or invalid spec.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from framework.errors import PipelineError, ProblemsError, SpecError


def _add_spec(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("spec", type=Path, help="a conf/*.yaml spec or a Databricks pipeline settings JSON")
    parser.add_argument("--env", default=None, help="environment override from the spec's `environments`")
    parser.add_argument("--storage", default=None, help="override the storage root")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="medallion", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("validate", help="load the pipeline, analyse every query, check the graph (dry run)")
    _add_spec(p)
    p.add_argument("--static", action="store_true",
                   help="no Spark: find reads in the source code only (fast; pipeline files must not build "
                   "Columns at module level)")

    p = sub.add_parser("graph", help="draw the dataset graph as Mermaid text and an HTML picture")
    _add_spec(p)
    p.add_argument("--out", type=Path, default=None, help="where to write graph.mmd and graph.html "
                   "(default: <storage>/graph)")
    p.add_argument("--static", action="store_true", help="no Spark: find reads in the source code only")

    p = sub.add_parser("run", help="run one triggered update")
    _add_spec(p)
    p.add_argument("--full-refresh", action="store_true", help="clear every table and checkpoint first")
    p.add_argument("--full-refresh-select", default=None, metavar="A,B",
                   help="full refresh of these datasets only")
    p.add_argument("--select", default=None, metavar="A,B", help="refresh only these datasets")
    p.add_argument("--no-report", action="store_true", help="do not write the data-quality report")

    p = sub.add_parser("watch", help="run an update whenever new files land (file-arrival trigger)")
    _add_spec(p)
    p.add_argument("--debounce", type=float, default=2.0, help="seconds of quiet before an update starts")

    p = sub.add_parser("report", help="write the data-quality report (HTML + JSON) from the event log")
    _add_spec(p)
    p.add_argument("--update", default=None, help="update id (default: the latest)")
    p.add_argument("--out", type=Path, default=None, help="output folder (default: <storage>/reports)")
    p.add_argument("--gx", action="store_true", help="also validate with Great Expectations and build Data Docs")

    p = sub.add_parser("deploy", help="write Databricks pipeline settings JSON and a databricks.yml bundle")
    _add_spec(p)
    p.add_argument("--out", type=Path, default=Path("deploy"), help="output folder (default: deploy/)")
    p.add_argument("--prod-env", default="prod", help="spec environment used for the bundle's prod target")

    p = sub.add_parser("demo", help="generate sample data and run the sample pipeline twice (incremental)")
    p.add_argument("--spec", type=Path, default=None, help="default: conf/sample.yaml")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        handler = _HANDLERS[args.command]
        return int(handler(args))
    except SpecError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except ProblemsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except PipelineError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


def _spec(args: argparse.Namespace) -> Any:
    from framework.spec import load_spec

    overrides = {"storage": args.storage} if getattr(args, "storage", None) else None
    return load_spec(args.spec, env=args.env, overrides=overrides)


def _static_graph(args: argparse.Namespace) -> Any:
    from framework.graph import build_graph
    from framework.loader import load_pipeline
    from framework.static_reads import static_reads

    spec = _spec(args)
    loaded = load_pipeline(spec)
    reads, streaming = static_reads(loaded.registry)
    return spec, build_graph(loaded.registry, reads, streaming, schema=spec.schema, catalog=spec.catalog,
                             layer_rules=spec.layers)


def _graph(args: argparse.Namespace) -> Any:
    if args.static:
        return _static_graph(args)
    from framework.runner.update import validate_with_spark

    spec = _spec(args)
    return spec, validate_with_spark(spec)


def cmd_validate(args: argparse.Namespace) -> int:
    spec, graph = _graph(args)
    flows = len(graph.registry.flows)
    datasets = len(graph.registry.datasets)
    print(f"pipeline '{spec.name}' is valid: {datasets} datasets, {flows} flows, "
          f"{len(graph.registry.sinks)} sinks")
    for key in graph.order:
        flow = graph.registry.flows[key]
        ins = ", ".join(graph.inputs[key] + graph.external[key]) or "-"
        print(f"  {flow.name:32s} -> {flow.target:28s} reads: {ins}")
    return 0


def cmd_graph(args: argparse.Namespace) -> int:
    from framework.render import to_html, to_mermaid

    spec, graph = _graph(args)
    out: Path = args.out or spec.storage / "graph"
    out.mkdir(parents=True, exist_ok=True)
    (out / "graph.mmd").write_text(to_mermaid(graph))
    (out / "graph.html").write_text(to_html(graph, f"{spec.name}: dataset graph"))
    print(to_mermaid(graph))
    print(f"wrote {out / 'graph.mmd'} and {out / 'graph.html'} (open it in a browser)")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from framework.runner.update import UpdateOptions, run_update

    spec = _spec(args)
    options = UpdateOptions(
        full_refresh=args.full_refresh,
        full_refresh_selection=_csv(args.full_refresh_select),
        refresh_selection=_csv(args.select),
        write_report=not args.no_report,
    )
    result = run_update(spec, options)
    return 0 if result.succeeded else 1


def cmd_watch(args: argparse.Namespace) -> int:
    from framework.runner.watch import watch_spec

    return watch_spec(_spec(args), debounce_s=args.debounce)


def cmd_report(args: argparse.Namespace) -> int:
    from framework.runner.reporting import write_reports

    spec = _spec(args)
    for path in write_reports(spec, update_id=args.update, out_dir=args.out, gx=args.gx):
        print(f"wrote {path}")
    return 0


def cmd_deploy(args: argparse.Namespace) -> int:
    from framework.deploy import write_deployment
    from framework.spec import load_spec

    spec = _spec(args)
    try:
        prod = load_spec(args.spec, env=args.prod_env)
    except SpecError:
        prod = None
    for path in write_deployment(spec, args.out, prod):
        print(f"wrote {path}")
    print("deploy with: databricks bundle deploy -t dev   (run from the repository root, next to databricks.yml)")
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from framework.sample_data import run_demo

    return run_demo(args.spec)


def _csv(value: str | None) -> tuple[str, ...] | None:
    return tuple(v.strip() for v in value.split(",") if v.strip()) if value else None


_HANDLERS = {"validate": cmd_validate, "graph": cmd_graph, "run": cmd_run, "watch": cmd_watch,
             "report": cmd_report, "deploy": cmd_deploy, "demo": cmd_demo}

if __name__ == "__main__":
    sys.exit(main())
