"""Spreadsheet cells are shown as their number formats show them (issue #63): `0.000%` shows
0.00106 as 0.106%, not 0.001061472561059766. Real workbooks from xlsx2csv's tests
(tests/fixtures/real/README.md), read in the parser child; the formatter's cases are Excel's
own renderings of each format."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest

from ingest.extract import documents as doc
from ingest.extract.isolated import extract_isolated
from ingest.extract.numformat import date_text, format_number

DOCUMENTS = Path(__file__).resolve().parent.parent / "fixtures" / "real" / "documents"


@pytest.mark.parametrize(
    "value, fmt, shown",
    [
        (0.001061472561059766, "0.000%", "0.106%"),
        (0.5, "0%", "50%"),
        (1234567.891, "#,##0.00", "1,234,567.89"),
        (-1234.5, "#,##0.00_);[Red](#,##0.00)", "(1,234.50)"),
        (-1234.5, "#,##0.00", "-1,234.50"),
        (1234.5, "#,##0.00 [$€-407]", "1,234.50 €"),
        (1234.5, "[$$-409]#,##0.00", "$1,234.50"),
        (1234.5, '_-"£"* #,##0.00_-;\\-"£"* #,##0.00_-', "£1,234.50"),
        (0, '_(* #,##0_);_(* (#,##0);_(* "-"??_);_(@_)', "-"),
        (1234567, '#,##0,,"M"', "1M"),
        (1234567, "#,##0,", "1,235"),
        (48929, "00000000", "00048929"),
        (4.89290024005183e17, "0", "489290024005183000"),  # 15 digits, not the float's binary noise
        (0.000123, "0.00E+00", "1.23E-04"),
        (3, "0.0#", "3.0"),
        (2.675, "0.00", "2.68"),  # half away from zero, as a spreadsheet rounds
        (12, '0 "items"', "12 items"),
        (5, "General", None),
        (5, '[<1000]0;0,"K"', None),  # a condition: the plain number is shown instead
        (1.25, "# ?/?", None),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_number_format(value, fmt, shown):
    assert format_number(value, fmt) == shown


@pytest.mark.parametrize(
    "value, fmt, shown",
    [
        (datetime.datetime(2017, 8, 3, 14, 35), 'dd"-"mm"-"yyyy" "hh:mm:ss', "2017-08-03 14:35:00"),
        (datetime.datetime(2017, 8, 3, 14, 35), "mm-dd-yy", "2017-08-03"),
        (
            datetime.datetime(2017, 8, 3),
            "yyyy-mm-dd h:mm:ss",
            "2017-08-03",
        ),  # a datetime at midnight is a date
        (datetime.datetime(2017, 8, 3, 14, 35), "h:mm AM/PM", "14:35"),
        (datetime.time(14, 40, 30), "hh:mm:ss", "14:40:30"),
        (datetime.timedelta(hours=27, minutes=17, seconds=54), "[h]:mm:ss", "27:17:54"),
    ],
)
def test_date_format(value, fmt, shown):
    assert date_text(value, fmt) == shown


def _sheet(name: str) -> str:
    return extract_isolated((DOCUMENTS / name).read_bytes(), doc.XLSX, fallback_title=name).content


@pytest.mark.child_process
def test_xlsx_numbers_keep_their_formats():
    content = _sheet("xlsx2csv-float2.xlsx")
    assert (
        "| 00048929 | 0004892900240051 | 489290024005183000 | 30-06-2023 | 0.3% | 61% | STAGE1 | "
        "20.41 |" in content
    )
    assert _sheet("xlsx2csv-percentage.xlsx").endswith(
        "| 1.23% |\n|---|\n| 50% |\n| 1% |\n| 0.01% |\n"
    )


@pytest.mark.child_process
def test_xlsx_dates_and_times_show_what_their_format_shows():
    assert "| 2017-08-03 14:35:00 | 14:40:30 |\n|---|---|\n| 2017-08-03 | 11:30:00 |" in _sheet(
        "xlsx2csv-timeformat.xlsx"
    )


@pytest.mark.child_process
def test_ods_cells_keep_the_text_their_format_wrote():
    """An OpenDocument sheet stores each cell as its format shows it: that text is read."""
    content = extract_isolated(
        (DOCUMENTS / "ods_formats.ods").read_bytes(), doc.ODS, fallback_title="f.ods"
    ).content
    assert (
        "| 11.11.14 | 11:12:12 | WAHR | 11,11 | £1 | 200,00% | 3 | 1,00E+005 | 1 1/4 | abc |"
        in content
    )
