"""The workload commands' options are checked below the console (workloads.bench.option_value), as a
plan read back is: one line naming the bound, exit 2 through argparse."""

from __future__ import annotations

import contextlib
import io

import pytest

from tui.cli import build_parser
from workloads.bench import option_value


def test_each_kind_of_option_is_checked_with_its_line():
    assert option_value("concurrency", "8") == 8 and option_value("context", "0", low=0) == 0
    assert option_value("rate", "2.5") == 2.5 and option_value("seconds", "0.5") == 0.5
    assert option_value("url", "http://127.0.0.1:30000/v1") == "http://127.0.0.1:30000"
    for name, text, line in (("concurrency", "0", "must be from 1 to 100,000, got 0"),
                             ("concurrency", "x", "expected an integer, got 'x'"),
                             ("rate", "inf", "must be from 1e-09 to 1e+09, got inf"),
                             ("seconds", "0", "must be more than 0, got 0"),
                             ("seconds", "soon", "expected a number of seconds, got 'soon'")):
        with pytest.raises(ValueError) as caught:
            option_value(name, text)
        assert str(caught.value) == line
    with pytest.raises(ValueError, match=r"; expected http://HOST:PORT$"):
        option_value("url", "ftp://box")


def test_a_bad_url_is_one_argparse_line_and_exit_2():
    err = io.StringIO()
    with contextlib.redirect_stderr(err), pytest.raises(SystemExit) as caught:
        build_parser().parse_args(["bench", "--url", "ftp://box"])
    assert caught.value.code == 2
    assert "argument --url: " in err.getvalue() and "expected http://HOST:PORT" in err.getvalue()
