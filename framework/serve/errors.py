"""Errors of the warm engine, in the framework's hierarchy (:class:`~framework.errors.PipelineError`)."""

from __future__ import annotations

from framework.errors import PipelineError


class ServeError(PipelineError):
    """The warm server could not be started, reached or understood (root of this package's errors)."""

    code = "SERVE_ERROR"


class ProtocolError(ServeError):
    """A peer sent bytes that are not a well-formed frame (a truncated frame, an unknown kind, a bad payload)."""

    code = "SERVE_PROTOCOL_ERROR"
