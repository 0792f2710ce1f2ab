"""Deployment of the same pipeline files to Databricks: pipeline settings JSON and an Asset Bundle."""

from framework.deploy.bundle import bundle_config, pipeline_settings, write_deployment

__all__ = ["bundle_config", "pipeline_settings", "write_deployment"]
