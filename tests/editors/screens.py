"""A terminal screen captured with its colours (`tmux capture-pane -e`) as a PNG, to look at: rendered as HTML
(SGR colours, bold, italic, underline, reverse) and photographed by headless Chromium."""

from __future__ import annotations

import html
import re
import shutil
import subprocess
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


def to_html(ansi: str) -> str:
    """The screen as a page of spans in a monospace font."""
    state: dict[str, object] = {}
    out: list[str] = []
    pos = 0

    def text(chunk: str) -> None:
        if not chunk:
            return
        fg, bg = state.get("fg") or FG, state.get("bg") or BG
        if state.get("reverse"):
            fg, bg = bg, fg
        style = f"color:{fg};background:{bg}"
        style += ";font-weight:bold" if state.get("bold") else ""
        style += ";font-style:italic" if state.get("italic") else ""
        style += ";text-decoration:underline" if state.get("underline") else ""
        out.append(f'<span style="{style}">{html.escape(chunk)}</span>')

    for match in _SGR.finditer(ansi):
        text(ansi[pos:match.start()])
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
    text(ansi[pos:])
    return (f'<html><body style="margin:0;background:{BG}"><pre style="margin:4px;font:14px/1.25 '
            f'\'DejaVu Sans Mono\',monospace;color:{FG}">{"".join(out)}</pre></body></html>')


def png(ansi: str, out: Path, size: tuple[int, int]) -> Path:
    """Write the screen as `out` (a PNG of `size` pixels) through headless Chromium."""
    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    page = out.with_suffix(".html")
    page.write_text(to_html(ansi), encoding="utf-8")
    subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    f"--screenshot={out}", f"--window-size={size[0]},{size[1]}", page.as_uri()],
                   check=True, capture_output=True, timeout=60)
    return out
