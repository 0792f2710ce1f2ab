"""Deployment of the same pipeline files to Databricks: pipeline settings JSON and an Asset Bundle (with a job when
the spec has a file-arrival or schedule ``trigger``)."""

from framework.deploy.bundle import bundle_config, job_settings, pipeline_settings, write_deployment

__all__ = ["bundle_config", "job_settings", "pipeline_settings", "write_deployment"]
