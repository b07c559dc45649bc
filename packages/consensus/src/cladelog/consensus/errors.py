"""The exception type of the consensus plugin.

Every refusal (a malformed policy, a statement the rules do not accept, a bad or
unknown signature) is a :class:`ConsensusInputError`, a subclass of core's
:class:`~cladelog.core.InputError`, so that core's command line maps it to exit 2
with its one-line message. The message starts with the field or rule concerned.
"""

from __future__ import annotations

from cladelog.core import InputError

__all__ = ["ConsensusInputError"]


class ConsensusInputError(InputError):
    """Input the consensus rules refuse; the one-line message names the field and why."""
