"""cladelog.graph_engine: the reactive concept-graph engine, event-sourced.

Load concept trees written for the skynet-graph engine, derive the same facts (with the
deliberate differences documented in ``docs/differences.md``), and record every state change
through a sink so that :meth:`Engine.replay` rebuilds it without calling a provider.

The names below are imported lazily (on first use), so that enabling the plugin keeps the
``cladelog`` command line fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cladelog.core import lazy_exports

__version__ = "0.1.0"

if TYPE_CHECKING:
    from .canon import canon_facts, canon_value, compile_fact_schema, digest, norm_token
    from .engine import Engine, EngineConfig, Provider, ProviderCall, RecordSink, SettleReport
    from .errors import (
        ConceptTreeError,
        ExpressionError,
        GraphEngineError,
        ReplayError,
        ScenarioError,
        SessionError,
        TemplateError,
    )
    from .expr import Expression, compile_expression
    from .jsvalue import UNDEFINED
    from .scenario import (
        MemoryHost,
        ScenarioHost,
        generate_workload,
        reload_seed,
        run_scenario,
        snapshot,
        substitute,
    )
    from .sessions import (
        Session,
        plugin_providers,
        replay_session,
        run_recorded_scenario,
        session_records,
    )
    from .tree import (
        Concept,
        ConceptTree,
        build_tree,
        load_concept_dir,
        load_concept_file,
        load_tree,
        merge_sets,
        parse_jsonc,
    )
    from .validate import Issue, ValidationReport, validate_tree

_EXPORTS = {
    "canon_facts": "canon",
    "canon_value": "canon",
    "compile_fact_schema": "canon",
    "digest": "canon",
    "norm_token": "canon",
    "Engine": "engine",
    "EngineConfig": "engine",
    "Provider": "engine",
    "ProviderCall": "engine",
    "RecordSink": "engine",
    "SettleReport": "engine",
    "ConceptTreeError": "errors",
    "ExpressionError": "errors",
    "GraphEngineError": "errors",
    "ReplayError": "errors",
    "ScenarioError": "errors",
    "SessionError": "errors",
    "TemplateError": "errors",
    "Expression": "expr",
    "compile_expression": "expr",
    "UNDEFINED": "jsvalue",
    "MemoryHost": "scenario",
    "ScenarioHost": "scenario",
    "generate_workload": "scenario",
    "reload_seed": "scenario",
    "run_scenario": "scenario",
    "snapshot": "scenario",
    "substitute": "scenario",
    "Session": "sessions",
    "plugin_providers": "sessions",
    "replay_session": "sessions",
    "run_recorded_scenario": "sessions",
    "session_records": "sessions",
    "Concept": "tree",
    "ConceptTree": "tree",
    "build_tree": "tree",
    "load_concept_dir": "tree",
    "load_concept_file": "tree",
    "load_tree": "tree",
    "merge_sets": "tree",
    "parse_jsonc": "tree",
    "Issue": "validate",
    "ValidationReport": "validate",
    "validate_tree": "validate",
}

__all__ = [
    "UNDEFINED",
    "Concept",
    "ConceptTree",
    "ConceptTreeError",
    "Engine",
    "EngineConfig",
    "Expression",
    "ExpressionError",
    "GraphEngineError",
    "Issue",
    "MemoryHost",
    "Provider",
    "ProviderCall",
    "RecordSink",
    "ReplayError",
    "ScenarioError",
    "ScenarioHost",
    "Session",
    "SessionError",
    "SettleReport",
    "TemplateError",
    "ValidationReport",
    "__version__",
    "build_tree",
    "canon_facts",
    "canon_value",
    "compile_expression",
    "compile_fact_schema",
    "digest",
    "generate_workload",
    "load_concept_dir",
    "load_concept_file",
    "load_tree",
    "merge_sets",
    "norm_token",
    "parse_jsonc",
    "plugin_providers",
    "reload_seed",
    "replay_session",
    "run_recorded_scenario",
    "run_scenario",
    "session_records",
    "snapshot",
    "substitute",
    "validate_tree",
]


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
