"""cladelog.consensus: independent validators, stake, signed votes, >2/3 finality,
challenges and slashing (ticket #000012 Phase 1b).

The rules are pure and live apart from I/O: :mod:`.policy` (the policy document),
:mod:`.power` (voting power, the quorum, ζ), :mod:`.ledger` (the state machine),
:mod:`.statements` (the signed predicates). :mod:`.signing` signs and verifies them
with core's transparency code; :mod:`.events`, :mod:`.projections`, :mod:`.cli` and
:mod:`.plugin` are the plugin wiring; :mod:`.simulate` runs honest, offline and
Byzantine validators; :mod:`.certificate` makes and checks finality certificates.

Every name of ``__all__`` is importable from this package; they are loaded from
their modules on first use (PEP 562), so importing the plugin stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cladelog.consensus.errors import ConsensusInputError
from cladelog.core import lazy_exports

#: the package version (the one source: pyproject reads it, the plugin records it)
__version__ = "0.1.0"

if TYPE_CHECKING:
    from cladelog.consensus.commands import (
        append_inputs,
        current_ledger,
        input_for_envelope,
        prepare_inputs,
        run_audit,
    )
    from cladelog.consensus.ledger import GENESIS, Ledger, initial_state
    from cladelog.consensus.policy import Fraction, Policy, parse_fraction, parse_policy
    from cladelog.consensus.power import frozen_powers, missing_for_quorum, quorum_reached, zeta
    from cladelog.consensus.signing import (
        Signer,
        generate_key,
        load_signer,
        open_statement,
        sign_statement,
        signer_from_key,
    )
    from cladelog.consensus.simulate import LedgerSink, LogSink, SimConfig
    from cladelog.consensus.statements import PREDICATE_TYPE, check_predicate

_LAZY = {
    "append_inputs": "commands",
    "current_ledger": "commands",
    "input_for_envelope": "commands",
    "prepare_inputs": "commands",
    "run_audit": "commands",
    "GENESIS": "ledger",
    "Ledger": "ledger",
    "initial_state": "ledger",
    "Fraction": "policy",
    "Policy": "policy",
    "parse_fraction": "policy",
    "parse_policy": "policy",
    "frozen_powers": "power",
    "missing_for_quorum": "power",
    "quorum_reached": "power",
    "zeta": "power",
    "Signer": "signing",
    "generate_key": "signing",
    "load_signer": "signing",
    "open_statement": "signing",
    "sign_statement": "signing",
    "signer_from_key": "signing",
    "LedgerSink": "simulate",
    "LogSink": "simulate",
    "SimConfig": "simulate",
    "PREDICATE_TYPE": "statements",
    "check_predicate": "statements",
}

__all__ = [
    "GENESIS",
    "PREDICATE_TYPE",
    "ConsensusInputError",
    "Fraction",
    "Ledger",
    "LedgerSink",
    "LogSink",
    "Policy",
    "Signer",
    "SimConfig",
    "__version__",
    "append_inputs",
    "check_predicate",
    "current_ledger",
    "frozen_powers",
    "generate_key",
    "initial_state",
    "input_for_envelope",
    "load_signer",
    "missing_for_quorum",
    "open_statement",
    "parse_fraction",
    "parse_policy",
    "prepare_inputs",
    "quorum_reached",
    "run_audit",
    "sign_statement",
    "signer_from_key",
    "zeta",
]

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())
