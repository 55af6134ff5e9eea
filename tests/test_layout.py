"""The package layout: imports point down only, and no room reaches into another's private names.

Rooms, top to bottom (a room may import the rooms listed for it, and itself):
``entry`` and ``cli`` above everything; ``errors``, ``plain``, ``digest``, ``dirs`` and ``repo`` below everything.
"""

from __future__ import annotations

import ast
from pathlib import Path

import docket_git

PACKAGE = Path(docket_git.__file__).parent

BASE = {"errors", "plain", "digest", "dirs", "repo"}
ALLOWED: dict[str, set[str]] = {
    "errors": set(),
    "plain": set(),
    "digest": set(),
    "dirs": set(),
    "repo": {"errors"},
    "ledger": BASE,
    "migrate": BASE | {"ledger"},
    "typed": BASE | {"ledger"},
    "sessions": BASE | {"ledger"},
    "merging": BASE | {"ledger", "migrate", "typed"},
    "history": BASE | {"ledger", "merging"},
    "context": BASE | {"ledger", "merging", "history"},
    "graph": BASE | {"ledger", "merging", "history", "context"},
    "agents": BASE | {"ledger", "merging", "history", "context"},
}
TOP = {"entry", "cli", "__init__", "__main__"}


def room_of(module: str) -> str:
    """The room a dotted module name lives in: its first component below docket_git."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def imports(path: Path) -> list[tuple[int, str, list[str]]]:
    """Every docket_git import in a file: (line, module, names imported from it)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{path}:{node.lineno}: relative import; the project uses absolute ones"
            if node.module and node.module.split(".")[0] == "docket_git":
                found.append((node.lineno, node.module, [a.name for a in node.names]))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "docket_git":
                    found.append((node.lineno, alias.name, []))
    return found


def modules() -> list[tuple[Path, str]]:
    """Every module of the package with its dotted name."""
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        out.append((path, ".".join(rel.parts)))
    return out


def test_every_room_is_known() -> None:
    rooms = {room_of(name) for _, name in modules()}
    assert rooms - TOP <= set(ALLOWED), f"a new room needs a place in ALLOWED: {rooms - TOP - set(ALLOWED)}"


def test_imports_point_down_only() -> None:
    faults = []
    for path, name in modules():
        room = room_of(name)
        if room in TOP:
            continue
        for line, target, names in imports(path):
            target_room = room_of(target)
            # `from docket_git import __version__` names no room; `from docket_git import ledger` names one
            target_rooms = {n for n in names if not n.startswith("__")} if target == "docket_git" else {target_room}
            for t in target_rooms:
                if t != room and t not in ALLOWED[room]:
                    faults.append(f"{path.relative_to(PACKAGE.parent)}:{line}: {room} imports {t}")
    assert not faults, "\n".join(faults)


def test_no_room_imports_another_rooms_private_names() -> None:
    faults = []
    for path, name in modules():
        for line, target, names in imports(path):
            if room_of(target) == room_of(name):
                continue
            private = [n for n in names if n.startswith("_") and not n.startswith("__")]
            if private:
                faults.append(f"{path.relative_to(PACKAGE.parent)}:{line}: imports {private} from {target}")
    assert not faults, "\n".join(faults)


def test_the_layout_test_sees_a_violation(tmp_path: Path) -> None:
    """The checker itself: an upward import is reported."""
    bad = tmp_path / "bad.py"
    bad.write_text("from docket_git.cli.app import app\nfrom docket_git.ledger import store\n")
    rooms = {room_of(target) for _, target, _ in imports(bad)}
    assert rooms == {"cli", "ledger"}
    assert "cli" not in ALLOWED["ledger"]


#: Third-party packages only ``docket mcp`` may import, and only inside a function of cli/mcp.py.
MCP_ONLY = {"mcp", "mcp_types", "anyio", "pydantic"}


def test_the_mcp_sdk_is_imported_by_docket_mcp_alone() -> None:
    faults = []
    for path, name in modules():
        tree = ast.parse(path.read_text(), str(path))
        top_level = {id(node) for node in tree.body}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                targets = [node.module]
            else:
                continue
            if not any(t.split(".")[0] in MCP_ONLY for t in targets):
                continue
            if name != "docket_git.cli.mcp" or id(node) in top_level:
                faults.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}: imports {targets}")
    assert not faults, "the MCP SDK must load only when docket mcp serves:\n" + "\n".join(faults)


#: The house rule: a module a reader can hold (issue 32).
MAX_MODULE_LINES = 800


def test_no_module_is_longer_than_a_reader_can_hold() -> None:
    long = {
        str(path.relative_to(PACKAGE)): n
        for path in PACKAGE.rglob("*.py")
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    }
    assert not long, f"split these modules (over {MAX_MODULE_LINES} lines): {long}"
