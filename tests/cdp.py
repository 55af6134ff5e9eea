"""A tiny Chrome DevTools Protocol client over ``--remote-debugging-pipe`` (stdlib only) for the browser tests.

Chromium reads commands from fd 3 and writes replies and events to fd 4,
each a JSON message ended by a NUL byte: no websocket and no extra package.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import select
import shutil
import subprocess
import time
from pathlib import Path

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-extensions",
    "--disable-sync",
    "--mute-audio",
    "--remote-debugging-pipe",
)


def find_chromium() -> str | None:
    """The Chromium executable on PATH, if any."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


class Browser:
    """One headless Chromium with one page; ``call`` sends a command to it and waits for the reply."""

    def __init__(self, executable: str, profile: Path, width: int = 1400, height: int = 900) -> None:
        cmd_r, cmd_w = os.pipe()
        res_r, res_w = os.pipe()
        # Move the child's ends out of the way of 3 and 4 before dup2 puts them there.
        cmd_r, res_w = (self._high(fd) for fd in (cmd_r, res_w))

        def child_fds() -> None:
            os.dup2(cmd_r, 3)
            os.dup2(res_w, 4)

        profile.mkdir(parents=True, exist_ok=True)
        self.log = profile / "chromium-stderr.log"
        # A file, not a pipe: Chromium is chatty on stderr and would block on a full pipe.
        with self.log.open("wb") as log:
            self.proc = subprocess.Popen(
                [executable, *FLAGS, f"--user-data-dir={profile}", f"--window-size={width},{height}", "about:blank"],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=log,
                pass_fds=(3, 4),
                preexec_fn=child_fds,  # the pipe protocol needs these exact fd numbers in the child
            )
        os.close(cmd_r)
        os.close(res_w)
        self._out, self._in = cmd_w, res_r
        self._buf = b""
        self._next = 0
        self.events: list[dict] = []
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        for domain in ("Runtime", "Log", "Page", "Network"):
            self.call(f"{domain}.enable", session=True)
        self.call(
            "Emulation.setDeviceMetricsOverride",
            session=True,
            width=width,
            height=height,
            deviceScaleFactor=1,
            mobile=False,
        )

    @staticmethod
    def _high(fd: int) -> int:
        import fcntl

        high = fcntl.fcntl(fd, fcntl.F_DUPFD, 10)
        os.close(fd)
        return high

    def _read(self, deadline: float) -> dict:
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("chromium did not answer in time")
            ready, _, _ = select.select([self._in], [], [], left)
            if ready:
                chunk = os.read(self._in, 1 << 16)
                if not chunk:
                    raise RuntimeError("chromium closed the pipe: " + self._stderr())
                self._buf += chunk
        message, _, self._buf = self._buf.partition(b"\0")
        return json.loads(message)

    def _stderr(self) -> str:
        return self.log.read_text(errors="replace")[-2000:]

    def call(self, method: str, *, session: bool = False, timeout: float = 30, **params: object) -> dict:
        """Send one command (to the page when session) and return its result; events are kept in events."""
        self._next += 1
        message: dict = {"id": self._next, "method": method, "params": params}
        if session:
            message["sessionId"] = self.session
        os.write(self._out, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self._read(deadline)
            if reply.get("id") == self._next:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_event(self, method: str, timeout: float = 30) -> dict:
        """The next event named method (one already received counts)."""
        for i, event in enumerate(self.events):
            if event.get("method") == method:
                return self.events.pop(i)
        deadline = time.monotonic() + timeout
        while True:
            event = self._read(deadline)
            if event.get("method") == method:
                return event
            self.events.append(event)

    def evaluate(self, expression: str, timeout: float = 30) -> object:
        """The value of a JavaScript expression in the page (promises awaited)."""
        result = self.call(
            "Runtime.evaluate",
            session=True,
            timeout=timeout,
            expression=expression,
            returnByValue=True,
            awaitPromise=True,
        )
        if "exceptionDetails" in result:
            raise RuntimeError(f"page threw: {result['exceptionDetails']}")
        return result["result"].get("value")

    def navigate(self, url: str, timeout: float = 60) -> None:
        """Load url and wait for its load event."""
        self.call("Page.navigate", session=True, url=url)
        self.wait_event("Page.loadEventFired", timeout)

    def click(self, x: float, y: float) -> None:
        """A real left click at page coordinates (moved, pressed, released)."""
        self.call("Input.dispatchMouseEvent", session=True, type="mouseMoved", x=x, y=y)
        for kind in ("mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", session=True, type=kind, x=x, y=y, button="left", clickCount=1)

    def click_selector(self, selector: str) -> None:
        """Click the centre of the first element matching a CSS selector."""
        box = self.evaluate(
            f"(() => {{ const r = document.querySelector({json.dumps(selector)}).getBoundingClientRect();"
            " return [r.left + r.width / 2, r.top + r.height / 2]; })()"
        )
        assert isinstance(box, list)
        self.click(box[0], box[1])

    def type_text(self, text: str) -> None:
        """Type text into the focused element, as a keyboard would."""
        self.call("Input.insertText", session=True, text=text)

    def screenshot(self, path: Path) -> None:
        """Save a PNG of the page."""
        data = self.call("Page.captureScreenshot", session=True, format="png")["data"]
        path.write_bytes(base64.b64decode(data))

    def drain(self, seconds: float = 0.2) -> None:
        """Collect the events that arrive within seconds."""
        deadline = time.monotonic() + seconds
        try:
            while True:
                self.events.append(self._read(deadline))
        except TimeoutError:
            pass

    def errors(self) -> list[str]:
        """Console errors, uncaught exceptions and error log entries seen so far."""
        self.drain()
        out = []
        for event in self.events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.exceptionThrown":
                out.append(json.dumps(params["exceptionDetails"])[:500])
            elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert", "warning"):
                out.append(" ".join(str(a.get("value", a.get("description"))) for a in params.get("args", [])))
            elif method == "Log.entryAdded" and params["entry"]["level"] in ("error", "warning"):
                out.append(params["entry"]["text"])
        return out

    def requests(self) -> list[str]:
        """Every URL the page asked for."""
        return [e["params"]["request"]["url"] for e in self.events if e.get("method") == "Network.requestWillBeSent"]

    def close(self) -> None:
        """End the browser process this object started."""
        with contextlib.suppress(RuntimeError, TimeoutError, OSError):
            self.call("Browser.close", timeout=5)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._out, self._in):
            with contextlib.suppress(OSError):
                os.close(fd)
