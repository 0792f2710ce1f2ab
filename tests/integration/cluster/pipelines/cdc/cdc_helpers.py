"""Helpers of the CDC test pipeline: imported by its pipeline file, called inside a Python UDF on executors."""

from __future__ import annotations

import re


def normalize_email(email: str | None) -> str | None:
    """Lower-case, trimmed, with a Gmail-style '+tag' removed."""
    if email is None:
        return None
    local, _, domain = email.strip().lower().partition("@")
    return f"{re.sub(r'[+].*$', '', local)}@{domain}"
