"""Committed logs of each ``graph_engine.records_packed`` version replay to the same state.

Each ``fixtures/logs/packed_v*.log.jsonl`` is a session log exported by an older version of
this package (see ``fixtures/SOURCES.md``). The known values below were computed by that
older code, not by the code under test: a replay now must rebuild the very engine (facts
digest, cast digest, the whole public state) and the very projection states (their digests)
that the writer's own code built.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cladelog.core import Deployment, DeploymentConfig
from cladelog.core.canonical import canonical_digest
from cladelog.core.store.base import event_from_json
from cladelog.graph_engine import replay_session, session_records
from ge_random import state

LOGS = Path(__file__).parent / "fixtures" / "logs"

#: ``packed_v3.log.jsonl`` and what main's code at commit 13c506d (records_packed schema
#: version 3, columns as JSON text inside a JSON string, the compiled module built) computed
#: from it: ``ge_random.record_session(dep, "v3", 11)`` with ``pack_records`` 5 and
#: ``checkpoint_every`` 40, exported with ``RecordedEvent.to_json``; the live engine's facts
#: and cast digests, the canonical digest of its ``ge_random.state``, the canonical digest of
#: ``session_records``, and ``Deployment.replay()``'s projection digests. Fixture data
#: produced by the old code version, not by the code under test.
V3 = {
    "versions": {"graph_engine.records_packed": [3], "graph_engine.checkpoint": [1]},
    "digest": "60e8c8b142eaff4ee83e8f03177654c0541c1856746caa6ae66cbbf2dae50066",
    "cast_digest": "d64b1f5929d8d5ec9e2626be52ea9c5a1718cb192751176322f620e8c39de407",
    "state_digest": "e1444b37b5eb8d8b9f7a3138543b52fd06d1e5abdf25fe42d861c81603a917ff",
    "records_digest": "b5aea0337daae3bf86541984d59bf30b7ed22488c8313b94d6932bbfa5e89927",
    "records": 131,
    "projections": {
        "core.plugins": "400b2145d5a21db81ac5427cb5f272cf3f770779efa54295e53f84308d60e981",
        "core.tlog": "fedda6d1e1912776047a7bc27547801314407ff7b52a2e526a1c7cff86256a46",
        "graph_engine.sessions":
            "1388e5cc0591b6800df5260da75a1d726c8fbe8460afaac2d025cb0f53935db6",
        "graph_engine.libraries":
            "f22319a696ebb5b444e8e868cf78624c21d6c9449866e36363abeb3dced4d0c7",
    },
}


#: ``packed_v4.log.jsonl``: the same session (id ``v3``, ``record_session`` seed 11, the same
#: settings) written by the version 4 writer (issue 22: columns as JSON values). Its known
#: values are V3's, computed by the old code: the records, the engine and the projections
#: must not depend on the format they were stored in.
V4 = {**V3, "versions": {"graph_engine.records_packed": [4], "graph_engine.checkpoint": [1]}}


def _deployment(root: Path) -> Any:
    settings = {"graph-engine": {"pack_records": 5, "checkpoint_every": 40}}
    cfg = DeploymentConfig.from_dict({"store": "log.sqlite3", "actor": "fixture",
                                      "plugins": ["graph-engine"], "settings": settings},
                                     path=root / "cladelog.toml")
    return Deployment(cfg, create=True)


@pytest.mark.parametrize(("name", "expected"), [("packed_v3", V3), ("packed_v4", V4)])
def test_a_committed_log_replays_to_the_digests_of_its_writer(
        tmp_path: Path, name: str, expected: dict[str, Any]) -> None:
    lines = (LOGS / f"{name}.log.jsonl").read_text(encoding="utf-8").splitlines()
    with _deployment(tmp_path) as dep:
        dep.import_events(event_from_json(json.loads(line)) for line in lines)
        versions: dict[str, set[int]] = {}
        for e in dep.store.read(stream="graph.v3"):
            versions.setdefault(e.type, set()).add(e.schema_version)
        assert {k: sorted(v) for k, v in versions.items()} == expected["versions"]
        for from_checkpoint in (False, True):
            eng = replay_session(dep, "v3", from_checkpoint=from_checkpoint)
            assert eng.digest() == expected["digest"]
            assert eng.cast_digest() == expected["cast_digest"]
            assert canonical_digest(json.loads(json.dumps(state(eng)))) == \
                expected["state_digest"]
        records = session_records(dep, "v3")
        assert len(records) == expected["records"]
        assert canonical_digest([list(r) for r in records]) == expected["records_digest"]
        result = dep.replay()
        assert {p.name: p.digest for p in result.projections} == expected["projections"]
