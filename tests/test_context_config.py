"""Briefing settings: defaults, overrides, validation messages, fingerprint."""

from __future__ import annotations

from pathlib import Path

import pytest

from docket_git.context import config
from docket_git.context.config import ConfigError, fingerprint, load, merge

DOCS = Path(__file__).resolve().parent.parent / "docs" / "context.md"


def documented_defaults() -> dict[str, dict[str, int]]:
    """The `key | default | meaning` table of docs/context.md's Settings section, as nested settings.

    A row may name several keys and values, `a.x` / `y` | 1 / 2: a bare name takes the section of
    the row's first key.
    """
    section = DOCS.read_text(encoding="utf-8").split("## Settings: `.docket/config.toml`", 1)[1]
    table = section.split("| key | default | meaning |", 1)[1].split("\n\n", 1)[0]
    out: dict[str, dict[str, int]] = {}
    for row in table.strip().splitlines()[1:]:  # past the |---| line
        keys_cell, values_cell = (cell.strip() for cell in row.strip("|").split("|")[:2])
        keys = [k.strip().strip("`") for k in keys_cell.split(" / ")]
        values = [int(v) for v in values_cell.split(" / ")]
        assert len(keys) == len(values), row
        head = keys[0].split(".", 1)[0]
        for key, value in zip(keys, values, strict=True):
            part, name = key.split(".", 1) if "." in key else (head, key)
            out.setdefault(part, {})[name] = value
    return out


def test_defaults_are_the_documented_table() -> None:
    documented = documented_defaults()
    assert config.defaults() == documented


def test_overrides_merge_over_defaults() -> None:
    s = merge({"weights": {"text": 400}, "index": {"max_lines": 10}})
    assert s["weights"]["text"] == 400
    assert s["weights"]["recency"] == 200
    assert s["index"]["max_lines"] == 10


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"colours": {"a": 1}}, "unknown settings section [colours]"),
        ({"budget": 5}, "[budget] must be a table"),
        ({"weights": {"foo": 1}}, "unknown setting weights.foo"),
        ({"budget": {"target": "8000"}}, "budget.target must be an integer"),
        ({"budget": {"target": 8000.0}}, "budget.target must be an integer"),
        ({"index": {"max_lines": True}}, "index.max_lines must be an integer"),
        ({"weights": {"pinned": -1}}, "weights.pinned must not be negative"),
        ({"budget": {"target": 600, "minimum": 700}}, "budget.target must be at least budget.minimum"),
        ({"budget": {"outer_multiple": 0}}, "budget.outer_multiple must be at least 1"),
        ({"index": {"detail_min": 90, "detail_max": 80}}, "index.detail_min must not exceed index.detail_max"),
        ({"index": {"max_lines": 0}}, "index.max_lines must be at least 1"),
        ({"expansion": {"decay_denominator": 0}}, "expansion.decay_denominator must be at least 1"),
        ({"auto_scope": {"limit": 0}}, "auto_scope.limit must be at least 1"),
        ({"budget": {"minimum": 100}}, "budget.minimum must be at least 128"),
    ],
)
def test_validation_messages(raw: dict, message: str) -> None:
    with pytest.raises(ConfigError) as exc:
        merge(raw)
    assert str(exc.value) == message


def test_other_features_sections_are_left_alone() -> None:
    assert merge({"ledgers": {"todo": {"type": "set"}}}) == config.DEFAULTS


def test_fingerprint_is_none_for_defaults_even_when_restated() -> None:
    assert fingerprint(config.defaults()) is None
    assert fingerprint(merge({"budget": {"target": 8000}, "weights": {"text": 750}})) is None


def test_fingerprint_is_8_hex_and_stable() -> None:
    a = fingerprint(merge({"weights": {"text": 400}}))
    assert a is not None and len(a) == 8 and int(a, 16) >= 0
    assert a == fingerprint(merge({"weights": {"text": 400}}))
    assert a != fingerprint(merge({"weights": {"text": 401}}))


def test_load_reads_toml(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    assert load(path) == config.DEFAULTS  # missing file: defaults
    path.write_text("[weights]\ntext = 400\n\n[index]\nmax_lines = 12\n")
    s = load(path)
    assert (s["weights"]["text"], s["index"]["max_lines"]) == (400, 12)


def test_load_reports_bad_toml(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text("[weights\ntext = 4\n")
    with pytest.raises(ConfigError) as exc:
        load(path)
    assert str(exc.value).startswith(f"cannot read {path}: ")
