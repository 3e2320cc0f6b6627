package output

import (
	"encoding/json"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// jsonNote replaces a raw JSON dump in an answer.
const jsonNote = "_(raw data omitted)_"

// maxJSONRunes is the size above which a standalone JSON value counts as a dump rather than a small
// example such as {"ok": true}.
const maxJSONRunes = 80

// Control tags the model may leak. Those in dropTags carry internal content (reasoning, plans, tool
// traffic) and go with everything inside them; those in unwrapTags wrap the real answer and only the
// tags go.
var (
	dropTags = []string{
		"thinking", "think", "thought", "thoughts", "reasoning", "reflection", "scratchpad",
		"inner_monologue", "analysis", "execution_plan", "plan", "supervisor_guidance", "guidance",
		"system", "system-reminder", "system_reminder", "context", "memory", "instructions",
		"tool_call", "tool_calls", "tool_use", "tool_result", "tool_results", "tool_response",
		"function_call", "function_calls", "function_results", "invoke", "parameter",
	}
	unwrapTags = []string{"answer", "final_answer", "final", "response", "reply", "output", "result", "slack_message"}

	reDropOpen    = tagRegexp(dropTags, false)
	reAnyTag      = tagRegexp(append(append([]string{}, dropTags...), unwrapTags...), true)
	reHTMLComment = regexp.MustCompile(`(?s)<!--.*?-->`)

	// A Markdown link or image whose destination is an internal path keeps only its text.
	rePathLink = regexp.MustCompile(`!?\[([^\]\n]*)\]\(<?((?:file://|sandbox:)?(?:/(?:app|home|tmp|root|srv|mnt|workspaces?|private|var/(?:tmp|folders|lib))|[A-Za-z]:\\)[^)\s>]*)>?(?:[ \t]+"[^"\n]*")?\)`)

	// Internal paths: the sandbox roots, the per-workspace tree and Windows drives. The character
	// before the path is captured because RE2 has no look-behind: a path must not start in the middle
	// of a URL (https://example.com/home/...).
	rePath = regexp.MustCompile(`(^|[\s(\[{"'=,;*_~])((?:file://|sandbox:)?(?:/(?:app|home|tmp|root|srv|mnt|workspaces?|private/(?:tmp|var)|var/(?:tmp|folders|lib/lucy))(?:/[^\s/()\[\]{}<>"'` + "`" + `,;|*?]*)*|(?:\./)?(?:data/)?workspaces/[^\s/()\[\]{}<>"'` + "`" + `,;|*?]+(?:/[^\s/()\[\]{}<>"'` + "`" + `,;|*?]*)+|[A-Za-z]:\\[^\s<>"'` + "`" + `|*?,;()]*))`)

	reCodeSpan = regexp.MustCompile("`+[^`]+`+")
	reURL      = regexp.MustCompile(`(?i)\b(?:https?|ftp)://[^\s<>()\[\]` + "`" + `]+`)

	// Internal tool names, with an optional call: lucy_web_fetch(url="...").
	reTool = regexp.MustCompile(`(?:\bfunctions\.)?\b(?i:(lucy_[a-z0-9_]+|composio_[a-z0-9_]+|delegate_to_[a-z0-9_]+_agent))\b(?:[ \t]*\((?:[^()\n]|\([^()\n]*\))*\))?`)

	// Credentials in a recognisable format: Slack, OpenAI-style, GitHub, AWS and Google keys.
	reSecret = regexp.MustCompile(`\b(?:xox[abposr]-[A-Za-z0-9-]{10,}|xapp-[A-Za-z0-9-]{10,}|sk-(?:proj-|ant-|or-v1-)?[A-Za-z0-9_-]{20,}|gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}|AKIA[0-9A-Z]{16}|AIza[0-9A-Za-z_-]{35})\b`)

	// "As an AI language model, ..." and its relatives. Group 1 is kept (the sentence boundary).
	disclaimers = []rule{
		{regexp.MustCompile(`(?i)(^|[.!?]["')\]]*[ \t]+|\n)[ \t]*I(?:'m|’m| am) (?:just |only |merely )?an? (?:AI|artificial intelligence|(?:large )?language model|LLM|AI (?:language )?model|AI assistant|chatbot)(?: (?:developed|created|made|trained|built) by [\w. -]{1,40}?)?[.!][ \t]*`), disclaimerWords},
		{regexp.MustCompile(`(?i)(^|[\s("])(?:as an? (?:AI|artificial intelligence|(?:large )?language model|LLM|AI (?:language )?model|AI assistant|digital assistant|virtual assistant|chatbot)(?: (?:developed|created|made|trained|built) by [\w. -]{1,40}?)?|I(?:'m|’m| am) (?:just |only |merely )?an? (?:AI|(?:large )?language model|AI (?:language )?model|AI assistant)(?: and)?),[ \t]*(?:(?:so|but|and) )?`), disclaimerWords},
	}
)

var disclaimerWords = []string{"ai", "model", "llm", "chatbot", "assistant", "artificial"}

// tagRegexp matches the opening tags of names (with attributes), or any tag of names when anyTag.
func tagRegexp(names []string, anyTag bool) *regexp.Regexp {
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = regexp.QuoteMeta(n)
	}
	slash := ""
	if anyTag {
		slash = "/?"
	}
	return regexp.MustCompile(`(?i)<` + slash + `(` + strings.Join(quoted, "|") + `)(?:\s[^<>]*)?/?>`)
}

// toolPhrases name what a tool does, for the tools users are most likely to see mentioned.
var toolPhrases = map[string]string{
	"lucy_web_search":                 "web search",
	"lucy_web_fetch":                  "web browsing",
	"lucy_search_slack_history":       "Slack search",
	"lucy_get_channel_history":        "channel history",
	"lucy_list_slack_channels":        "the channel list",
	"lucy_write_file":                 "file saving",
	"lucy_edit_file":                  "file editing",
	"lucy_store_api_key":              "secure key storage",
	"lucy_generate_pdf":               "PDF generation",
	"lucy_generate_excel":             "spreadsheet generation",
	"lucy_generate_csv":               "CSV export",
	"lucy_run_script":                 "a script",
	"lucy_resolve_custom_integration": "the integration setup",
	"lucy_delete_custom_integration":  "the integration setup",
}

// humanizeTool turns an internal tool name into words a user understands.
func humanizeTool(name string) string {
	lower := strings.ToLower(name)
	if p, ok := toolPhrases[lower]; ok {
		return p
	}
	switch {
	case strings.HasPrefix(lower, "composio_"):
		return "the connected apps"
	case strings.HasPrefix(lower, "delegate_to_"):
		return strings.ReplaceAll(strings.TrimSuffix(strings.TrimPrefix(lower, "delegate_to_"), "_agent"), "_", " ") + " helper"
	case strings.HasPrefix(lower, "lucy_custom_"):
		slug, _, _ := strings.Cut(strings.TrimPrefix(lower, "lucy_custom_"), "_")
		if slug != "" {
			return "the " + capitalize(slug) + " integration"
		}
	case strings.Contains(lower, "email"):
		return "email"
	case strings.Contains(lower, "cron"):
		return "scheduled tasks"
	case strings.Contains(lower, "heartbeat"):
		return "monitors"
	case strings.HasPrefix(lower, "lucy_spaces"):
		return "Spaces"
	}
	words := strings.Trim(strings.ReplaceAll(strings.TrimPrefix(lower, "lucy_"), "_", " "), " ")
	if words == "" {
		return "a tool"
	}
	return words
}

// Sanitize removes what users must never see from the model's Markdown answer:
//
//   - internal file paths (/app/..., /home/..., /tmp/..., workspaces/..., C:\...): a path to a file
//     becomes the file's name, any other path "the workspace", and a link to a path its text;
//   - internal tool names (lucy_*, COMPOSIO_*, delegate_to_*_agent), also as calls such as
//     lucy_web_fetch(url="..."): they become what the tool does ("web search");
//   - credentials in a recognisable format (Slack, OpenAI, GitHub, AWS, Google keys): [redacted];
//   - standalone JSON values longer than 80 characters (a raw tool result): a short note;
//   - leaked control tags: <thinking>, <execution_plan>, <tool_call> and the like go with their
//     content, wrappers such as <answer> lose just the tags; HTML comments go too;
//   - "As an AI language model, ..." disclaimers.
//
// Fenced code blocks are kept exactly as written: the user asked for them, and a path or a JSON value
// in a config file is content there, not a leak.
func Sanitize(s string) string {
	s = stripSentinels(strings.ReplaceAll(s, "\r\n", "\n"))
	s = stripControlTags(s)
	s = mapProse(s, true, sanitizeProse)
	return tidyBlankLines(s, true)
}

// stripControlTags removes leaked control tags outside fenced code. A drop tag goes with its content up
// to the matching close tag, even across code blocks (a model may think in code); without a close tag
// only the tag goes, because the rest may be the answer.
func stripControlTags(s string) string {
	for range 200 {
		loc := firstOutsideCode(s, reDropOpen)
		if loc == nil {
			break
		}
		name := strings.ToLower(s[loc[2]:loc[3]])
		end := loc[1]
		if strings.HasSuffix(s[loc[0]:loc[1]], "/>") {
			// self-closing: nothing inside
		} else if j := indexFold(s[loc[1]:], "</"+name+">"); j >= 0 {
			end = loc[1] + j + len("</"+name+">")
		}
		s = s[:loc[0]] + s[end:]
	}
	return mapProse(s, true, func(p string) string { return reAnyTag.ReplaceAllString(p, "") })
}

// firstOutsideCode returns the submatch indexes of the first match of re that is not in fenced code.
func firstOutsideCode(s string, re *regexp.Regexp) []int {
	off := 0
	for _, seg := range markdownSegments(s) {
		if !seg.code {
			if loc := re.FindStringSubmatchIndex(seg.text); loc != nil {
				for i := range loc {
					if loc[i] >= 0 {
						loc[i] += off
					}
				}
				return loc
			}
		}
		off += len(seg.text)
	}
	return nil
}

// indexFold is a case-insensitive strings.Index for an ASCII needle.
func indexFold(s, needle string) int {
	return strings.Index(strings.ToLower(s), strings.ToLower(needle))
}

// sanitizeProse applies every rule to Markdown outside fenced code.
func sanitizeProse(p string) string {
	p = reHTMLComment.ReplaceAllString(p, "")
	p = dropJSON(p)
	p = rePathLink.ReplaceAllStringFunc(p, func(m string) string {
		label := rePathLink.FindStringSubmatch(m)[1]
		if strings.TrimSpace(label) == "" {
			return "the file"
		}
		return label
	})
	p = mapCodeSpans(p, sanitizeText, sanitizeSpan)
	var h holder
	p = h.protect(p, reCodeSpan)
	for _, r := range disclaimers {
		p = r.apply(p, strings.ToLower(p))
	}
	return h.restore(p)
}

// sanitizeText applies the word-level rules to prose outside code spans.
func sanitizeText(t string) string {
	t = reSecret.ReplaceAllString(t, "[redacted]")
	var h holder
	t = h.protect(t, reURL) // a URL is the user's to follow, even when its path says /home or lucy_
	t = reTool.ReplaceAllStringFunc(t, func(m string) string { return humanizeTool(reTool.FindStringSubmatch(m)[1]) })
	t = rePath.ReplaceAllStringFunc(t, func(m string) string {
		sm := rePath.FindStringSubmatch(m)
		return sm[1] + humanizePath(sm[2])
	})
	return h.restore(t)
}

// sanitizeSpan handles a code span (content without the backticks). A span that is only a tool name
// or a directory becomes plain words; a file path becomes the file name, still as code.
func sanitizeSpan(content string) (string, bool) {
	c := strings.TrimSpace(content)
	if loc := reTool.FindStringIndex(c); loc != nil && loc[0] == 0 && loc[1] == len(c) {
		return humanizeTool(reTool.FindStringSubmatch(c)[1]), false
	}
	if sm := rePath.FindStringSubmatch(c); sm != nil && sm[1] == "" && len(sm[2]) == len(c) {
		h := humanizePath(trimPathPunct(c))
		return h, isFileName(h)
	}
	return sanitizeText(content), true
}

// humanizePath replaces an internal path by the name of its file, or by "the workspace". Trailing
// sentence punctuation is kept outside.
func humanizePath(p string) string {
	core := trimPathPunct(p)
	tail := p[len(core):]
	core = strings.TrimPrefix(strings.TrimPrefix(core, "file://"), "sandbox:")
	core = strings.ReplaceAll(core, "\\", "/")
	base := core[strings.LastIndexByte(core, '/')+1:]
	if isFileName(base) {
		return base + tail
	}
	return "the workspace" + tail
}

func trimPathPunct(p string) string {
	return strings.TrimRight(p, ".,:!?")
}

// isFileName reports whether s looks like a file name with an extension (report.pdf, .env).
func isFileName(s string) bool {
	dot := strings.LastIndexByte(s, '.')
	return dot >= 0 && dot < len(s)-1 && !strings.ContainsAny(s, "/\\ ")
}

// mapCodeSpans applies text to the prose between code spans and span to each span's content; span
// returns the new content and whether it stays a code span.
func mapCodeSpans(p string, text func(string) string, span func(string) (string, bool)) string {
	var b strings.Builder
	last := 0
	for i := 0; i < len(p); {
		if p[i] != '`' {
			i++
			continue
		}
		n := runLen(p, i, '`')
		end := findCodeClose(p, i+n, n)
		if end < 0 || strings.Contains(p[i+n:end], "\n\n") {
			i += n
			continue
		}
		b.WriteString(text(p[last:i]))
		content, keep := span(p[i+n : end])
		if keep {
			b.WriteString(p[i:i+n] + content + p[end:end+n])
		} else {
			b.WriteString(content)
		}
		i = end + n
		last = i
	}
	b.WriteString(text(p[last:]))
	return b.String()
}

// dropJSON replaces standalone JSON values (starting a line, ending a line) longer than maxJSONRunes
// with a note. Short values are kept: they are usually an example the user can read.
func dropJSON(p string) string {
	ends := jsonEnds(p)
	if len(ends) == 0 {
		return p
	}
	var b strings.Builder
	for i := 0; i < len(p); {
		lineEnd := strings.IndexByte(p[i:], '\n')
		if lineEnd < 0 {
			lineEnd = len(p)
		} else {
			lineEnd += i
		}
		t := i
		for t < lineEnd && (p[t] == ' ' || p[t] == '\t') {
			t++
		}
		if end, ok := ends[t]; ok && onlySpaceToEOL(p, end) {
			blob := p[t:end]
			if utf8.RuneCountInString(blob) > maxJSONRunes && looksJSON(blob) {
				b.WriteString(p[i:t])
				b.WriteString(jsonNote)
				i = end
				continue
			}
		}
		if lineEnd < len(p) {
			lineEnd++
		}
		b.WriteString(p[i:lineEnd])
		i = lineEnd
	}
	return b.String()
}

// jsonEnds maps the offset of each { or [ that starts a line (after indentation) to the offset after
// the bracket that balances it. One pass with a stack: JSON strings cannot hold a raw newline, so
// string state resets at each line and a bracket at a line start is never inside a string.
func jsonEnds(p string) map[int]int {
	var ends map[int]int
	var stack []int
	inString, lineStart := false, true
	for j := 0; j < len(p); j++ {
		c := p[j]
		if c == '\n' {
			inString, lineStart = false, true
			continue
		}
		startsLine := lineStart
		if c != ' ' && c != '\t' {
			lineStart = false
		}
		if inString {
			switch c {
			case '\\':
				j++
			case '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{', '[':
			if startsLine {
				stack = append(stack, j)
			} else {
				stack = append(stack, -1)
			}
		case '}', ']':
			if len(stack) == 0 {
				continue
			}
			open := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if open >= 0 {
				if ends == nil {
					ends = map[int]int{}
				}
				ends[open] = j + 1
			}
		}
	}
	return ends
}

func onlySpaceToEOL(s string, i int) bool {
	for ; i < len(s) && s[i] != '\n'; i++ {
		if s[i] != ' ' && s[i] != '\t' && s[i] != '\r' {
			return false
		}
	}
	return true
}

var reJSONKey = regexp.MustCompile(`["'][^"'\n]{1,80}["']\s*:`)

// looksJSON reports whether blob is JSON, or close enough to it (truncated, Python reprs) that it can
// only be a data dump: at least two quoted keys.
func looksJSON(blob string) bool {
	if json.Valid([]byte(blob)) {
		return true
	}
	return len(reJSONKey.FindAllStringIndex(blob, 2)) == 2
}

// cutCapitalize removes every match of re but its group 1 (the boundary before it), and capitalizes
// the text after a removal that leaves it starting a sentence.
func cutCapitalize(s string, re *regexp.Regexp) string {
	locs := re.FindAllStringSubmatchIndex(s, -1)
	if locs == nil {
		return s
	}
	var b strings.Builder
	last, capNext := 0, false
	for _, loc := range locs {
		between := s[last:loc[0]]
		if capNext {
			between = capitalize(between)
		}
		b.WriteString(between)
		if loc[2] >= 0 {
			b.WriteString(s[loc[2]:loc[3]])
		}
		last = loc[1]
		capNext = startsSentence(b.String())
	}
	rest := s[last:]
	if capNext {
		rest = capitalize(rest)
	}
	b.WriteString(rest)
	return b.String()
}

// startsSentence reports whether text written so far ends where a sentence starts.
func startsSentence(before string) bool {
	t := strings.TrimRight(before, " \t")
	if t == "" || strings.HasSuffix(t, "\n") {
		return true
	}
	r, _ := utf8.DecodeLastRuneInString(t)
	switch r {
	case '.', '!', '?', '>', '•':
		return true
	}
	return false
}

// capitalize upper-cases the first letter of s, skipping leading formatting marks.
func capitalize(s string) string {
	for i, r := range s {
		if unicode.IsLetter(r) {
			if unicode.IsUpper(r) {
				return s
			}
			return s[:i] + string(unicode.ToUpper(r)) + s[i+utf8.RuneLen(r):]
		}
		if !strings.ContainsRune("*_~ \"'(", r) {
			return s
		}
	}
	return s
}
