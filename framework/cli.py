"""``medallion``: validate, draw, run, watch and report on pipelines, and show where their streams stand.

Exit codes:
    0: success.
    1: the pipeline or the update failed (its code, its data, its graph), or an unexpected error.
    2: nothing was run: bad usage, an invalid spec (unreadable, not UTF-8, a directory, missing libraries), or a
       local environment that is not set up (no Java, missing Delta jars: ``EnvironmentSetupError``).
    130: interrupted (Ctrl-C).

Failures print one ``error: ...`` message, never a Python traceback; set ``MEDALLION_DEBUG=1`` to also print the
traceback.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from framework.errors import EnvironmentSetupError, PipelineError, SpecError
from framework.redaction import redacted_output


def _add_spec(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("spec", type=Path, help="a conf/*.yaml spec or a Databricks pipeline settings JSON")
    parser.add_argument("--env", default=None, help="environment override from the spec's `environments`")
    parser.add_argument("--storage", default=None, help="override the storage root")
    parser.add_argument("--pipeline", default=None, metavar="KEY",
                        help="an Asset Bundle's pipeline to use (its key under resources.pipelines)")
    parser.add_argument("--target", default=None, help="an Asset Bundle's target (default: its default target)")


def _add_master(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--master", default=None, metavar="URL",
                        help="run on this Spark master, e.g. spark://host:7077 (default: `master` in "
                        "conf/spark.yaml, else local); never through the warm server")


def _add_serve(sub: Any) -> None:
    p = sub.add_parser("serve", help="keep a warm Spark session for this repository in the background; run, "
                       "validate, report and state use it (MEDALLION_NO_SERVER=1: in-process)")
    p.add_argument("--idle-timeout", type=float, default=1800.0, metavar="SECONDS",
                   help="stop after this long without a command (default: 1800)")
    p.add_argument("--no-warm-up", dest="warm_up", action="store_false",
                   help="do not run the two throw-away sample updates that warm the server up once it listens")
    action = p.add_mutually_exclusive_group()
    action.add_argument("--stop", action="store_true", help="stop the server")
    action.add_argument("--status", action="store_true", help="say whether the server runs (exit 1 if not)")
    action.add_argument("--foreground", action="store_true", help=argparse.SUPPRESS)  # the server process itself


def build_parser() -> argparse.ArgumentParser:
    """The ``medallion`` argument parser: one subcommand per command (validate, graph, run, watch, report,
    deploy, state, serve, demo)."""
    parser = argparse.ArgumentParser(prog="medallion", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("validate", help="load the pipeline, analyse every query, check the graph (dry run)")
    _add_spec(p)
    p.add_argument("--static", action="store_true",
                   help="no Spark: find reads in the source code only (fast; pipeline files must not build "
                   "Columns at module level)")
    _add_master(p)

    p = sub.add_parser("graph", help="draw the dataset graph as Mermaid text and an HTML picture")
    _add_spec(p)
    p.add_argument("--out", type=Path, default=None, help="where to write graph.mmd and graph.html "
                   "(default: <storage>/graph)")
    p.add_argument("--static", action="store_true", help="no Spark: find reads in the source code only")

    _add_run(sub.add_parser("run", help="run one triggered update"))

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

    p = sub.add_parser("state", help="print every streaming flow's source position from its checkpoint "
                       "(watermark, files seen, Delta version); no Spark")
    _add_spec(p)

    _add_serve(sub)

    p = sub.add_parser("demo", help="generate sample data and run the sample pipeline twice (incremental)")
    p.add_argument("--spec", type=Path, default=None, help="default: conf/sample.yaml")
    from framework.testing.kafka_cli import add_parser as add_kafka

    add_kafka(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one command; return its exit code (see the module docstring). ``run``, ``validate``, ``report``
    and ``state`` run on the repository's warm server when one runs (``medallion serve``), with the same output
    and exit code; else, or with ``MEDALLION_NO_SERVER=1``, in this process."""
    args = build_parser().parse_args(argv)
    # --continuous runs until stopped: in this process, so that it holds no server and its signals are its own
    if args.command in _SERVED and os.environ.get(_NO_SERVER_ENV) != "1" and not _on_cluster(args) \
            and not getattr(args, "continuous", False):
        from framework.serve.client import forward

        try:
            code = forward(sys.argv[1:] if argv is None else list(argv))
        except KeyboardInterrupt:  # before the server took the command (it stops it if it did)
            print("interrupted", file=sys.stderr)
            return 130
        if code is not None:
            return code
    return _run(args)


def _on_cluster(args: argparse.Namespace) -> bool:
    """Whether the command runs on a cluster (``--master``, or started by ``spark-submit``): not on the
    repository's warm server, whose session is local."""
    return bool(getattr(args, "master", None)) or "PYSPARK_GATEWAY_PORT" in os.environ


def run_in_process(argv: list[str]) -> int:
    """Run one command in this process, never through a server (what the warm server runs per request)."""
    return _run(build_parser().parse_args(argv))


@redacted_output()  # secrets read with dbutils.secrets.get print as [REDACTED] (issue 19)
def _run(args: argparse.Namespace) -> int:
    try:
        handler = _HANDLERS[args.command]
        return int(handler(args))
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # every failure ends in one message and an exit code, never a traceback
        code = exit_code(exc)
        print(_describe(exc), file=sys.stderr)
        _debug_traceback(exc)
        return code


def exit_code(exc: BaseException) -> int:
    """The exit code for a failure: 2 when nothing could run (spec, environment), else 1."""
    return 2 if isinstance(exc, (SpecError, EnvironmentSetupError)) else 1


_DEBUG_ENV = "MEDALLION_DEBUG"
_NO_SERVER_ENV = "MEDALLION_NO_SERVER"
_SERVED = frozenset({"run", "validate", "report", "state"})
_MAX_LINES, _MAX_LINE = 5, 400


def _describe(exc: BaseException) -> str:
    """``error: <message>`` for a framework error; ``error: <Class>: <first lines>``, the root cause and a
    hint for anything else."""
    if isinstance(exc, PipelineError):
        return f"error: {exc}"
    text = f"error: {type(exc).__name__}: {_first_lines(str(exc))}"
    root, seen = exc, {id(exc)}
    while (nxt := root.__cause__ or root.__context__) is not None and id(nxt) not in seen:
        root = nxt
        seen.add(id(nxt))
    if root is not exc:
        text += f"\n  caused by {type(root).__name__}: {_first_lines(str(root))}"
    if os.environ.get(_DEBUG_ENV) != "1":
        text += f"\n  (rerun with {_DEBUG_ENV}=1 for the Python traceback)"
    return text


def _first_lines(message: str) -> str:
    lines = [line if len(line) <= _MAX_LINE else line[:_MAX_LINE] + " ..." for line in message.splitlines()]
    more = len(lines) - _MAX_LINES
    return "\n  ".join(lines[:_MAX_LINES] + ([f"... ({more} more lines)"] if more > 0 else []))


def _debug_traceback(exc: BaseException) -> None:
    if os.environ.get(_DEBUG_ENV) == "1":
        traceback.print_exception(exc, file=sys.stderr)


def _spec(args: argparse.Namespace, *, libraries: bool = True) -> Any:
    """The spec of ``args``; with ``libraries``, also check that every library exists (exit 2 before Spark)."""
    from framework.loader import resolve_libraries
    from framework.paths import PathMapper
    from framework.spec import load_spec

    overrides = {"storage": args.storage} if getattr(args, "storage", None) else None
    spec = load_spec(args.spec, env=args.env, overrides=overrides, pipeline=getattr(args, "pipeline", None),
                     target=getattr(args, "target", None))
    if libraries:
        files = resolve_libraries(spec, PathMapper.from_spec(spec.paths, spec.root))
        _cluster_setup(args, [spec.root, *(f.parent for f in files)])
    return spec


def _cluster_setup(args: argparse.Namespace, folders: list[Path]) -> None:
    """``--master`` for the session the command starts, and the pipeline's folders for a cluster's executors."""
    from framework.runner.session import ship_python_folders
    from framework.settings import MASTER_ENV

    if getattr(args, "master", None):
        os.environ[MASTER_ENV] = args.master
    ship_python_folders(folders)


def _static_graph(args: argparse.Namespace) -> Any:
    """The graph from the source code alone (no Spark), with every problem at once: the graph's, the syntax
    mistakes SQL queries show, and reads of tables neither the pipeline nor the spec's ``tables:`` define."""
    from framework.errors import GraphError
    from framework.graph import build_graph
    from framework.loader import load_pipeline
    from framework.static_reads import sql_syntax_problems, static_reads, unknown_tables

    spec = _spec(args)
    loaded = load_pipeline(spec)
    reads, streaming = static_reads(loaded.registry)
    problems = sql_syntax_problems(loaded.registry)
    if not _persistent_catalog(spec):  # else a table may be in the catalog, which only a session can see
        problems += unknown_tables(loaded.registry, reads, [t.name for t in spec.tables], schema=spec.schema,
                                   catalog=spec.catalog)
    try:
        graph = build_graph(loaded.registry, reads, streaming, schema=spec.schema, catalog=spec.catalog,
                            layer_rules=spec.layers)
    except GraphError as exc:
        raise GraphError([*problems, *exc.problems]) from None
    if problems:
        raise GraphError(problems)
    return spec, graph


def _persistent_catalog(spec: Any) -> bool:
    """Whether sessions keep a catalog between runs (a Hive metastore set in conf/spark.yaml or the spec)."""
    from framework.settings import load_local_settings

    key = "spark.sql.catalogImplementation"
    values = (spec.spark_conf.get(key), load_local_settings().spark_conf.get(key))
    return any(str(v).lower() == "hive" for v in values if v is not None)


def _graph(args: argparse.Namespace) -> Any:
    if args.static:
        return _static_graph(args)
    spec = _spec(args)  # before the runner's imports: a bad spec fails in a fraction of a second
    from framework.runner.session import plan_one_command, session_running
    from framework.runner.update import validate_with_spark

    if not session_running():  # a server's session runs already
        plan_one_command(True)  # analysis only: no data is read

    if getattr(args, "command", None) == "validate":  # also each view's refresh (issue 37): one resolution
        from framework.runner.update import resolve_pipeline

        resolution = resolve_pipeline(spec)[1]
        args.resolution = resolution
        return spec, resolution.graph
    return spec, validate_with_spark(spec)


def _refresh_explanations(resolution: Any) -> dict[str, str]:
    """Per materialized view, whether its query refreshes incrementally (``framework/incremental/explain.py``)."""
    from framework.declarations import DatasetKind
    from framework.incremental.explain import explain

    if resolution is None:
        return {}
    graph = resolution.graph
    out: dict[str, str] = {}
    for key, kind in graph.kinds.items():
        dataset = graph.registry.datasets.get(key)
        if kind is DatasetKind.MATERIALIZED_VIEW and dataset is not None and key in resolution.stand_ins:
            out[key] = explain(resolution.stand_ins[key], dataset.refresh_policy)
    return out


def cmd_validate(args: argparse.Namespace) -> int:
    """``medallion validate``: load the pipeline, find what each flow reads (by analysing its query with
    Spark, or from the source code with ``--static``), check the graph, and print each flow with its reads.

    Returns:
        0; an invalid pipeline raises, and :func:`main` turns the error into the exit code.
    """
    spec, graph = _graph(args)
    flows = len(graph.registry.flows)
    datasets = len(graph.registry.datasets)
    print(f"pipeline '{spec.name}' is valid: {datasets} datasets, {flows} flows, "
          f"{len(graph.registry.sinks)} sinks")
    refresh = _refresh_explanations(getattr(args, "resolution", None))
    for key in graph.order:
        flow = graph.registry.flows[key]
        ins = ", ".join(graph.inputs[key] + graph.external[key]) or "-"
        print(f"  {flow.name:32s} -> {flow.target:28s} reads: {ins}")
        if key in refresh:
            print(f"    refresh: {refresh[key]}")
    return 0


def cmd_graph(args: argparse.Namespace) -> int:
    """``medallion graph``: print the dataset graph as Mermaid text and write ``graph.mmd`` and ``graph.html``
    to ``--out`` (default ``<storage>/graph``).

    Returns:
        0; an invalid pipeline raises, and :func:`main` turns the error into the exit code.
    """
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
    """``medallion run``: run one triggered update with the refresh options given.

    Returns:
        0 if the update succeeded, else 1.
    """
    spec = _spec(args)
    from framework.runner.session import plan_one_command, session_running
    from framework.runner.sizing import expected_small
    from framework.runner.update import UpdateOptions, run_update
    from framework.settings import load_local_settings

    continuous = bool(getattr(args, "continuous", False) or spec.continuous)
    if not continuous and not session_running():  # a continuous run is a long-lived JVM; a server's runs already
        plan_one_command(expected_small(spec, load_local_settings().small_updates))
    stop = threading.Event()
    options = UpdateOptions(
        full_refresh=args.full_refresh,
        full_refresh_selection=_csv(args.full_refresh_select),
        refresh_selection=_csv(args.select),
        reset_checkpoint_selection=_csv(getattr(args, "reset_checkpoint_select", None)),
        replace_where_overrides=dict(getattr(args, "replace_where_override", None) or []) or None,
        write_report=not args.no_report,
        continuous=True if getattr(args, "continuous", False) else None,
        stop=stop,
        stop_cancels=continuous,
        session_ends_with_update=not continuous and not session_running(),
    )
    if continuous:  # PySpark's SparkContext installs a SIGINT handler of its own (cancel, raise): start it first
        from framework.runner.lock import update_lock
        from framework.runner.object_store import startup_conf
        from framework.runner.session import get_or_create_session

        with update_lock(spec.storage, "(starting)"):  # a second update still fails before its JVM starts
            pass
        get_or_create_session(extra_conf=startup_conf(spec.spark_conf))
    with _stop_on_signals(stop, continuous):
        result = run_update(spec, options)
    return 0 if result.succeeded else 1


@contextmanager
def _stop_on_signals(stop: threading.Event, continuous: bool) -> Iterator[None]:
    """A continuous update: the first SIGINT or SIGTERM stops it gracefully (each batch in flight commits, its
    queries stop, the summary and the event log close as CANCELED, exit 130); a second one interrupts at once.
    Triggered updates keep Python's (and PySpark's) default handling (Ctrl-C interrupts, exit 130)."""
    if not continuous or threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: Any) -> None:
        if stop.is_set():
            raise KeyboardInterrupt
        print("stopping the continuous update (again to interrupt at once)", file=sys.stderr, flush=True)
        stop.set()

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def cmd_watch(args: argparse.Namespace) -> int:
    """``medallion watch``: run an update now, then one after each debounced burst of new files, until
    interrupted.

    Returns:
        0 if every update succeeded, 1 if one failed, 2 if the pipeline reads no file source to watch.
    """
    spec = _spec(args)
    from framework.runner.watch import watch_spec

    return watch_spec(spec, debounce_s=args.debounce)


def cmd_report(args: argparse.Namespace) -> int:
    """``medallion report``: write the data-quality report (HTML and JSON) of one update from the event log
    and print the paths written; with ``--gx``, also validate with Great Expectations (only then are the
    pipeline's libraries checked).

    Returns:
        0; failures raise, and :func:`main` turns the error into the exit code.
    """
    spec = _spec(args, libraries=args.gx)
    from framework.runner.reporting import write_reports

    for path in write_reports(spec, update_id=args.update, out_dir=args.out, gx=args.gx):
        print(f"wrote {path}")
    return 0


def cmd_deploy(args: argparse.Namespace) -> int:
    """``medallion deploy``: write the Databricks pipeline settings JSON and a ``databricks.yml`` bundle to
    ``--out``. The bundle's prod target takes its settings from the spec environment ``--prod-env``; if the
    spec does not load with that environment, the prod target keeps the bundle's defaults.

    Returns:
        0; failures raise, and :func:`main` turns the error into the exit code.
    """
    from framework.deploy import write_deployment
    from framework.spec import load_spec

    spec = _spec(args)
    try:
        prod = load_spec(args.spec, env=args.prod_env)
    except SpecError:
        prod = None
    for path in write_deployment(spec, args.out, prod):
        print(f"wrote {path}")
    print(f"deploy with: cd {args.out} && databricks bundle validate && databricks bundle deploy -t dev")
    return 0


def cmd_state(args: argparse.Namespace) -> int:
    """``medallion state``: every streaming flow's last committed source positions, read from the checkpoints
    (``framework/sources/state.py``).

    Returns:
        0; a spec that does not load raises, and :func:`main` turns the error into the exit code.
    """
    from framework.sources.state import pipeline_state, render_state

    spec = _spec(args, libraries=False)
    print(render_state(pipeline_state(spec.checkpoints_dir)))
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    """``medallion serve``: start the repository's warm server in the background (``framework/serve/``) and
    return once it listens; ``--stop`` stops it, ``--status`` says whether it runs.

    Returns:
        0 on success; ``--status``: 1 if no server runs.
    """
    from framework.serve import control
    from framework.serve.paths import ServePaths

    paths = ServePaths.for_cwd()
    if args.stop:
        return control.stop(paths)
    if args.status:
        return control.status(paths)
    if args.foreground:
        from framework.serve.server import serve

        return serve(paths, args.idle_timeout, run_in_process, warm_up=args.warm_up)
    return control.start(paths, args.idle_timeout, warm_up=args.warm_up)


def cmd_demo(args: argparse.Namespace) -> int:
    """``medallion demo``: clear the sample's landing folder and storage, generate sample data and run the
    sample pipeline twice (the second update incremental), then show a gold table.

    Returns:
        0 if both updates succeeded, else 1.
    """
    from framework.sample_data import run_demo

    return run_demo(args.spec)


def _add_run(p: argparse.ArgumentParser) -> None:
    """The arguments of ``medallion run``."""
    _add_spec(p)
    p.add_argument("--full-refresh", action="store_true", help="clear every table and checkpoint first")
    p.add_argument("--full-refresh-select", default=None, metavar="A,B",
                   help="full refresh of these datasets only")
    p.add_argument("--select", default=None, metavar="A,B", help="refresh only these datasets")
    p.add_argument("--reset-checkpoint-select", default=None, metavar="F,G",
                   help="clear these streaming flows' checkpoints first (their tables keep their data)")
    p.add_argument("--replace-where-override", action="append", type=_override, default=None,
                   metavar="FLOW=PREDICATE", help="this update only, REPLACE WHERE flow FLOW replaces the rows of "
                   "PREDICATE instead of its own (a backfill; repeatable)")
    p.add_argument("--no-report", action="store_true", help="do not write the data-quality report")
    p.add_argument("--continuous", action="store_true",
                   help="keep running until stopped (Ctrl-C / SIGTERM), as a continuous pipeline (also the spec's "
                   "`continuous: true`)")
    _add_master(p)


def _override(value: str) -> tuple[str, str]:
    """``FLOW=PREDICATE`` of ``--replace-where-override`` (the predicate may hold ``=`` itself)."""
    flow, eq, predicate = value.partition("=")
    if not eq or not flow.strip() or not predicate.strip():
        raise argparse.ArgumentTypeError(f"expected FLOW=PREDICATE, e.g. orders=\"date >= '2024-01-01'\", "
                                         f"got {value!r}")
    return flow.strip(), predicate.strip()


def _csv(value: str | None) -> tuple[str, ...] | None:
    return tuple(v.strip() for v in value.split(",") if v.strip()) if value else None


def cmd_kafka(args: argparse.Namespace) -> int:
    """``medallion kafka start|stop|status|topic``: a local Apache Kafka broker (framework/testing/kafka_cli.py)."""
    from framework.testing.kafka_cli import cmd_kafka as run_kafka

    return run_kafka(args)


_HANDLERS = {"validate": cmd_validate, "graph": cmd_graph, "run": cmd_run, "watch": cmd_watch,
             "report": cmd_report, "deploy": cmd_deploy, "state": cmd_state, "serve": cmd_serve, "demo": cmd_demo,
             "kafka": cmd_kafka}

if __name__ == "__main__":
    sys.exit(main())
