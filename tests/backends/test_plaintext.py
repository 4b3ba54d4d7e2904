"""backends.core.plaintext: what a server or a model sends loses its terminal controls, keeps its text."""

import pytest

from backends.core.plaintext import is_plain, plain, plain_data

HOSTILE = [
    ("title\x1b]2;pwned\x07!", "title!"),                      # OSC 2, BEL-terminated: the window title
    ("clip\x1b]52;c;cHduZWQ=\x1b\\!", "clip!"),               # OSC 52, ST-terminated: the clipboard
    ("link\x1b]8;;http://x\x1b\\here\x1b]8;;\x1b\\", "linkhere"),  # OSC 8 hyperlink: the text stays
    ("\x1b[31mred\x1b[0m \x1b[2J\x1b[1;1H\x1b[?1049h", "red "),  # CSI colour, erase, cursor, alt screen
    ("\x9b31mred\x9b0m", "red"),                                # 8-bit CSI
    ("\x9d2;pwned\x07ok", "ok"),                                # 8-bit OSC
    ("\x1bP+q544e\x1b\\dcs", "dcs"),                            # DCS (a terminfo query)
    ("\x1b_apc\x1b\\\x1b^pm\x1b\\\x1bXsos\x1b\\x", "x"),       # APC, PM, SOS
    ("\x1b(Bcharset\x1b7\x1b8\x1bc", "charset"),               # nF, DECSC/DECRC, RIS (full reset)
    ("open\x1b]2;never ends", "open2;never ends"),            # unterminated: the ESC goes, the rest is text
    ("bell\x07back\x08space\rcr\x0bvt\x0cff\x00nul\x7fdel", "bellbackspacecrvtffnuldel"),
    ("c1\x85\x8d\x9c\x9fend", "c1end"),
    ("bidi\u202eevil\u202c \u2066iso\u2069", "bidievil iso"),  # Trojan Source overrides and isolates
    ("lone esc\x1b", "lone esc"),
]


@pytest.mark.parametrize(("raw", "want"), HOSTILE)
def test_controls_and_sequences_are_removed_whole(raw, want):
    assert plain(raw) == want
    assert is_plain(plain(raw))


def test_text_is_kept_as_it_is():
    text = "def f(x):\n\treturn x  # [bold red]not markup here[/] [@click=app.quit] ünïcödé 漢字 🚀 ½"
    assert plain(text) is text
    assert is_plain(text)


def test_one_line_turns_breaks_into_spaces():
    assert plain("qwen\n3\tx\x1b[1m", one_line=True) == "qwen 3 x"
    assert plain("multi\nline\ttext") == "multi\nline\ttext"


def test_plain_data_walks_json():
    got = plain_data({"ver\x1b[1m": ["a\x07", {"b": "c\x1b]2;t\x07"}], "n": 3, "f": None, "t": ("x\x9b1m",)})
    assert got == {"ver": ["a", {"b": "c"}], "n": 3, "f": None, "t": ("x",)}
