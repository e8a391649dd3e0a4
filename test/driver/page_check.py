#!/usr/bin/env python3
"""What a browser made of a page, for FileCheck (test/driver/report-html.test).

  page_check.py text DOM.html   the text of the DOM Chromium dumped
                                (--dump-dom): one line per table cell,
                                heading, paragraph or SVG text, scripts and
                                styles left out; element names it holds are
                                listed as "element: NAME" lines.
  page_check.py png FILE W H    checks a screenshot: a PNG of W x H pixels
                                of which at least 5% are not the background
                                (white) and with at least 8 colours; prints
                                "png: ok ..." or fails with the reason.
"""
import html.parser
import struct
import sys
import zlib


class Text(html.parser.HTMLParser):
    BLOCK = {"p", "td", "th", "h1", "h2", "h3", "li", "title", "text", "tr",
             "footer", "div", "code", "b", "span"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.lines, self.cur, self.skip, self.elements = [], [], 0, set()

    def flush(self):
        s = " ".join("".join(self.cur).split())
        if s:
            self.lines.append(s)
        self.cur = []

    def handle_starttag(self, tag, attrs):
        self.elements.add(tag)
        if tag in ("style", "script"):
            self.skip += 1
        if tag in self.BLOCK and tag not in ("b", "code", "span"):
            self.flush()

    def handle_endtag(self, tag):
        if tag in ("style", "script"):
            self.skip -= 1
        if tag in self.BLOCK and tag not in ("b", "code", "span"):
            self.flush()

    def handle_data(self, data):
        if not self.skip:
            self.cur.append(data)


def text(path):
    p = Text()
    with open(path, encoding="utf-8") as f:
        p.feed(f.read())
    p.flush()
    for name in sorted(p.elements):
        print("element:", name)
    for line in p.lines:
        print(line)


def png(path, width, height):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        sys.exit(f"png: {path} is not a PNG")
    pos, idat, ihdr = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    w, h, depth, colour = ihdr[:4]
    if (w, h) != (width, height):
        sys.exit(f"png: {w}x{h} pixels, expected {width}x{height}")
    if depth != 8 or colour not in (2, 6):
        sys.exit(f"png: bit depth {depth}, colour type {colour} not read here")
    bpp = 3 if colour == 2 else 4
    raw, stride = zlib.decompress(idat), w * bpp
    prev, pixels, pos = bytearray(stride), [], 0
    for _ in range(h):
        ftype, line = raw[pos], bytearray(raw[pos + 1:pos + 1 + stride])
        pos += 1 + stride
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if ftype == 1:
                line[i] = (line[i] + a) & 255
            elif ftype == 2:
                line[i] = (line[i] + b) & 255
            elif ftype == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif ftype == 4:
                pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                pr = a if pa <= pb and pa <= pc else b if pb <= pc else c
                line[i] = (line[i] + pr) & 255
        pixels.extend(bytes(line[i:i + 3]) for i in range(0, stride, bpp))
        prev = line
    colours = set(pixels)
    inked = sum(1 for p in pixels if p != b"\xff\xff\xff") / len(pixels)
    if inked < 0.05 or len(colours) < 8:
        sys.exit(f"png: nearly blank ({100 * inked:.1f}% not white, "
                 f"{len(colours)} colours)")
    print(f"png: ok {w}x{h}, {100 * inked:.0f}% not white, "
          f"{len(colours)} colours")


if __name__ == "__main__":
    if sys.argv[1] == "text":
        text(sys.argv[2])
    elif sys.argv[1] == "png":
        png(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    else:
        sys.exit(__doc__)
