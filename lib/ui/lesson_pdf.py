"""A lesson as a printable PDF (fpdf2): the students' worksheet, and the teacher's copy with the
answer key on separate pages.

Worksheet pages: the lesson's title, its minutes and plan, then per step its title, page and
planned minutes, the link that opens the page in the step's preset state, the question, and a
ruled box for the answer (a step never breaks across pages). Answer-key pages (only with `key`):
when and on which model the answers were computed, then per step the answer sentence filled with
the live values (lib/ui/lessons.answer_text, the same numbers the pages show) and what to notice.

Text is Unicode (“quotes”, α, Σ, ×, the tokens' visible spaces ␣): the PDF embeds a TrueType font
found offline, in this order: $LLM_LAB_PDF_FONT (a .ttf; $LLM_LAB_PDF_FONT_BOLD for bold),
Debian's fonts-dejavu-core (DejaVu Sans), fonts-noto-core (Noto Sans), fonts-liberation
(Liberation Sans). With none of them the PDF falls back to the core Helvetica font, whose
Latin-1 cannot show every character: `latin1` writes the common ones in ASCII (“ -> ", α ->
alpha, ␣ -> _) and any other as "?"; `font_in_use()` says which case this server is in.
"""
from __future__ import annotations

import os
from collections import OrderedDict
from pathlib import Path

from fpdf import FPDF
from fpdf.enums import XPos, YPos

from lib.concepts.lessons.catalog import Lesson
from lib.ui.glossary import page_title
from lib.ui.i18n import Texts
from lib.ui.lessons import answer_text, step_question, step_text, step_title, step_url

FONT_CANDIDATES = (     # (regular, bold) TrueType files of Debian font packages
    ("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf"),
    ("/usr/share/fonts/truetype/noto/NotoSans-Regular.ttf", "/usr/share/fonts/truetype/noto/NotoSans-Bold.ttf"),
    ("/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
     "/usr/share/fonts/truetype/liberation/LiberationSans-Bold.ttf"),
)
ASCII = {"“": '"', "”": '"', "‘": "'", "’": "'", "—": "-", "–": "-", "−": "-", "…": "...", "→": "->",
         "←": "<-", "×": "x", "≈": "~", "≤": "<=", "≥": ">=", "α": "alpha", "γ": "gamma", "Σ": "sum",
         "␣": "_", "·": "-", "²": "2", "χ": "chi"}
MARGIN, ANSWER_MM, LINE_MM = 18, 30, 7.5


def _font_files() -> tuple[str, str] | None:
    env = os.environ.get("LLM_LAB_PDF_FONT")
    if env and Path(env).is_file():
        bold = os.environ.get("LLM_LAB_PDF_FONT_BOLD", "")
        return env, bold if bold and Path(bold).is_file() else env
    for regular, bold in FONT_CANDIDATES:
        if Path(regular).is_file():
            return regular, bold if Path(bold).is_file() else regular
    return None


def font_in_use() -> str:
    """The TrueType file the PDFs embed, or "Helvetica (Latin-1 only)" when none was found."""
    files = _font_files()
    return files[0] if files else "Helvetica (Latin-1 only)"


def latin1(text: str) -> str:
    """`text` in what the core fonts can show: common symbols in ASCII, anything else "?"."""
    return "".join(ASCII.get(ch, ch) for ch in text).encode("latin-1", "replace").decode("latin-1")


class _Sheet(FPDF):
    def __init__(self, title: str, footer):
        super().__init__(format="A4")
        self.footer_of = footer                  # page number -> footer line
        files = _font_files()
        self.unicode = files is not None
        if files:
            self.add_font("Lab", "", files[0])
            self.add_font("Lab", "B", files[1])
            self.family = "Lab"
        else:
            self.family = "Helvetica"
        self.set_margins(MARGIN, MARGIN, MARGIN)
        self.set_auto_page_break(True, margin=MARGIN)
        self.set_title(title)

    def txt(self, text: str) -> str:
        return text if self.unicode else latin1(text)

    def font(self, size: float, bold: bool = False, grey: bool = False) -> None:
        self.set_font(self.family, "B" if bold else "", size)
        self.set_text_color(100 if grey else 20)

    def para(self, text: str, size: float = 11, bold: bool = False, grey: bool = False, h: float = 5.6,
             link: str = "") -> None:
        self.font(size, bold, grey)
        if link:
            self.set_text_color(30, 80, 170)
        self.multi_cell(0, h, self.txt(text), link=link, align="L", new_x=XPos.LMARGIN, new_y=YPos.NEXT)

    def footer(self) -> None:
        self.set_y(-12)
        self.font(8, grey=True)
        self.cell(0, 5, self.txt(self.footer_of(self.page_no())), align="C")


def _block(pdf: _Sheet, paras: list[dict], box: bool = False, gap: float = 4.0) -> None:
    """Draw paragraphs (kwargs of `_Sheet.para`; "ln": space before) and, with `box`, the
    ruled answer box, on this page if they fit, else on a new one: a step never splits."""
    height = gap + (ANSWER_MM + 12.5 if box else 0.0)
    for p in paras:
        pdf.font(p.get("size", 11), p.get("bold", False))
        lines = pdf.multi_cell(0, p.get("h", 5.6), pdf.txt(p["text"]), align="L", dry_run=True, output="LINES")
        height += len(lines) * p.get("h", 5.6) + p.get("ln", 0.0)
    if pdf.get_y() + height > pdf.page_break_trigger:
        pdf.add_page()
    for p in paras:
        if p.get("ln"):
            pdf.ln(p["ln"])
        pdf.para(**{k: v for k, v in p.items() if k != "ln"})
    if box:
        _answer_box(pdf, pdf.t)
    pdf.ln(gap)


def _answer_box(pdf: _Sheet, t: Texts) -> None:
    pdf.ln(1.5)
    pdf.font(9.5, grey=True)
    pdf.cell(0, 5, pdf.txt(t("pdf_answer")), new_x=XPos.LMARGIN, new_y=YPos.NEXT)
    x, y, w = pdf.l_margin, pdf.get_y(), pdf.w - 2 * MARGIN
    pdf.set_draw_color(150)
    pdf.rect(x, y, w, ANSWER_MM)
    pdf.set_draw_color(215)
    for i in range(1, int(ANSWER_MM // LINE_MM) + 1):
        if i * LINE_MM < ANSWER_MM - 1:
            pdf.line(x + 3, y + i * LINE_MM, x + w - 3, y + i * LINE_MM)
    pdf.set_y(y + ANSWER_MM + 6)


def _step_header(t: Texts, lesson: Lesson, n: int) -> list[dict]:
    step = lesson.steps[n - 1]
    return [{"text": t("step_header", n=n, total=len(lesson.steps), title=step_title(t, lesson, n)),
             "size": 12.5, "bold": True, "h": 6.4},
            {"text": t("pdf_page", page=page_title(step.slug, t.lang), m=step.minutes), "size": 9.5, "grey": True}]


def lesson_pdf(t: Texts, lesson: Lesson, base_url: str = "", key: list[dict] | None = None,
               model_name: str = "", when: str = "") -> bytes:
    """The lesson's worksheet as PDF bytes in t's language; with `key` (one answer dict per
    step, from lib/ui/lessons.answer_key) the answer key follows on pages of its own, saying it
    was computed on `model_name` at `when` (UTC)."""
    title = t(f"lesson_{lesson.id}_title")
    pdf = _Sheet(title, lambda n: t("pdf_footer", title=title, n=n))
    pdf.t = t
    pdf.add_page()
    pdf.para(t("ws_lab"), 9.5, grey=True)
    pdf.para(t("ws_title", title=title, m=lesson.minutes), 19, bold=True, h=9)
    pdf.ln(1)
    pdf.para(t(f"lesson_{lesson.id}_summary"), 10.5)
    pdf.para(t("plan_total", n=len(lesson.steps), m=sum(s.minutes for s in lesson.steps)), 10.5, bold=True)
    pdf.ln(4)
    for n in range(1, len(lesson.steps) + 1):
        url = f"{base_url}{step_url(lesson.steps[n - 1], t.lang)}"
        _block(pdf, _step_header(t, lesson, n) + [
            {"text": url.replace("%2C", ","), "size": 8.5, "h": 4.6, "link": url if url.startswith("http") else ""},
            {"text": t("question"), "size": 9.5, "bold": True, "grey": True, "ln": 1.5},
            {"text": step_question(t, lesson, n)}], box=True, gap=0.0)
    if key is not None:
        pdf.add_page()
        pdf.para(t("pdf_key_title"), 17, bold=True, h=8.5)
        pdf.para(t("pdf_key_when", model=model_name, when=when), 10, grey=True)
        pdf.ln(4)
        for n, values in enumerate(key, 1):
            _block(pdf, _step_header(t, lesson, n) + [
                {"text": f"{t('answer_label')}: {answer_text(t, lesson, n, values)}"},
                {"text": f"{t('notice')}: {step_text(t, lesson, n, 'notice')}", "size": 9.5, "grey": True}])
    return bytes(pdf.output())


_MADE: OrderedDict = OrderedDict()


def lesson_pdf_cached(t: Texts, lesson: Lesson, base_url: str = "", key: list[dict] | None = None,
                      model_name: str = "", when: str = "") -> bytes:
    """`lesson_pdf`, kept for the last 32 (lesson, language, link base, key) combinations: the
    page draws its download buttons on every run, and a PDF takes ~0.1-0.3 s to build."""
    k = (lesson.id, t.lang, base_url, repr(key), model_name, when)
    if k not in _MADE:
        _MADE[k] = lesson_pdf(t, lesson, base_url, key, model_name, when)
        while len(_MADE) > 32:
            _MADE.popitem(last=False)
    _MADE.move_to_end(k)
    return _MADE[k]
