package agent

import (
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ToolRecord is one executed tool call, as PartialResults needs it.
type ToolRecord struct {
	Name    string `json:"name"`
	IsError bool   `json:"isError,omitempty"`
	Result  string `json:"result,omitempty"`
}

// HumanToolName says what a tool does in words a person understands:
// "creating a spreadsheet", "pulling data from Polar". It never returns the raw name; unknown tools
// get a description from their shape, then "working on it".
func HumanToolName(name string) string {
	n := strings.ToLower(strings.TrimSpace(name))
	switch n {
	// Integrations and workspace tools.
	case "lucy_spaces_init":
		return "setting up the project"
	case "lucy_current_time":
		return "checking the time"
	case "lucy_spaces_deploy":
		return "deploying your app"
	case "lucy_generate_excel":
		return "creating a spreadsheet"
	case "lucy_send_email":
		return "sending an email"
	case "lucy_create_heartbeat":
		return "setting up a monitor"
	case "lucy_create_cron":
		return "creating a scheduled task"
	// The remaining tools, by what they do.
	case "lucy_generate_pdf":
		return "creating a PDF"
	case "lucy_generate_csv":
		return "creating a CSV file"
	case "lucy_write_file":
		return "writing a file"
	case "lucy_edit_file":
		return "editing a file"
	case "lucy_store_api_key":
		return "saving your credentials"
	case "lucy_web_search":
		return "searching the web"
	case "lucy_web_fetch":
		return "reading a web page"
	case "lucy_browse": // new with the tool: no recorded history names it, so no replay changes
		return "opening a web page in a browser"
	case "lucy_search_slack_history", "lucy_get_channel_history":
		return "going through the Slack history"
	case "lucy_list_slack_channels":
		return "looking through your channels"
	case "lucy_read_emails", "lucy_get_email_thread":
		return "reading your email"
	case "lucy_search_emails":
		return "searching your email"
	case "lucy_reply_to_email":
		return "replying to an email"
	case "lucy_spaces_list", "lucy_spaces_status":
		return "checking on your apps"
	case "lucy_spaces_delete":
		return "removing an app"
	case "lucy_delete_cron":
		return "removing a scheduled task"
	case "lucy_modify_cron":
		return "updating a scheduled task"
	case "lucy_list_crons":
		return "checking your scheduled tasks"
	case "lucy_trigger_cron":
		return "running a scheduled task"
	case "lucy_delete_heartbeat":
		return "removing a monitor"
	case "lucy_list_heartbeats":
		return "checking your monitors"
	case "lucy_check_heartbeat":
		return "checking a monitor"
	case "lucy_resolve_custom_integration":
		return "setting up a custom integration"
	case "lucy_delete_custom_integration":
		return "removing a custom integration"
	case "composio_search_tools":
		return "finding the right integration"
	case "composio_manage_connections", "composio_check_connections", "composio_get_integrations":
		return "checking your connected apps"
	case "composio_multi_execute_tool", "composio_execute_tool":
		return "working with your connected apps"
	case "composio_remote_workbench", "composio_remote_bash_tool":
		return "running some code"
	case "delegate_to_research_agent":
		return "researching"
	case "delegate_to_code_agent":
		return "working on the code"
	case "delegate_to_integrations_agent":
		return "setting up the integration"
	case "delegate_to_document_agent":
		return "putting the document together"
	case ToolAskHuman:
		return "waiting for your answer"
	case ToolGetRunJournal, ToolUpdateRunJournal, ToolAppendRunJournalEntry:
		return "keeping track of my progress"
	}
	if rest, ok := strings.CutPrefix(n, "lucy_custom_"); ok {
		slug, _, _ := strings.Cut(rest, "_")
		if slug = strings.Trim(slug, "-. "); slug != "" {
			return "pulling data from " + titleWord(slug)
		}
	}
	switch {
	case strings.Contains(n, "search"):
		return "searching"
	case strings.Contains(n, "list") || strings.Contains(n, "get") || strings.Contains(n, "read") || strings.Contains(n, "fetch"):
		return "looking things up"
	case strings.Contains(n, "send") || strings.Contains(n, "post"):
		return "sending a message"
	case strings.Contains(n, "create") || strings.Contains(n, "generate"):
		return "creating something for you"
	case strings.Contains(n, "workbench") || strings.Contains(n, "bash") || strings.Contains(n, "script"):
		return "running some code"
	}
	return "working on it"
}

// titleWord capitalizes the first letter: "polar" → "Polar".
func titleWord(s string) string {
	r, size := utf8.DecodeRuneInString(s)
	return string(unicode.ToUpper(r)) + s[size:]
}

// Error classes, named in words a person understands.
const (
	ErrTimeout    = "a timeout"
	ErrRateLimit  = "a rate limit"
	ErrConnection = "a connection issue"
	ErrPermission = "a permissions issue"
	ErrNotFound   = "a not-found error"
)

// ErrorClass names the kind of failure a tool result describes, or "" if it shows none. Checked in a fixed
// order, timeouts first, so "connection timed out" is a timeout. Status codes match as whole numbers only.
func ErrorClass(result string) string {
	s := strings.ToLower(result)
	switch {
	case containsAny(s, "timeout", "timed out", "deadline exceeded"):
		return ErrTimeout
	case containsAny(s, "rate limit", "ratelimit", "rate-limit", "too many requests") || containsWord(s, "429"):
		return ErrRateLimit
	case containsAny(s, "connection", "econnrefused", "econnreset"):
		return ErrConnection
	case containsAny(s, "permission", "forbidden", "unauthorized", "access denied") || containsWord(s, "403") || containsWord(s, "401"):
		return ErrPermission
	case containsAny(s, "not found", "not_found", "notfound") || containsWord(s, "404"):
		return ErrNotFound
	}
	return ""
}

// Reasons a run ends without a clean answer (PartialResults' reason).
const (
	ReasonError     = "error"      // the loop failed (default)
	ReasonEmpty     = "empty"      // the model kept answering with nothing
	ReasonTimeout   = "timeout"    // AbsoluteMax or SoftLimit
	ReasonTurnLimit = "turn_limit" // MaxToolTurns
	ReasonAbort     = "abort"      // the supervisor aborted
	ReasonLoop      = "loop"       // loop detection or tool caps stopped the run
	ReasonContext   = "context"    // the recovery ladder ran out
)

// PartialSummaryMaxChars caps the "what I found so far" part.
const PartialSummaryMaxChars = 1500

// closing is the message's last sentence for a reason. "Let me try a different approach" for every
// reason would be wrong: that is right when the workflow retries (errors, empty responses) and misleading when the
// run is over, so reasons that end the run say what the person can do instead. reason is one of the
// Reason constants or free text ("the turn limit", "repeating the same step too often"), sorted by its
// words.
func closing(reason string) string {
	switch r := strings.ToLower(reason); {
	case r == ReasonTimeout || r == ReasonTurnLimit || r == ReasonContext ||
		containsAny(r, "limit", "time", "took too long", "context"):
		return "This is taking longer than it should — reply here and I'll pick it up from where I stopped."
	case r == ReasonAbort || r == ReasonLoop ||
		containsAny(r, "abort", "possible", "loop", "repeat", "stuck", "same step", "circles"):
		return "Could you tell me a bit more about what you need, or should I try a different approach?"
	default:
		return "Let me try a different approach."
	}
}

// reasonNote is a free-text reason as a parenthetical, " (the turn limit)", or "" for the Reason codes
// and for text a person must not see (it goes through the same filter as the summary).
func reasonNote(reason string) string {
	switch reason {
	case "", ReasonError, ReasonEmpty, ReasonTimeout, ReasonTurnLimit, ReasonAbort, ReasonLoop, ReasonContext:
		return ""
	}
	r := oneLine(plainQuotes(reason))
	for _, sentence := range splitSentences(r) {
		if inlineCode.MatchString(sentence) || tagLike.MatchString(sentence) || jsonish.MatchString(sentence) ||
			pathLike.MatchString(sentence) || identifier.MatchString(sentence) || urlLike.MatchString(sentence) {
			return ""
		}
	}
	r = strings.TrimRight(clip(r, 200), " .!")
	if r == "" {
		return ""
	}
	// Lower-case a leading capital unless it is an acronym or "I" ("The API …" → "the API …").
	if len(r) > 1 && r[0] >= 'A' && r[0] <= 'Z' && r[1] >= 'a' && r[1] <= 'z' {
		r = strings.ToLower(r[:1]) + r[1:]
	}
	return " (" + r + ")"
}

// PartialResults is the message when the loop ends without a clean
// answer. Its three forms:
//
//   - partial success, when the model's last text says something useful once cleaned:
//     "Here's what I found so far: {summary}\n\nI'm still piecing together the full picture."
//   - with context, from the last tool called and the error in the latest failed result:
//     "I was pulling data from Polar but hit a connection issue. Let me try a different approach."
//   - without context: "I ran into a hiccup while processing your request. Let me try a different approach."
//
// reason is a Reason constant or a short free-text reason ("the turn limit"); it picks the closing
// sentence, and free text that passes the filter is added in parentheses. The message never shows raw
// JSON, tool names, file paths or internal data: the summary and the reason are filtered
// (cleanForPerson) and the rest is built from fixed words.
func PartialResults(records []ToolRecord, lastText string, reason string) string {
	if summary := cleanForPerson(lastText); summary != "" {
		return "Here's what I found so far: " + clip(summary, PartialSummaryMaxChars) +
			"\n\nI'm still piecing together the full picture."
	}
	end := reasonNote(reason) + ". " + closing(reason)
	if len(records) > 0 {
		last := records[len(records)-1]
		activity := HumanToolName(last.Name)
		class := ""
		for i := len(records) - 1; i >= 0 && class == ""; i-- {
			if records[i].IsError {
				class = ErrorClass(records[i].Result)
			}
		}
		if activity != "working on it" {
			if class != "" {
				return "I was " + activity + " but hit " + class + end
			}
			if last.IsError {
				return "I was " + activity + " but ran into a problem" + end
			}
		} else if class != "" {
			return "I hit " + class + " while working on your request" + end
		}
	}
	return "I ran into a hiccup while processing your request" + end
}

var (
	codeFence   = regexp.MustCompile("(?s)```.*?(?:```|$)")
	inlineCode  = regexp.MustCompile("`[^`\n]*`")
	jsonish     = regexp.MustCompile(`(?s)[\[{]\s*"[^"]*"\s*:.*?[\]}]|[{}\[\]]`)
	pathLike    = regexp.MustCompile(`(?:~|\.{1,2}|\b[\w.-]+)?(?:/[\w.@%+-]+){2,}/?|(?:~|\.{1,2})/[\w.@%+-]+|\b[A-Za-z]:\\[^\s]*`)
	placeholder = regexp.MustCompile("\x00[0-9]+\x00")
	urlLike     = regexp.MustCompile(`\bhttps?://[^\s<>()"']+`)
	identifier  = regexp.MustCompile(`\b[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+\b`)
	tagLike     = regexp.MustCompile(`</?[a-zA-Z_][\w-]*[^>]*>`)
)

// cleanForPerson keeps the sentences of model text a person may see. Code blocks go; so does every
// sentence with inline code, markup tags, JSON, a file path, or a snake_case or UPPER_CASE identifier (a
// tool name): cutting just the offending words leaves sentences like "I called and.", dropping the
// sentence leaves prose. Links stay. It returns "" when too little is left to be worth showing.
func cleanForPerson(s string) string {
	// Set links aside so that the path and identifier rules do not see them.
	var urls []string
	s = urlLike.ReplaceAllStringFunc(plainQuotes(s), func(u string) string {
		urls = append(urls, u)
		return "\x00" + strconv.Itoa(len(urls)-1) + "\x00"
	})
	s = codeFence.ReplaceAllString(s, "\n")
	var lines []string
	for line := range strings.SplitSeq(s, "\n") {
		var kept []string
		for _, sentence := range splitSentences(line) {
			if inlineCode.MatchString(sentence) || tagLike.MatchString(sentence) || jsonish.MatchString(sentence) ||
				pathLike.MatchString(sentence) || identifier.MatchString(sentence) {
				continue
			}
			kept = append(kept, sentence)
		}
		if l := strings.Join(kept, " "); l != "" {
			lines = append(lines, l)
		}
	}
	out := placeholder.ReplaceAllStringFunc(strings.Join(lines, "\n"), func(p string) string {
		i, _ := strconv.Atoi(strings.Trim(p, "\x00"))
		return urls[i]
	})
	if wordCount(out) < 5 || IsNarration(out) {
		return ""
	}
	return out
}

// splitSentences cuts a line after ".", "!" or "?" followed by white space, trimming each sentence.
func splitSentences(line string) []string {
	var out []string
	start := 0
	for i := 0; i < len(line); i++ {
		if c := line[i]; (c == '.' || c == '!' || c == '?') && i+1 < len(line) && (line[i+1] == ' ' || line[i+1] == '\t') {
			if t := strings.TrimSpace(line[start : i+1]); t != "" {
				out = append(out, t)
			}
			start = i + 1
		}
	}
	if t := strings.TrimSpace(line[start:]); t != "" {
		out = append(out, t)
	}
	return out
}
