package output

import (
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Rule is the line ToMrkdwn writes for a Markdown horizontal rule in the fallback text.
const Rule = "———"

// listIndent is the indentation of one nesting level. Slack keeps leading spaces, and four of them
// read as a clear step under a "• ".
const listIndent = "    "

var (
	reHeading    = regexp.MustCompile(`^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$`)
	reSetextH1   = regexp.MustCompile(`^ {0,3}=+[ \t]*$`)
	reRule       = regexp.MustCompile(`^ {0,3}(?:(?:-[ \t]*){3,}|(?:\*[ \t]*){3,}|(?:_[ \t]*){3,})$`)
	reListItem   = regexp.MustCompile(`^([ \t]*)([-*+]|[0-9]{1,9}[.)])(?:[ \t]+(.*))?$`)
	reTaskBox    = regexp.MustCompile(`^\[([ xX])\][ \t]+`)
	reRefDef     = regexp.MustCompile(`^ {0,3}\[([^\]]+)\]:[ \t]*<?([^\s>]+)>?(?:[ \t]+(?:"[^"]*"|'[^']*'|\([^)]*\)))?[ \t]*$`)
	reTableDelim = regexp.MustCompile(`^[ \t]*\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$`)
	reQuote      = regexp.MustCompile(`^ {0,3}>`)

	// Slack's own tokens (mentions, channels, special mentions, dates) and labelled links already in
	// Slack's format: kept byte for byte.
	reSlackToken = regexp.MustCompile(`^<(?:[@#][A-Z0-9]+|![a-z]+(?:\^[^|<>\n]*)?|(?:https?|mailto|ftp|tel):[^|<>\s]+\|[^<>\n]*)(?:\|[^<>\n]*)?>`)
	reAutolink   = regexp.MustCompile(`^<((?:https?|ftp)://[^<>\s]+|mailto:[^<>\s]+)>`)
	reAutoEmail  = regexp.MustCompile(`^<([^<>\s@]+@[^<>\s@]+\.[^<>\s@]+)>`)
	reHTMLTag    = regexp.MustCompile(`^<(/?)([a-zA-Z]+)[^<>]*?/?>`)

	reBoldItalic = regexp.MustCompile(`\*\*\*([^\s*](?:[^\n]*?[^\s*])??)\*\*\*`)
	reBoldStar   = regexp.MustCompile(`\*\*([^\s*](?:[^\n]*?[^\s*])??)\*\*`)
	reBoldUnder  = regexp.MustCompile(`(^|[^\p{L}\p{N}_])__([^\s_](?:[^\n]*?[^\s_])??)__($|[^\p{L}\p{N}_])`)
	reItalicStar = regexp.MustCompile(`(^|[^*\p{L}\p{N}])\*([^\s*](?:[^*\n]*?[^\s*])??)\*($|[^*\p{L}\p{N}])`)
	reStrike     = regexp.MustCompile(`~~([^\s~](?:[^\n]*?[^\s~])??)~~`)
	reUnderItal  = regexp.MustCompile(`(^|[^\p{L}\p{N}_])_([^\s_](?:[^_\n]*?[^\s_])??)_($|[^\p{L}\p{N}_])`)
)

// entities decodes the HTML entities models use in prose (CommonMark decodes them all; Slack knows
// only &amp;, &lt; and &gt;, which stay as they are).
var entities = strings.NewReplacer(
	"&nbsp;", "\u00a0", "&quot;", `"`, "&apos;", "'", "&#39;", "'", "&#x27;", "'",
	"&mdash;", "—", "&ndash;", "–", "&hellip;", "…", "&lsquo;", "‘", "&rsquo;", "’",
	"&ldquo;", "“", "&rdquo;", "”", "&copy;", "©", "&reg;", "®", "&trade;", "™",
	"&times;", "×", "&deg;", "°", "&middot;", "·", "&bull;", "•", "&euro;", "€",
)

// ToMrkdwn converts CommonMark/GFM to Slack mrkdwn:
//
//   - **bold** and __bold__ become *bold*, *italic* and _italic_ become _italic_, ***both*** becomes
//     *_both_*, ~~strike~~ becomes ~strike~;
//   - [text](url), ![alt](url), <https://autolinks>, reference links ([text][ref] with a [ref]: url
//     definition) become <url|text>; relative links, which Slack cannot open, become their text;
//     bare URLs are kept for Slack to link;
//   - headings become a *bold* line, horizontal rules become [Rule];
//   - -, * and + bullets become "• ", nested ones indented four spaces per level; ordered lists are
//     numbered in sequence (models often write "1." for every item); task boxes become ☐ and ☑;
//   - > quotes stay quotes (Slack has one level, so nested quotes flatten);
//   - code spans and fenced code are kept verbatim, language tags dropped;
//   - GFM tables become a code block with aligned columns;
//   - &, < and > are escaped, except inside Slack tokens (<@U123>, <#C123|x>, <!here>) and the links
//     this function writes; &amp;, &lt; and &gt; already in the text are kept as they are, and
//     common entities (&nbsp;, &quot;, &mdash;, ...) are decoded.
func ToMrkdwn(md string) string {
	md = stripSentinels(strings.ReplaceAll(md, "\r\n", "\n"))
	lines := strings.Split(md, "\n")
	c := &converter{refs: map[string]string{}}
	lines = c.takeRefDefs(lines)
	return tidyBlankLines(strings.Join(c.blocks(lines), "\n"), false)
}

type converter struct {
	refs map[string]string // reference link definitions, by lower-cased label
}

// takeRefDefs collects reference link definitions outside code and removes their lines.
func (c *converter) takeRefDefs(lines []string) []string {
	out := lines[:0:0]
	for i := 0; i < len(lines); i++ {
		if ch, n, _, ok := markdownFence(lines[i]); ok {
			out = append(out, lines[i])
			for i++; i < len(lines); i++ {
				out = append(out, lines[i])
				if closesFence(lines[i], ch, n) {
					break
				}
			}
			continue
		}
		if m := reRefDef.FindStringSubmatch(lines[i]); m != nil && !strings.HasPrefix(m[1], "^") {
			key := strings.ToLower(strings.TrimSpace(m[1]))
			if _, dup := c.refs[key]; !dup {
				c.refs[key] = m[2]
			}
			continue
		}
		out = append(out, lines[i])
	}
	return out
}

// listFrame is one open list level.
type listFrame struct {
	indent  int
	ordered bool
	next    int
}

// blocks converts a sequence of Markdown lines to mrkdwn lines.
func (c *converter) blocks(lines []string) []string {
	var out []string
	var list []listFrame
	for i := 0; i < len(lines); i++ {
		raw := lines[i]
		line := strings.TrimRight(raw, " \t")
		trimmed := strings.TrimSpace(line)
		indent := indentWidth(line)

		if ch, n, ind, ok := markdownFence(raw); ok {
			if ind == 0 {
				list = nil
			}
			var code []string
			for i++; i < len(lines) && !closesFence(lines[i], ch, n); i++ {
				code = append(code, codeLine(dedent(lines[i], ind)))
			}
			for len(code) > 0 && strings.TrimSpace(code[len(code)-1]) == "" {
				code = code[:len(code)-1] // an unclosed block often ends in blank lines
			}
			out = append(append(append(out, "```"), code...), "```")
			continue
		}
		if trimmed == "" {
			out = append(out, "")
			continue
		}
		if reRule.MatchString(line) {
			list = nil
			out = append(out, Rule)
			continue
		}
		if m := reHeading.FindStringSubmatch(line); m != nil {
			list = nil
			if h := c.heading(m[2]); h != "" {
				out = append(out, h)
			}
			continue
		}
		if i+1 < len(lines) && strings.Contains(line, "|") && reTableDelim.MatchString(lines[i+1]) {
			header := splitRow(line)
			if align := parseAlign(lines[i+1]); len(align) == len(header) {
				rows := [][]string{header}
				j := i + 2
				for ; j < len(lines) && strings.TrimSpace(lines[j]) != "" && strings.Contains(lines[j], "|"); j++ {
					rows = append(rows, splitRow(lines[j]))
				}
				list = nil
				out = append(out, c.table(rows, align)...)
				i = j - 1
				continue
			}
		}
		if reQuote.MatchString(line) {
			var inner []string
			j := i
			for ; j < len(lines) && reQuote.MatchString(lines[j]); j++ {
				// Slack has one level of quotes: strip every level at once.
				q := lines[j]
				for reQuote.MatchString(q) {
					q = strings.TrimPrefix(strings.TrimLeft(q, " ")[1:], " ")
				}
				inner = append(inner, q)
			}
			list = nil
			for _, l := range c.blocks(inner) {
				switch {
				case strings.TrimSpace(l) == "":
					// Slack shows a bare ">" literally; a blank line inside a quote is dropped.
				default:
					out = append(out, "> "+l)
				}
			}
			i = j - 1
			continue
		}
		if m := reListItem.FindStringSubmatch(line); m != nil {
			out = append(out, c.listItem(&list, indentWidth(m[1]), m[2], m[3]))
			continue
		}
		if i+1 < len(lines) && reSetextH1.MatchString(lines[i+1]) {
			list = nil
			if h := c.heading(trimmed); h != "" {
				out = append(out, h)
			}
			i++
			continue
		}
		if len(list) > 0 && indent > 0 {
			// A continuation paragraph of a list item: align it under the item's text.
			depth := 0
			for _, f := range list {
				if f.indent < indent {
					depth++
				}
			}
			prefix := ""
			if depth > 0 {
				prefix = strings.Repeat(listIndent, depth-1) + "  "
			}
			out = append(out, prefix+unfence(c.inline(hardBreak(trimmed))))
			continue
		}
		list = nil
		out = append(out, unfence(c.inline(hardBreak(trimmed))))
	}
	return out
}

// heading renders a heading's text as a bold line. Bold markers inside are dropped: the whole line is
// bold already and Slack cannot nest bold.
func (c *converter) heading(text string) string {
	text = strings.TrimSpace(text)
	text = strings.ReplaceAll(text, "**", "")
	text = reBoldUnder.ReplaceAllString(text, "$1$2$3")
	text = strings.TrimSpace(c.inline(text))
	if text == "" {
		return ""
	}
	return "*" + text + "*"
}

// listItem renders one list item and updates the open list levels.
func (c *converter) listItem(list *[]listFrame, indent int, marker, text string) string {
	ordered := marker[0] >= '0' && marker[0] <= '9'
	st := *list
	for len(st) > 0 && st[len(st)-1].indent > indent+1 {
		st = st[:len(st)-1]
	}
	switch {
	case len(st) == 0 || indent >= st[len(st)-1].indent+2:
		st = append(st, listFrame{indent: indent, ordered: ordered})
		if ordered {
			st[len(st)-1].next, _ = strconv.Atoi(marker[:len(marker)-1])
		}
	case st[len(st)-1].ordered != ordered:
		st[len(st)-1] = listFrame{indent: st[len(st)-1].indent, ordered: ordered}
		if ordered {
			st[len(st)-1].next, _ = strconv.Atoi(marker[:len(marker)-1])
		}
	}
	top := &st[len(st)-1]
	*list = st

	bullet := "•"
	if ordered {
		bullet = strconv.Itoa(top.next) + "."
		top.next++
	}
	if m := reTaskBox.FindStringSubmatch(text); m != nil {
		box := "☐"
		if m[1] != " " {
			box = "☑"
		}
		text = box + " " + text[len(m[0]):]
	}
	return strings.Repeat(listIndent, len(st)-1) + bullet + " " + c.inline(hardBreak(strings.TrimSpace(text)))
}

// unfence keeps a prose line that happens to start with ``` from opening a Slack code block.
func unfence(s string) string {
	if isFenceLine(s) {
		return "\u200b" + s
	}
	return s
}

// hardBreak drops the backslash of a Markdown hard line break; the newline itself is kept anyway.
func hardBreak(s string) string {
	if strings.HasSuffix(s, "\\") && !strings.HasSuffix(s, "\\\\") {
		return strings.TrimRight(s[:len(s)-1], " \t")
	}
	return s
}

// indentWidth is the width of the leading whitespace, a tab counting as four columns.
func indentWidth(s string) int {
	w := 0
	for _, r := range s {
		switch r {
		case ' ':
			w++
		case '\t':
			w += 4 - w%4
		default:
			return w
		}
	}
	return w
}

// dedent removes up to n columns of leading spaces, the indentation of the fence that opened a block.
func dedent(s string, n int) string {
	i := 0
	for i < len(s) && i < n && s[i] == ' ' {
		i++
	}
	return s[i:]
}

// codeLine escapes one line of code. A line that starts with ``` would end a Slack code block early,
// so it gets an invisible zero-width space in front.
func codeLine(s string) string {
	return unfence(escapeAll(strings.TrimRight(s, "\r")))
}

// escapeAll escapes &, < and > for Slack, for text that is literal (code).
func escapeAll(s string) string {
	if !strings.ContainsAny(s, "&<>") {
		return s
	}
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// escapeText escapes &, < and > for Slack in prose, where &amp;, &lt; and &gt; mean the character
// they name (as in CommonMark) and are kept.
func escapeText(s string) string {
	if !strings.ContainsAny(s, "&<>") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '&':
			rest := s[i:]
			if strings.HasPrefix(rest, "&amp;") || strings.HasPrefix(rest, "&lt;") || strings.HasPrefix(rest, "&gt;") {
				b.WriteByte('&')
			} else {
				b.WriteString("&amp;")
			}
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

// escapeURL makes a URL safe inside a Slack <url|text> link.
func escapeURL(u string) string {
	return strings.NewReplacer("&", "&amp;", "<", "%3C", ">", "%3E", "|", "%7C", " ", "%20").Replace(u)
}

// linkURL returns the URL Slack can open for a Markdown link destination, or false for relative
// links and unknown schemes.
func linkURL(dest string) (string, bool) {
	lower := strings.ToLower(dest)
	for _, p := range []string{"http://", "https://", "mailto:", "ftp://", "tel:", "slack://"} {
		if strings.HasPrefix(lower, p) && len(dest) > len(p) {
			return dest, true
		}
	}
	if strings.HasPrefix(lower, "www.") && len(dest) > 4 {
		return "http://" + dest, true
	}
	return "", false
}

// inline converts the inline Markdown of one line.
func (c *converter) inline(s string) string {
	var h holder
	var b strings.Builder
	for i := 0; i < len(s); {
		ch := s[i]
		switch {
		case ch == '\\' && i+1 < len(s) && isASCIIPunct(s[i+1]):
			b.WriteString(h.hold(escapeAll(s[i+1 : i+2])))
			i += 2
			continue
		case ch == '`':
			n := runLen(s, i, '`')
			if end := findCodeClose(s, i+n, n); end >= 0 {
				b.WriteString(h.hold("`" + escapeAll(codeSpanContent(s[i+n:end])) + "`"))
				i = end + n
			} else {
				b.WriteString(s[i : i+n])
				i += n
			}
			continue
		case ch == '<':
			if end, out, ok := c.angle(s[i:]); ok {
				switch out {
				case "", "\n", "~", string(markBold), string(markItalic):
					b.WriteString(out) // formatting, still to be converted
				default:
					b.WriteString(h.hold(out))
				}
				i += end
				continue
			}
		case ch == '!' && i+1 < len(s) && s[i+1] == '[':
			if end, out, ok := c.link(s, i+1, true); ok {
				b.WriteString(h.hold(out))
				i = end
				continue
			}
		case ch == '[':
			if end, out, ok := c.link(s, i, false); ok {
				b.WriteString(h.hold(out))
				i = end
				continue
			}
		case (ch == 'h' || ch == 'w') && urlStartsAt(s, i):
			end := urlEnd(s, i)
			b.WriteString(h.hold(escapeText(s[i:end])))
			i = end
			continue
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		b.WriteString(s[i : i+size])
		i += size
	}
	t := emphasis(entities.Replace(b.String()))
	t = escapeText(t)
	t = strings.NewReplacer(string(markBold), "*", string(markItalic), "_").Replace(t)
	return h.restore(t)
}

// emphasis converts Markdown emphasis to Slack's, leaving the result as marker runes so that the
// later passes cannot mistake a converted *bold* for an *italic*.
func emphasis(s string) string {
	if !strings.ContainsAny(s, "*_~") {
		return s
	}
	b, it := string(markBold), string(markItalic)
	s = reBoldItalic.ReplaceAllString(s, b+it+"${1}"+it+b)
	s = untilStable(s, reBoldStar, b+"${1}"+b)
	s = untilStable(s, reBoldUnder, "${1}"+b+"${2}"+b+"${3}")
	s = untilStable(s, reItalicStar, "${1}"+it+"${2}"+it+"${3}")
	s = untilStable(s, reStrike, "~${1}~")
	return s
}

// untilStable applies a replacement until nothing changes; patterns that consume the character
// before and after a match need a second pass for adjacent matches. The pass count is bounded.
func untilStable(s string, re *regexp.Regexp, repl string) string {
	for range 8 {
		next := re.ReplaceAllString(s, repl)
		if next == s {
			break
		}
		s = next
	}
	return s
}

// angle handles text that starts with "<": Slack tokens stay, autolinks become Slack links, a few
// HTML tags models use are translated. ok is false when "<" is just a character.
func (c *converter) angle(s string) (end int, out string, ok bool) {
	if m := reSlackToken.FindString(s); m != "" {
		return len(m), m, true
	}
	if m := reAutolink.FindStringSubmatch(s); m != nil {
		return len(m[0]), "<" + escapeURL(m[1]) + ">", true
	}
	if m := reAutoEmail.FindStringSubmatch(s); m != nil {
		e := escapeText(m[1])
		return len(m[0]), "<mailto:" + e + "|" + e + ">", true
	}
	m := reHTMLTag.FindStringSubmatch(s)
	if m == nil {
		return 0, "", false
	}
	switch strings.ToLower(m[2]) {
	case "br":
		return len(m[0]), "\n", true
	case "b", "strong":
		return len(m[0]), string(markBold), true
	case "i", "em":
		return len(m[0]), string(markItalic), true
	case "s", "del", "strike":
		return len(m[0]), "~", true
	case "code", "kbd":
		if m[1] == "" {
			closeTag := "</" + m[2] + ">"
			if j := strings.Index(strings.ToLower(s), strings.ToLower(closeTag)); j > len(m[0]) {
				return j + len(closeTag), "`" + escapeAll(s[len(m[0]):j]) + "`", true
			}
		}
	case "sup", "sub", "u", "span", "mark", "small":
		return len(m[0]), "", true
	}
	return 0, "", false
}

// link parses a Markdown link at s[i] == '[' (inline, reference, or shortcut reference) and renders
// it. end is the index after the link.
func (c *converter) link(s string, i int, image bool) (end int, out string, ok bool) {
	cl := matchBracket(s, i)
	if cl < 0 {
		return 0, "", false
	}
	label := s[i+1 : cl]
	var dest string
	switch {
	case cl+1 < len(s) && s[cl+1] == '(':
		d, e, ok := parseDest(s, cl+2)
		if !ok {
			return 0, "", false
		}
		dest, end = d, e
	case cl+1 < len(s) && s[cl+1] == '[':
		rc := strings.IndexByte(s[cl+2:], ']')
		if rc < 0 {
			return 0, "", false
		}
		ref := s[cl+2 : cl+2+rc]
		if ref == "" {
			ref = label
		}
		d, found := c.refs[strings.ToLower(strings.TrimSpace(ref))]
		if !found {
			return 0, "", false
		}
		dest, end = d, cl+2+rc+1
	default:
		d, found := c.refs[strings.ToLower(strings.TrimSpace(label))]
		if !found || label == "" {
			return 0, "", false
		}
		dest, end = d, cl+1
	}
	text := strings.TrimSpace(plain(label, false))
	u, linkable := linkURL(dest)
	switch {
	case !linkable && text == "":
		return end, escapeText(dest), true
	case !linkable:
		return end, escapeText(text), true
	case text == "" || text == dest:
		return end, "<" + escapeURL(u) + ">", true
	}
	return end, "<" + escapeURL(u) + "|" + escapeText(text) + ">", true
}

// matchBracket returns the index of the "]" that closes the "[" at s[i], or -1.
func matchBracket(s string, i int) int {
	depth := 0
	for j := i; j < len(s) && j < i+maxScan; j++ {
		switch s[j] {
		case '\\':
			j++
		case '`':
			n := runLen(s, j, '`')
			if e := findCodeClose(s, j+n, n); e >= 0 {
				j = e + n - 1
			} else {
				j += n - 1
			}
		case '[':
			depth++
		case ']':
			depth--
			if depth == 0 {
				return j
			}
		}
	}
	return -1
}

// parseDest parses a link destination and optional title after "(" at s[i], returning the
// destination and the index after ")".
func parseDest(s string, i int) (dest string, end int, ok bool) {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	if i < len(s) && s[i] == '<' {
		j := strings.IndexAny(s[i+1:], "<>\n")
		if j < 0 || s[i+1+j] != '>' {
			return "", 0, false
		}
		dest = s[i+1 : i+1+j]
		i += j + 2
	} else {
		start, depth := i, 0
	loop:
		for ; i < len(s) && i < start+maxScan; i++ {
			switch s[i] {
			case '\\':
				i++
			case '(':
				depth++
			case ')':
				if depth == 0 {
					break loop
				}
				depth--
			case ' ', '\t':
				break loop
			}
		}
		if i > len(s) {
			i = len(s)
		}
		dest = s[start:i]
	}
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	if i < len(s) && (s[i] == '"' || s[i] == '\'' || s[i] == '(') {
		closer := s[i]
		if closer == '(' {
			closer = ')'
		}
		j := strings.IndexByte(s[i+1:], closer)
		if j < 0 {
			return "", 0, false
		}
		i += j + 2
		for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
			i++
		}
	}
	if i >= len(s) || s[i] != ')' {
		return "", 0, false
	}
	return dest, i + 1, true
}

// runLen counts the run of c starting at s[i].
func runLen(s string, i int, c byte) int {
	n := 0
	for i+n < len(s) && s[i+n] == c {
		n++
	}
	return n
}

// maxScan bounds how far a link or code span is looked for, so that pathological input (thousands of
// unmatched brackets or backticks) stays linear. Real links and code spans are far shorter.
const maxScan = 4096

// findCodeClose finds a backtick run of exactly n starting at or after from, or -1.
func findCodeClose(s string, from, n int) int {
	for j := from; j < len(s) && j < from+maxScan; {
		if s[j] != '`' {
			j++
			continue
		}
		m := runLen(s, j, '`')
		if m == n {
			return j
		}
		j += m
	}
	return -1
}

// codeSpanContent strips the one space CommonMark allows on each side of a code span.
func codeSpanContent(s string) string {
	if len(s) >= 2 && s[0] == ' ' && s[len(s)-1] == ' ' && strings.Trim(s, " ") != "" {
		return s[1 : len(s)-1]
	}
	return s
}

func isASCIIPunct(c byte) bool {
	return (c >= '!' && c <= '/') || (c >= ':' && c <= '@') || (c >= '[' && c <= '`') || (c >= '{' && c <= '~')
}

// urlStartsAt reports whether a bare URL (http://, https://, www.) starts at s[i] at a word start.
func urlStartsAt(s string, i int) bool {
	if i > 0 {
		r, _ := utf8.DecodeLastRuneInString(s[:i])
		if unicode.IsLetter(r) || unicode.IsDigit(r) || r == '/' || r == '.' {
			return false
		}
	}
	rest := s[i:]
	lower := strings.ToLower(rest[:min(len(rest), 8)])
	return strings.HasPrefix(lower, "https://") || strings.HasPrefix(lower, "http://") ||
		(strings.HasPrefix(lower, "www.") && len(rest) > 4)
}

// urlEnd finds the end of a bare URL starting at s[i]: it stops at whitespace or "<", and leaves
// trailing punctuation and an unbalanced ")" to the sentence, as GFM does.
func urlEnd(s string, i int) int {
	j := i
	for j < len(s) {
		r, size := utf8.DecodeRuneInString(s[j:])
		if unicode.IsSpace(r) || r == '<' || r == phOpen {
			break
		}
		j += size
	}
	for j > i {
		last := s[j-1]
		switch {
		case strings.IndexByte(".,;:!?'\"*_~", last) >= 0:
			j--
		case last == ')' && strings.Count(s[i:j], "(") < strings.Count(s[i:j], ")"):
			j--
		default:
			return j
		}
	}
	return j
}

// plain reduces inline Markdown to its text, for link labels and table cells. With urls, links keep
// their destination in parentheses, because a code block cannot hold a link.
func plain(s string, urls bool) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		ch := s[i]
		switch {
		case ch == '\\' && i+1 < len(s) && isASCIIPunct(s[i+1]):
			b.WriteByte(s[i+1])
			i += 2
			continue
		case ch == '`':
			n := runLen(s, i, '`')
			if end := findCodeClose(s, i+n, n); end >= 0 {
				b.WriteString(codeSpanContent(s[i+n : end]))
				i = end + n
			} else {
				b.WriteString(s[i : i+n])
				i += n
			}
			continue
		case ch == '<':
			if m := reHTMLTag.FindStringSubmatch(s[i:]); m != nil && !reAutolink.MatchString(s[i:]) {
				if strings.EqualFold(m[2], "br") {
					b.WriteByte(' ')
				}
				if !strings.Contains("|b|strong|i|em|s|del|strike|code|kbd|sup|sub|u|span|mark|small|br|", "|"+strings.ToLower(m[2])+"|") {
					b.WriteString(m[0])
				}
				i += len(m[0])
				continue
			}
		case ch == '[' || (ch == '!' && i+1 < len(s) && s[i+1] == '['):
			start := i
			if ch == '!' {
				start++
			}
			if cl := matchBracket(s, start); cl >= 0 && cl+1 < len(s) && s[cl+1] == '(' {
				if dest, end, ok := parseDest(s, cl+2); ok {
					text := strings.TrimSpace(plain(s[start+1:cl], false))
					switch {
					case !urls || dest == "" || dest == text:
						if text == "" {
							text = dest
						}
						b.WriteString(text)
					case text == "":
						b.WriteString(dest)
					default:
						b.WriteString(text + " (" + dest + ")")
					}
					i = end
					continue
				}
			}
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		b.WriteString(s[i : i+size])
		i += size
	}
	t := entities.Replace(b.String())
	t = reBoldItalic.ReplaceAllString(t, "$1")
	t = untilStable(t, reBoldStar, "$1")
	t = untilStable(t, reBoldUnder, "$1$2$3")
	t = untilStable(t, reItalicStar, "$1$2$3")
	t = untilStable(t, reUnderItal, "$1$2$3")
	t = untilStable(t, reStrike, "$1")
	return t
}

// splitRow splits a GFM table row into trimmed cells. Pipes escaped as \| or inside code spans do
// not split.
func splitRow(line string) []string {
	s := strings.TrimSpace(line)
	s = strings.TrimPrefix(s, "|")
	if strings.HasSuffix(s, "|") && !strings.HasSuffix(s, "\\|") {
		s = s[:len(s)-1]
	}
	var cells []string
	var cur strings.Builder
	inCode := 0
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\\' && i+1 < len(s) && s[i+1] == '|':
			cur.WriteByte('|')
			i++
		case s[i] == '`':
			n := runLen(s, i, '`')
			switch {
			case inCode == 0 && findCodeClose(s, i+n, n) >= 0:
				inCode = n
			case inCode == n:
				inCode = 0
			}
			cur.WriteString(s[i : i+n])
			i += n - 1
		case s[i] == '|' && inCode == 0:
			cells = append(cells, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteByte(s[i])
		}
	}
	return append(cells, strings.TrimSpace(cur.String()))
}

// Column alignments of a GFM table.
const (
	alignLeft = iota
	alignCenter
	alignRight
)

func parseAlign(delim string) []int {
	cells := splitRow(delim)
	align := make([]int, len(cells))
	for i, c := range cells {
		switch {
		case strings.HasPrefix(c, ":") && strings.HasSuffix(c, ":") && len(c) > 1:
			align[i] = alignCenter
		case strings.HasSuffix(c, ":"):
			align[i] = alignRight
		}
	}
	return align
}

// table renders a GFM table as a code block with aligned columns: Slack has no tables, and a
// monospaced grid is the only way to keep columns readable.
func (c *converter) table(rows [][]string, align []int) []string {
	cols := len(align)
	cells := make([][]string, len(rows))
	widths := make([]int, cols)
	for r, row := range rows {
		cells[r] = make([]string, cols)
		for k := 0; k < cols && k < len(row); k++ {
			cells[r][k] = strings.TrimSpace(plain(row[k], true))
			widths[k] = max(widths[k], displayWidth(cells[r][k]))
		}
	}
	for k := range widths {
		widths[k] = max(widths[k], 1)
	}
	out := []string{"```"}
	for r, row := range cells {
		parts := make([]string, cols)
		for k, cell := range row {
			parts[k] = pad(cell, widths[k], align[k])
		}
		out = append(out, codeLine(strings.TrimRight(strings.Join(parts, " | "), " ")))
		if r == 0 {
			dashes := make([]string, cols)
			for k := range dashes {
				dashes[k] = strings.Repeat("-", widths[k])
			}
			out = append(out, strings.Join(dashes, "-+-"))
		}
	}
	return append(out, "```")
}

func pad(s string, width, align int) string {
	gap := width - displayWidth(s)
	if gap <= 0 {
		return s
	}
	switch align {
	case alignRight:
		return strings.Repeat(" ", gap) + s
	case alignCenter:
		return strings.Repeat(" ", gap/2) + s + strings.Repeat(" ", gap-gap/2)
	}
	return s + strings.Repeat(" ", gap)
}

// displayWidth approximates how many monospace columns s takes: combining marks and joiners take
// none, East Asian wide characters and emoji take two, and a variation selector 16 widens the
// character before it to an emoji (⚠️).
func displayWidth(s string) int {
	w, last := 0, 0
	for _, r := range s {
		switch {
		case r == 0xFE0F:
			if last == 1 {
				w++
				last = 2
			}
		case unicode.Is(unicode.Mn, r), unicode.Is(unicode.Me, r), unicode.Is(unicode.Cf, r),
			r >= 0xFE00 && r <= 0xFE0E, r >= 0x1F3FB && r <= 0x1F3FF:
		case isWide(r):
			w += 2
			last = 2
		default:
			w++
			last = 1
		}
	}
	return w
}

// wideBMPEmoji are the characters below U+1F000 that are shown as emoji by default.
const wideBMPEmoji = "⌚⌛⏩⏪⏫⏬⏰⏳◽◾☔☕♈♉♊♋♌♍♎♏♐♑♒♓♿⚓⚡⚪⚫⚽⚾⛄⛅⛎⛔⛪⛲⛳⛵⛺⛽✅✊✋✨❌❎❓❔❕❗➕➖➗➰➿⬛⬜⭐⭕"

func isWide(r rune) bool {
	return (r >= 0x1100 && r <= 0x115F) || (r >= 0x2E80 && r <= 0x303E) || (r >= 0x3041 && r <= 0x33FF) ||
		(r >= 0x3400 && r <= 0x4DBF) || (r >= 0x4E00 && r <= 0x9FFF) || (r >= 0xA000 && r <= 0xA4CF) ||
		(r >= 0xAC00 && r <= 0xD7A3) || (r >= 0xF900 && r <= 0xFAFF) || (r >= 0xFE30 && r <= 0xFE4F) ||
		(r >= 0xFF00 && r <= 0xFF60) || (r >= 0xFFE0 && r <= 0xFFE6) || (r >= 0x1F000 && r <= 0x1FAFF) ||
		(r >= 0x20000 && r <= 0x3FFFD) || (r >= 0x2300 && r <= 0x2BFF && strings.ContainsRune(wideBMPEmoji, r))
}
