#!/usr/bin/env python3
"""Render a terminal capture with ANSI colours (tmux capture-pane -e -p) as a PNG.

Usage: ansi2png.py OUT.png < capture.txt   (needs Pillow and the DejaVu Sans Mono font)
"""
import re
import sys

from PIL import Image, ImageDraw, ImageFont

FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf"
BOLD = "/usr/share/fonts/truetype/dejavu/DejaVuSansMono-Bold.ttf"
PALETTE = {30: (40, 42, 54), 31: (255, 85, 85), 32: (80, 250, 123), 33: (241, 250, 140),
           34: (98, 164, 255), 35: (255, 121, 198), 36: (139, 233, 253), 37: (248, 248, 242),
           90: (120, 120, 140)}
BG, FG = (30, 31, 41), (230, 230, 230)
SGR = re.compile(r"\x1b\[([0-9;]*)m")


def cells(line):
    """(char, fg, bg, bold) per character of one line, following SGR codes."""
    fg, bg, bold, out, pos = FG, BG, False, [], 0
    for m in list(SGR.finditer(line)) + [None]:
        text = line[pos:m.start()] if m else line[pos:]
        out += [(ch, fg, bg, bold) for ch in text]
        if not m:
            break
        pos = m.end()
        codes = [int(c) for c in m.group(1).split(";") if c] or [0]
        i = 0
        while i < len(codes):
            c = codes[i]
            if c == 0:
                fg, bg, bold = FG, BG, False
            elif c == 1:
                bold = True
            elif c == 7:
                fg, bg = BG, (200, 200, 210)
            elif c == 39:
                fg = FG
            elif c == 49:
                bg = BG
            elif c in PALETTE:
                fg = PALETTE[c]
            elif c == 38 and codes[i + 1:i + 2] == [5]:
                n = codes[i + 2]
                fg = PALETTE.get(30 + n if n < 8 else 90, FG)
                i += 2
            i += 1
    return out


def main():
    lines = sys.stdin.read().rstrip("\n").split("\n")
    font, bold = ImageFont.truetype(FONT, 15), ImageFont.truetype(BOLD, 15)
    w, h = font.getbbox("M")[2], 19
    cols = max(len(cells(l)) for l in lines)
    img = Image.new("RGB", (cols * w + 24, len(lines) * h + 24), BG)
    draw = ImageDraw.Draw(img)
    for y, line in enumerate(lines):
        for x, (ch, fg, bg, b) in enumerate(cells(line)):
            box = (12 + x * w, 12 + y * h, 12 + (x + 1) * w, 12 + (y + 1) * h)
            if bg != BG:
                draw.rectangle(box, fill=bg)
            draw.text((box[0], box[1] + 1), ch, fill=fg, font=bold if b else font)
    img.save(sys.argv[1])


if __name__ == "__main__":
    main()
