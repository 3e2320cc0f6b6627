package output

import (
	"strings"
	"unicode/utf8"
)

// SplitVerbatim cuts mrkdwn into ordered chunks of at most max runes (max <= 0 means MaxChunk;
// values below 16 are raised to 16) that, joined, give s back exactly: nothing is trimmed at a cut.
// Split reads better for an answer; this is for text a person must see as it is, such as what an
// approval prompt asks them to approve.
//
// The only additions are those that keep each chunk rendering on its own: a code block cut in two is
// closed with ``` at the end of one chunk and reopened at the start of the next; a chunk that would
// start with ``` in the middle of a line (which Slack would read as a fence) or that would be only
// whitespace (which Slack refuses as a section's text) starts with a zero-width space. A cut goes
// after a newline if there is one in the second half of the room, else after a space, else between
// two runes; it avoids the inside of a <…> token when it can.
func SplitVerbatim(s string, max int) []string {
	switch {
	case max <= 0:
		max = MaxChunk
	case max < minSplit:
		max = minSplit
	}
	if s == "" {
		return nil
	}
	fences := fenceLineStarts(s)
	// room for the text of one chunk: what a reopened fence, a closing one and a zero-width space
	// leave of max.
	room := max - utf8.RuneCountInString(fenceOpen+fenceClose+zeroWidth)
	var chunks []string
	reopen := false
	for pos := 0; pos < len(s); {
		end := cutVerbatim(s, pos, room, fences)
		prefix := ""
		if reopen {
			prefix = fenceOpen
		}
		body := s[pos:end]
		if (pos > 0 && s[pos-1] != '\n' && strings.HasPrefix(body, "```")) || strings.TrimSpace(prefix+body) == "" {
			prefix += zeroWidth
		}
		suffix := ""
		reopen = insideCode(fences, end) && end < len(s)
		if reopen {
			if !strings.HasSuffix(body, "\n") {
				suffix = "\n"
			}
			suffix += "```"
		}
		chunks = append(chunks, prefix+body+suffix)
		pos = end
	}
	return chunks
}

// cutVerbatim returns where the chunk that starts at pos ends: len(s) if the rest fits in room runes.
func cutVerbatim(s string, pos, room int, fences []fenceLine) int {
	limit := pos // byte offset room runes after pos
	for n := 0; n < room && limit < len(s); n++ {
		_, size := utf8.DecodeRuneInString(s[limit:])
		limit += size
	}
	if limit >= len(s) {
		return len(s)
	}
	window := s[pos:limit]
	half := len(window) / 2
	cut := -1
	if i := strings.LastIndexByte(window, '\n'); i >= half {
		cut = pos + i + 1
	} else if i := strings.LastIndexByte(window, ' '); i >= half {
		cut = pos + i + 1
	} else {
		cut = limit
		// Not between a character and the marks that belong to it.
		for cut > pos+1 {
			r, _ := utf8.DecodeRuneInString(s[cut:])
			if !isJoining(r) {
				break
			}
			_, size := utf8.DecodeLastRuneInString(s[:cut])
			cut -= size
		}
	}
	// Not inside a <…> token (a mention, a link), if the token starts in the second half.
	if open := strings.LastIndexByte(s[pos:cut], '<'); open >= half {
		if closeAt := strings.LastIndexByte(s[pos:cut], '>'); closeAt < open {
			if k := strings.IndexAny(s[cut:], "<>\n"); k >= 0 && s[cut+k] == '>' {
				cut = pos + open
			}
		}
	}
	// Not inside a fence line: the line would lose its meaning.
	for _, f := range fences {
		if f.start < cut && cut <= f.end && f.start > pos {
			cut = f.start
			break
		}
	}
	if cut <= pos {
		cut = limit
	}
	return cut
}

// fenceLine is a line of s that opens or closes a code block: [start, end) without its newline.
type fenceLine struct{ start, end int }

func fenceLineStarts(s string) []fenceLine {
	var out []fenceLine
	for start := 0; start < len(s); {
		end := strings.IndexByte(s[start:], '\n')
		if end < 0 {
			end = len(s)
		} else {
			end += start
		}
		if isFenceLine(s[start:end]) {
			out = append(out, fenceLine{start, end})
		}
		start = end + 1
	}
	return out
}

// insideCode reports whether byte offset i of s is inside a code block: an odd number of fence lines
// start before it.
func insideCode(fences []fenceLine, i int) bool {
	n := 0
	for _, f := range fences {
		if f.start < i {
			n++
		}
	}
	return n%2 == 1
}
