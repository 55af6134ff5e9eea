"""The self-contained HTML page: the template (package data) with the graph payload inlined."""

from __future__ import annotations

import html
import json
from importlib import resources

_MARK = "/*DOCKET_GRAPH_DATA*/null"


def template() -> str:
    """The page template shipped with the package."""
    return resources.files("docket_git.graph").joinpath("page.html").read_text(encoding="utf-8")


def render(payload: dict, *, title: str = "docket") -> str:
    """The page with the payload inlined as data: no network, works from file://."""
    data = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
    # Inside <script>, "<" could open "</script>" or "<!--": in JSON it only occurs inside strings,
    # where \u003c means the same. The JS line separators are escaped for older engines.
    data = data.replace("<", "\\u003c").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    text = template().replace("{{TITLE}}", html.escape(title))
    return text.replace(_MARK, data, 1)
