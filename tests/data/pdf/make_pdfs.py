"""Regenerate the committed test PDFs (needs the dev-only packages fpdf2 and Pillow).

    python tests/data/pdf/make_pdfs.py

- ``sqlite_datatypes.pdf``: the first sections of SQLite's "Datatypes In SQLite" page
  (public domain, tests/data/html/sqlite_datatype3.html) typeset with fpdf2, with a
  bookmark (outline entry) per heading, as a word processor would export it.
- ``scanned.pdf``: one page that is only an image of text, like a scanner's output:
  it has no text layer.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from fpdf import FPDF
from lxml import html
from PIL import Image, ImageDraw

HERE = Path(__file__).resolve().parent
SOURCE = HERE.parent / "html" / "sqlite_datatype3.html"
N_SECTIONS = 3  # h1 sections to keep: enough for several pages
FIXED_DATE = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)


def _latin1(text: str) -> str:
    return text.encode("latin-1", "replace").decode("latin-1")


def source_blocks() -> list[tuple[str, str]]:
    """(kind, text) pairs for the first sections of the page: h1/h2/h3 and paragraphs."""
    root = html.fromstring(SOURCE.read_bytes())
    blocks: list[tuple[str, str]] = []
    h1_seen = 0
    for el in root.iter("h1", "h2", "h3", "p"):
        text = " ".join(el.text_content().split())
        if not text:
            continue
        if el.tag == "h1":
            h1_seen += 1
            if h1_seen > N_SECTIONS:
                break
        if h1_seen:
            blocks.append((el.tag, text))
    return blocks


def make_text_pdf(path: Path) -> None:
    pdf = FPDF(format="A4")
    pdf.set_title("Datatypes In SQLite")
    pdf.set_author("SQLite documentation (public domain)")
    pdf.set_creation_date(FIXED_DATE)  # the bytes stay the same run to run
    pdf.set_auto_page_break(auto=True, margin=20)
    pdf.add_page()
    for kind, text in source_blocks():
        if kind == "p":
            pdf.set_font("Helvetica", size=11)
            pdf.multi_cell(0, 6, _latin1(text), new_x="LMARGIN", new_y="NEXT")
            pdf.ln(4)
        else:
            level = int(kind[1]) - 1
            if level == 0 and pdf.page_no() >= 1 and pdf.get_y() > 200:
                pdf.add_page()
            pdf.start_section(_latin1(text), level=level)
            pdf.set_font("Helvetica", style="B", size=16 - 2 * level)
            pdf.multi_cell(0, 9, _latin1(text), new_x="LMARGIN", new_y="NEXT")
            pdf.ln(2)
    pdf.output(str(path))


def make_scanned_pdf(path: Path) -> None:
    image = Image.new("L", (1240, 1754), color=255)
    draw = ImageDraw.Draw(image)
    lines = [text for kind, text in source_blocks() if kind == "p"][:3]
    y = 120
    for line in lines:
        for start in range(0, len(line), 90):
            draw.text((100, y), line[start : start + 90], fill=0)
            y += 28
        y += 28
    pdf = FPDF(format="A4")
    pdf.set_creation_date(FIXED_DATE)
    pdf.add_page()
    pdf.image(image, x=0, y=0, w=210)
    pdf.output(str(path))


if __name__ == "__main__":
    make_text_pdf(HERE / "sqlite_datatypes.pdf")
    make_scanned_pdf(HERE / "scanned.pdf")
