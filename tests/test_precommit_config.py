"""``.pre-commit-config.yaml`` wires the guard only with a ``hooks:`` entry ``id: docket-check``.

The strict reader (``merging/precommit.py``) is checked against PyYAML (a
dependency of the pre-commit test extra) on generated configs: where PyYAML
and the reader both read a file they agree, and the guard counts exactly when
PyYAML's structure has the id. A mention anywhere else never counts.
"""

from __future__ import annotations

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from docket_git.merging import precommit
from docket_git.merging import wiring as install
from tests.conftest import Repo
from tests.hypothesis_helpers import profile

WIRED = [
    "repos:\n  - repo: local\n    hooks:\n      - id: docket-check\n",
    "repos:\n- repo: https://example.com/docket-git\n  rev: v1\n  hooks:\n  - id: ruff\n  - id: docket-check\n",
    "# top comment\nrepos:\n  - repo: local   # here\n    hooks:\n      - name: guard\n        id: 'docket-check'\n",
    '---\nrepos:\n  -\n    repo: local\n    hooks:\n      -\n        id: "docket-check"\n',
    "default_stages: [pre-commit]\nrepos:\n  - repo: local\n    hooks:\n      - id: docket-check\n",
]
NOT_WIRED = [
    "# we used to run docket-check here\nrepos: []\n",
    "repos:\n  - repo: local\n    hooks:\n      - id: ruff\n        name: docket-check\n",
    "repos:\n  - repo: local\n    hooks:\n      - id: ruff\n        args: [docket-check]\n",
    "repos:\n  - repo: local\n    hooks:\n      - id: ruff  # id: docket-check\n",
    "docket-check: true\n",
    "repos:\n  - repo: local\n    docket-check:\n      - id: docket-check\n",
    "hooks:\n  - id: docket-check\n",
    "repos:\n  - repo: local\n    hooks:\n      - id: docket-check\n      - id: docket-check\n    hooks: []\n",  # duplicate key
    "repos: {hooks: [{id: docket-check}]}\n",  # repos is a mapping, not a list of repositories
    "repos: [{repo: local, hooks: [{id: docket-check}]}\n",  # unterminated: not read, not trusted
    "repos:\n  - repo: local\n    hooks:\n      - id: docket-checker\n",
    "",
]


@pytest.mark.parametrize("text", WIRED)
def test_a_hooks_entry_with_the_id_wires_the_guard(text: str):
    assert precommit.runs_guard(text)
    assert yaml.safe_load(text)  # and it is YAML PyYAML reads the same way
    assert any(h.get("id") == "docket-check" for r in yaml.safe_load(text)["repos"] for h in r["hooks"])


@pytest.mark.parametrize("text", NOT_WIRED)
def test_a_mention_elsewhere_does_not(text: str):
    assert not precommit.runs_guard(text)


# -- against PyYAML --------------------------------------------------------------------------

_words = st.sampled_from(["local", "docket-check", "ruff", "id", "hooks", "x y", "a:b", "#", "v1.0", "''"])


def _scalar(word: str, style: int) -> str:
    if style == 1:
        return "'" + word.replace("'", "''") + "'"
    if style == 2 and '"' not in word and "\\" not in word:
        return '"' + word + '"'
    return word if word and word[0] not in "#'\"" and ": " not in word and not word.endswith(":") else repr(word)


@st.composite
def configs(draw) -> str:
    out = []
    if draw(st.booleans()):
        out.append("# " + draw(_words))
    out.append("repos:")
    indent = draw(st.sampled_from([0, 2, 4]))
    for _ in range(draw(st.integers(0, 3))):
        pad = " " * indent
        out.append(f"{pad}- repo: {_scalar(draw(_words), draw(st.integers(0, 2)))}")
        keys = draw(st.permutations(["hooks", "rev", "other"]))
        for key in keys[: draw(st.integers(0, 3))]:
            if key == "other" and draw(st.booleans()):
                words = [
                    _scalar(w, 1 if w in ("#", "''", "a:b", "x y") else 0) for w in draw(st.lists(_words, max_size=3))
                ]
                flow = "[" + ", ".join(words) + "]"
                if draw(st.booleans()):
                    flow = "{" + ", ".join(f"k{i}: {w}" for i, w in enumerate(words)) + "}"
                out.append(f"{pad}  {key}: {flow}")
                continue
            if key != "hooks":
                out.append(f"{pad}  {key}: {_scalar(draw(_words), draw(st.integers(0, 2)))}")
                continue
            out.append(f"{pad}  hooks:")
            inner = pad + "  " + " " * draw(st.sampled_from([0, 2]))
            for _ in range(draw(st.integers(0, 3))):
                fields = draw(st.permutations(["id", "name", "entry"]))[: draw(st.integers(1, 3))]
                for j, field in enumerate(fields):
                    lead = f"{inner}- " if j == 0 else f"{inner}  "
                    comment = "  # " + draw(_words) if draw(st.booleans()) else ""
                    out.append(f"{lead}{field}: {_scalar(draw(_words), draw(st.integers(0, 2)))}{comment}")
    return "\n".join(out) + "\n"


def _yaml_says(text: str) -> bool | None:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        return None
    repos = data.get("repos") if isinstance(data, dict) else None
    return isinstance(repos, list) and any(
        isinstance(h, dict) and h.get("id") == "docket-check"
        for r in repos
        if isinstance(r, dict) and isinstance(r.get("hooks"), list)
        for h in r["hooks"]
    )


@profile(60, 600, checks=())
@given(configs())
def test_the_reader_agrees_with_pyyaml(text: str):
    expected = _yaml_says(text)
    if expected is None:
        assert not precommit.runs_guard(text)  # what YAML rejects never wires the guard
        return
    try:
        precommit.load(text)
    except precommit.Unreadable:
        assert not precommit.runs_guard(text)
        return
    assert precommit.load(text) == yaml.safe_load(text)
    assert precommit.runs_guard(text) == expected


# -- through init and doctor -------------------------------------------------------------------


def test_init_and_doctor_trust_only_a_real_entry(bare_repo: Repo):
    config = bare_repo.path / ".pre-commit-config.yaml"
    hook = bare_repo.path / ".git" / "hooks" / "pre-commit"
    config.write_text("# docket-check runs in CI instead\nrepos:\n  - repo: local\n    hooks:\n      - id: ruff\n")
    out = bare_repo.ok("init").out
    assert "runs docket-check" not in out
    assert install.HOOK_MARKER in hook.read_text()  # the guard is installed, not skipped
    hook.unlink()
    doctor = bare_repo.docket("doctor")
    assert doctor.code == 1 and "no pre-commit hook checks the staged ledger" in doctor.out

    config.write_text("repos:\n  - repo: local\n    hooks:\n      - id: ruff\n      - id: docket-check\n")
    assert ".pre-commit-config.yaml runs docket-check" in bare_repo.ok("init").out
    assert not hook.exists()
    assert f"{install.PRE_COMMIT_CONFIG} runs docket-check" in bare_repo.docket("doctor").out
