"""``build_briefing``: find the ledger, settle the task scope, and compose the briefing.

A straight line: load the settings, open the ledger index (proven current,
``ledger.index``), take the outline from it, select, render. This is the
only part of the briefing that does I/O (index, config, git). It imports
neither Typer nor pygit2 up front, so a session hook can call it on its fast
path; pygit2 is loaded only when history is searched.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from pathlib import Path

from docket_git.context import config, delta, scope
from docket_git.context.outline import Lines, Outline
from docket_git.context.render import Meta
from docket_git.context.select import Request, check_max_chars, select_outline
from docket_git.errors import withdraw
from docket_git.ledger import canonical, index, model, store
from docket_git.plain import Plain


class Briefing(Plain):
    """A composed briefing: the text for stdout ("" when the ledger is empty) and notes for stderr."""

    __slots__ = ("baseline", "notes", "text")

    def __init__(self, text: str, notes: list[str] | None = None, baseline: str = "") -> None:
        self.text = text
        self.notes = [] if notes is None else notes
        #: ``ID@DIGEST`` of the ledger's latest record: the baseline a later ``--since`` starts from.
        self.baseline = baseline


def _meta(identity: str, short: str, latest: str, settings: config.Settings) -> Meta:
    """The header's ledger facts; ``short``: the revision as shown (``canonical.short``)."""
    return Meta(identity=identity, revision=short, latest=latest, fingerprint=config.fingerprint(settings))


def _snapshot_meta(snapshot: store.Snapshot, identity: str, settings: config.Settings) -> Meta:
    latest = snapshot.records[-1]["id"] if snapshot.records else ""
    return _meta(identity, canonical.short(snapshot.revision()), latest, settings)


def compose(snapshot: store.Snapshot, settings: config.Settings, request: Request, *, identity: str) -> str:
    """The full briefing for a read snapshot ("" when empty); no I/O. ``request.files`` is final."""
    if not snapshot.records:
        return ""
    return select_outline(Outline(snapshot.records), settings, request, _snapshot_meta(snapshot, identity, settings))


def compose_delta(
    snapshot: store.Snapshot,
    settings: config.Settings,
    baseline: list[dict],
    since: str,
    *,
    identity: str,
    max_chars: int | None = None,
    id_map: dict[str, str] | None = None,
) -> str:
    """The ``--since`` briefing: what changed after baseline (records), within max_chars or the target.

    ``id_map`` maps baseline IDs to current ones when the baseline came from
    another commit (a merge may have renumbered it).
    """
    limit = max_chars if max_chars is not None else settings["budget"]["target"]
    change = delta.delta(baseline, snapshot.records, id_map)
    meta = _snapshot_meta(snapshot, identity, settings)
    detail = settings["index"]["detail_min"]
    return delta.render_delta(change, meta, since, limit=limit, detail=detail, id_map=id_map)


def build_briefing(
    start: Path | None = None,
    *,
    ledger: Path | None = None,
    query: str = "",
    files: Sequence[str] = (),
    max_chars: int | None = None,
    all_records: bool = False,
    auto_scope: bool | None = None,
    since: str | None = None,
    defer_index: bool = False,
    root: Path | None = None,
) -> Briefing:
    """The briefing for the ledger at or above start (default: the working directory).

    ``root``: the repository the briefing is about when ``ledger`` is a copy kept elsewhere (HEAD's
    ledger during a conflict): its name heads the briefing, and its files and wiring are read.

    Raises ``config.ConfigError`` / ``store.LedgerError`` (exit 1) and
    ``ValueError`` for a ``max_chars`` under ``budget.minimum`` (exit 2).
    A missing or empty ledger gives an empty briefing. ``defer_index`` (the
    session hook): a full briefing of a ledger with no index yet is composed
    from the records in memory, and the index is built after the process
    answers (``index.first_use``, ``index.build_later``).
    """
    fault = model.since_fault(since) if since is not None else None
    if fault:
        raise ValueError(fault)  # a usage error: the command exits 2

    def prepare(path: Path | None) -> config.Settings | None:
        """The settings for the ledger found (raising before anything is opened); None: no ledger."""
        settings = config.load(path.parent / config.CONFIG_NAME) if path is not None else None
        if max_chars is not None:
            check_max_chars(max_chars, settings if settings is not None else config.defaults())
        return settings

    fresh = defer_index and since is None
    # settings -> index, in one call: a fresh clone's records in memory, or the index proven current.
    with index.for_briefing(start or Path.cwd(), ledger, prepare, fresh=fresh) as opened:
        path, settings = opened.path, opened.prepared
        if path is None or settings is None:
            return Briefing("")
        assert isinstance(settings, dict)
        # The repository the briefing is about: the one holding .docket/; its name heads the briefing.
        home = root if root is not None else path.parent.parent
        task = _Task(home, home.name or str(home), query, files, all_records, auto_scope)
        snapshot, ix = opened.snapshot, opened.ix
        if snapshot is not None:
            if not snapshot.records:
                return Briefing("")
            return _full(Outline(snapshot.records), opened.short, settings, task, [], max_chars)
        assert ix is not None
        # A stand-in for a ledger committed broken (ledger.broken): the briefing says so in its first line.
        head = f"# {ix.note}\n" if ix.note else ""
        withdraw(ix.note)
        budget = max_chars - len(head) if max_chars is not None else None
        briefing = _brief(opened, settings, task, since, budget)
        briefing.text = head + briefing.text
        return briefing


class _Task(Plain):
    """What ``build_briefing`` was asked, and where: the repository (``home``) and the name heading it."""

    __slots__ = ("all_records", "auto_scope", "files", "home", "identity", "query")

    def __init__(
        self, home: Path, identity: str, query: str, files: Sequence[str], all_records: bool, auto_scope: bool | None
    ) -> None:
        self.home, self.identity, self.query, self.files = home, identity, query, files
        self.all_records, self.auto_scope = all_records, auto_scope


def _brief(
    opened: index.Briefed, settings: config.Settings, task: _Task, since: str | None, max_chars: int | None
) -> Briefing:
    """The briefing from a proven index: the ``--since`` delta when it can be had, else ``_full``."""
    ix = opened.ix
    assert ix is not None
    path = ix.ledger
    notes: list[str] = []
    ledger_outline = Outline.from_index(ix)
    if since is not None:
        # A resume usually finds nothing new, or a few appended records: both come from the index.
        quick = _appended_since(opened, ledger_outline, settings, since, max_chars, task.identity)
        if quick is not None:
            return quick
        snapshot = index.read(path)
        if not snapshot.records:
            return Briefing("")
        latest = f"{snapshot.records[-1]['id']}@{canonical.short(snapshot.revision())}"
        found = _baseline(snapshot, path, since, notes)
        if found is not None:
            baseline, id_map, label = found
            text = compose_delta(
                snapshot, settings, baseline, label, identity=task.identity, max_chars=max_chars, id_map=id_map
            )
            return Briefing(text, notes, latest)
        notes.append(f"baseline {since} is unknown or stale; printing a full briefing")
    if not ledger_outline.ids:
        return Briefing("")
    return _full(ledger_outline, opened.short, settings, task, notes, max_chars)


def _full(
    ledger_outline: Outline,
    short: str,
    settings: config.Settings,
    task: _Task,
    notes: list[str],
    max_chars: int | None,
) -> Briefing:
    """The full briefing of a ledger's outline (``short``: its revision as shown, ``canonical.short``)."""
    home, query, all_records = task.home, task.query, task.all_records
    meta = _meta(task.identity, short, ledger_outline.ids[-1], settings)
    latest = f"{meta.latest}@{meta.revision}"
    # The file scope: --file values, plus auto-scope when forced (auto_scope=True), or by default
    # when no query, file or --all states the task (auto_scope=False disables it).
    explicit = [scope.task_file(f, home) for f in task.files if f.strip()]
    guessed = not (query.strip() or explicit or all_records)
    scoped = list(dict.fromkeys(explicit))
    if guessed if task.auto_scope is None else task.auto_scope:
        scoped = list(dict.fromkeys([*explicit, *scope.auto_scope(home, settings["auto_scope"]["limit"])]))
    if (
        guessed
        and scoped
        and not ledger_outline.scope_hits(
            scope.matched_scopes(ledger_outline.scopes, scoped, settings["weights"]),
            settings["weights"],
            max(1, len(ledger_outline.ids) - 1),
        )
    ):
        # Auto-scope only guesses at the task (right after `docket init` its guess is
        # .gitattributes); a guess no record's scope matches would leave the briefing with
        # nothing in full text, so brief as if no task were given.
        scoped = []
    notice = _driver_notice(home)
    if notice and max_chars is not None and max_chars - len(notice) < settings["budget"]["minimum"]:
        notes.append(notice.lstrip("# ").rstrip())  # no room under this ceiling: say it on stderr
        notice = ""
    budget = max_chars - len(notice) if max_chars is not None else None
    renames = _renames(home, ledger_outline.scopes) if scoped else {}
    request = Request(
        query=query, files=tuple(scoped), all=all_records, max_chars=budget, renames=tuple(sorted(renames.items()))
    )
    return Briefing(notice + select_outline(ledger_outline, settings, request, meta), notes, latest)


def _renames(root: Path, scopes: dict[str, list[str]]) -> dict[str, str]:
    """Recorded scopes whose paths git renamed since, with where they went; {} when git cannot say."""
    from docket_git.history import renames

    try:
        return renames.renamed_scopes(root, scopes)
    except Exception:  # following renames is a refinement: never cost the agent its briefing
        return {}


@contextlib.contextmanager
def outline_of(path: Path, *, defer_index: bool = False) -> Iterator[Outline]:
    """The ledger's outline, read from its index (proven current first) while the index is open.

    ``defer_index``: a ledger with no index yet is outlined from its records in memory, and its
    index built after the process answers (as ``build_briefing`` does for a session hook).
    """
    if defer_index and index.first_use(path):
        records = store.read(path).records
        index.build_later(path)
        yield Outline(records)
        return
    with index.opened(path) as ix:
        yield Outline.from_index(ix)


def _appended_since(
    opened: index.Briefed, found: Outline, settings: config.Settings, since: str, max_chars: int | None, identity: str
) -> Briefing | None:
    """The delta from the index when ``since`` names a record of this very ledger.

    Nothing new since the latest record costs no decoding at all; records
    appended after it are decoded from their lines. None (the caller
    compares full projections) for anything else: an unknown or renumbered
    baseline, or a supersession after it.
    """
    rid, digest = delta.parse_since(since)
    if not model.is_id(rid) or (digest is not None and not model.DIGEST_RE.match(digest)):
        return None
    position = found.pos.get(rid)
    lines = found.records
    if position is None or not isinstance(lines, Lines):
        return None
    if digest is not None:
        own = opened.revision if position == len(found.ids) - 1 else index.prefix_digest(lines.ix, rid)
        if not own.startswith(digest.lower()):
            return None
    change = delta.appended(found, position)
    if change is None:
        return None
    meta = _meta(identity, opened.short, found.ids[-1], settings)
    limit = max_chars if max_chars is not None else settings["budget"]["target"]
    text = delta.render_delta(change, meta, since, limit=limit, detail=settings["index"]["detail_min"])
    return Briefing(text, baseline=f"{meta.latest}@{meta.revision}")


_NO_BASELINE = (
    "--since {since!r} names no record and no commit here; give an ID, ID@DIGEST or a commit-ish (HEAD~3, a tag)"
)


def _baseline(
    snapshot: store.Snapshot, ledger: Path, since: str, notes: list[str]
) -> tuple[list[dict], dict[str, str] | None, str] | None:
    """(baseline records, baseline -> current ID map, header label) for ``--since``, or None.

    ``ID`` or ``ID@DIGEST`` of this ledger's own prefix first; then, for an
    ``ID@DIGEST`` from another branch or from before a merge renumbered it,
    the newest committed ledger version in which that digest matches; and
    anything that is not an ID is a commit-ish (``HEAD~3``, a branch, a tag).
    """
    local = delta.resolve_baseline(snapshot, since)
    if local is not None:
        return local, None, since
    rid, digest = delta.parse_since(since)
    is_id = model.is_id(rid)
    if is_id and not digest:
        return None  # a bare ID this ledger lacks: nothing to match a version by
    root = store.find_repo_root(ledger.parent)
    if root is None and not is_id:
        raise ValueError(_NO_BASELINE.format(since=since))
    if root is None:
        return None
    from docket_git.history import baseline as history

    relpath = ledger.resolve().relative_to(root.resolve()).as_posix()
    try:
        if is_id:
            hit = history.baseline_from_digest(root, relpath, rid, digest or "")
        else:
            hit = history.baseline_from_rev(root, since, relpath)
    except Exception as exc:  # a shallow or broken history degrades to the full briefing
        notes.append(f"cannot search git history for {since}: {exc}")
        return None
    if hit is None and not is_id:
        raise ValueError(_NO_BASELINE.format(since=since))  # a usage error, as a misspelt revision is to git
    if hit is None:
        return None
    records, commit = hit
    label = since if is_id else f"{since} ({commit[:12]})"
    return records, history.delta_id_map(records, snapshot.records), label


def _driver_notice(root: Path) -> str:
    """``# merge driver not set up ...`` when .gitattributes asks for the driver and this clone lacks it."""
    from docket_git.merging.wiring import driver_notice

    try:
        notice = driver_notice(root, _cached_config)
    except Exception:
        return ""
    return f"{notice}\n" if notice else ""


#: The environment git's config lookup depends on besides the files ``_config_files`` names.
_CONFIG_ENV = ("GIT_DIR", "HOME", "XDG_CONFIG_HOME")


def _config_files(root: Path) -> list[Path]:
    """The config files git reads for root: the worktree's, the repository's, the user's and the system's."""
    import os

    env = os.environ
    gdir = Path(env["GIT_DIR"]) if env.get("GIT_DIR") else root / ".git"
    if gdir.is_file():  # a linked worktree: "gitdir: PATH"
        text = gdir.read_text(encoding="utf-8", errors="replace").strip()
        gdir = (root / text.removeprefix("gitdir:").strip()).resolve()
    common = gdir
    with contextlib.suppress(OSError):
        shared = Path((gdir / "commondir").read_text(encoding="utf-8").strip())
        common = shared if shared.is_absolute() else gdir / shared
    home = Path(env.get("HOME", "/nonexistent"))
    user = [Path(env["GIT_CONFIG_GLOBAL"])] if env.get("GIT_CONFIG_GLOBAL") else []
    if not user:
        user = [Path(env.get("XDG_CONFIG_HOME") or home / ".config") / "git" / "config", home / ".gitconfig"]
    system = [Path(env.get("GIT_CONFIG_SYSTEM") or "/etc/gitconfig")]
    return [common / "config", gdir / "config.worktree", *user, *system]


def _cached_config(root: Path, key: str) -> str | None:
    """``gitio.config_get(root, key)``, remembered in the user cache by what it depends on.

    The key is the stat (size, mtime, ctime, inode) of every config file git
    would read and the environment that places them (``GIT_CONFIG*``, HOME,
    XDG_CONFIG_HOME, GIT_DIR): any edit or ``git config`` call changes a stat,
    so the value is asked of git again. A config file that includes others
    (``[include]``) is never cached: a change there would not show. The cache
    is best effort; a failure to read or write it asks git.
    """
    import json
    import os

    from docket_git import dirs
    from docket_git.repo import gitio

    stamp: list = [str(root), key, sorted([k, v] for k, v in os.environ.items() if k.startswith("GIT_CONFIG"))]
    stamp.append([os.environ.get(k, "") for k in _CONFIG_ENV])
    cacheable = True
    try:
        for path in _config_files(root):
            try:
                st = os.stat(path)
            except FileNotFoundError:
                stamp.append(None)
                continue
            stamp.append([str(path), st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino])
            if b"[include" in path.read_bytes().lower():
                cacheable = False
    except OSError:
        cacheable = False
    if not cacheable:
        return gitio.config_get(root, key)
    cache = Path(dirs.cache_dir()) / "driver-config.json"
    saved: dict = {}
    with contextlib.suppress(OSError, ValueError):
        saved = json.loads(cache.read_bytes())
        if not isinstance(saved, dict):
            saved = {}
    entry = saved.get(f"{root}\0{key}")
    if isinstance(entry, list) and len(entry) == 2 and entry[0] == stamp:
        return entry[1]
    value = gitio.config_get(root, key)
    if len(saved) >= 64:
        saved.clear()
    saved[f"{root}\0{key}"] = [stamp, value]
    with contextlib.suppress(OSError):
        cache.parent.mkdir(parents=True, exist_ok=True)
        tmp = cache.with_name(f".{cache.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(saved))
        os.replace(tmp, cache)
    return value
