"""OutputCollector: a UTF-8-safe prefix of at most 64,000 bytes while the stream drains."""

from __future__ import annotations

from ollie.sessions import MAX_SYNCHRONOUS_OUTPUT_BYTES, OutputCollector


def test_small_output_is_kept_whole():
    out = OutputCollector()
    out.write("hello ")
    out.write("wörld")
    assert str(out) == "hello wörld" and not out.truncated


def test_default_limit_is_64000_bytes_and_draining_continues():
    out = OutputCollector()
    assert MAX_SYNCHRONOUS_OUTPUT_BYTES == 64_000
    for _ in range(1000):  # 1 MB drained
        out.write("x" * 1000)
    assert out.truncated
    assert len(out.text().encode()) == 64_000 == out.size


def test_exact_fit_is_not_truncated():
    out = OutputCollector(limit=6)
    out.write("abc")
    out.write("déf"[:2])  # "dé" = 3 bytes
    assert out.text() == "abcdé" and out.size == 6 and not out.truncated
    out.write("")
    assert not out.truncated
    out.write("!")
    assert out.truncated and out.text() == "abcdé"


def test_a_cut_never_splits_a_character():
    for limit in range(0, 12):
        out = OutputCollector(limit=limit)
        out.write("a🙂é✓b")  # 1 + 4 + 2 + 3 + 1 bytes
        kept = out.text()
        assert "a🙂é✓b".startswith(kept)
        assert len(kept.encode()) <= limit
        assert out.truncated == (limit < 11)
    out = OutputCollector(limit=4)
    out.write("a🙂")
    assert out.text() == "a" and out.truncated


def test_nothing_after_a_cut_is_kept_so_the_text_stays_a_prefix():
    out = OutputCollector(limit=3)
    out.write("ab€")  # 2 + 3 bytes: only "ab" fits
    out.write("c")  # would fit in the byte left, but is not contiguous with the prefix
    assert out.text() == "ab" and out.truncated


def test_bytes_split_inside_a_character_are_joined():
    out = OutputCollector(limit=100)
    data = "é🙂✓".encode()
    for i in range(len(data)):
        out.write(data[i:i + 1])
    assert out.text() == "é🙂✓" and not out.truncated


def test_an_unfinished_byte_sequence_becomes_a_replacement_character_on_close():
    out = OutputCollector(limit=100)
    out.write(b"ok\xe2\x9c")
    assert out.text() == "ok"
    out.close()
    assert out.text() == "ok\ufffd"
