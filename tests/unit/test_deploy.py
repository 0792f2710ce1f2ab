"""The same spec deploys to Databricks: settings JSON and a bundle valid against Databricks' bundle schema."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml

from framework.deploy import bundle_config, pipeline_settings, write_deployment
from framework.errors import SpecError
from framework.spec import load_spec
from tests.conftest import REPO_ROOT

# The JSON schema of databricks.yml, as `databricks bundle schema` prints it (Databricks CLI), kept in the repository
# so that every run validates the bundles deploy writes.
SCHEMA = REPO_ROOT / "tests" / "fixtures" / "databricks_bundle_schema.json"


def test_sample_bundle_is_valid_against_the_bundle_schema(tmp_path: Path) -> None:
    spec = load_spec(REPO_ROOT / "conf" / "sample.yaml")
    prod = load_spec(REPO_ROOT / "conf" / "sample.yaml", env="prod")
    written = write_deployment(spec, tmp_path, prod)
    bundle = yaml.safe_load((tmp_path / "databricks.yml").read_text())
    jsonschema.validate(bundle, json.loads(SCHEMA.read_text()))
    pipeline = bundle["resources"]["pipelines"]["sample_medallion"]
    paths = [lib["file"]["path"] for lib in pipeline["libraries"]]
    assert "${workspace.file_path}/pipelines/sample/bronze.py" in paths
    assert pipeline["configuration"]["sample.landing"] == "dbfs:/mnt/landing"  # Databricks paths kept
    assert pipeline["target"] == "sample" and pipeline["development"] is True
    assert bundle["targets"]["prod"]["resources"]["pipelines"]["sample_medallion"]["development"] is False
    assert json.loads(written[0].read_text())["name"] == "sample_medallion"


def test_settings_round_trip_through_the_spec_parser(tmp_path: Path) -> None:
    spec = load_spec(REPO_ROOT / "conf" / "sample.yaml")
    settings = pipeline_settings(spec, workspace_root=str(REPO_ROOT))
    settings["storage"] = str(tmp_path / "storage")
    path = tmp_path / "settings.json"
    path.write_text(json.dumps(settings))
    again = load_spec(path)
    assert again.name == spec.name and again.schema == spec.schema
    assert [lib.path for lib in again.libraries] == [lib["file"]["path"] for lib in settings["libraries"]]
    assert bundle_config(spec)["bundle"]["name"] == "sample_medallion"


def test_libraries_outside_the_project_root_are_a_spec_error_naming_each(tmp_path: Path) -> None:
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "common.py").write_text("x = 1\n")
    (tmp_path / "project" / "conf").mkdir(parents=True)
    (tmp_path / "project" / "p.py").write_text("x = 1\n")
    spec_path = tmp_path / "project" / "conf" / "spec.yaml"
    spec_path.write_text("name: outside\nlibraries:\n  - file: {path: p.py}\n  - file: {path: ../shared/common.py}\n")
    spec = load_spec(spec_path)
    with pytest.raises(SpecError) as info:
        write_deployment(spec, tmp_path / "deploy")
    assert info.value.codes == ["LIBRARY_OUTSIDE_ROOT"]
    assert str((tmp_path / "shared" / "common.py").resolve()) in str(info.value)
    spec_path.write_text("name: inside\nroot: ..\nlibraries:\n  - file: {path: project/p.py}\n"
                         "  - file: {path: shared/common.py}\n")
    inside = load_spec(spec_path)
    paths = [lib["file"]["path"] for lib in pipeline_settings(inside)["libraries"]]
    assert paths == ["${workspace.file_path}/project/p.py", "${workspace.file_path}/shared/common.py"]


def test_every_library_is_deployed_sql_files_and_sql_notebooks_included(tmp_path: Path) -> None:
    pipes = tmp_path / "pipelines"
    (pipes / "sql").mkdir(parents=True)
    (pipes / "bronze.py").write_text("import dlt\n")
    (pipes / "sql" / "silver.sql").write_text("CREATE MATERIALIZED VIEW silver AS SELECT * FROM bronze;\n")
    (pipes / "sql" / "gold_notebook").write_text("-- Databricks notebook source\nCREATE VIEW gold AS SELECT 1\n")
    (pipes / "sql" / "extra.sql").write_text("-- Databricks notebook source\nCREATE VIEW extra AS SELECT 1\n")
    (pipes / "sql" / "README.md").write_text("not a library\n")
    (tmp_path / "conf").mkdir()
    spec_path = tmp_path / "conf" / "spec.yaml"
    spec_path.write_text("name: mixed\nlibraries:\n  - file: {path: pipelines/bronze.py}\n"
                         "  - glob: {include: pipelines/sql/**}\n")
    libraries = pipeline_settings(load_spec(spec_path))["libraries"]
    assert libraries == [
        {"file": {"path": "${workspace.file_path}/pipelines/bronze.py"}},
        {"notebook": {"path": "${workspace.file_path}/pipelines/sql/extra.sql"}},
        {"notebook": {"path": "${workspace.file_path}/pipelines/sql/gold_notebook"}},
        {"file": {"path": "${workspace.file_path}/pipelines/sql/silver.sql"}},
    ]
    write_deployment(load_spec(spec_path), tmp_path / "deploy")
    bundle = yaml.safe_load((tmp_path / "deploy" / "databricks.yml").read_text())
    assert bundle["resources"]["pipelines"]["mixed"]["libraries"] == libraries
    jsonschema.validate(bundle, json.loads(SCHEMA.read_text()))


def _spec_file(tmp_path: Path, body: str) -> Path:
    (tmp_path / "pipelines").mkdir(exist_ok=True)
    (tmp_path / "pipelines" / "p.py").write_text("import dlt\n")
    (tmp_path / "conf").mkdir(exist_ok=True)
    path = tmp_path / "conf" / "spec.yaml"
    path.write_text("name: landing-orders\nlibraries:\n  - file: {path: pipelines/p.py}\n" + body)
    return path


def _bundle(tmp_path: Path, spec_path: Path, env: str | None = "prod") -> dict:
    prod = load_spec(spec_path, env=env) if env else None
    write_deployment(load_spec(spec_path), tmp_path / "deploy", prod)
    bundle = yaml.safe_load((tmp_path / "deploy" / "databricks.yml").read_text())
    jsonschema.validate(bundle, json.loads(SCHEMA.read_text()))
    return bundle


def test_file_arrival_trigger_deploys_a_job_running_the_pipeline(tmp_path: Path) -> None:
    spec_path = _spec_file(tmp_path, "trigger:\n  file_arrival: /Volumes/dev/raw/landing/orders\n"
                                     "  wait_after_last_change_seconds: 120\n"
                                     "environments:\n  prod:\n    development: false\n"
                                     "    trigger: {file_arrival: /Volumes/prod/raw/landing/orders}\n")
    bundle = _bundle(tmp_path, spec_path)
    pipeline = bundle["resources"]["pipelines"]["landing_orders"]
    assert "trigger" not in pipeline and pipeline["continuous"] is False  # the job starts the updates
    job = bundle["resources"]["jobs"]["landing_orders_job"]
    assert job["tasks"] == [{"task_key": "update",
                             "pipeline_task": {"pipeline_id": "${resources.pipelines.landing_orders.id}"}}]
    assert job["trigger"] == {"file_arrival": {"url": "/Volumes/dev/raw/landing/orders",
                                               "wait_after_last_change_seconds": 120}}
    assert "schedule" not in job
    assert job["max_concurrent_runs"] == 1 and job["queue"] == {"enabled": True}  # queued, never skipped
    prod_job = bundle["targets"]["prod"]["resources"]["jobs"]["landing_orders_job"]
    assert prod_job == {"trigger": {"file_arrival": {"url": "/Volumes/prod/raw/landing/orders",
                                                     "wait_after_last_change_seconds": 120}}}  # merged over base


def test_schedule_trigger_deploys_a_scheduled_job(tmp_path: Path) -> None:
    spec_path = _spec_file(tmp_path, "trigger: {schedule: '0 30 6 ? * MON-FRI', timezone: Europe/Amsterdam}\n")
    bundle = _bundle(tmp_path, spec_path, env=None)
    job = bundle["resources"]["jobs"]["landing_orders_job"]
    assert job["schedule"] == {"quartz_cron_expression": "0 30 6 ? * MON-FRI", "timezone_id": "Europe/Amsterdam"}
    assert "trigger" not in job and job["name"] == "landing-orders (schedule)"


def test_a_trigger_only_in_production_is_a_prod_job(tmp_path: Path) -> None:
    spec_path = _spec_file(tmp_path, "environments:\n  prod: {trigger: {schedule: '0 0 * * * ?'}}\n")
    bundle = _bundle(tmp_path, spec_path)
    assert "jobs" not in bundle["resources"]
    prod_job = bundle["targets"]["prod"]["resources"]["jobs"]["landing_orders_job"]
    assert prod_job["schedule"] == {"quartz_cron_expression": "0 0 * * * ?", "timezone_id": "UTC"}
    assert prod_job["tasks"][0]["pipeline_task"]["pipeline_id"] == "${resources.pipelines.landing_orders.id}"
    mixed = _spec_file(tmp_path, "trigger: {file_arrival: 's3://bucket/landing'}\n"
                                 "environments:\n  prod: {trigger: {file_arrival: null, schedule: '0 0 * * * ?'}}\n")
    with pytest.raises(SpecError) as info:  # a target's settings are merged over the base job: no change of kind
        _bundle(tmp_path, mixed)
    assert info.value.codes == ["TRIGGER_PER_TARGET"]


def test_continuous_pipelines_deploy_continuous_without_a_job(tmp_path: Path) -> None:
    bundle = _bundle(tmp_path, _spec_file(tmp_path, "continuous: true\n"), env=None)
    assert bundle["resources"]["pipelines"]["landing_orders"]["continuous"] is True
    assert "jobs" not in bundle["resources"]
    with pytest.raises(SpecError) as info:  # a job cannot start a continuous pipeline
        load_spec(_spec_file(tmp_path, "continuous: true\ntrigger: {schedule: '0 0 * * * ?'}\n"))
    assert info.value.codes == ["TRIGGER_WITH_CONTINUOUS"]


def test_the_schema_rejects_what_the_spec_parser_rejects() -> None:
    """The checks in framework/spec.py mirror the bundle schema: a job without a URL or time zone is invalid."""
    schema = json.loads(SCHEMA.read_text())
    base = {"resources": {"jobs": {"j": {"tasks": [{"task_key": "t", "pipeline_task": {"pipeline_id": "x"}}]}}}}
    for bad in ({"trigger": {"file_arrival": {}}}, {"schedule": {"quartz_cron_expression": "0 0 * * * ?"}},
                {"trigger": {"file_arrival": {"url": "s3://b/l", "wait_seconds": 60}}}):
        config = json.loads(json.dumps(base))
        config["resources"]["jobs"]["j"].update(bad)
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(config, schema)


def test_the_file_arrival_example_deploys_with_its_job(tmp_path: Path) -> None:
    spec_path = REPO_ROOT / "conf" / "file_arrival.yaml"
    write_deployment(load_spec(spec_path), tmp_path, load_spec(spec_path, env="prod"))
    bundle = yaml.safe_load((tmp_path / "databricks.yml").read_text())
    jsonschema.validate(bundle, json.loads(SCHEMA.read_text()))
    job = bundle["resources"]["jobs"]["file_arrival_job"]
    landing = bundle["resources"]["pipelines"]["file_arrival"]["configuration"]["file_arrival.landing"]
    assert job["trigger"]["file_arrival"]["url"] == landing  # the job watches the folder the pipeline loads
    assert "jobs" not in bundle["targets"]["prod"]["resources"]  # same trigger in production


def test_a_database_source_pipeline_deploys_with_the_notebook_that_registers_the_source(tmp_path: Path) -> None:
    spec = load_spec(REPO_ROOT / "conf" / "db_watermark.yaml")
    write_deployment(spec, tmp_path)
    bundle = yaml.safe_load((tmp_path / "databricks.yml").read_text())
    jsonschema.validate(bundle, json.loads(SCHEMA.read_text()))
    pipeline = bundle["resources"]["pipelines"]["db_watermark"]
    assert pipeline["libraries"][0] == {"notebook": {"path": "${workspace.file_path}/framework/deploy/register_sources.py"}}
    assert pipeline["configuration"]["medallion.bundle_root"] == "${workspace.file_path}"
    assert "framework/**" in bundle["sync"]["include"]
    notebook = (REPO_ROOT / "framework" / "deploy" / "register_sources.py").read_text()
    assert notebook.startswith("# Databricks notebook source\n# MAGIC %pip install \"adbc-driver-postgresql")
    assert "register_sources(spark)" in notebook
    sample = pipeline_settings(load_spec(REPO_ROOT / "conf" / "sample.yaml"))
    assert "medallion.bundle_root" not in sample["configuration"]  # only pipelines that read the source
    assert all("register_sources" not in json.dumps(lib) for lib in sample["libraries"])


def _user_repository(root: Path, *, imports_framework: bool) -> Path:
    """A pipeline repository of a user's own, outside this one: a library, a helper beside it, a package."""
    (root / "conf").mkdir(parents=True)
    (root / "pipelines" / "orders").mkdir(parents=True)
    (root / "lib").mkdir()
    (root / "lib" / "__init__.py").write_text("")
    (root / "lib" / "common.py").write_text("def tag(df):\n    return df\n")
    (root / "pipelines" / "orders" / "helpers.py").write_text("from lib.common import tag\n")
    framework_line = "from framework.quality.dedup import dedup_within_watermark\n" if imports_framework else ""
    (root / "pipelines" / "orders" / "bronze.py").write_text(
        "import dlt\nfrom helpers import tag\n" + framework_line
        + "@dlt.table\ndef orders():\n    return tag(spark.range(1))\n")
    (root / "expectations").mkdir()
    (root / "expectations" / "orders.yml").write_text("rules: []\n")
    spec = root / "conf" / "orders.yaml"
    spec.write_text("name: orders\nlibraries:\n  - glob: {include: pipelines/orders/bronze.py}\n"
                    "environments:\n  prod:\n    development: false\n")
    return spec


def test_a_user_repository_deploys_a_bundle_that_holds_everything_it_names(tmp_path: Path) -> None:
    from framework.deploy.checks import missing_paths, production_problems

    spec_path = _user_repository(tmp_path / "repo", imports_framework=True)
    out = tmp_path / "out"
    write_deployment(load_spec(spec_path), out, load_spec(spec_path, env="prod"))
    bundle = yaml.safe_load((out / "databricks.yml").read_text())
    jsonschema.validate(bundle, json.loads(SCHEMA.read_text()))
    assert missing_paths(bundle, out) == [] and production_problems(bundle) == []
    library = bundle["resources"]["pipelines"]["orders"]["libraries"][0]["file"]["path"]
    assert library == "${workspace.file_path}/pipelines/orders/bronze.py"
    for copied in ("pipelines/orders/bronze.py", "pipelines/orders/helpers.py", "lib/common.py",
                   "expectations/orders.yml", "framework/__init__.py", "framework/quality/dedup.py"):
        assert (out / copied).is_file(), copied
    assert not list(out.rglob("__pycache__"))
    assert set(bundle["sync"]["include"]) >= {"framework/**", "lib/**", "pipelines/orders/helpers.py"}
    prod = bundle["targets"]["prod"]
    assert prod["resources"]["pipelines"]["orders"]["development"] is False
    assert prod["workspace"]["root_path"].startswith("/Workspace/Users/")


def test_a_pipeline_that_does_not_import_the_framework_deploys_without_it(tmp_path: Path) -> None:
    spec_path = _user_repository(tmp_path / "repo", imports_framework=False)
    out = tmp_path / "out"
    write_deployment(load_spec(spec_path), out)  # no prod environment given: prod still deploys non-development
    bundle = yaml.safe_load((out / "databricks.yml").read_text())
    assert not (out / "framework").exists() and "framework/**" not in bundle["sync"]["include"]
    assert bundle["targets"]["prod"]["resources"]["pipelines"]["orders"]["development"] is False


def test_the_bundle_checks_refuse_what_the_databricks_cli_refuses(tmp_path: Path) -> None:
    from framework.deploy.checks import missing_paths, production_problems

    (tmp_path / "pipelines").mkdir()
    (tmp_path / "pipelines" / "a.py").write_text("")
    bundle = {"sync": {"include": ["pipelines/**"]},
              "resources": {"pipelines": {"p": {"development": True, "libraries": [
                  {"file": {"path": "${workspace.file_path}/pipelines/a.py"}},
                  {"file": {"path": "${workspace.file_path}/pipelines/gone.py"}},
                  {"notebook": {"path": "${workspace.file_path}/framework/deploy/register_sources.py"}}]}}},
              "targets": {"prod": {"mode": "production"}}}
    assert missing_paths(bundle, tmp_path) == ["pipelines/gone.py", "framework/deploy/register_sources.py"]
    problems = production_problems(bundle)
    assert len(problems) == 2 and "development: true" in problems[0] and "root_path" in problems[1]


def _kafka_spec(tmp_path: Path, jaas_password: str, truststore_password: str) -> Path:
    (tmp_path / "p.py").write_text("import dlt\n")
    jaas = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="svc" '
            f'password="{jaas_password}";')
    spec_path = tmp_path / "spec.yaml"
    spec_path.write_text(yaml.safe_dump({
        "name": "kafka_creds", "libraries": [{"file": {"path": "p.py"}}],
        "configuration": {"orders.jaas": jaas, "kafka.ssl.truststore.password": truststore_password,
                          "kafka.security.protocol": "SASL_SSL", "kafka.sasl.mechanism": "PLAIN"}}))
    return spec_path


def test_deploy_refuses_credentials_in_clear_naming_the_keys_never_the_values(tmp_path: Path) -> None:
    spec_path = _kafka_spec(tmp_path, "hunter2-jaas", "hunter2-trust")
    with pytest.raises(SpecError) as info:
        write_deployment(load_spec(spec_path), tmp_path / "out")
    assert info.value.codes == ["BUNDLE_SECRET_IN_CLEAR", "BUNDLE_SECRET_IN_CLEAR"]
    text = str(info.value)
    assert "'kafka.ssl.truststore.password'" in text and "'orders.jaas'" in text
    assert "{{secrets/<scope>/<key>}}" in text and "hunter2" not in text
    assert not (tmp_path / "out" / "databricks.yml").exists()


def test_secret_references_deploy_as_written(tmp_path: Path) -> None:
    spec_path = _kafka_spec(tmp_path, "{{secrets/kafka/password}}", "{{secrets/kafka/truststore}}")
    write_deployment(load_spec(spec_path), tmp_path / "out")
    bundle = yaml.safe_load((tmp_path / "out" / "databricks.yml").read_text())
    jsonschema.validate(bundle, json.loads(SCHEMA.read_text()))
    configuration = bundle["resources"]["pipelines"]["kafka_creds"]["configuration"]
    assert configuration["kafka.ssl.truststore.password"] == "{{secrets/kafka/truststore}}"
    assert 'password="{{secrets/kafka/password}}";' in configuration["orders.jaas"]
    assert configuration["kafka.security.protocol"] == "SASL_SSL"  # security options as they are
