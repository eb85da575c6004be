"""The inert-page check the viewer's and the red team's tests rely on finds what would run."""

from __future__ import annotations

from html import escape

from autorl_testing.browser import active_content

PAYLOAD = (
    "<script>window.x = 1</script><img src=x onerror=alert(1)>"
    '<a href="javascript:alert(2)">a</a><svg onload=alert(3)></svg>'
    '<meta http-equiv="refresh" content="0;url=http://example.invalid">'
)


def test_each_kind_of_active_markup_is_found_and_escaped_text_is_not() -> None:
    found = active_content("<p>" + PAYLOAD + "</p>")
    assert any(f.startswith("<script") for f in found)
    assert any(f.startswith("<img") for f in found)
    assert "<img onerror=...>" in found and "<svg onload=...>" in found
    assert any("javascript:" in f for f in found) and any(f.startswith("<meta") for f in found)
    assert active_content("<p>" + escape(PAYLOAD) + "</p>") == []
    own = '<script src="/static/app.js" defer></script>'
    assert active_content(own, scripts=("/static/app.js",)) == []
    assert active_content(own) != []
