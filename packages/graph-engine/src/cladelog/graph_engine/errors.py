"""Exception types of the graph engine.

Every error raised from the public API on bad input is a subclass of
:class:`GraphEngineError`, itself a :class:`cladelog.core.InputError` (and so a
:class:`ValueError`): the ``cladelog`` command line reports it as one line, exit 2.
Messages are one line and name the field path and the problem.
"""

from __future__ import annotations

from cladelog.core import InputError

__all__ = [
    "AuthoringError",
    "ConceptTreeError",
    "ExpressionError",
    "GraphEngineError",
    "ReplayError",
    "ScenarioError",
    "SessionError",
    "TemplateError",
]


class GraphEngineError(InputError):
    """Base class of every graph-engine input error."""


class ExpressionError(GraphEngineError):
    """An expression does not parse, or exceeds a size or nesting limit."""


class ConceptTreeError(GraphEngineError):
    """A concept tree is malformed (structure, ids, expressions, providers)."""


class TemplateError(GraphEngineError):
    """A mutation template is malformed or holds a value that is not JSON."""


class ScenarioError(GraphEngineError):
    """A scenario file is malformed or uses an unsupported feature."""


class ReplayError(GraphEngineError):
    """A record stream is malformed or does not reproduce its recorded digests."""


class SessionError(GraphEngineError):
    """A recorded session cannot start, be found, or be written (ids, providers, the log)."""


class AuthoringError(GraphEngineError):
    """Bad input to an authoring module or to the concept-tree validator; the one-line
    message names the field path. (Defined here, below every module that raises it, and
    re-exported by :mod:`cladelog.graph_engine.authoring`.)"""
