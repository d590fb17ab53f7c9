"""The statement: a folder's challenge.html as plain text."""

from __future__ import annotations

import html.parser
import re


class _Text(html.parser.HTMLParser):
    BLOCKS = {"p", "div", "br", "li", "ul", "ol", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "tr", "table",
              "section", "blockquote"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.pre = 0

    def handle_starttag(self, tag, attrs):
        if tag in self.BLOCKS:
            self.parts.append("\n")
        if tag == "li":
            self.parts.append("- ")
        if tag == "pre":
            self.pre += 1

    def handle_endtag(self, tag):
        if tag == "pre":
            self.pre = max(0, self.pre - 1)
        if tag in self.BLOCKS:
            self.parts.append("\n")

    def handle_data(self, data):
        self.parts.append(data if self.pre else re.sub(r"\s+", " ", data))


def html_to_text(text: str) -> str:
    parser = _Text()
    parser.feed(text)
    parser.close()
    lines = [line.rstrip() for line in "".join(parser.parts).splitlines()]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(line.lstrip() if line.startswith(" ") else line
                                               for line in lines)).strip() + "\n"
