"""A test-only plugin with event types of its own, for testing a projection in isolation.

A projection that reads every event (``event_types=None``), or one written before its
plugin's event types exist, needs events to fold; this plugin supplies them, so a test
does not borrow another plugin's types (and does not depend on that plugin)::

    from cladelog.core.testing import sample

    @pytest.fixture
    def cladelog_plugin_modules():
        return [sample, my_plugin_module]

    def test_counts(cladelog_env):
        cladelog_env.append(sample.SAMPLE_EVENT, {"key": "a", "n": 2}, stream="s")
        cladelog_env.append(sample.OTHER_EVENT, {"key": "b"}, stream="s")

It is never installed as an entry point, so no deployment enables it outside tests.
Plugin name ``testing``; event types (schema version 1, stream free):

* ``testing.sample`` -- :class:`Sample`: ``key`` (string, default ``""``), ``n`` (integer,
  default 0), ``data`` (any JSON object, default ``{}``);
* ``testing.other`` -- the same payload under another name, to test that a projection
  filters by type.

It registers no projection, command, gate vote or settings.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from .. import __version__
from ..hookspecs import hookimpl
from ..plugins import PluginInfo
from ..registry import EventType

__all__ = ["OTHER_EVENT", "PLUGIN", "SAMPLE_EVENT", "Sample", "cladelog_event_types"]

PLUGIN = PluginInfo(
    name="testing",
    version=__version__,
    description="test-only event types (cladelog.core.testing.sample)",
)


@attrs.frozen
class Sample:
    """Payload of ``testing.sample`` and ``testing.other``."""

    key: str = ""
    n: int = 0
    data: dict[str, Any] = attrs.field(factory=dict)


#: The name of the main test event type.
SAMPLE_EVENT = "testing.sample"
#: A second type with the same payload.
OTHER_EVENT = "testing.other"

_TYPES = (
    EventType(SAMPLE_EVENT, Sample, description="a test-only event (cladelog.core.testing)"),
    EventType(OTHER_EVENT, Sample, description="a second test-only event type"),
)


@hookimpl
def cladelog_event_types() -> Sequence[EventType]:
    return _TYPES
