"""cladelog.graph_engine: the reactive concept-graph engine, event-sourced.

Load concept trees written for the skynet-graph engine, derive the same facts (with the
deliberate differences documented in ``docs/differences.md``), and record every state change
through a sink so that :meth:`Engine.replay` rebuilds it without calling a provider.
"""

from .engine import Engine, EngineConfig, Provider, ProviderCall, RecordSink, SettleReport
from .errors import (
    ConceptTreeError,
    ExpressionError,
    GraphEngineError,
    ReplayError,
    ScenarioError,
    TemplateError,
)
from .expr import Expression, compile_expression
from .jsvalue import UNDEFINED
from .scenario import generate_workload, run_scenario, snapshot, substitute
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
    "Provider",
    "ProviderCall",
    "RecordSink",
    "ReplayError",
    "ScenarioError",
    "SettleReport",
    "TemplateError",
    "build_tree",
    "compile_expression",
    "generate_workload",
    "load_concept_dir",
    "load_concept_file",
    "load_tree",
    "merge_sets",
    "parse_jsonc",
    "run_scenario",
    "snapshot",
    "substitute",
]
