"""A terminal screen captured with its colours (`tmux capture-pane -e`) as a PNG, to look at: rendered as HTML
(SGR colours, bold, italic, underline, reverse) and photographed by headless Chromium."""

from __future__ import annotations

import atexit
import base64
import contextlib
import functools
import html
import itertools
import json
import os
import re
import select
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

_SGR = re.compile(r"\x1b\[([0-9;:]*)m")
_BASIC = ["#000000", "#cd3131", "#0dbc79", "#e5e510", "#2472c8", "#bc3fbc", "#11a8cd", "#e5e5e5",
          "#666666", "#f14c4c", "#23d18b", "#f5f543", "#3b8eea", "#d670d6", "#29b8db", "#ffffff"]
FG, BG = "#d4d4d4", "#1e1e1e"


def _hex(r: int, g: int, b: int) -> str:
    return f"#{r:02x}{g:02x}{b:02x}"


def _xterm(n: int) -> str:
    if n < 16:
        return _BASIC[n]
    if n < 232:
        n -= 16
        steps = [0, 95, 135, 175, 215, 255]
        return _hex(steps[n // 36], steps[n // 6 % 6], steps[n % 6])
    grey = 8 + (n - 232) * 10
    return _hex(grey, grey, grey)


def _colour(codes: list[int], i: int) -> tuple[str | None, int]:
    """The 38/48 colour starting at codes[i] (the 5;n or 2;r;g;b after it) and the index after it."""
    if i + 1 < len(codes) and codes[i + 1] == 5 and i + 2 < len(codes):
        return _xterm(codes[i + 2]), i + 3
    if i + 1 < len(codes) and codes[i + 1] == 2 and i + 4 < len(codes):
        return _hex(*codes[i + 2:i + 5]), i + 5
    return None, i + 1


def spans(ansi: str) -> Iterator[tuple[str, dict[str, object]]]:
    """The screen's text in runs, each with the SGR state it shows in (`fg`, `bg`, `bold`, ...)."""
    state: dict[str, object] = {}
    pos = 0
    for match in _SGR.finditer(ansi):
        if match.start() > pos:
            yield ansi[pos:match.start()], dict(state)
        pos = match.end()
        codes = [int(c) if c else 0 for c in re.split("[;:]", match.group(1))] or [0]
        i = 0
        while i < len(codes):
            code = codes[i]
            if code == 0:
                state.clear()
            elif code in (1, 3, 4, 7):
                state[{1: "bold", 3: "italic", 4: "underline", 7: "reverse"}[code]] = True
            elif code in (22, 23, 24, 27):
                state.pop({22: "bold", 23: "italic", 24: "underline", 27: "reverse"}[code], None)
            elif 30 <= code <= 37 or 90 <= code <= 97:
                state["fg"] = _BASIC[code - 30 if code < 90 else code - 82]
            elif 40 <= code <= 47 or 100 <= code <= 107:
                state["bg"] = _BASIC[code - 40 if code < 100 else code - 92]
            elif code in (38, 48):
                colour, i = _colour(codes, i)
                state["fg" if code == 38 else "bg"] = colour
                continue
            elif code == 39:
                state.pop("fg", None)
            elif code == 49:
                state.pop("bg", None)
            i += 1
    if ansi[pos:]:
        yield ansi[pos:], dict(state)


def fg_at(ansi: str, text: str, skip: int = 0) -> str:
    """The text colour of the screen's first `text`, `skip` characters into it (FG: the terminal's own)."""
    runs = list(spans(ansi))
    at = "".join(chunk for chunk, _ in runs).index(text) + skip
    for chunk, state in runs:
        if at < len(chunk):
            return str(state.get("fg") or FG)
        at -= len(chunk)
    raise AssertionError(f"{text!r} is past the screen's end")


def to_html(ansi: str) -> str:
    """The screen as a page of spans in a monospace font."""
    out: list[str] = []
    for chunk, state in spans(ansi):
        fg, bg = state.get("fg") or FG, state.get("bg") or BG
        if state.get("reverse"):
            fg, bg = bg, fg
        style = f"color:{fg};background:{bg}"
        style += ";font-weight:bold" if state.get("bold") else ""
        style += ";font-style:italic" if state.get("italic") else ""
        style += ";text-decoration:underline" if state.get("underline") else ""
        out.append(f'<span style="{style}">{html.escape(chunk)}</span>')
    return (f'<html><body style="margin:0;background:{BG}"><pre style="margin:4px;font:14px/1.25 '
            f'\'DejaVu Sans Mono\',monospace;color:{FG}">{"".join(out)}</pre></body></html>')


class _Chromium:
    """One headless Chromium for all of a test run's screenshots, driven over its DevTools pipe (fds 3 and 4, a JSON
    message each, NUL-ended): a start costs 1.5 CPU-s, a screenshot in a running one a tenth of that."""

    def __init__(self) -> None:
        chromium = "/usr/bin/chromium-headless-shell"  # scripts/setup.d/30-vscode.sh installs it
        self._profile = tempfile.TemporaryDirectory(prefix="ollie-screens-")
        to_chromium, self._send = os.pipe()
        self._answers, from_chromium = os.pipe()
        self._proc = subprocess.Popen(
            # (bash: dash takes no fd above 9, and a test run has more open)
            ["/bin/bash", "-c", f'exec "$0" "$@" 3<&{to_chromium} 4>&{from_chromium}', chromium, "--headless",
             "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--remote-debugging-pipe",
             f"--user-data-dir={self._profile.name}", "about:blank"],
            pass_fds=(to_chromium, from_chromium), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_chromium)
        os.close(from_chromium)
        self._ids, self._read = itertools.count(1), b""
        target = self._call("Target.createTarget", url="about:blank")["targetId"]
        self._session = self._call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        self._call("Page.enable", session=True)

    def _call(self, method: str, session: bool = False, until: str = "", **params: object) -> dict:
        """Send a DevTools command; its result (with `until`: once that event came too)."""
        sent = next(self._ids)
        os.write(self._send, json.dumps({"id": sent, "method": method, "params": params,
                                         **({"sessionId": self._session} if session else {})}).encode() + b"\0")
        result: dict | None = None
        while result is None or until:
            while b"\0" not in self._read:
                if not select.select([self._answers], [], [], 60)[0]:
                    raise TimeoutError(f"chromium did not answer {method} in 60 s")
                chunk = os.read(self._answers, 1 << 20)
                if not chunk:
                    raise RuntimeError(f"chromium ended (rc={self._proc.wait()}) at {method}")
                self._read += chunk
            message, self._read = self._read.split(b"\0", 1)
            got = json.loads(message)
            if got.get("id") == sent:
                if "error" in got:
                    raise RuntimeError(f"{method}: {got['error']}")
                result = got["result"]
            elif got.get("method") == until:
                until = ""
        return result

    def shoot(self, page: Path, out: Path, size: tuple[int, int]) -> None:
        """Write `page` as it shows in a window of `size` as the PNG `out`."""
        self._call("Emulation.setDeviceMetricsOverride", session=True, width=size[0], height=size[1],
                   deviceScaleFactor=1, mobile=False)
        self._call("Page.navigate", session=True, until="Page.loadEventFired", url=page.as_uri())
        out.write_bytes(base64.b64decode(self._call("Page.captureScreenshot", session=True, format="png")["data"]))

    def close(self) -> None:
        # Browser.close, not a signal: Chromium then waits for its helpers, which wrote into the profile while it was
        # removed ("Directory not empty: 'Default'" at every test run's exit).
        with contextlib.suppress(OSError):
            os.write(self._send, json.dumps({"id": next(self._ids), "method": "Browser.close"}).encode() + b"\0")
        try:
            self._proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        os.close(self._send)
        os.close(self._answers)
        self._profile.cleanup()


@functools.cache
def _chromium() -> _Chromium:
    chromium = _Chromium()
    atexit.register(chromium.close)
    return chromium


def png(ansi: str, out: Path, size: tuple[int, int]) -> Path:
    """Write the screen as `out` (a PNG of `size` pixels) through headless Chromium."""
    page = out.with_suffix(".html")
    page.write_text(to_html(ansi), encoding="utf-8")
    _chromium().shoot(page, out, size)
    return out
