package tools

import (
	"net/url"
	"strconv"
	"strings"

	"golang.org/x/net/html"
)

// HTMLToText is htmlToText, for the domain packages that read pages (lucy_web_fetch).
func HTMLToText(page string, base *url.URL) (title, text string) { return htmlToText(page, base) }

// htmlToText turns an HTML page into readable text for the model: headings become Markdown headings,
// links become [text](url) with absolute URLs, list items and table rows get their own lines, scripts,
// styles and other non-content elements are dropped, and whitespace is collapsed outside <pre>. It is a
// tag stripper over x/net/html's tokenizer, not a layout engine: good enough to read, cheap to run.
func htmlToText(page string, base *url.URL) (title, text string) {
	z := html.NewTokenizer(strings.NewReader(page))
	var w textWriter
	var (
		skip    int // depth inside elements whose content is not text (script, style, svg, ...)
		inTitle bool
		link    *openLink
		lists   []int // per open list: 0 for <ul>, next number for <ol>
		cells   int   // cells written in the current table row
	)
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			break // io.EOF or malformed input: keep what we have
		}
		switch tt {
		case html.TextToken:
			if skip > 0 {
				continue
			}
			t := string(z.Text())
			if inTitle {
				if title == "" {
					title = strings.TrimSpace(CollapseSpace(t))
				}
				continue
			}
			w.text(t)
		case html.StartTagToken, html.SelfClosingTagToken:
			name, hasAttr := z.TagName()
			tag := string(name)
			attrs := map[string]string{}
			for hasAttr {
				var k, v []byte
				k, v, hasAttr = z.TagAttr()
				attrs[string(k)] = string(v)
			}
			if skipTags[tag] {
				if tt == html.StartTagToken {
					skip++
				}
				continue
			}
			if skip > 0 {
				continue
			}
			switch tag {
			case "title":
				inTitle = tt == html.StartTagToken
			case "h1", "h2", "h3", "h4", "h5", "h6":
				w.breakLines(2)
				level, _ := strconv.Atoi(tag[1:])
				w.raw(strings.Repeat("#", level) + " ")
			case "br":
				w.raw("\n")
			case "hr":
				w.breakLines(2)
				w.raw("---")
				w.breakLines(2)
			case "p", "blockquote", "table", "figure", "form":
				w.breakLines(2)
			case "pre":
				w.breakLines(2)
				w.pre++
			case "ul":
				w.breakLines(1)
				lists = append(lists, 0)
			case "ol":
				w.breakLines(1)
				lists = append(lists, 1)
			case "li":
				w.breakLines(1)
				w.raw(strings.Repeat("  ", max(len(lists)-1, 0)))
				if n := len(lists); n > 0 && lists[n-1] > 0 {
					w.raw(strconv.Itoa(lists[n-1]) + ". ")
					lists[n-1]++
				} else {
					w.raw("- ")
				}
			case "tr":
				w.breakLines(1)
				cells = 0
			case "td", "th":
				if cells > 0 {
					w.raw(" | ")
				}
				cells++
			case "div", "section", "article", "header", "footer", "main", "aside", "nav", "dl", "dt", "dd",
				"address", "details", "summary", "figcaption", "caption", "fieldset", "legend":
				w.breakLines(1)
			case "a":
				if link == nil && tt == html.StartTagToken {
					if href := resolveLink(base, attrs["href"]); href != "" {
						link = &openLink{href: href, start: w.len()}
						w.raw("[")
					}
				}
			case "img":
				if alt := strings.TrimSpace(CollapseSpace(attrs["alt"])); alt != "" {
					w.text("[image: " + alt + "]")
				}
			}
		case html.EndTagToken:
			name, _ := z.TagName()
			tag := string(name)
			if skipTags[tag] {
				if skip > 0 {
					skip--
				}
				continue
			}
			if skip > 0 {
				continue
			}
			switch tag {
			case "title":
				inTitle = false
			case "h1", "h2", "h3", "h4", "h5", "h6", "p", "blockquote", "table", "figure", "form":
				w.breakLines(2)
			case "pre":
				if w.pre > 0 {
					w.pre--
				}
				w.breakLines(2)
			case "ul", "ol":
				if len(lists) > 0 {
					lists = lists[:len(lists)-1]
				}
				w.breakLines(1)
			case "li", "tr", "div", "section", "article", "header", "footer", "main", "aside", "nav", "dl", "dt",
				"dd", "address", "details", "summary", "figcaption", "caption", "fieldset", "legend":
				w.breakLines(1)
			case "a":
				if link != nil {
					w.closeLink(link)
					link = nil
				}
			}
		}
	}
	if link != nil {
		w.closeLink(link)
	}
	return title, w.String()
}

// skipTags hold no readable text.
var skipTags = map[string]bool{
	"script": true, "style": true, "noscript": true, "template": true, "svg": true, "math": true,
	"canvas": true, "iframe": true, "object": true, "embed": true, "select": true, "button": true,
}

type openLink struct {
	href  string
	start int // position of the "[" in the output
}

// resolveLink returns href as an absolute http(s) URL, or "" for links that lead nowhere useful
// (same-page anchors, javascript:, mailto: is kept).
func resolveLink(base *url.URL, href string) string {
	href = strings.TrimSpace(href)
	if href == "" || strings.HasPrefix(href, "#") {
		return ""
	}
	u, err := url.Parse(href)
	if err != nil {
		return ""
	}
	if base != nil {
		u = base.ResolveReference(u)
	}
	switch u.Scheme {
	case "http", "https", "mailto":
		u.User = nil
		return u.String()
	}
	return ""
}

// textWriter accumulates text, collapsing whitespace outside <pre> and merging line breaks.
type textWriter struct {
	b   []byte
	pre int
}

func (w *textWriter) len() int { return len(w.b) }

func (w *textWriter) String() string {
	lines := strings.Split(string(w.b), "\n")
	out := make([]string, 0, len(lines))
	blank := 0
	for _, l := range lines {
		l = strings.TrimRight(l, " \t")
		if strings.TrimSpace(l) == "" {
			blank++
			if blank > 1 || len(out) == 0 {
				continue
			}
			l = ""
		} else {
			blank = 0
		}
		out = append(out, l)
	}
	return strings.TrimSpace(strings.Join(out, "\n"))
}

func (w *textWriter) raw(s string) { w.b = append(w.b, s...) }

func (w *textWriter) text(s string) {
	if w.pre > 0 {
		w.raw(s)
		return
	}
	s = CollapseSpace(s)
	if s == "" {
		// Whitespace between inline elements still separates words.
		if n := len(w.b); n > 0 && w.b[n-1] != ' ' && w.b[n-1] != '\n' && w.b[n-1] != '[' {
			w.raw(" ")
		}
		return
	}
	if n := len(w.b); n > 0 && isSpaceByte(w.b[n-1]) {
		s = strings.TrimLeft(s, " ")
	}
	w.raw(s)
}

// breakLines ends the current line and makes sure that n line breaks (n-1 blank lines) precede what
// comes next.
func (w *textWriter) breakLines(n int) {
	for len(w.b) > 0 && w.b[len(w.b)-1] == ' ' {
		w.b = w.b[:len(w.b)-1]
	}
	if len(w.b) == 0 {
		return
	}
	have := 0
	for i := len(w.b) - 1; i >= 0 && w.b[i] == '\n'; i-- {
		have++
	}
	for ; have < n; have++ {
		w.b = append(w.b, '\n')
	}
}

func (w *textWriter) closeLink(l *openLink) {
	label := strings.TrimSpace(string(w.b[l.start+1:]))
	w.b = w.b[:l.start]
	switch {
	case label == "":
		w.text("<" + l.href + ">")
	case label == l.href || "mailto:"+label == l.href:
		w.text(label)
	default:
		w.text("[" + strings.ReplaceAll(label, "\n", " ") + "](" + l.href + ")")
	}
}

// CollapseSpace turns every run of white space into one space (keeping one at either end): the text
// of a page as it reads, and an edit's text compared with a file's while ignoring how it is spaced.
func CollapseSpace(s string) string {
	var b strings.Builder
	space := false
	for _, r := range s {
		if r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\f' || r == '\u00a0' {
			space = true
			continue
		}
		if space {
			b.WriteByte(' ') // a leading space too: it separates this text from what precedes it
		}
		space = false
		b.WriteRune(r)
	}
	if space && b.Len() > 0 {
		b.WriteByte(' ')
	}
	return b.String()
}

func isSpaceByte(c byte) bool { return c == ' ' || c == '\n' }
