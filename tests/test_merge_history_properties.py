"""Property: random histories built with real git never lose, duplicate or rewrite a committed record.

Each history is a real repository wired by ``docket init`` with four branches
that record claims, decisions with ``depends_on``, questions, answers and
supersessions (citing older records in prose), and then merge both ways
(criss-cross merges follow), octopus-merge where git allows, ``git pull
--rebase`` onto each other and cherry-pick single record commits. Each git
operation runs in one of four setups: the driver as init wired it; git with
``PATH=/usr/bin:/bin`` (an IDE or GUI client); a clone without the driver
(git's text merge, conflict markers); a driver that cannot start (no markers
at all). Conflicts are settled with ``docket resolve-conflict`` only.

After every step: the branch's committed ledger validates; every record of
every side merged into it is there exactly once (by a unique token in its
text); its earlier committed bytes are a prefix of the new ones (after a
rebase: upstream's are); relations and IDs in prose point at the records they
meant after renumbering; and sampled records' ``docket log`` names the commit
that recorded them and ``docket resolve OLD@DIGEST`` their current ID.

``DOCKET_PROPERTY_PROFILE=long`` runs many more and longer histories
(``DOCKET_PROPERTY_HISTORIES``, ``DOCKET_PROPERTY_STEPS``, ``DOCKET_PROPERTY_SEED``
tune it); a failure prints its seed and the steps that led there.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from docket_git.ledger import canonical, model, validate
from tests.conftest import DOCKET, rec

PROFILE = os.environ.get("DOCKET_PROPERTY_PROFILE", "short")
_LONG = PROFILE == "long"
HISTORIES = int(os.environ.get("DOCKET_PROPERTY_HISTORIES", "30" if _LONG else "2"))
STEPS = int(os.environ.get("DOCKET_PROPERTY_STEPS", "30" if _LONG else "8"))
FIRST_SEED = int(os.environ.get("DOCKET_PROPERTY_SEED", "0"))
#: A comma-separated list of seeds to run instead (e.g. the failing ones of a long run).
SEEDS = [int(s) for s in os.environ.get("DOCKET_PROPERTY_SEEDS", "").split(",") if s.strip()]
#: A file to append one JSON tally line per history to (read now: the env fixture clears DOCKET_*).
REPORT = os.environ.get("DOCKET_PROPERTY_REPORT")
#: Give the repository a bare origin (main pushed, every branch's upstream origin/main) and add
#: push and ``git pull`` steps: on in the long profile, or with DOCKET_PROPERTY_REMOTE=1.
REMOTE = os.environ.get("DOCKET_PROPERTY_REMOTE", "1" if _LONG else "") == "1"

LEDGER = ".docket/ledger.jsonl"
BRANCHES = ("main", "b1", "b2", "b3")
BARE_PATH = "/usr/bin:/bin"
#: What a clone without the driver does with the ledger: git's own text merge, with markers.
TEXT_MERGE = "git merge-file -L ours -L base -L theirs %A %O %B"
#: A driver git cannot start: it fails and leaves ours untouched, without markers.
DEAD_DRIVER = "/nowhere/docket merge-driver %O %A %B %P"
SETUPS = ("driver", "driver", "bare-path", "text-merge", "dead-driver")


class Failed(AssertionError):
    """A property broke; the message carries the seed and the steps."""


class History:
    """One random history in one real repository, with the model of what each branch must hold."""

    def __init__(self, path: Path, env: dict[str, str], seed: int) -> None:
        self.path = path
        self.env = env
        self.seed = seed
        self.rng = random.Random(seed)
        self.steps: list[str] = []
        self.tokens: dict[str, set[str]] = {b: set() for b in BRANCHES}
        self.intent: dict[str, dict[str, list[str]]] = {}
        self.origin: dict[str, tuple[str, str, str]] = {}  # token -> (commit, ID then, digest then)
        self.commits: dict[str, str] = {}  # record commit -> token
        self.count = 0
        self.tick = 0
        self.stats: Counter[str] = Counter()
        self.at: dict[str, frozenset[str]] = {}  # commit -> the tokens its ledger must hold

    # -- running things -------------------------------------------------------------------------

    def git(self, *args: str, setup: str = "driver", check: bool = True) -> subprocess.CompletedProcess:
        env = dict(self.env)
        pre: list[str] = []
        if setup == "bare-path":
            env["PATH"] = BARE_PATH
        elif setup == "text-merge":
            pre = ["-c", f"merge.docket.driver={TEXT_MERGE}"]
        elif setup == "dead-driver":
            pre = ["-c", f"merge.docket.driver={DEAD_DRIVER}"]
        proc = subprocess.run(
            ["git", "-c", "core.editor=true", *pre, *args], cwd=self.path, env=env, capture_output=True, text=True
        )
        if check and proc.returncode != 0:
            self.fail(f"git {' '.join(args)} ({setup}) failed: {proc.stdout}{proc.stderr}")
        return proc

    def docket(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run([DOCKET, *args], cwd=self.path, env=self.env, capture_output=True, text=True, timeout=120)

    def fail(self, message: str) -> None:
        steps = "\n  ".join(self.steps)
        raise Failed(f"seed {self.seed}: {message}\nsteps:\n  {steps}\nrepository: {self.path}")

    def blob(self, rev: str) -> bytes:
        proc = subprocess.run(
            ["git", "show", f"{rev}:{LEDGER}"], cwd=self.path, env=self.env, capture_output=True, check=False
        )
        return proc.stdout if proc.returncode == 0 else b""

    def head(self, rev: str = "HEAD") -> str:
        return self.git("rev-parse", rev).stdout.strip()

    def is_ancestor(self, one: str, two: str) -> bool:
        return self.git("merge-base", "--is-ancestor", one, two, check=False).returncode == 0

    def common_ancestor_had(self, data: bytes, one: str, two: str) -> bool:
        """True when some commit reachable from both one and two had exactly this ledger.

        Every commit is looked at (``rev-list`` of the merge bases, no path
        limiting: path-limited history simplification skips side branches
        whose ledger equals a parent's, and with them the version sought).
        """
        sha = subprocess.run(
            ["git", "hash-object", "--stdin"], cwd=self.path, env=self.env, input=data, capture_output=True, check=True
        ).stdout.strip()
        bases = self.git("merge-base", "--all", one, two, check=False).stdout.split()
        if not bases:
            return False
        commits = self.git("rev-list", *bases).stdout
        names = "".join(f"{c}:{LEDGER}\n" for c in commits.split())
        found = subprocess.run(
            ["git", "cat-file", "--batch-check=%(objectname)"],
            cwd=self.path,
            env=self.env,
            input=names.encode(),
            capture_output=True,
            check=True,
        ).stdout
        return sha in found.split()

    def in_progress(self) -> bool:
        git_dir = self.path / ".git"
        return any((git_dir / n).exists() for n in ("MERGE_HEAD", "CHERRY_PICK_HEAD", "rebase-merge", "rebase-apply"))

    # -- building ---------------------------------------------------------------------------------

    def start(self) -> None:
        self.docket_ok("init")
        self.record("main")
        for branch in BRANCHES[1:]:
            self.git("branch", branch)
            self.tokens[branch] = set(self.tokens["main"])
        if REMOTE:
            origin = self.path.parent / "origin.git"
            subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(origin)], check=True, env=self.env)
            self.git("remote", "add", "origin", str(origin))
            self.git("push", "-q", "origin", "main")
            self.git("remote", "set-head", "origin", "main")
            for branch in BRANCHES:
                self.git("branch", "-q", "-u", "origin/main", branch)
            self.tokens["origin/main"] = set(self.tokens["main"])
        self.check("main")

    @property
    def default(self) -> str:
        """The default branch, whose records keep their IDs in every merge."""
        return "origin/main" if REMOTE else "main"

    def push(self) -> None:
        """Push main to origin (refused when main was rebased: that is git's rule, not docket's)."""
        self.git("switch", "-q", "main")
        proc = self.git("push", "-q", "origin", "main", check=False)
        self.steps.append(f"main: push ({'ok' if proc.returncode == 0 else 'refused'})")
        if proc.returncode == 0:
            self.tokens["origin/main"] = set(self.tokens["main"])
        self.stats["push" if proc.returncode == 0 else "push refused"] += 1

    def pull(self, ours: str, setup: str) -> None:
        """``git pull`` (a merge) of origin/main into ours: origin/main's ledger must stay a byte prefix."""
        self.git("switch", "-q", ours)
        published, start, before = self.blob("origin/main"), self.head(), self.blob("HEAD")
        self.steps.append(f"{ours}: pull ({setup})")
        proc = self.git("pull", "-q", "--no-rebase", "--no-edit", setup=setup, check=False)
        if proc.returncode != 0:
            if not self.in_progress():
                self.fail(f"git pull failed without a merge in progress: {proc.stdout}{proc.stderr}")
            expected = self.tokens["origin/main"] - self.tokens[ours]
            if not self.settle("merge", setup, missing_expected=bool(expected)):
                if self.head() != start:
                    self.fail("an aborted pull did not restore the branch")
                return
        after = self.blob("HEAD")
        if not after.startswith(published):
            self.fail(f"git pull into {ours} renumbered records already on origin/main")
        if not after.startswith(before):  # this side's records were renumbered: each old ID must resolve
            self.took_a_side(ours, before, after, start, ["origin/main"])
        self.tokens[ours] |= self.tokens["origin/main"]
        self.stats[f"pull ({setup})"] += 1
        self.check(ours)

    def docket_ok(self, *args: str) -> subprocess.CompletedProcess:
        proc = self.docket(*args)
        if proc.returncode != 0:
            self.fail(f"docket {' '.join(args)} exited {proc.returncode}: {proc.stdout}{proc.stderr}")
        return proc

    def records(self, data: bytes) -> list[dict]:
        return [json.loads(line) for line in data.splitlines() if line.strip()]

    def record(self, branch: str) -> None:
        """Append one random record to branch's ledger (as docket writes it) and commit it."""
        if self.count:  # the first record makes the first commit, on main
            self.git("switch", "-q", branch)
        ledger = self.path / LEDGER
        data = ledger.read_bytes()
        records = self.records(data)
        token_of = {r["id"]: _token(r) for r in records}
        retired = {t for r in records for t in r["supersedes"]}
        token = f"r{self.count}"
        self.count += 1
        top = max((model.seq(r["id"]) for r in records), default=0)
        premises = [r["id"] for r in records if r["kind"] != "question" and _token(r)]
        questions = [r["id"] for r in records if r["kind"] == "question" and _token(r)]
        roll = self.rng.random()
        fields: dict = {}
        intent: dict[str, list[str]] = {}
        kind = "claim"
        text = f"{token}: a claim"
        if roll < 0.2 and premises:
            kind = "decision"
            fields["depends_on"] = self.rng.sample(premises, min(len(premises), self.rng.randint(1, 2)))
            text = f"{token}: a decision"
        elif roll < 0.35:
            kind = "question"
            text = f"{token}: a question?"
        elif roll < 0.5 and questions:
            fields["answers"] = [self.rng.choice(questions)]
            text = f"{token}: an answer"
        elif roll < 0.65:
            live = [r["id"] for r in records if r["kind"] == "claim" and r["id"] not in retired and _token(r)]
            if live:
                fields["supersedes"] = [self.rng.choice(live)]
                text = f"{token}: supersedes"
        if records and self.rng.random() < 0.5:
            cited = self.rng.choice([r for r in records if _token(r)])
            text += f"; cites {cited['id']} which is ={token_of[cited['id']]}"
            intent["prose"] = [token_of[cited["id"]]]
        for name in ("depends_on", "answers", "supersedes"):
            if name in fields:
                intent[name] = [token_of[i] for i in fields[name]]
        self.tick += 1
        ts = f"2026-03-01T00:{self.tick // 60:02d}:{self.tick % 60:02d}+00:00"
        record = rec(model.make_id(kind, top + 1), text, ts=ts, **fields)
        if data and not data.endswith(b"\n"):
            data += b"\n"
        new = data + canonical.line(record)
        ledger.write_bytes(new)
        self.git("add", LEDGER)
        self.git("commit", "-q", "--no-verify", "-m", token)
        sha = self.head()
        self.commits[sha] = token
        self.origin[token] = (sha, record["id"], canonical.short(canonical.sha256(new)))
        self.intent[token] = intent
        self.tokens[branch].add(token)
        self.steps.append(f"{branch}: record {token} as {record['id']} {fields or ''}")
        self.stats["records"] += 1

    # -- settling a stopped operation -----------------------------------------------------------

    def settle(self, operation: str, setup: str, missing_expected: bool) -> bool:
        """Finish a stopped merge/cherry-pick/rebase with resolve-conflict; False when it was refused (aborted)."""
        for _ in range(50):
            if not self.in_progress():
                return True
            conflicted = self.git("ls-files", "-u", "--", LEDGER).stdout.strip()
            if not conflicted and operation == "cherry-pick":
                self.git("cherry-pick", "--skip", setup=setup)  # the pick was already here: empty
                continue
            if setup == "dead-driver" and operation == "merge" and conflicted:
                # Ours is still in the file, unmarked: staging it as it is must not be committable.
                self.git("add", LEDGER)
                proc = self.git("commit", "--no-edit", setup=setup, check=False)
                self.stats["dropping merge commit refused" if proc.returncode else "dropping merge commit"] += 1
                if proc.returncode == 0:
                    if missing_expected:
                        self.fail("a merge commit dropping the other side's records was accepted")
                    return True
                if "docket resolve-conflict" not in proc.stdout + proc.stderr:
                    self.fail(f"the refused merge commit does not name the fix: {proc.stdout}{proc.stderr}")
            resolved = self.docket("resolve-conflict")
            self.stats[f"resolve-conflict {operation} {'ok' if resolved.returncode == 0 else 'refused'}"] += 1
            if resolved.returncode != 0 and (conflicted or "no conflicted ledger" not in resolved.stderr):
                self.steps.append(f"  resolve-conflict refused: {resolved.stderr.strip()[:160]}")
                self.git(operation, "--abort")
                return False
            if operation == "merge":
                self.git("commit", "-q", "--no-edit", setup=setup)
            else:
                proc = self.git(operation, "--continue", setup=setup, check=False)
                if proc.returncode != 0 and not self.in_progress():
                    self.fail(f"git {operation} --continue failed: {proc.stdout}{proc.stderr}")
        self.fail(f"{operation} never finished")
        return False

    # -- operations -----------------------------------------------------------------------------

    def older(self, branch: str) -> str:
        """branch, or now and then one of its earlier tips: merging those makes criss-cross merges."""
        if self.rng.random() < 0.6:
            return branch
        earlier = [c for c in self.git("rev-list", "--first-parent", "-n", "6", branch).stdout.split() if c in self.at]
        return self.rng.choice(earlier) if earlier else branch

    def criss_cross(self, one: str, two: str, setup: str) -> None:
        """one merges two's tip, two merges one's tip from before that, then one merges two: two merge bases."""
        first, second = self.head(one), self.head(two)
        self.merge(one, [second], setup, exact=True)
        self.merge(two, [first], self.rng.choice(SETUPS), exact=True)
        self.merge(one, [two], self.rng.choice(SETUPS), exact=True)

    def merge(self, ours: str, theirs: list[str], setup: str, exact: bool = False) -> None:
        self.git("switch", "-q", ours)
        theirs = theirs if exact else [self.older(t) for t in theirs]
        before, start = self.blob("HEAD"), self.head()
        octopus = len(theirs) > 1
        # --no-ff of a side that already has ours' ledger makes git take that side's file in a merge commit.
        no_ff = ["--no-ff"] if not octopus and self.rng.random() < 0.25 else []
        self.steps.append(f"{ours}: merge {' '.join([*no_ff, *(t[:10] for t in theirs)])} ({setup})")
        proc = self.git("merge", "-q", "--no-edit", *no_ff, *theirs, setup=setup, check=False)
        if proc.returncode != 0:
            if octopus or not self.in_progress():
                # Octopus merges with a conflicting ledger are refused by git itself.
                if self.in_progress():
                    self.git("merge", "--abort")
                self.git("reset", "-q", "--hard", start)
                self.steps.append("  octopus refused by git")
                self.stats["octopus refused by git"] += 1
                return
            expected = set().union(*(self.expected(t) for t in theirs)) - self.tokens[ours]
            if not self.settle("merge", setup, missing_expected=bool(expected)):
                return
        after = self.blob("HEAD")
        if not after.startswith(before):
            self.took_a_side(ours, before, after, start, theirs)
        for rev in theirs:
            self.tokens[ours] |= self.expected(rev)
        bases = len(self.git("merge-base", "--all", *theirs, f"{ours}@{{1}}", check=False).stdout.split())
        kind = "octopus" if octopus else ("criss-cross merge" if bases > 1 else "merge")
        self.stats[f"{kind} ({setup})"] += 1
        self.check(ours)

    def took_a_side(self, ours: str, before: bytes, after: bytes, start: str, theirs: list[str]) -> None:
        """A merge whose ledger does not extend ours': only git taking a side that already had ours' is allowed.

        Git merges a file with the driver only when both sides changed it
        since the merge base. When ours' ledger is the merge base's (a
        fast-forward, ``--no-ff`` of a descendant, or this side added nothing
        since), git takes the other side's file as it is, including the
        renumbering that side's own merge of these very records did. So the
        merged ledger must be a merged commit's ledger, ours' ledger must be a
        common ancestor's, and every record ours had must be found again:
        ``docket resolve ID@DIGEST`` of each of ours' lines names the record
        holding the same token now. Anything else rewrote committed lines.
        """
        sides = [t for t in theirs if self.blob(t) == after and self.common_ancestor_had(before, start, t)]
        # The other rule (issue 27): a merge keeps the IDs of the side whose new records main (the
        # default branch of this remote-less repository) already holds, and renumbers ours'.
        kept = [t for t in theirs if after.startswith(self.blob(t)) and self.published(before, self.blob(t))]
        if not sides and not kept:
            self.fail(f"merging into {ours} rewrote its committed ledger lines")
        if kept and not sides:
            self.stats[f"merge kept {self.default}'s IDs"] += 1
        now = {_token(r): r for r in self.records(after)}
        refs, wanted, moved = [], [], []
        for end, record in _prefixes(before):
            token = _token(record)
            if token and record["author"] != "docket-merge":
                refs.append(f"{record['id']}@{canonical.short(canonical.sha256(before[:end]))}")
                wanted.append(now[token]["id"] if token in now else None)
                if token in now and now[token]["id"] != record["id"]:
                    moved.append(now[token])
        if refs:
            out = json.loads(self.docket_ok("resolve", "--json", *refs).stdout)
            got = [o["current"] for o in out]
            if got != wanted:
                bad = [f"{r} -> {g} (holds {w})" for r, g, w in zip(refs, got, wanted, strict=False) if g != w]
                self.fail(f"merging into {ours} took a side's ledger, but docket resolve lost records: {bad[:3]}")
        for record in moved[:2]:  # docket log must follow the ledger through the side git took
            self.history(ours, [], record)
        moved = self.head() in {self.head(t) for t in theirs}
        self.stats["fast-forward" if moved else "merge commit took a side's ledger (ours added nothing)"] += 1

    def published(self, before: bytes, theirs: bytes) -> bool:
        """True when the default branch's ledger holds theirs' first line past the lines it shares with before."""
        mine, other, main = before.splitlines(), theirs.splitlines(), self.blob(self.default).splitlines()
        shared = next(
            (i for i, (a, b) in enumerate(zip(mine, other, strict=False)) if a != b), min(len(mine), len(other))
        )
        return shared < len(other) and shared < len(main) and main[shared] == other[shared]

    def expected(self, rev: str) -> frozenset[str]:
        """The tokens the ledger at rev (a branch or an earlier tip) must hold."""
        return frozenset(self.tokens[rev]) if rev in self.tokens else self.at[rev]

    def cherry_pick(self, ours: str, setup: str) -> None:
        self.git("switch", "-q", ours)
        candidates = [c for c in self.commits if not self.is_ancestor(c, "HEAD")]
        if not candidates:
            return
        commit = self.rng.choice(sorted(candidates, key=lambda c: int(self.commits[c][1:])))  # not by SHA: replayable
        token = self.commits[commit]
        before = self.blob("HEAD")
        self.steps.append(f"{ours}: cherry-pick {token} ({setup})")
        proc = self.git("cherry-pick", commit, setup=setup, check=False)
        if proc.returncode != 0 and not self.settle("cherry-pick", setup, missing_expected=False):
            return
        if not self.blob("HEAD").startswith(before):
            self.fail(f"cherry-picking into {ours} rewrote its committed ledger lines")
        self.tokens[ours].add(token)
        self.stats[f"cherry-pick ({setup})"] += 1
        self.check(ours)

    def pull_rebase(self, ours: str, upstream: str, setup: str) -> None:
        self.git("switch", "-q", ours)
        start = self.head()
        pushed = self.blob(upstream)
        self.steps.append(f"{ours}: pull --rebase . {upstream} ({setup})")
        proc = self.git("pull", "-q", "--rebase", ".", upstream, setup=setup, check=False)
        if proc.returncode != 0:
            if not self.in_progress():
                self.fail(f"pull --rebase failed without a rebase in progress: {proc.stdout}{proc.stderr}")
            if not self.settle("rebase", setup, missing_expected=False):
                if self.head() != start:
                    self.fail("an aborted rebase did not restore the branch")
                return
        if not self.blob("HEAD").startswith(pushed):
            self.fail(f"pull --rebase onto {upstream} rewrote upstream's ledger lines")
        self.tokens[ours] |= self.tokens[upstream]
        self.stats[f"pull --rebase ({setup})"] += 1
        self.check(ours)

    # -- the properties -------------------------------------------------------------------------

    def check(self, branch: str, deep: bool = False) -> None:
        if self.in_progress():
            self.fail("a git operation was left in progress")
        self.at[self.head(branch)] = frozenset(self.tokens[branch])
        data = self.blob(branch)
        lines = [(n, raw) for n, raw in enumerate(data.split(b"\n"), start=1) if raw.strip()]
        faults, _ = validate.check_all(lines)
        if faults:
            self.fail(f"{branch}'s ledger is invalid: {faults[:3]}")
        records = self.records(data)
        counts = Counter(_token(r) for r in records if r["author"] != "docket-merge")
        if counts != Counter(self.tokens[branch]):
            lost = sorted(self.tokens[branch] - set(counts))
            extra = sorted(t for t in counts if t not in self.tokens[branch] or counts[t] > 1)
            self.fail(f"{branch}: records lost {lost}, duplicated or unexpected {extra}")
        token_of = {r["id"]: _token(r) for r in records}
        questions = " ".join(r["text"] for r in records if r["author"] == "docket-merge")
        for r in records:
            intent = self.intent.get(_token(r))
            if intent is None:
                continue
            for name in ("depends_on", "answers"):
                if [token_of.get(i) for i in r[name]] != intent.get(name, []):
                    self.fail(f"{branch}: {r['id']} ({_token(r)}) {name} {r[name]} no longer names {intent[name]}")
            wanted = intent.get("supersedes", [])
            got = [token_of.get(i) for i in r["supersedes"]]
            for target in wanted:
                if target not in got:
                    target_id = next(i for i, t in token_of.items() if t == target)
                    if f"superseded {target_id}:" not in questions:
                        self.fail(f"{branch}: {r['id']} lost supersedes {target} without a merge question")
            if any(t not in wanted for t in got):
                self.fail(f"{branch}: {r['id']} supersedes {got}, meant {wanted}")
            if "prose" in intent:
                cited = r["text"].split("; cites ", 1)[1].split(" ", 1)[0]
                if token_of.get(cited) != intent["prose"][0]:
                    self.fail(f"{branch}: {r['id']} text cites {cited}, which is not {intent['prose'][0]}")
        self.stats["checks"] += 1
        if deep or self.rng.random() < 0.25:
            self.history(branch, records)

    def history(self, branch: str, records: list[dict], record: dict | None = None) -> None:
        """docket log and docket resolve name the right commit and record for one record (sampled if not given).

        Half the samples are drawn from the records a merge renumbered, where history has work to do.
        """
        self.git("switch", "-q", branch)
        if record is None:
            mine = [r for r in records if _token(r) in self.origin]
            moved = [r for r in mine if r["id"] != self.origin[_token(r)][1]]
            if moved and self.rng.random() < 0.5:
                mine = moved
            if not mine:
                return
            record = self.rng.choice(mine)
        token = _token(record)
        log = self.docket_ok("log", record["id"], "--json")
        added = json.loads(log.stdout)["added"]
        self.stats["log/resolve samples"] += 1
        if added.get("subject") != token:
            self.fail(f"{branch}: docket log {record['id']} ({token}) names commit {added.get('subject')!r}")
        commit, old, digest = self.origin[token]
        if self.is_ancestor(commit, "HEAD"):
            out = json.loads(self.docket_ok("resolve", f"{old}@{digest}", "--json").stdout)
            if out[0]["current"] != record["id"]:
                self.fail(f"{branch}: docket resolve {old}@{digest} gives {out[0]['current']}, not {record['id']}")

    # -- the walk -------------------------------------------------------------------------------

    def run(self, steps: int) -> None:
        self.start()
        for _ in range(steps):
            roll = self.rng.random()
            ours = self.rng.choice(BRANCHES)
            others = [b for b in BRANCHES if b != ours]
            setup = self.rng.choice(SETUPS)
            if roll < 0.4:
                self.record(ours)
                self.check(ours)
            elif roll < 0.62:
                self.merge(ours, [self.rng.choice(others)], setup)
            elif roll < 0.7:
                self.criss_cross(ours, self.rng.choice(others), setup)
            elif roll < 0.75:
                self.merge(ours, self.rng.sample(others, 2), setup)
            elif roll < 0.88:
                self.cherry_pick(ours, setup)
            elif REMOTE and roll < 0.94:
                self.push() if self.rng.random() < 0.5 else self.pull(ours, setup)
            elif REMOTE and ours == "main":
                self.pull(ours, setup)  # rebasing pushed commits is what git itself warns against
            else:
                self.pull_rebase(ours, self.rng.choice(others), setup)
        for branch in BRANCHES:
            self.check(branch, deep=_LONG)
            self.git("switch", "-q", branch)
            proc = self.docket("check")
            if proc.returncode != 0:
                self.fail(f"docket check on {branch}: {proc.stdout}{proc.stderr}")


def _prefixes(data: bytes) -> list[tuple[int, dict]]:
    """(byte offset just past its line, record) for each record line of a ledger."""
    out, end = [], 0
    for line in data.splitlines(keepends=True):
        end += len(line)
        if line.strip():
            out.append((end, json.loads(line)))
    return out


def _token(record: dict) -> str:
    text = str(record.get("text", ""))
    head = text.split(":", 1)[0]
    return head if head.startswith("r") and head[1:].isdigit() else ""


@pytest.mark.parametrize("seed", SEEDS or range(FIRST_SEED, FIRST_SEED + HISTORIES))
def test_random_git_histories_keep_every_record(seed: int, tmp_path: Path, env: dict[str, str]):
    path = tmp_path / "repo"
    path.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main", str(path)], check=True, env=env)
    history = History(path, env, seed)
    history.run(STEPS)
    if REPORT:
        with open(REPORT, "a") as handle:
            handle.write(json.dumps({"seed": seed, "steps": STEPS, **history.stats}) + "\n")
