package web

import (
	"bytes"
	"net/url"
	"regexp"
	"strings"

	"codeberg.org/readeck/go-readability/v2"
	"github.com/JohannesKaufmann/html-to-markdown/v2/converter"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/base"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/commonmark"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/table"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// The reading of an HTML page as Markdown, shared by lucy_web_fetch, lucy_browse (the DOM a browser
// rendered) and a monitor's page check. Two maintained libraries do the work: go-readability (a port
// of Firefox's Reader View) finds an article's main text when the page is article-shaped, and
// html-to-markdown turns HTML into Markdown (headings, links made absolute, lists, tables, code).

// maxParsedElements bounds the elements readability scores: past it, the whole page is converted
// instead (a 2 MB page of tiny elements would otherwise cost seconds of CPU).
const maxParsedElements = 20_000

// PageMarkdown returns the title and the readable text of an HTML page as Markdown, links resolved
// against base. When Reader View would offer the page (readability's CheckDocument: enough
// paragraph-like text), only its main content is kept, without menus, footers and sidebars;
// otherwise (a pricing table, a dashboard, a short page) the whole body is converted, less what holds
// no readable text (scripts, styles, SVG, forms' buttons).
func PageMarkdown(page string, base *url.URL) (title, text string) {
	doc, err := html.Parse(strings.NewReader(page))
	if err != nil {
		return "", "" // x/net/html parses any input; this is a reader's error
	}
	title = documentTitle(doc)
	var node *html.Node = doc
	parser := readability.NewParser()
	parser.MaxElemsToParse = maxParsedElements
	if parser.CheckDocument(doc) {
		// ParseDocument works on a copy: doc stays whole for the fallback.
		if article, err := parser.ParseDocument(doc, base); err == nil && article.Node != nil {
			if t := strings.TrimSpace(article.Title()); t != "" {
				title = t
			}
			node = article.Node
		}
	}
	if node == doc {
		dropUnreadable(doc)
	}
	dropDeadLinks(node)
	return title, toMarkdown(node, base)
}

// markdownConverter is safe for concurrent use (the library's converters are).
var markdownConverter = converter.NewConverter(converter.WithPlugins(
	base.NewBasePlugin(),
	commonmark.NewCommonmarkPlugin(commonmark.WithStrongDelimiter("**"), commonmark.WithListEndComment(false)),
	table.NewTablePlugin(),
))

func toMarkdown(n *html.Node, base *url.URL) string {
	var opts []converter.ConvertOptionFunc
	if base != nil {
		opts = append(opts, converter.WithDomain(base.String()))
	}
	out, err := markdownConverter.ConvertNode(n, opts...)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(blankRuns.ReplaceAll(bytes.TrimSpace(out), []byte("\n\n"))))
}

var blankRuns = regexp.MustCompile(`\n{3,}`)

// unreadable elements hold no text a reader of the page sees.
var unreadable = map[atom.Atom]bool{
	atom.Script: true, atom.Style: true, atom.Noscript: true, atom.Template: true, atom.Svg: true,
	atom.Math: true, atom.Canvas: true, atom.Iframe: true, atom.Object: true, atom.Embed: true,
	atom.Select: true, atom.Button: true, atom.Head: true,
}

// dropUnreadable removes the elements of unreadable from n's tree.
func dropUnreadable(n *html.Node) {
	for c := n.FirstChild; c != nil; {
		next := c.NextSibling
		if c.Type == html.ElementNode && (unreadable[c.DataAtom] || c.Data == "svg") {
			n.RemoveChild(c)
		} else {
			dropUnreadable(c)
		}
		c = next
	}
}

// dropDeadLinks removes the href of links that lead nowhere a reader can go (javascript:, data:),
// so that they read as their text.
func dropDeadLinks(n *html.Node) {
	if n.Type == html.ElementNode && n.DataAtom == atom.A {
		for i, a := range n.Attr {
			if a.Key != "href" {
				continue
			}
			scheme, _, found := strings.Cut(strings.ToLower(strings.TrimSpace(a.Val)), ":")
			if found && !strings.ContainsAny(scheme, "/?#") && scheme != "http" && scheme != "https" && scheme != "mailto" {
				n.Attr = append(n.Attr[:i], n.Attr[i+1:]...)
			}
			break
		}
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		dropDeadLinks(c)
	}
}

// documentTitle is the text of the page's <title>, white space collapsed.
func documentTitle(n *html.Node) string {
	if n.Type == html.ElementNode && n.DataAtom == atom.Title {
		var b strings.Builder
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if c.Type == html.TextNode {
				b.WriteString(c.Data)
			}
		}
		return strings.Join(strings.Fields(b.String()), " ")
	}
	if n.Type == html.ElementNode && (n.DataAtom == atom.Svg || n.DataAtom == atom.Body) {
		return "" // an SVG's <title> names a picture, not the page
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if t := documentTitle(c); t != "" {
			return t
		}
	}
	return ""
}

// scriptBuilt reports whether a page whose readable text is text looks built by JavaScript: next to
// nothing to read, and scripts that would write it. lucy_web_fetch then says so and points to
// lucy_browse.
func scriptBuilt(page, text string) bool {
	if len(strings.TrimSpace(text)) >= minReadableChars {
		return false
	}
	lower := strings.ToLower(page)
	return strings.Contains(lower, "<script")
}

// minReadableChars is less text than any page worth reading has: a page with less that loads
// scripts is taken for an application shell.
const minReadableChars = 200
