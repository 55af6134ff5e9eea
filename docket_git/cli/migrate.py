"""Maintaining: migrate (schema 1 -> 2)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, NoReturn

import typer

from docket_git.cli.app import app
from docket_git.cli.common import fail, ledger_path, usage, warn
from docket_git.ledger import jsonl, model, store
from docket_git.migrate import convert, mapping, schema1, swap


class _Bar:
    """A progress bar on stderr, drawn only when stderr is a terminal."""

    WIDTH = 30

    def __init__(self) -> None:
        self.shown = sys.stderr.isatty()

    def __call__(self, done: int, total: int) -> None:
        if not self.shown or not total:
            return
        filled = self.WIDTH * done // total
        bar = "#" * filled + "-" * (self.WIDTH - filled)
        sys.stderr.write(f"\rdocket: migrating [{bar}] {100 * done // total:3d}% {done}/{total}")
        sys.stderr.flush()

    def close(self) -> None:
        if self.shown:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()


def _stop(exc: schema1.MigrationError, *, hint: bool) -> NoReturn:
    for message in exc.messages:
        print(f"docket: {message}", file=sys.stderr)
    if hint and exc.hint:
        print(f"docket: {schema1.HINT}", file=sys.stderr)
    raise typer.Exit(exc.exit_code)


def _read_map(name: str) -> dict:
    from docket_git.repo import files

    try:
        data = files.read_bytes(Path(name), None, files.SMALL_CAP, follow=True)
    except files.UnsafePath as exc:
        usage(f"cannot read the map: {exc}")
    except OSError as exc:
        usage(f"cannot read the map {name}: {exc.strerror}")
    try:
        return json.loads(data)
    except UnicodeDecodeError:
        usage(f"the map {name} is not UTF-8")
    except json.JSONDecodeError as exc:
        usage(f"the map {name} is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})")


def _summary(migration: convert.Migration, verb: str) -> str:
    counts = migration.counts()
    return (
        f"docket: {verb} {len(migration.records)} records from schema 1 to schema {model.SCHEMA} "
        f"({counts['claim']} claims, {counts['decision']} decisions, {counts['question']} questions)"
    )


@app.command(rich_help_panel="Maintain")
def migrate(
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print the conversion (one line per record); write nothing.")
    ] = False,
    map_file: Annotated[
        str | None,
        typer.Option("--map", metavar="PATH", help="Apply an edited classification map instead of the derived one."),
    ] = None,
    emit_map: Annotated[
        str | None,
        typer.Option("--emit-map", metavar="PATH", help="Write the derived classification map to PATH and stop."),
    ] = None,
) -> None:
    """Convert a schema-1 ledger to schema 2, keeping the original.

    The converted ledger replaces .docket/ledger.jsonl; the untouched original
    stays at .docket/ledger.jsonl.schema1. See docs/migrate.md.
    """
    if map_file is not None and emit_map is not None:
        usage("--map and --emit-map cannot be used together: emit a map, edit it, then apply it with --map")
    if dry_run and emit_map is not None:
        usage("--emit-map writes only the map, never the ledger; leave --dry-run off")
    path = ledger_path()
    if path is None:
        typer.echo(f"docket: {store.no_ledger(Path.cwd())}")
        return
    entries = _read_map(map_file) if map_file is not None else None
    writes = not dry_run and emit_map is None
    with store.locked(path, exclusive=writes) as fd:
        try:
            data = store.current_bytes(path, fd)
        except OSError as exc:
            fail(f"cannot read {path}: {exc.strerror}")
        try:
            with jsonl.gc_paused():
                _run(path, data, entries, dry_run=dry_run, emit_map=emit_map)
        except schema1.MigrationError as exc:
            _stop(exc, hint=entries is None)


def _run(path: Path, data: bytes, entries: dict | None, *, dry_run: bool, emit_map: str | None) -> None:
    schema, lines = schema1.parse(data)
    if schema is None:
        typer.echo(f"docket: {path} holds no records; nothing to migrate")
        return
    if schema != 1:
        if emit_map is not None:
            usage(
                f"--emit-map applies to a schema 1 ledger; this one is at schema {schema}, "
                "whose records are already typed"
            )
        if entries is not None:
            usage(f"a classification map applies only to schema 1; this ledger is schema {schema}")
        if schema == model.SCHEMA:
            typer.echo(f"docket: already schema {schema}")
            return
        fail(f"{path} is schema {schema}, newer than this docket-git understands; upgrade docket-git")
    if not dry_run and emit_map is None:
        conflict = swap.backup_conflict(path, data)
        if conflict:
            fail(conflict)  # before any work: the original must never be lost
    records = schema1.sources(lines)
    if emit_map is not None:
        derived, _problems = mapping.derive_map(records)
        store.write_atomic(Path(emit_map), mapping.dump_map(derived))
        typer.echo(f"docket: wrote {len(derived)} mapping entries to {emit_map}")
        todo = mapping.placeholders(derived)
        if todo:
            warn(
                f"{len(todo)} placeholder entr{'y needs' if len(todo) == 1 else 'ies need'} a kind and a state "
                f"before --map accepts the file: {', '.join(todo)}"
            )
        return
    if entries is None:
        entries, problems = mapping.derive_map(records)
        if problems:
            raise schema1.MigrationError(problems, hint=True)
    bar = _Bar()
    try:
        migration = convert.convert(records, entries, progress=bar)
    finally:
        bar.close()
    if dry_run:
        for line in migration.report:
            typer.echo(line)
    for line in migration.warnings:
        warn(f"warning: {line}")
    if dry_run:
        typer.echo(_summary(migration, "would migrate"))
        conflict = swap.backup_conflict(path, data)
        if conflict:
            warn(f"warning: the real run will stop: {conflict}")
        return
    backup = swap.replace_ledger(path, data, migration.data)
    typer.echo(_summary(migration, "migrated"))
    typer.echo(f"docket: original kept at {backup}")
    changed = store.ensure_ignored(path.parent)  # keep the backup out of commits
    if changed:
        typer.echo(f"docket: {changed}")
