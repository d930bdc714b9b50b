"""Where setting values come from, lowest to highest: defaults < TOML file < environment < CLI flags < per-run
overrides (DAG params), and a cycle's record (:func:`from_record`). Each value not at its default keeps its source
(``Settings.sources``). Files of the former flat form (one ``[crawlcycle]`` table) and the former names in
``RENAMED`` are still read, with a one-line note naming the new tables and keys."""

from __future__ import annotations

import json
import os
import sys
import tomllib
from collections.abc import Mapping
from dataclasses import MISSING, fields, replace
from pathlib import Path
from typing import Any

from crawlcycle.settings import (
    CONFIG_ENV,
    ENV_PREFIX,
    LIVE,
    PATH_SETTINGS,
    RENAMED,
    SECTION_FIELDS,
    SECTION_OF,
    SECTIONS,
    SETTING_NAMES,
    Settings,
    SettingsError,
)


def _coerce(name: str, raw: Any, where: str) -> Any:
    f = next(f for f in fields(Settings) if f.name == name)
    kind = type(f.default) if f.default is not MISSING else str
    try:
        if kind is bool:
            if isinstance(raw, str):
                return raw.strip().lower() in ("1", "true", "yes", "on")
            return bool(raw)
        if kind is int and isinstance(raw, float) and not raw.is_integer():
            raise ValueError
        return kind(raw)
    except (TypeError, ValueError):
        raise SettingsError(f"setting {name}: expected {kind.__name__}, got {raw!r} (from {where})") from None


def _spelled(key: str) -> str:
    """A key of a file, the environment or the overrides as settings are named: any case, '-' for '_'."""
    return key.lower().replace("-", "_")


def _name(key: str) -> str:
    """The setting a key names (a former name gives its new one)."""
    return RENAMED.get(_spelled(key), _spelled(key))


def _where(source: str, key: str) -> str:
    """Where ``key`` of ``source`` was given, as ``Settings.sources`` and errors say it: the file (``source`` is
    "file <path>"), or the variable, flag or run parameter itself."""
    if source == "environment":
        return f"environment {ENV_PREFIX}{key}"
    if source == "flag":
        return f"flag --{_spelled(key).replace('_', '-')}"
    return f"{source} {key}" if source == "run parameter" else source


def _apply(base: dict[str, Any], values: dict[str, Any], source: str, renamed: list[str] | None = None,
           given: dict[str, str] | None = None) -> None:
    """Coerce ``values`` (key -> raw value) into ``base``, noting in ``given`` where each was given; a former name in
    RENAMED is taken for its new one and noted in ``renamed``."""
    for key, raw in values.items():
        name = _name(key)
        if _spelled(key) in RENAMED and renamed is not None:
            renamed.append(f"{key} is now [{SECTION_OF[name]}] {name}")
        if name not in SETTING_NAMES:
            raise SettingsError(f"setting {key}: unknown setting (from {_where(source, key)})")
        if raw is None:
            continue
        base[name] = _coerce(name, raw, _where(source, key))
        if given is not None:
            given[name] = _where(source, key)


def _note(text: str) -> None:
    """A one-line note on stderr: the CLI shows it, Airflow keeps it in the task log."""
    print(f"crawlcycle: note: {text}", file=sys.stderr)


def _read_toml(path: Path, values: dict[str, Any], given: dict[str, str]) -> None:
    """The settings of a TOML file into ``values`` (and ``given``): one table per section, or the former flat
    form."""
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as e:
        raise SettingsError(f"setting config: {path} is not valid TOML ({e})") from None
    flat = data.pop("crawlcycle", {})
    flat |= {k: v for k, v in data.items() if not isinstance(v, dict)}
    renamed: list[str] = []
    for section, table in data.items():
        if not isinstance(table, dict):
            continue
        if section not in SECTIONS:
            raise SettingsError(f"setting config: {path}: unknown table [{section}]; the tables are "
                                f"{', '.join(SECTIONS)}")
        for key in table:
            name = _name(key)
            if name in SECTION_OF and SECTION_OF[name] != section:
                raise SettingsError(f"setting {key}: belongs in [{SECTION_OF[name]}], not [{section}] (from {path})")
        _apply(values, table, f"file {path}", renamed, given)
    _apply(values, flat, f"file {path}", renamed, given)
    if flat:
        names = [_name(key) for key in flat]  # all known: _apply refused any other
        moved = "; ".join(f"[{s}] " + ", ".join(n for n in names if SECTION_OF[n] == s)
                          for s in SECTIONS if s in {SECTION_OF[n] for n in names})
        renamed.insert(0, f"keys outside a section table are read until the next release; write them as {moved}")
    if renamed:
        _note(f"{path}: " + "; ".join(renamed))


def load_settings(config: str | os.PathLike | None = None, overrides: dict[str, Any] | None = None,
                  environ: dict[str, str] | None = None) -> Settings:
    """Build validated settings from the TOML file, the environment and explicit overrides (the command's flags),
    each value not at its default with its source.

    Relative paths in the TOML file are resolved against the file's folder, so Airflow workers
    started anywhere find the same files.
    """
    environ = os.environ if environ is None else environ
    values: dict[str, Any] = {}
    given: dict[str, str] = {}
    config = config or environ.get(CONFIG_ENV)
    base_dir = Path.cwd()
    if config:
        cfg = Path(config)
        if not cfg.is_file():
            raise SettingsError(f"setting config: file {cfg} does not exist")
        _read_toml(cfg, values, given)
        base_dir = cfg.resolve().parent
    renamed: list[str] = []
    _apply(values, _environment(environ), "environment", renamed, given)
    if renamed:
        _note("environment: " + "; ".join(f"{ENV_PREFIX}{r}" for r in renamed))
    _apply(values, overrides or {}, "flag", given=given)
    settings, defaults = _resolved(Settings(**values), base_dir), _resolved(Settings(), base_dir)
    sources = {n: where for n, where in given.items() if getattr(settings, n) != getattr(defaults, n)}
    return replace(settings, sources=sources).validate()


def _environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The settings the environment gives: each ``CRAWLCYCLE_<NAME>`` variable but the settings file's."""
    return {k[len(ENV_PREFIX):]: v for k, v in environ.items() if k.startswith(ENV_PREFIX) and k != CONFIG_ENV}


def _resolved(settings: Settings, base_dir: Path) -> Settings:
    """``settings`` with their relative paths resolved against ``base_dir``."""
    return replace(settings, **{n: str((base_dir / getattr(settings, n)).resolve())
                                for n in PATH_SETTINGS if getattr(settings, n)})


def with_overrides(settings: Settings, overrides: dict[str, Any], source: str = "run parameter") -> Settings:
    """Per-run overrides (DAG params; ``source`` "flag" for a command's own) on top of loaded settings."""
    values: dict[str, Any] = {}
    given: dict[str, str] = {}
    _apply(values, overrides, source, given=given)
    default = Settings()
    sources = {n: where for n, where in {**settings.sources, **given}.items()
               if n not in values or values[n] != getattr(default, n)}
    return replace(settings, **values, sources=sources).validate()


def from_record(record: dict[str, Any], live: Settings) -> Settings:
    """The settings a cycle's task runs with: the values its begin recorded (:meth:`Settings.record`), but for the
    settings in LIVE, which ``live`` (the settings as they stand) gives."""
    values: dict[str, Any] = {}
    _apply(values, {k: v for k, v in record["values"].items() if _name(k) not in LIVE}, "the cycle's record")
    sources = {n: where for n, where in record["sources"].items() if n not in LIVE} | {
        n: where for n, where in live.sources.items() if n in LIVE}
    return replace(live, **values, sources=sources).validate()


def begun(record: dict[str, Any], overrides: dict[str, Any] | None = None,
          environ: dict[str, str] | None = None) -> Settings:
    """The settings a task of a begun cycle starts from, without reading the settings file (an edit of it, or a file
    made invalid, applies from the next cycle): the values its begin resolved (``record``, :meth:`Settings.record`),
    but for the settings in LIVE that the environment of the machine running the task or the task's ``overrides``
    give."""
    environ = os.environ if environ is None else environ
    values: dict[str, Any] = {}
    given: dict[str, str] = {}
    _apply(values, record["values"], "the cycle's record")
    for raw, source in ((_environment(environ), "environment"), (overrides or {}, "run parameter")):
        _apply(values, {k: v for k, v in raw.items() if _name(k) in LIVE}, source, given=given)
    settings = _resolved(Settings(**values), Path.cwd())
    return replace(settings, sources={**record["sources"], **given}).validate()


def write_toml(settings: Settings, path: Path) -> None:
    """Write every setting, one table per section, to a TOML file that :func:`load_settings` reads back to equal
    settings."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = []
    for section, section_fields in SECTION_FIELDS.items():
        lines.append(f"[{section}]")
        for f in section_fields:
            value = getattr(settings, f.name)
            text = json.dumps(value) if isinstance(value, str) else str(value).lower() if isinstance(value, bool) \
                else repr(value)
            lines.append(f"{f.name} = {text}")
    path.write_text("\n".join(lines) + "\n")
