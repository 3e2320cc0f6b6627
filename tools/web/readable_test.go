package web

import (
	"net/url"
	"strings"
	"testing"
)

// TestPageMarkdown reads testdata/page.html, a short page that is not article-shaped, so it is
// converted whole: headings, links made absolute, lists, the table, code, an image's alt text; none
// of what is not read on a page (script, style, SVG, noscript).
func TestPageMarkdown(t *testing.T) {
	base, _ := url.Parse("https://example.com/pricing")
	title, text := PageMarkdown(testPage, base)
	if title != "Pricing & Plans" {
		t.Errorf("title = %q", title)
	}
	t.Logf("text:\n%s", text)
	for _, want := range []string{
		"[Home](https://example.com/)",
		"# Plans",
		"Our plans are simple.",
		"## Team",
		"- 10 seats",
		"See [the docs](https://example.com/docs/team?x=1)",
		"1. First",
		"2. Second",
		"| Plan | Price |",
		"| Team | €10",
		"line 1\n    indented",
		"![A chart](https://example.com/a.png)",
		"[sales@example.com](mailto:sales@example.com)",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the text lacks %q", want)
		}
	}
	for _, hidden := range []string{"secret", "color: red", "svg text", "icon", "enable JS", "javascript:", "<!--"} {
		if strings.Contains(text, hidden) {
			t.Errorf("text contains %q from a non-content element", hidden)
		}
	}
}

// TestPageMarkdownArticle: an article-shaped page keeps its article and leaves out the navigation
// and footer around it (readability).
func TestPageMarkdownArticle(t *testing.T) {
	para := strings.Repeat("The harbour was quiet that morning, and the boats lay still on the water. ", 6)
	page := `<html><head><title>Harbour news | Site</title></head><body>
<nav><ul><li><a href="/a">Menu one</a></li><li><a href="/b">Menu two</a></li></ul></nav>
<article><h1>Harbour news</h1><p>` + para + `</p><p>` + para + `</p><p>` + para + `</p></article>
<footer><p>Copyright footer text</p></footer></body></html>`
	_, text := PageMarkdown(page, nil)
	if !strings.Contains(text, "The harbour was quiet") {
		t.Fatalf("the article's text is missing:\n%s", text)
	}
	for _, gone := range []string{"Menu one", "Copyright footer"} {
		if strings.Contains(text, gone) {
			t.Errorf("the text keeps %q around the article:\n%s", gone, text)
		}
	}
}

// TestScriptBuilt: a page whose text is written by a script reads as next to nothing and is known
// for it; a page with text, or without scripts, is not.
func TestScriptBuilt(t *testing.T) {
	shell := `<html><body><div id="app"></div><script src="/app.js"></script></body></html>`
	_, text := PageMarkdown(shell, nil)
	if !scriptBuilt(shell, text) {
		t.Errorf("an application shell (text %q) is not taken for one", text)
	}
	if scriptBuilt(testPage, strings.Repeat("x", 300)) {
		t.Errorf("a page with text is taken for an application shell")
	}
	if scriptBuilt(`<html><body><p>Hi</p></body></html>`, "Hi") {
		t.Errorf("a short page without scripts is taken for an application shell")
	}
}
