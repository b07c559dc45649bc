"""The ``cladelog`` operator command line.

Exit codes: 0 success, 1 a verification or gate failure (or a REJECT/HALT
verdict from a plugin command), 2 bad input or usage. Errors are one line on
stderr, never a traceback (set ``CLADELOG_DEBUG=1`` to see one).

Plugin authors add commands through the ``cladelog_cli_commands`` hook and
reach the deployment with :func:`pass_deployment`. This module imports only
click at start-up; everything else is imported when a command runs.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import itertools
import json
import os
import sys
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

from ._gc import gc_paused

# Importing builds many long-lived objects, which trigger collections that find nothing
# to free; pausing them saves about 5 ms of the ~80 ms a command takes to start
# (docs/benchmarks-history.md, core).
with gc_paused():
    import click

_FREEZE_REGISTERED = False
_FREEZE_IMPORTS = False


def _freeze_now() -> None:
    """In a process that is the command line (the ``cladelog`` script, not a test's
    CliRunner or an application that imported this module): move the objects built so far
    (modules, classes, functions: they live as long as the process) out of the collector's
    generations, so that the collections the command still triggers do not walk them
    again, ~3 ms of ``replay``. Called again once the deployment's modules are imported."""
    global _FREEZE_IMPORTS
    _FREEZE_IMPORTS = True
    gc.freeze()


def _freeze_at_exit() -> None:
    """Interpreter shutdown ends with a full garbage collection over every module's
    objects, ~6 ms of a ~75 ms command (~3 ms of ``--help``). Freezing them once the
    command is done (atexit runs before that collection) skips it; files and the store
    are closed explicitly by then, and reference counting still frees everything else as
    modules unload. Registered as the root command starts (:meth:`_Root.main`), so that
    ``--help``, ``--version`` and a usage error, which end before any command runs, skip
    it too."""
    global _FREEZE_REGISTERED
    if not _FREEZE_REGISTERED:
        import atexit

        atexit.register(gc.freeze)
        _FREEZE_REGISTERED = True

if TYPE_CHECKING:
    from .deployment import Deployment
    from .events import NewEvent

__all__ = ["EXIT_BAD_INPUT", "EXIT_FAILED", "OneLineCommand", "OneLineGroup", "fail", "main",
           "pass_deployment", "read_json_file"]

from .errors import EXIT_BAD_INPUT, EXIT_FAILED  # noqa: E402
from .output import HELP_SETTINGS, json_option, progress_option  # noqa: E402

#: the largest position (or count) an option takes: SQL's 64-bit integers
MAX_POSITION = 2**63 - 1
F = TypeVar("F", bound=Callable[..., Any])

_BUILTIN = (
    "init", "plugins", "append", "log", "show", "verify", "replay", "export", "import", "status",
    "gate", "types", "keygen", "checkpoint", "prove", "consistency", "verify-proof", "witness",
    "publish",
)


if TYPE_CHECKING:
    _TextType = click.ParamType[str]
else:  # ParamType is generic only from click 8.2 on; 8.1 is supported
    _TextType = click.ParamType


class _Utf8Text(_TextType):
    """A text argument that must be valid UTF-8 (bytes that are not reach Python as lone
    surrogates, which no store, file or terminal can take)."""

    name = "text"

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> Any:
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                self.fail("is not valid UTF-8 text", param, ctx)
        return value


TEXT = _Utf8Text()


class _Failure(click.ClickException):
    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.exit_code = code  # type: ignore[misc]

    def show(self, file: Any = None) -> None:
        click.echo(f"error: {self.format_message()}", err=True)


def fail(message: str, code: int = EXIT_BAD_INPUT) -> NoReturn:
    """Stop the command with a one-line ``error: message`` on stderr and exit ``code``."""
    raise _Failure(message, code)


class _State:
    def __init__(self, config: str | None) -> None:
        self.config_path = config
        self._deployment: Deployment | None = None

    def deployment(self) -> Deployment:
        if self._deployment is None:
            with gc_paused():
                from .config import find_config
                from .deployment import Deployment

                self._deployment = Deployment.open(find_config(self.config_path))
                if _FREEZE_IMPORTS:
                    gc.freeze()
            if "logging" in sys.modules:  # a library that logs (psycopg): structured lines
                from .log import route_stdlib_logging

                route_stdlib_logging()
        return self._deployment

    def close(self) -> None:
        if self._deployment is not None:
            self._deployment.close()


def _state(ctx: click.Context) -> _State:
    root = ctx.find_root()
    if not isinstance(root.obj, _State):
        root.obj = _State(root.params.get("config"))
        root.call_on_close(root.obj.close)
    return root.obj


def pass_deployment(fn: F) -> F:
    """Decorate a click command so it receives the open :class:`Deployment` first."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return fn(_state(click.get_current_context()).deployment(), *args, **kwargs)

    return wrapper  # type: ignore[return-value]


def _one_line_usage(exc: click.UsageError) -> _Failure:
    """A usage error as one ``error:`` line naming the command's help (exit 2), instead of
    click's usage block."""
    where = f" (see '{exc.ctx.command_path} --help')" if exc.ctx is not None else ""
    message = " ".join(exc.format_message().split()).rstrip(".")
    if message.startswith("No such command") and exc.ctx is not None \
            and exc.ctx.parent is None and isinstance(exc.ctx.command, _Root):
        where = _disabled_plugins_hint(exc.ctx) or where
    return _Failure(message + where, EXIT_BAD_INPUT)


def _disabled_plugins_hint(ctx: click.Context) -> str:
    """Plugins add commands only where a deployment enables them: name the installed ones
    this deployment does not enable (a 'graph' command, say, is graph-engine's)."""
    with contextlib.suppress(Exception):  # a hint only: never a second error
        from .locate import enabled_plugins, find_config
        from .plugins import installed_plugins

        path = find_config(ctx.params.get("config"))
        installed = sorted(installed_plugins())
        if not path.exists():
            if installed:
                return (f" (no deployment file {path}: a plugin's commands appear in a "
                        "deployment that enables it, e.g. 'cladelog init --plugin "
                        f"NAME'; installed plugins: {', '.join(installed)})")
            return ""
        off = sorted(set(installed) - set(enabled_plugins(path)))
        if off:
            return (f" (installed plugins not enabled in {path}: {', '.join(off)}; a "
                    "plugin's commands appear once its deployment enables it)")
    return ""


class _OneLineUsage(click.Command):
    """Usage errors met while parsing this command's own arguments become one line."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except click.exceptions.NoArgsIsHelpError:
            raise
        except click.UsageError as exc:
            raise _one_line_usage(exc) from None


class OneLineCommand(_OneLineUsage):
    """A click command whose usage errors (an unknown option, a missing or bad value) are
    one ``error:`` line naming its help, exit 2, as everywhere under ``cladelog``. For a
    command that also runs outside the ``cladelog`` root (a console script of its own)."""


class OneLineGroup(_OneLineUsage, click.Group):
    """A click group whose usage errors, and those of every command below it, are one
    ``error:`` line naming the help, exit 2 (the root of a console script of its own;
    under the ``cladelog`` root every group already is)."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.exceptions.NoArgsIsHelpError:
            raise
        except click.UsageError as exc:
            raise _one_line_usage(exc) from None


class _Root(OneLineGroup):
    """The root group: built-in commands plus the enabled plugins' commands, loaded lazily.

    Usage errors anywhere below it (an unknown option or command, a bad value) are one line.
    """

    def main(self, *args: Any, **kwargs: Any) -> Any:
        _freeze_at_exit()
        if (args[0] if args else kwargs.get("args")) is None:
            _freeze_now()  # the command line of a process of its own (sys.argv)
        return super().main(*args, **kwargs)

    def _plugin_commands(self, ctx: click.Context) -> dict[str, click.Command]:
        cached = ctx.meta.get("cladelog.plugin_commands")
        if cached is not None:
            return cached  # type: ignore[no-any-return]
        found: dict[str, click.Command] = {}
        from .locate import config_location, enabled_plugins

        path = config_location(ctx.params.get("config"))
        if enabled_plugins(path):  # [] when there is none, or it cannot be read
            from . import builtin
            from .config import DeploymentConfig
            from .plugins import load_plugins, make_plugin_manager

            cfg = DeploymentConfig.load(path)
            pm = make_plugin_manager(load_plugins(cfg.plugins, cfg.settings,
                                                  source=cfg.source), builtin)
            aliases: dict[str, click.Command] = {}
            for impl in pm.hook.cladelog_cli_commands.get_hookimpls():
                given: Any = impl.function()
                commands: list[click.Command] = [c for c in given or () if c.name]
                for cmd in commands:
                    if cmd.name and cmd.name not in _BUILTIN:
                        found[cmd.name] = cmd
                # a plugin's one command group is reached by the plugin's name too
                # ('cladelog graph-engine' is 'cladelog graph')
                if len(commands) == 1 and isinstance(commands[0], click.Group):
                    aliases[impl.plugin_name] = commands[0]
            for name, cmd in aliases.items():
                if name not in found and name not in _BUILTIN:
                    found[name] = cmd
        ctx.meta["cladelog.plugin_commands"] = found
        return found

    def _tool_commands(self, ctx: click.Context) -> dict[str, Any]:
        """:func:`_tool_commands`, read once a command line (``--help`` asks for each)."""
        cached = ctx.meta.get("cladelog.tool_commands")
        if cached is None:
            cached = ctx.meta["cladelog.tool_commands"] = _tool_commands()
        return cached  # type: ignore[no-any-return]

    def list_commands(self, ctx: click.Context) -> list[str]:
        # the transparency commands are built-in too, their module not yet imported
        names = set(super().list_commands(ctx)) | set(_BUILTIN)
        # --help must work even when the deployment file is broken
        with contextlib.suppress(Exception):
            names |= set(self._plugin_commands(ctx))
        with contextlib.suppress(Exception):
            names |= set(self._tool_commands(ctx))
        return sorted(names)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in _BUILTIN and cmd_name not in self.commands:
            _add_tlog_commands(self)
        cmd = super().get_command(ctx, cmd_name)
        if cmd is not None:
            return cmd
        found: dict[str, click.Command] = _guard(lambda: self._plugin_commands(ctx))
        if cmd_name in found:
            return found[cmd_name]
        tool = self._tool_commands(ctx).get(cmd_name)
        if tool is None:
            return None
        loaded = _guard(tool.load)
        if not isinstance(loaded, click.Command):
            fail(f"{cmd_name}: entry point {tool.value} is not a click command")
        return loaded

    def invoke(self, ctx: click.Context) -> Any:
        return _guard(lambda: super(_Root, self).invoke(ctx))


TOOL_GROUP = "cladelog.commands"


def _tool_commands() -> dict[str, Any]:
    """Commands installed packages offer without a deployment (group ``cladelog.commands``).

    Unlike plugins these register nothing and need no deployment file: they
    are tools, such as ``cladelog demo``, that create or read deployments
    through the public API. Plugin commands win over a tool of the same name.
    """
    from .locate import entry_points

    return {name: ep for name, ep in entry_points(TOOL_GROUP).items() if name not in _BUILTIN}


def _guard(call: Callable[[], Any]) -> Any:
    """Map cladelog's errors to exit codes (:func:`cladelog.core.errors.exit_code`) with a
    one-line message."""
    from .errors import EXIT_INTERNAL, CladelogError, exit_code

    try:
        result = call()
        sys.stdout.flush()  # a closed pipe shows here, not at interpreter exit
        return result
    except (click.ClickException, click.exceptions.Exit, click.Abort, SystemExit):
        raise
    except BrokenPipeError:
        # the reader went away (``cladelog log | head``): stop quietly, as a Unix tool
        # killed by SIGPIPE does, and keep Python from complaining at exit
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        raise SystemExit(141) from None
    except CladelogError as exc:  # one line, even where a value in it holds a newline
        raise _Failure(" ".join(str(exc).split()), exit_code(exc) or EXIT_BAD_INPUT) from None
    except KeyboardInterrupt:
        raise _Failure("interrupted", 130) from None
    except Exception as exc:
        if os.environ.get("CLADELOG_DEBUG"):
            raise
        raise _Failure(
            f"internal error: {type(exc).__name__}: {exc} (CLADELOG_DEBUG=1 shows a traceback)",
            EXIT_INTERNAL,
        ) from None


@click.group(cls=_Root, context_settings=HELP_SETTINGS)
@click.option("-c", "--config", metavar="FILE", envvar="CLADELOG_CONFIG",
              help="Deployment file (default: $CLADELOG_CONFIG, or the nearest "
                   "cladelog.toml in this folder or above).")
@click.option("-v", "--verbose", count=True, help="Log more (-v info, -vv debug) to stderr.")
@click.option("--version", is_flag=True, expose_value=False, is_eager=True,
              callback=lambda ctx, _param, value: value and _print_versions(ctx),
              help="Show every installed cladelog distribution's version and exit.")
@click.pass_context
def main(ctx: click.Context, config: str | None, verbose: int) -> None:
    """cladelog: an append-only, hash-chained event log with plugins that derive
    verdicts by replaying it.

    Start with 'cladelog init', then 'cladelog status'. Exit codes: 0 ok,
    1 verification or gate failure, 2 bad input or usage.
    """
    if verbose:
        from .log import configure_logging

        configure_logging("debug" if verbose > 1 else "info")


def _print_versions(ctx: click.Context) -> NoReturn:
    """``--version``: each installed ``cladelog-*`` distribution and its version, core
    first. The metadata is read only here, so start-up pays nothing for it."""
    from importlib.metadata import distributions

    found: dict[str, str] = {}
    for dist in distributions():  # the first one on sys.path wins a name, as imports do
        name = (dist.metadata["Name"] or "").strip()
        if name.lower().replace("_", "-").startswith("cladelog-"):
            found.setdefault(name.lower().replace("_", "-"), dist.version)
    for name in sorted(found, key=lambda n: (n != "cladelog-core", n)):
        click.echo(f"{name} {found[name]}")
    ctx.exit(0)


# -- helpers -------------------------------------------------------------------------------


# strict JSON reading is cladelog.core.strictjson's; these names stay for callers of this module
from .strictjson import loads_strict as parse_json_text  # noqa: E402
from .strictjson import read_json_file  # noqa: E402
from .strictjson import read_lines as _read_lines  # noqa: E402

#: ``append`` validates and writes a batch in chunks of at most this many events (or
#: events from this many bytes of input): one chunk is in memory at a time, the batch is
#: still one transaction. An input of one chunk is validated before the store is locked.
APPEND_CHUNK_EVENTS = 2000
APPEND_CHUNK_BYTES = 4 << 20


def _json_items(path: str, source: Any = None) -> Iterator[tuple[Any, int]]:
    """The items of one JSON document (an object or an array of them) or of JSONL, each
    with the size of its line (0 for a document's): JSONL when the first non-blank line is
    a complete JSON value by itself that is not an array (so a pretty-printed object, on
    stdin or in a file of any name, is one document). JSONL is read a line at a time."""
    lines = _read_lines(path, source)
    first = list(itertools.islice(lines, 2))
    if not first:
        return  # the caller says there are no events
    n, line = first[0]
    try:
        json.loads(line)
        jsonl = len(first) > 1 and not line.lstrip().startswith("[")
    except (ValueError, RecursionError):  # the whole-document parse below words it
        jsonl = False
    if not jsonl:
        text = "".join(part for _, part in itertools.chain(first, lines))
        doc = parse_json_text(text, path)
        for item in doc if isinstance(doc, list) else [doc]:
            yield item, 0
        return
    for n, line in itertools.chain(first, lines):
        yield parse_json_text(line, f"{path}:{n}"), len(line)


def _event_chunks(path: str, source: Any = None
                  ) -> Iterator[tuple[list[NewEvent], dict[str, int]]]:
    """The events of an append's input in chunks (see :data:`APPEND_CHUNK_EVENTS`), each
    with the expected versions named so far; InputError for the first bad item."""
    expected: dict[str, int] = {}
    items: list[Any] = []
    size = done = 0
    for item, length in _json_items(path, source):
        items.append(item)
        size += length
        if len(items) >= APPEND_CHUNK_EVENTS or size >= APPEND_CHUNK_BYTES:
            yield _new_events(items, path, start=done, expected=expected)
            done += len(items)
            items, size = [], 0
    if items or not done:  # (none at all: _new_events says there are no events)
        yield _new_events(items, path, start=done, expected=expected)


def _new_events(items: list[Any], path: str, *, start: int = 0,
                expected: dict[str, int] | None = None
                ) -> tuple[list[NewEvent], dict[str, int]]:
    """Items as events (``start``: the index of the first one in the whole input), and the
    expected versions named (added to ``expected`` when given: it spans the chunks)."""
    from .errors import InputError
    from .events import NewEvent

    events: list[NewEvent] = []
    expected = {} if expected is None else expected
    allowed = {"stream", "type", "data", "meta", "schema_version", "expected_version"}
    for i, item in enumerate(items, start):
        where = f"{path}: events[{i}]"
        if not isinstance(item, dict):
            raise InputError(f"{where}: expected an object")
        extra = set(item) - allowed
        if extra:
            raise InputError(f"{where}: unknown field(s) {sorted(extra)}")
        for key in ("stream", "type"):
            if not isinstance(item.get(key), str):
                raise InputError(f"{where}.{key}: required string")
        if "data" not in item:
            raise InputError(f"{where}.data: required")
        sv = item.get("schema_version")
        if sv is not None and type(sv) is not int:
            raise InputError(f"{where}.schema_version: must be an integer")
        if "expected_version" in item:
            ev = item["expected_version"]
            if type(ev) is not int or ev < 0:
                raise InputError(f"{where}.expected_version: must be an integer >= 0")
            if expected.setdefault(item["stream"], ev) != ev:
                raise InputError(f"{where}.expected_version: conflicts with an earlier item")
        events.append(NewEvent(item["stream"], item["type"], item["data"],
                               item.get("meta", {}), sv))
    if not events and not start:
        raise InputError(f"{path}: no events")
    return events, expected


def _config_exists(path: Any) -> bool:
    """Whether the deployment file exists; ConfigError when the path cannot even be asked
    about (a name too long for the file system, say)."""
    from .errors import ConfigError

    try:
        if "\0" in str(path):  # Path.exists() says False; opening it would raise
            raise ValueError("embedded null byte")
        return bool(path.exists())
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path}: cannot read the deployment file "
                          f"({getattr(exc, 'strerror', None) or exc})") from None


def _checked_key(key: str | None) -> str | None:
    """``--idempotency-key``, checked before any input is read (whichever way the batch is
    then written)."""
    if key is not None:
        from .rules import check_idempotency_key

        check_idempotency_key(key)
    return key


def _log() -> Any:
    from .log import get_logger

    return get_logger("cladelog.cli")


def _echo_json(doc: Any) -> None:
    from .output import echo_json

    echo_json(doc)


# -- commands ------------------------------------------------------------------------------


@main.command()
@click.option("--store", metavar="PATH|URL", default=None, type=TEXT,
              help="Store path or URL for a new deployment (default: cladelog.sqlite3).")
@click.option("-p", "--plugin", "plugins", multiple=True, metavar="NAME", type=TEXT,
              help="Enable a plugin (repeatable).")
@json_option()
@click.pass_context
def init(ctx: click.Context, store: str | None, plugins: tuple[str, ...], as_json: bool
         ) -> None:
    """Write a deployment file and create its store (safe to run twice)."""
    from .config import DeploymentConfig, find_config
    from .deployment import Deployment

    # init acts on the working directory (as 'git init' does), not on a deployment above it
    path = find_config(ctx.find_root().params.get("config"), search=False)
    if _config_exists(path):
        cfg = DeploymentConfig.load(path)
        if (store and DeploymentConfig.from_dict({"store": store}, path=path).store != cfg.store) \
                or (plugins and tuple(plugins) != cfg.plugins):
            fail(f"{path}: exists with other settings; edit it instead of re-running init")
        created = False
    else:
        written = store or "cladelog.sqlite3"
        cfg = DeploymentConfig.from_dict({"store": written, "plugins": list(plugins)}, path=path)
        Deployment(cfg, create=True).close()  # validate plugins before writing anything
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(cfg.to_toml(store_as_written=written), encoding="utf-8")
        created = True
    # The enabled plugins are recorded in the log with the first event appended, not here:
    # a store init leaves empty can take an exported log ('cladelog import').
    with Deployment(cfg, create=True) as dep:
        head = dep.store.head()
        upgraded = dep.store.upgraded_from
    if as_json:
        _echo_json({"path": str(path.resolve()), "created": created, "store": cfg.store,
                    "plugins": list(cfg.plugins), "head": head.position,
                    "upgraded_from": upgraded})
        return
    word = "created" if created else "already initialised"
    if upgraded is not None:
        word = f"upgraded the store's schema from version {upgraded}"
    click.echo(f"{word}: {path} (store {cfg.store}, head {head.position})")


@main.group(invoke_without_command=True, context_settings=HELP_SETTINGS)
@json_option()
@click.pass_context
def plugins(ctx: click.Context, as_json: bool) -> None:
    """List installed plugins, which are enabled, their versions, descriptions, modules
    and hooks; 'plugins enable NAME' / 'plugins disable NAME' edit the deployment file.

    A hook implementation whose name matches no hook spec is warned about here
    (with the spec name it is closest to), before opening the deployment refuses it.
    """
    if ctx.invoked_subcommand is not None:
        return
    from .config import DeploymentConfig, find_config
    from .hookspecs import HOOKSPEC_VERSION, PROJECT
    from .plugins import PluginInfo, installed_plugins
    from .pluginset import unknown_hooks

    given = ctx.find_root().params.get("config")
    path = find_config(given)
    enabled = DeploymentConfig.load(path).plugins if _config_exists(path) else ()
    if not _config_exists(path):
        where = f"{path}: no such deployment file" if given else "no cladelog.toml found"
        click.echo(f"warning: {where}: no plugin is enabled (listing the installed ones)",
                   err=True)
    rows = []
    modules: dict[str, Any] = {}
    for name, ep in sorted(installed_plugins().items()):
        row: dict[str, Any] = {"name": name, "enabled": name in enabled,
                               "distribution": ep.dist.name if ep.dist else None,
                               "module": ep.value}
        try:
            module = ep.load()
            modules[name] = module
            info = getattr(module, "PLUGIN", None)
            if isinstance(info, PluginInfo):
                row |= {"version": info.version, "requires": list(info.requires),
                        "description": info.description,
                        "hookspec_version": info.hookspec_version,
                        "compatible": info.hookspec_version == HOOKSPEC_VERSION}
            # a hook implementation is what @hookimpl marked, whatever its name (a plugin
            # may implement another plugin's hooks, such as fork-score's scoring terms)
            marker = f"{PROJECT}_impl"
            row["hooks"] = sorted(n for n in dir(module) if callable(getattr(module, n))
                                  and hasattr(getattr(module, n), marker))
        except Exception as exc:
            row["error"] = f"failed to load: {exc}"
        rows.append(row)
    unknown = unknown_hooks(modules)
    for row in rows:
        row["unknown_hooks"] = [{"name": hook, "hint": hint.strip(" ()")}
                                for hook, hint in unknown.get(row["name"], [])]
        for hook, hint in unknown.get(row["name"], []):
            click.echo(f"warning: plugin {row['name']}: hook implementation {hook!r} "
                       f"matches no hook spec{hint}", err=True)
    if as_json:
        _echo_json({"hookspec_version": HOOKSPEC_VERSION, "deployment": str(path),
                    "plugins": rows})
        return
    click.echo(f"core hook specs v{HOOKSPEC_VERSION}; deployment: {path}")
    if not rows:
        click.echo("no plugins installed")
        return
    from .tables import echo_table

    echo_table(["STATE", "PLUGIN", "VERSION", "REQUIRES", "MODULE", "DESCRIPTION"],
               [("enabled" if r["enabled"] else "disabled", r["name"], r.get("version", "?"),
                 ",".join(r.get("requires", ())) or "-", r["module"],
                 r.get("error") or r.get("description") or "-") for r in rows], indent=2)
    click.echo("hooks:")
    for r in rows:
        if "hooks" in r:
            hooks = ", ".join(h.removeprefix("cladelog_") for h in r["hooks"])
            click.echo(f"  {r['name']}: {hooks or '-'}")


@plugins.command("enable")
@click.argument("names", nargs=-1, required=True, metavar="NAME...", type=TEXT)
@json_option()
@click.pass_context
def plugins_enable(ctx: click.Context, names: tuple[str, ...], as_json: bool) -> None:
    """Enable installed plugins in the deployment file (comments and layout kept).

    Refused, with nothing written, when a plugin is not installed or needs one
    ('requires') that would not be enabled. The log records the change with the
    next event appended.
    """
    _edit_plugins(ctx, names, enable=True, as_json=as_json)


@plugins.command("disable")
@click.argument("names", nargs=-1, required=True, metavar="NAME...", type=TEXT)
@json_option()
@click.pass_context
def plugins_disable(ctx: click.Context, names: tuple[str, ...], as_json: bool) -> None:
    """Stop enabling plugins in the deployment file (comments and layout kept).

    Refused, with nothing written, while another enabled plugin requires one of
    them. Their events stay in the log (replay skips and counts them).
    """
    _edit_plugins(ctx, names, enable=False, as_json=as_json)


def _edit_plugins(ctx: click.Context, names: tuple[str, ...], *, enable: bool,
                  as_json: bool) -> None:
    from .config import find_config
    from .pluginset import edit_plugins

    given = ctx.find_root().params.get("config")
    path = find_config(given)
    if not _config_exists(path):
        fail(f"{path}: no such deployment file" if given else
             "no cladelog.toml found in this folder or above (run 'cladelog init "
             "--plugin NAME' to create one)")
    changed, now = edit_plugins(path, names, enable=enable)
    word = "enabled" if enable else "disabled"
    if as_json:
        _echo_json({"path": str(path.resolve()), word: changed, "plugins": now})
        return
    if changed:
        click.echo(f"{word} {', '.join(changed)} in {path} (plugins: "
                   f"{', '.join(now) or 'none'})")
    else:
        click.echo(f"nothing to change: {', '.join(names)} already {word} in {path}")


@main.command()
@click.argument("file", metavar="FILE")
@click.option("--idempotency-key", metavar="KEY", help="Append this batch at most once.",
              callback=lambda ctx, param, key: _checked_key(key))
@json_option()
@pass_deployment
def append(dep: Deployment, file: str, idempotency_key: str | None, as_json: bool) -> None:
    """Append events from a JSON file (object or array) or JSONL ('-' = stdin), as one batch.

    Each item: {"stream", "type", "data", optional "meta", "schema_version",
    "expected_version"}. Nothing is appended if any item is bad. A large JSONL
    file is validated and written in chunks, in one transaction, so memory
    stays that of a chunk.
    """
    import shutil
    import tempfile

    from .errors import InputError

    with contextlib.ExitStack() as stack:
        source = None
        if file == "-":  # spooled to disk: the store is never locked while a pipe fills
            source = stack.enter_context(tempfile.TemporaryFile())
            try:
                shutil.copyfileobj(sys.stdin.buffer, source)
            except OSError as exc:
                raise InputError(f"-: cannot read ({exc.strerror or exc})") from None
            source.seek(0)
        chunks = _event_chunks(file, source)
        head = list(itertools.islice(chunks, 2))
        if len(head) == 1:  # one chunk: validated in full before the store is locked
            events, expected = head[0]
            recorded = dep.append(events, expected_versions=expected or None,
                                  idempotency_key=idempotency_key)
            first, last = recorded[0].position, recorded[-1].position
        else:
            result = dep.append_chunks(itertools.chain(head, chunks),
                                       idempotency_key=idempotency_key)
            first, last = result.first, result.last
    _log().info("append.done", events=last - first + 1, first=first, last=last, file=file)
    if as_json:
        _echo_json({"appended": last - first + 1, "first": first, "last": last})
        return
    click.echo(f"appended {last - first + 1} event(s), positions {first}..{last}")


@main.command()
@click.option("--stream", type=TEXT, help="Only this stream.")
@click.option("--type", "types", multiple=True, type=TEXT, help="Only this type (repeatable).")
@click.option("--from", "start", type=click.IntRange(min=1, max=MAX_POSITION), default=1,
              help="First position.")
@click.option("--to", "stop", type=click.IntRange(min=1, max=MAX_POSITION), default=None,
              help="Last position.")
@click.option("--tail", type=click.IntRange(min=1, max=MAX_POSITION), default=None,
              help="Only the last N events.")
@json_option("One JSON object per line (each event whole, as 'export' writes it).")
@pass_deployment
def log(dep: Deployment, stream: str | None, types: tuple[str, ...], start: int,
        stop: int | None, tail: int | None, as_json: bool) -> None:
    """List events, oldest first, with filters: position, time, stream@version, type,
    actor and the start of the data ('cladelog show POSITION' prints one whole).

    --type takes an event type or a glob over the known ones ('lawv.*'); an
    unknown type is refused with the list of known types.
    """
    selected = _select_types(dep, types) if types else None
    events: Iterator[Any] = dep.store.read(start, stop, stream=stream, types=selected)
    if tail:
        from collections import deque

        events = iter(deque(events, maxlen=tail))
    if as_json:
        for e in events:
            _echo_json(e.to_json())
        return
    _echo_log_table(events)


#: the columns of 'cladelog log', and how many rows it lays out at once (a long log is
#: printed a page at a time; each page is at least as wide as the ones before it)
LOG_COLUMNS = ("POSITION", "RECORDED AT", "STREAM", "TYPE", "ACTOR", "DATA")
LOG_PAGE = 1000
LOG_DATA_WIDTH = 60


def _log_row(e: Any) -> tuple[str, ...]:
    data = json.dumps(e.data, sort_keys=True, ensure_ascii=False)
    if len(data) > LOG_DATA_WIDTH:
        data = data[:LOG_DATA_WIDTH - 3] + "..."
    meta = e.meta if isinstance(e.meta, dict) else {}
    actor = meta.get("actor")
    return (str(e.position), e.recorded_at, f"{e.stream}@{e.stream_version}", e.type,
            actor if isinstance(actor, str) else "-", " ".join(data.split()))


def _echo_log_table(events: Iterator[Any]) -> None:
    from .tables import echo_table

    widths: dict[str, int] = {}
    first = True
    while True:
        page = [_log_row(e) for e in itertools.islice(events, LOG_PAGE)]
        if not page:
            return
        for row in page:
            for name, cell in zip(LOG_COLUMNS, row, strict=True):
                widths[name] = max(widths.get(name, len(name)), len(cell))
        echo_table(LOG_COLUMNS, page, right=["POSITION"], header=first, min_widths=widths)
        first = False


@main.command()
@click.argument("position", type=click.IntRange(min=1, max=MAX_POSITION), metavar="POSITION")
@json_option("The event whole, as one JSON object (as 'export' writes it).")
@pass_deployment
def show(dep: Deployment, position: int, as_json: bool) -> None:
    """Print the whole event at POSITION: where it is, who wrote it, its data and hashes."""
    event = next(dep.store.read(position, position), None)
    if event is None:
        head = dep.store.head().position
        fail(f"POSITION: no event at position {position} (the log holds 1..{head})"
             if head else f"POSITION: no event at position {position} (the log is empty)")
    if as_json:
        _echo_json(event.to_json())
        return
    meta = dict(event.meta) if isinstance(event.meta, dict) else {"meta": event.meta}
    schema = f"schema v{event.schema_version}"
    if event.type not in dep.registry:
        schema += ", a type no enabled plugin registers"
    rows = [("position", str(event.position)),
            ("stream", f"{event.stream}@{event.stream_version}"),
            ("type", f"{event.type} ({schema})"),
            ("recorded at", event.recorded_at)]
    for key in ("actor", "plugin", "plugin_version", "correlation_id"):
        if key in meta:
            rows.append((key.replace("_", " "), str(meta.pop(key))))
    rows += [(f"meta {k}", json.dumps(v, ensure_ascii=False)) for k, v in sorted(meta.items())]
    rows += [("prev hash", event.prev_hash), ("hash", event.hash)]
    width = max(len(k) for k, _ in rows)
    for k, v in rows:
        click.echo(f"{k:<{width}}  {v}")
    click.echo("data")
    for line in json.dumps(event.data, indent=2, sort_keys=True,
                           ensure_ascii=False).splitlines():
        click.echo(f"  {line}")


def _select_types(dep: Deployment, patterns: tuple[str, ...], what: str = "--type"
                  ) -> list[str]:
    """The event types ``--type`` names: each pattern is a type or an fnmatch glob over the
    types the enabled plugins register. A plain name no plugin here registers is still
    accepted when the log holds events of it (a plugin not enabled here wrote them);
    anything else is refused, listing the known types."""
    from fnmatch import fnmatchcase

    known = list(dep.registry)
    selected: list[str] = []
    for pattern in patterns:
        glob = any(c in pattern for c in "*?[")
        if glob:
            matched = [name for name in known if fnmatchcase(name, pattern)]
        elif pattern in known or _log_holds_type(dep, pattern):
            matched = [pattern]
        else:
            matched = []
        if not matched:
            problem = "no known event type matches" if glob else "unknown event type"
            fail(f"{what}: {problem} {pattern[:80]!r} (known: {', '.join(known) or 'none'})")
        selected.extend(name for name in matched if name not in selected)
    return selected


@main.command("types")
@click.argument("patterns", nargs=-1, metavar="[TYPE|GLOB]...", type=TEXT)
@json_option("Every type with its schema versions and the JSON Schema of its payload, as "
             "one JSON document.")
@pass_deployment
def types_(dep: Deployment, patterns: tuple[str, ...], as_json: bool) -> None:
    """List the event types the enabled plugins register: the plugin, the schema versions
    (older ones are upcast on reading) and what each records; --json adds the JSON Schema
    (draft 2020-12) of each payload. TYPE|GLOB narrows the list ('lawv.*')."""
    from .schema import json_schema

    names = _select_types(dep, patterns, what="TYPE") if patterns else list(dep.registry)
    for name in names:
        if name not in dep.registry:
            fail(f"TYPE: {name[:80]!r} is in the log, but no enabled plugin registers it "
                 "(its schema is that plugin's)")
    owners = dep.event_type_owners
    rows = []
    for name in names:
        et = dep.registry.get(name)
        rows.append({"name": name, "plugin": owners.get(name, "core"),
                     "schema_version": et.schema_version,
                     "schema_versions": list(range(1, et.schema_version + 1)),
                     "description": et.description,
                     "payload": f"{et.payload.__module__}.{et.payload.__qualname__}",
                     "json_schema": json_schema(et.payload)})
    if as_json:
        _echo_json({"types": rows})
        return
    from .tables import echo_table

    if not echo_table(["TYPE", "PLUGIN", "SCHEMA", "DESCRIPTION"],
                      [(r["name"], r["plugin"],
                        "v1" if r["schema_version"] == 1 else f"v1..v{r['schema_version']}",
                        r["description"] or "-") for r in rows]):
        click.echo("no event types registered")


def _log_holds_type(dep: Deployment, name: str) -> bool:
    # the abandoned reader is closed as soon as it is dropped (reference counting)
    return next(dep.store.read(types=[name]), None) is not None


@main.command()
@json_option()
@click.option("--checkpoint", "checkpoints", multiple=True, metavar="FILE",
              help="Also prove the log extends this signed checkpoint (repeatable).")
@click.option("--key", "keys", multiple=True, metavar="VKEY",
              help="With --checkpoint: a trusted log public key, or a file of them.")
@click.option("--quick", is_flag=True,
              help="With --checkpoint: check the stored Merkle tree only (O(log n) rows).")
@click.option("--witnesses", "witness_keys", multiple=True, metavar="VKEY",
              help="With --checkpoint: witness public keys (or files of them).")
@click.option("--quorum", type=click.IntRange(min=1), default=None,
              help="With --witnesses: cosignatures needed per checkpoint.")
@progress_option
@pass_deployment
def verify(dep: Deployment, as_json: bool, checkpoints: tuple[str, ...], keys: tuple[str, ...],
           quick: bool, witness_keys: tuple[str, ...], quorum: int | None,
           show_progress: bool) -> None:
    """Walk the hash chain and the Merkle tree; report the first position that does not
    verify (exit 1). With --checkpoint, exit 1 naming the first checkpoint the log does
    not extend, and whether it was cut or rewritten."""
    if checkpoints or keys or quick or witness_keys or quorum:
        from .tlog_cli import verify_checkpoints

        if not checkpoints:
            fail("--checkpoint: --key, --quick, --witnesses and --quorum go with "
                 "--checkpoint FILE")
        verify_checkpoints(dep, checkpoints, keys, quick, as_json, witness_keys, quorum)
        return
    from .output import progress, quiet

    with progress("verifying (the chain and tree, then the event rules)",
                  force=show_progress) as update:
        # no counting at all when nobody watches: the walk stays as fast as it was
        report = dep.verify(progress=None if update is quiet else update)
    _log().info("verify.done", ok=report.ok, checked=report.checked, position=report.position,
                violations=len(report.violations))
    broken = ""
    if report.violations:  # every rule every event breaks; the first one on stderr
        n = len(report.violations)
        broken = f" ({n} rule violation{'s' if n != 1 else ''} in all)" if n > 1 else ""
    if as_json:
        # "head": the store's head; "verified_to": the last position that verified
        _echo_json({"ok": report.ok, "checked": report.checked, "position": report.position,
                    "reason": report.reason, "head": dep.store.head().position,
                    "verified_to": report.head.position,
                    "violations": [{"position": p, "rule": r, "reason": m}
                                   for p, r, m in report.violations]})
        if not report.ok:  # the document on stdout, the one-line reason on stderr
            fail(f"position {report.position}: {report.reason}{broken}", EXIT_FAILED)
        return
    for p, r, m in report.violations:
        click.echo(f"position {p}: {m} (rule {r})")
    if not report.ok:
        fail(f"position {report.position}: {report.reason}{broken}", EXIT_FAILED)
    click.echo(f"ok: {report.checked} event(s) verified, head {report.head.position} "
               f"{report.head.hash}")


@main.command()
@click.option("--rebuild", is_flag=True, help="Ignore checkpoints; start from position 0.")
@click.option("--to", "to", type=click.IntRange(min=0, max=MAX_POSITION), default=None,
              help="Replay history up to this position only.")
@click.option("--expect", "expect", metavar="FILE", default=None,
              help="A saved 'replay --json' document: exit 1 naming every projection whose "
                   "digest differs from it (the check of a log someone hands you).")
@json_option()
@progress_option
@click.option("--follow", is_flag=True,
              help="Keep projections current as events arrive; stop with Ctrl-C or SIGTERM.")
@click.option("--reconnect-timeout", type=click.FloatRange(min=0, max=86_400), default=None,
              metavar="SECONDS",
              help="With --follow: how long to keep reconnecting to a store that went away "
                   "before giving up (default: the deployment's follow_reconnect_timeout, "
                   "300).")
@click.option("--accept-truncation", is_flag=True,
              help="Replay even though the checkpoints prove the log was longer (or "
                   "different) when they were taken; forgets those checkpoints.")
@pass_deployment
def replay(dep: Deployment, rebuild: bool, to: int | None, expect: str | None, as_json: bool,
           show_progress: bool, follow: bool, reconnect_timeout: float | None,
           accept_truncation: bool) -> None:
    """Fold the log through every enabled projection, verifying the chain as it goes.

    Prints each projection's state digest (hex SHA-256 of its canonical JSON)
    and a summary, with the events skipped (types no enabled plugin knows), and
    the plugin set the log records next to the one this deployment enables
    when they differ. Checkpoints make the next replay incremental. A log that
    ends before its checkpoints (a cut tail) is refused (exit 1) unless
    --accept-truncation is given. With --expect FILE, exit 1 when a digest
    differs from the saved 'replay --json' document.
    """
    if follow and to is not None:
        fail("--follow and --to exclude each other")
    if follow and expect is not None:
        fail("--follow and --expect exclude each other")
    expected = _expected_digests(expect) if expect is not None else None
    if reconnect_timeout is not None and not follow:
        fail("--reconnect-timeout: only with --follow")
    if reconnect_timeout is not None and reconnect_timeout != reconnect_timeout:
        fail("--reconnect-timeout: must be a number of seconds, not nan")
    stopping: list[int] = []
    previous = _stop_on_signals(stopping) if follow else {}
    from .output import progress

    try:
        with progress("replaying", force=show_progress) as update:
            # a replay up to a past position shows history; it leaves the checkpoints
            # where they are (moving them back would only make the next replay redo work)
            result = dep.replay(rebuild=rebuild, to=to, progress=update, save=to is None,
                                accept_truncation=accept_truncation)
        _log().info("replay.done", head=result.head.position, read=result.events_read,
                    projections=len(result.projections),
                    skipped_unknown=sum(result.skipped_unknown.values()))
        plugins = _plugin_sets(dep, result.head.position)
        differ = None if expected is None else _digests_differ(result, expected)
        _print_replay(result, as_json, plugins,
                      None if differ is None else {"file": expect, "differ": differ,
                                                   "match": not differ})
        if differ and expected is not None:
            fail(f"--expect: {expect}: the digests of {len(differ)} projection(s) differ: "
                 f"{', '.join(differ)} (saved at head {expected[1]}, replayed to "
                 f"{result.head.position})", EXIT_FAILED)
        if follow:
            # a signal during the first replay above lets it finish and save its
            # checkpoints, then stops here
            _follow(dep, result.head.position, as_json, stopping,
                    dep.config.follow_reconnect_timeout if reconnect_timeout is None
                    else reconnect_timeout)
    finally:
        _restore_signals(previous)


def _print_replay(result: Any, as_json: bool, plugins: dict[str, dict[str, str]] | None = None,
                  expect: dict[str, Any] | None = None) -> None:
    if as_json:
        doc = result.to_json()
        doc["skipped"] = sum(result.skipped_unknown.values())
        if plugins is not None:
            doc["plugins"] = plugins
        if expect is not None:
            doc["expect"] = expect
        _echo_json(doc)
        return
    skipped = sum(result.skipped_unknown.values())
    click.echo(f"replayed to position {result.head.position} ({result.events_read} read, "
               f"{skipped} skipped)")
    for p in sorted(result.projections, key=lambda p: p.name):
        note = " rebuilt" if p.rebuilt else ""
        click.echo(f"  {p.name} v{p.version}  {p.digest}  {p.summary}{note}")
    for t, n in sorted(result.skipped_unknown.items()):
        click.echo(f"  skipped {n} event(s) of unknown type {t} (kept in the log)")
    if plugins is not None and plugins["recorded"] != plugins["enabled"]:
        def listed(versions: dict[str, str]) -> str:
            return ", ".join(f"{n} {v}" for n, v in sorted(versions.items())) or "none"

        click.echo(f"  plugins recorded in the log:     {listed(plugins['recorded'])}")
        click.echo(f"  plugins this deployment enables: {listed(plugins['enabled'])}")
    if expect is not None and expect["match"]:
        click.echo(f"  expect: every digest matches {expect['file']}")
    sys.stdout.flush()


def _plugin_sets(dep: Deployment, position: int) -> dict[str, dict[str, str]]:
    """The plugins (name: version) the log records as enabled up to ``position`` (core's
    ``core.plugins`` projection folded over the plugins stream) and the ones this
    deployment enables."""
    from .builtin import PLUGINS_PROJECTION, PLUGINS_STREAM

    state = PLUGINS_PROJECTION.fresh_state()
    events = dep.store.read(1, position, stream=PLUGINS_STREAM) if position else ()
    for event in events:
        state = PLUGINS_PROJECTION.apply(state, event)
    return {"recorded": {n: v["version"] for n, v in state.items() if v["enabled"]},
            "enabled": {n: v for n, v in dep.plugin_versions.items() if n != "core"}}


def _expected_digests(path: str) -> tuple[dict[str, str], int | None]:
    """The projection digests (and the head) of a saved ``replay --json`` document."""
    from .errors import InputError

    try:
        doc = read_json_file(path)
    except InputError as exc:
        raise InputError(f"--expect: {exc}") from None
    rows = doc.get("projections") if isinstance(doc, dict) else None
    if not isinstance(rows, list):
        raise InputError(f"--expect: {path}: not a 'replay --json' document (no projections "
                         "list)")
    digests: dict[str, str] = {}
    for i, row in enumerate(rows):
        if not (isinstance(row, dict) and isinstance(row.get("name"), str)
                and isinstance(row.get("digest"), str)):
            raise InputError(f"--expect: {path}: projections[{i}]: needs a name and a digest")
        digests[row["name"]] = row["digest"]
    head = doc.get("head")
    position = head.get("position") if isinstance(head, dict) else None
    return digests, position if type(position) is int else None


def _digests_differ(result: Any, expected: tuple[dict[str, str], int | None]) -> list[str]:
    """The projections whose digest differs from the saved one, or that only one side has
    (named 'NAME (not in the saved document)' / 'NAME (not replayed here)')."""
    saved = expected[0]
    here = {p.name: p.digest for p in result.projections}
    differ = [n for n in sorted(saved.keys() & here.keys()) if saved[n] != here[n]]
    differ += [f"{n} (not replayed here)" for n in sorted(saved.keys() - here.keys())]
    differ += [f"{n} (not in the saved document)" for n in sorted(here.keys() - saved.keys())]
    return differ


def _stop_on_signals(stopping: list[int]) -> dict[int, Any]:
    """Note SIGINT and SIGTERM in ``stopping`` instead of dying; return the old handlers."""
    import signal

    def stop(signum: int, frame: Any) -> None:
        stopping.append(signum)

    return {s: signal.signal(s, stop) for s in (signal.SIGINT, signal.SIGTERM)}


def _restore_signals(previous: dict[int, Any]) -> None:
    if not previous:  # nothing was changed (no --follow): no signal module to import
        return
    import signal

    for s, handler in previous.items():
        signal.signal(s, handler)


#: the first wait before reconnecting to a lost store, and the longest (seconds)
FOLLOW_BACKOFF = (0.5, 30.0)


def _follow(dep: Deployment, position: int, as_json: bool, stopping: list[int],
            reconnect_timeout: float) -> None:
    """Replay again whenever the head moves, until SIGINT or SIGTERM; checkpoints stay saved.

    A store that goes away (a server restarting) is waited for: each failed attempt is
    logged, the wait doubles from 0.5 s up to 30 s, and after ``reconnect_timeout``
    seconds of failures the command gives up with the last error (exit 2). Every replay
    starts from the saved checkpoints, so nothing is missed or applied twice across it.
    """
    import time

    from .errors import StoreError

    down_since: float | None = None
    attempt = 0
    while not stopping:
        try:
            if dep.store.wait_for_append(position, timeout=0.5) and not stopping:
                result = dep.replay()
                position = result.head.position
                _print_replay(result, as_json)
        except StoreError as exc:
            now = time.monotonic()
            if down_since is None:
                down_since, attempt = now, 0
            down = now - down_since
            if down >= reconnect_timeout:
                raise StoreError(f"{exc} (gave up following after {down:.0f} s of "
                                 "reconnecting)") from None
            delay = min(FOLLOW_BACKOFF[0] * 2 ** attempt, FOLLOW_BACKOFF[1],
                        reconnect_timeout - down)
            attempt += 1
            _log().warning("follow.reconnecting", error=str(exc), attempt=attempt,
                           retry_in=round(delay, 3), down_for=round(down, 3),
                           gives_up_after=reconnect_timeout)
            deadline = now + delay
            while not stopping and time.monotonic() < deadline:
                time.sleep(min(0.1, max(deadline - time.monotonic(), 0)))
            continue
        if down_since is not None:
            _log().warning("follow.reconnected", attempts=attempt,
                           down_for=round(time.monotonic() - down_since, 3),
                           position=position)
            down_since = None
    if not as_json:
        click.echo(f"stopped at position {position}; checkpoints saved")


@main.command()
@click.argument("file", metavar="FILE")
@json_option("Print the result (events exported, file) as one JSON document; not with "
             "FILE '-'.")
@progress_option
@pass_deployment
def export(dep: Deployment, file: str, as_json: bool, show_progress: bool) -> None:
    """Write the whole log as JSONL ('-' = stdout), one event per line with its hash."""
    from .errors import InputError
    from .output import progress

    if as_json and file == "-":
        fail("--json: not with FILE '-' (stdout is the exported log)")

    store_file = getattr(dep.store, "path", None)  # a file store: never write over it
    over_store = False
    if file != "-" and store_file is not None:
        for suffix in ("", "-wal", "-shm", "-journal"):
            other = f"{store_file}{suffix}"
            with contextlib.suppress(OSError, ValueError):  # a file that is not there, say
                over_store = over_store or os.path.abspath(file) == os.path.abspath(other) \
                    or os.path.samefile(file, other)
    if over_store:
        raise InputError(f"{file}: is the store's own file; export to another file")
    try:
        out = sys.stdout if file == "-" else open(file, "w", encoding="utf-8")  # noqa: SIM115
    except (OSError, ValueError) as exc:  # ValueError: a NUL or lone surrogate in the name
        raise InputError(f"{file}: cannot write "
                         f"({getattr(exc, 'strerror', None) or exc})") from None
    n = 0
    total = dep.store.head().position
    try:
        with progress("exporting", total=total, force=show_progress) as update:
            for e in dep.store.read():
                out.write(json.dumps(e.to_json(), sort_keys=True, ensure_ascii=False) + "\n")
                n += 1
                if not n % 1000 or n == total:
                    update(n)
        if out is not sys.stdout:
            out.close()
    except OSError as exc:
        if isinstance(exc, BrokenPipeError):
            raise
        raise InputError(f"{file}: cannot write ({exc.strerror or exc})") from None
    finally:
        if out is not sys.stdout and not out.closed:
            with contextlib.suppress(OSError):
                out.close()
    if as_json:
        _echo_json({"exported": n, "file": os.path.abspath(file)})
    elif file != "-":
        click.echo(f"exported {n} event(s) to {click.format_filename(file)}")


@main.command("import")
@click.argument("file", metavar="FILE")
@json_option()
@progress_option
@pass_deployment
def import_(dep: Deployment, file: str, as_json: bool, show_progress: bool) -> None:
    """Import an exported JSONL log; the chain must verify and agree with what is stored."""
    from .errors import ChainError, InputError
    from .output import progress
    from .rules import RuleError
    from .store.base import event_from_json

    last = [0, 0]  # the line and position of the event read last

    def events(update: Callable[..., None]) -> Iterator[Any]:  # a line at a time
        for n, line in _read_lines(file):
            where = f"{file}:{n}"
            event = event_from_json(parse_json_text(line, where), where)
            last[:] = n, event.position
            if not n % 1000:
                update(n)
            yield event

    try:
        with progress("importing", force=show_progress) as update:
            result = dep.import_events(events(update))
    except (RuleError, ChainError) as exc:  # name the line of the event concerned
        if exc.position != last[1]:
            raise
        if isinstance(exc, RuleError):
            raise InputError(f"{file}:{last[0]}: {exc}") from None
        raise ChainError(exc.position, f"{exc.reason} ({file}:{last[0]})") from None
    _log().info("import.done", appended=result.appended, present=result.already_present,
                head=result.head.position, file=file)
    if as_json:
        _echo_json({"appended": result.appended, "already_present": result.already_present,
                    "head": {"position": result.head.position, "hash": result.head.hash}})
        return
    click.echo(f"imported {result.appended} new event(s), {result.already_present} already "
               f"present; head {result.head.position}")


@main.command()
@json_option()
@pass_deployment
def status(dep: Deployment, as_json: bool) -> None:
    """Store, size, head, enabled plugins and how far each projection is behind.

    Exits 1 when the checkpoints prove the log was longer (or different) when they were
    taken."""
    head = dep.store.head()
    cps = {c.name: c for c in dep.store.checkpoints()}
    projs: list[dict[str, Any]] = []
    for p in sorted(dep.projections, key=lambda p: p.name):
        cp = cps.get(p.name)
        pos = cp.position if cp and cp.version == p.version else 0
        projs.append({"name": p.name, "version": p.version, "position": pos,
                      "behind": head.position - pos, "digest": cp.digest if cp else None})
    from .store import redact_url
    from .store.base import check_checkpoints

    # checkpoints beyond the head (or over other events) prove the log was cut or rewritten
    cut = check_checkpoints(head, dep.store.checkpoint_marks())
    doc = {"store": redact_url(dep.store.url), "size_bytes": dep.store.size_bytes(),
           "head": {"position": head.position, "hash": head.hash},
           "plugins": dep.plugin_versions, "projections": projs,
           "damage": None if cut is None else {"position": cut[0], "reason": cut[1]}}
    if as_json:
        _echo_json(doc)
    else:
        click.echo(f"store     {doc['store']} ({doc['size_bytes'] or 0} bytes)")
        click.echo(f"head      {head.position} {head.hash}")
        click.echo("plugins   " + ", ".join(f"{n} {v}"
                                           for n, v in sorted(dep.plugin_versions.items())))
        for row in projs:
            click.echo(f"  {row['name']:<28} v{row['version']}  at {row['position']:<8} "
                       f"behind {row['behind']}")
    if cut is not None:
        fail(f"position {cut[0]}: {cut[1]}", EXIT_FAILED)


class _GateCommand(click.Command):
    """``gate``: its help ends with which candidate ids each installed plugin's vote
    matches (each plugin's ``PluginInfo.gate_candidates``)."""

    def format_epilog(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = []
        with contextlib.suppress(Exception):  # help must show whatever a plugin does
            from .hookspecs import PROJECT
            from .plugins import PluginInfo, installed_plugins

            for name, ep in sorted(installed_plugins().items()):
                with contextlib.suppress(Exception):
                    module = ep.load()
                    info = getattr(module, "PLUGIN", None)
                    votes = hasattr(getattr(module, "cladelog_gate_vote", None),
                                    f"{PROJECT}_impl")
                    text = info.gate_candidates if isinstance(info, PluginInfo) else ""
                    rows.append((name, text or ("its vote names no id" if votes
                                                else "casts no gate vote")))
        if rows:
            with formatter.section("Which CANDIDATE id each installed plugin's vote matches"):
                formatter.write_dl(rows)


@main.command(cls=_GateCommand)
@click.argument("candidate", type=TEXT)
@json_option()
@pass_deployment
def gate(dep: Deployment, candidate: str, as_json: bool) -> None:
    """Ask every enabled plugin whether CANDIDATE may be promoted (exit 0 allowed, 1 blocked).

    Each plugin matches CANDIDATE against its own records (see below); when none of
    the enabled plugins knows the id, the answer says so ("known_by": [] in --json).
    """
    result = dep.gate(candidate)
    matchers = [v.plugin for v in result.votes if v.known is not None]
    unknown = not result.known_by
    if as_json:
        _echo_json(result.to_json())
    else:
        for v in result.votes:
            click.echo(f"  {v.decision:<5}  {v.plugin:<14} {v.reason}")
        if not result.votes:
            click.echo("  no plugin voted")
        if unknown:
            verb = "matches" if len(matchers) == 1 else "match"
            which = (f" ({', '.join(matchers)} {verb} candidate ids; see 'cladelog gate "
                     "--help')") if matchers else " (none of them matches candidate ids)"
            click.echo(f"  no enabled plugin knows the candidate {candidate!r}{which}")
        click.echo(f"{candidate}: {'allowed' if result.allowed else 'BLOCKED'}")
    if not result.allowed:
        blockers = [v for v in result.votes if v.decision == "block"]
        reason = "; ".join(f"{v.plugin}: {v.reason}" for v in blockers) or "blocked"
        if unknown:
            reason = f"no enabled plugin knows it; {reason}"
        fail(f"{candidate}: blocked ({' '.join(reason.split())})", EXIT_FAILED)


def _add_tlog_commands(root: click.Group) -> None:
    """Register the transparency commands (``cladelog.core.tlog_cli``). The root imports
    them when one of them is named (or ``--help`` lists them), not at start-up: the other
    commands do not pay for building them."""
    from .tlog_cli import COMMANDS

    for command in COMMANDS:
        root.add_command(command)


if __name__ == "__main__":  # pragma: no cover
    main()
