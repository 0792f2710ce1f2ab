"""DLT SQL pipelines: ``.sql`` files and SQL notebook sources declare datasets and flows like Python ones.

Only the statement envelope (``CREATE ... STREAMING TABLE name (...) ... AS``, ``CREATE FLOW``, ``APPLY
CHANGES INTO``, ``SET``) has a grammar of the framework's own (``envelope.py``); the query after ``AS`` is Spark
SQL, parsed and analysed by Spark (``query.py``).
"""

from __future__ import annotations


def register_sql_library(text: str, file: str) -> None:
    """Split a ``.sql`` file or SQL notebook source into statements and register what they declare into the
    active registry (inside ``framework.registry.registration_context``)."""
    from framework.sql.register import register_statements
    from framework.sql.split import split_statements

    register_statements(split_statements(text, file))
