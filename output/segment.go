package output

import (
	"regexp"
	"strconv"
	"strings"
)

// segment is a run of prose or of one fenced code block (fence lines included).
type segment struct {
	text string
	code bool
}

// isFenceLine reports whether a mrkdwn line opens or closes a Slack code block. After ToMrkdwn every
// fence is a line of its own that starts with ```; the rule is kept this simple on purpose so that
// Split, Detone, Render and the tests agree on it.
func isFenceLine(line string) bool {
	return strings.HasPrefix(strings.TrimLeft(line, " \t"), "```")
}

// mrkdwnSegments cuts mrkdwn into prose and code segments by the isFenceLine rule. An unclosed block
// runs to the end. Concatenating the segments gives s back.
func mrkdwnSegments(s string) []segment {
	var segs []segment
	var cur strings.Builder
	inCode := false
	flush := func(code bool) {
		if cur.Len() > 0 {
			segs = append(segs, segment{text: cur.String(), code: code})
			cur.Reset()
		}
	}
	for _, line := range strings.SplitAfter(s, "\n") {
		if isFenceLine(line) {
			if !inCode {
				flush(false)
				cur.WriteString(line)
				inCode = true
				continue
			}
			cur.WriteString(line)
			flush(true)
			inCode = false
			continue
		}
		cur.WriteString(line)
	}
	flush(inCode)
	return segs
}

// markdownFence reports whether line opens a CommonMark fenced code block, and with which character
// and length. Any indentation is accepted, because models indent fences inside list items.
func markdownFence(line string) (ch byte, n, indent int, ok bool) {
	t := strings.TrimLeft(line, " \t")
	indent = len(line) - len(t)
	if len(t) < 3 || (t[0] != '`' && t[0] != '~') {
		return 0, 0, 0, false
	}
	ch = t[0]
	for n < len(t) && t[n] == ch {
		n++
	}
	if n < 3 || (ch == '`' && strings.ContainsRune(t[n:], '`')) {
		return 0, 0, 0, false // ```code``` on one line is a code span, not a fence
	}
	return ch, n, indent, true
}

// closesFence reports whether line closes a fence opened with n times ch.
func closesFence(line string, ch byte, n int) bool {
	t := strings.TrimSpace(line)
	if len(t) < n {
		return false
	}
	for i := 0; i < len(t); i++ {
		if t[i] != ch {
			return false
		}
	}
	return true
}

// markdownSegments cuts Markdown into prose and fenced code segments (fence lines included) by the
// CommonMark rules. An unclosed fence runs to the end. Concatenating the segments gives s back.
func markdownSegments(s string) []segment {
	var segs []segment
	var cur strings.Builder
	lines := strings.SplitAfter(s, "\n")
	for i := 0; i < len(lines); i++ {
		ch, n, _, ok := markdownFence(strings.TrimRight(lines[i], "\n"))
		if !ok {
			cur.WriteString(lines[i])
			continue
		}
		if cur.Len() > 0 {
			segs = append(segs, segment{text: cur.String()})
			cur.Reset()
		}
		cur.WriteString(lines[i])
		for i++; i < len(lines); i++ {
			cur.WriteString(lines[i])
			if closesFence(lines[i], ch, n) {
				break
			}
		}
		segs = append(segs, segment{text: cur.String(), code: true})
		cur.Reset()
	}
	if cur.Len() > 0 {
		segs = append(segs, segment{text: cur.String()})
	}
	return segs
}

// mapProse applies f to the prose segments of Markdown (markdown true) or mrkdwn and leaves code as is.
func mapProse(s string, markdown bool, f func(string) string) string {
	segs := mrkdwnSegments(s)
	if markdown {
		segs = markdownSegments(s)
	}
	var b strings.Builder
	for _, seg := range segs {
		if seg.code {
			b.WriteString(seg.text)
			continue
		}
		b.WriteString(f(seg.text))
	}
	return b.String()
}

// Placeholders keep finished pieces (code spans, links, Slack tokens) away from the regular
// expressions that run over the rest of a line. They use private-use runes, which are removed from the
// input first, so a placeholder can never be forged by the model's text.
const (
	phOpen     = '\uE000'
	phClose    = '\uE001'
	markBold   = '\uE002' // becomes * once emphasis is converted
	markItalic = '\uE003' // becomes _
)

var (
	rePlaceholder = regexp.MustCompile("\uE000([0-9]+)\uE001")
	sentinels     = strings.NewReplacer("\uE000", "", "\uE001", "", "\uE002", "", "\uE003", "")
)

// stripSentinels removes the private-use runes this package uses internally.
func stripSentinels(s string) string {
	if !strings.ContainsAny(s, "\uE000\uE001\uE002\uE003") {
		return s
	}
	return sentinels.Replace(s)
}

// holder stores protected pieces of text behind placeholders.
type holder struct{ slots []string }

func (h *holder) hold(s string) string {
	h.slots = append(h.slots, s)
	return string(phOpen) + strconv.Itoa(len(h.slots)-1) + string(phClose)
}

func (h *holder) restore(s string) string {
	if len(h.slots) == 0 {
		return s
	}
	return rePlaceholder.ReplaceAllStringFunc(s, func(m string) string {
		n, err := strconv.Atoi(m[len(string(phOpen)) : len(m)-len(string(phClose))])
		if err != nil || n >= len(h.slots) {
			return ""
		}
		return h.slots[n]
	})
}

// protect replaces every match of re in s with a placeholder.
func (h *holder) protect(s string, re *regexp.Regexp) string {
	return re.ReplaceAllStringFunc(s, h.hold)
}

// tidyBlankLines trims trailing spaces from prose lines and collapses runs of blank lines to one.
func tidyBlankLines(s string, markdown bool) string {
	s = mapProse(s, markdown, func(p string) string {
		lines := strings.Split(p, "\n")
		out := lines[:0]
		blank := 0
		for i, l := range lines {
			l = strings.TrimRight(l, " \t")
			if l == "" && i != len(lines)-1 {
				blank++
				if blank > 1 {
					continue
				}
			} else {
				blank = 0
			}
			out = append(out, l)
		}
		return strings.Join(out, "\n")
	})
	return strings.Trim(s, "\n")
}
