"""Briefing settings: defaults, ``.docket/config.toml`` overrides, validation, fingerprint.

Every setting is an integer, so scoring and budgets stay integer arithmetic
and a briefing is byte-identical on every machine. A briefing rendered with
anything but the defaults names the settings' 8-hex fingerprint in its header.
"""

from __future__ import annotations

import json
from pathlib import Path

from docket_git.digest import sha256
from docket_git.errors import LedgerError

CONFIG_NAME = "config.toml"

#: section -> key -> default. Key order is the documented order.
DEFAULTS: dict[str, dict[str, int]] = {
    "budget": {"target": 8000, "outer_multiple": 3, "minimum": 512},
    "index": {"detail_min": 40, "detail_max": 140, "max_lines": 40},
    "weights": {
        "scope_exact": 1000,
        "scope_glob": 700,
        "scope_prefix": 500,
        "text": 750,
        "recency": 200,
        "degree": 50,
        "degree_cap": 10,
        "pinned": 400,
    },
    "expansion": {"decay_numerator": 1, "decay_denominator": 2, "floor": 50},
    "auto_scope": {"limit": 50},
}

#: Sections other features keep in the same file (typed ledger declarations); the briefing skips them.
FOREIGN_SECTIONS: frozenset[str] = frozenset({"ledgers"})

#: The smallest ``budget.minimum``: the last-resort briefing must always fit.
MINIMUM_FLOOR = 128

#: The largest value of any setting: far past any useful budget or weight, and small enough that
#: every sum and product of settings stays a machine-size integer.
MAXIMUM = 1_000_000_000


class ConfigError(LedgerError):
    """A bad ``.docket/config.toml``; printed as ``docket: <message>``, exit 1."""


Settings = dict[str, dict[str, int]]


def defaults() -> Settings:
    """A fresh copy of the default settings."""
    return {section: dict(table) for section, table in DEFAULTS.items()}  # two levels: no copy module


def merge(raw: dict) -> Settings:
    """The defaults overridden by a parsed TOML table, validated; raises ``ConfigError``."""
    settings = defaults()
    for section, table in raw.items():
        if section == "hints":  # the record commands' setting (hints_enabled), not the briefing's
            if type(table) is not bool:
                raise ConfigError("hints must be true or false")
            continue
        if section in FOREIGN_SECTIONS:
            continue
        if section not in DEFAULTS:
            raise ConfigError(f"unknown settings section [{section}]")
        if not isinstance(table, dict):
            raise ConfigError(f"[{section}] must be a table")
        for key, value in table.items():
            if key not in DEFAULTS[section]:
                raise ConfigError(f"unknown setting {section}.{key}")
            if type(value) is not int:  # bool is an int subclass; it is not a setting value
                raise ConfigError(f"{section}.{key} must be an integer")
            if value < 0:
                raise ConfigError(f"{section}.{key} must not be negative")
            if value > MAXIMUM:
                raise ConfigError(f"{section}.{key} must be at most {MAXIMUM:,}")
            settings[section][key] = value
    _cross_check(settings)
    return settings


def _cross_check(s: Settings) -> None:
    budget, index = s["budget"], s["index"]
    if budget["minimum"] < MINIMUM_FLOOR:
        raise ConfigError(f"budget.minimum must be at least {MINIMUM_FLOOR}")
    if budget["target"] < budget["minimum"]:
        raise ConfigError("budget.target must be at least budget.minimum")
    if budget["outer_multiple"] < 1:
        raise ConfigError("budget.outer_multiple must be at least 1")
    if index["detail_min"] > index["detail_max"]:
        raise ConfigError("index.detail_min must not exceed index.detail_max")
    if index["max_lines"] < 1:
        raise ConfigError("index.max_lines must be at least 1")
    if s["expansion"]["decay_denominator"] < 1:
        raise ConfigError("expansion.decay_denominator must be at least 1")
    if s["auto_scope"]["limit"] < 1:
        raise ConfigError("auto_scope.limit must be at least 1")


def load(path: Path) -> Settings:
    """Settings from the TOML file at path (defaults when it does not exist)."""
    raw = _raw(path)
    return defaults() if raw is None else merge(raw)


def hints_enabled(ledger: Path) -> bool:
    """False when ``hints = false`` heads ``.docket/config.toml``: the record commands print no hints."""
    raw = _raw(ledger.parent / CONFIG_NAME)
    if raw is None:
        return True
    merge(raw)  # a bad config is reported as the briefing would report it
    return raw.get("hints", True)


def _raw(path: Path) -> dict | None:
    """The parsed TOML file at path, or None when it does not exist; raises ``ConfigError``."""
    from docket_git.repo import files

    try:
        data = files.read_bytes(path, path.parent.parent, files.SMALL_CAP)
    except FileNotFoundError:
        return None
    except files.UnsafePath as exc:
        raise ConfigError(str(exc)) from None
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from None
    import tomllib

    try:
        raw = tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise ConfigError(f"cannot read {path}: not UTF-8") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from None
    except RecursionError:
        raise ConfigError(f"cannot read {path}: nested too deeply to be a docket config") from None
    except ValueError as exc:  # an integer of more than 4,300 digits (Python will not convert it)
        why = str(exc)
        if "digits" in why:
            why = f"an integer is too long (Python converts at most 4,300 digits; a setting is at most {MAXIMUM:,})"
        raise ConfigError(f"cannot read {path}: {why}") from None
    return raw


def fingerprint(settings: Settings) -> str | None:
    """None for the defaults, else 8 hex of SHA-256 over the settings' canonical JSON."""
    if settings == DEFAULTS:
        return None
    canonical = json.dumps(settings, sort_keys=True, separators=(",", ":"))
    return sha256(canonical.encode())[:8]
