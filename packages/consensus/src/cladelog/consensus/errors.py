"""The exception type of the consensus plugin.

Every refusal (a malformed policy, a statement the rules do not accept, a bad or
unknown signature) is a :class:`ConsensusInputError`, a subclass of core's
:class:`~cladelog.core.InputError`, so that core's command line maps it to exit 2
with its one-line message. The message starts with the field or rule concerned.
A finality certificate that does not verify raises :class:`CertificateError`, a
:class:`~cladelog.core.VerificationError` (exit 1).
"""

from __future__ import annotations

from cladelog.core import InputError, VerificationError

__all__ = ["CertificateError", "ConsensusInputError"]


class ConsensusInputError(InputError):
    """Input the consensus rules refuse; the one-line message names the field and why."""


class CertificateError(VerificationError, ValueError):
    """A finality certificate does not verify (exit 1); the message says what failed."""
