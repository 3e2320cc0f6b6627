package tools

import (
	"html"
	"strings"
)

// What the run has seen (Invocation.Seen): the activities search the run's history for a URL with
// these, and lucy_web_fetch (package tools/web) makes the spellings they look for. They are in the
// core, beside SeenQuery, so that the activities answer the question without linking the web tools.

// NormalizeSeen prepares a text the run has seen (a message, a page, a tool result) for the search
// of a URL's spellings: HTML entities decoded (Slack writes & as &amp; in message text; a page's text or a
// JSON body may keep them), and the escapes JSON bodies give a URL (\/ and \u0026) undone. Links
// end where the text around them says so (Slack's <url|label>, a closing parenthesis, trailing
// punctuation): the search looks for a form inside the text, so what follows a link never matters.
func NormalizeSeen(text string) string {
	if strings.Contains(text, "&") {
		text = html.UnescapeString(text)
	}
	if strings.Contains(text, `\`) {
		text = strings.NewReplacer(`\/`, "/", `\u0026`, "&", `\u003d`, "=", `\u003D`, "=").Replace(text)
	}
	return text
}

// SeenIn reports whether one of forms (the fetch tool's spellings of a URL) occurs in text (normalized by NormalizeSeen).
func SeenIn(forms []string, text string) bool {
	for _, f := range forms {
		if strings.Contains(text, f) {
			return true
		}
	}
	return false
}

// LinkSource reports whether the results of a tool bring in text from outside the run, so that a
// link in them was put there by someone else: a fetched page, a search result, Slack messages,
// email, an integration's answer. Tools whose results the model shapes itself (a script's output,
// a workspace file it may have just written, its memory, its own schedules) are no source: a URL
// the model assembled there would otherwise come back "seen".
func LinkSource(tool string) bool {
	switch tool {
	case WebFetch, WebSearch, GetChannelHistory, GetThread, SearchSlackHistory,
		"lucy_read_emails", "lucy_search_emails", "lucy_get_email_thread", "lucy_browse":
		return true
	}
	return strings.HasPrefix(tool, "mcp__") || strings.HasPrefix(tool, "lucy_custom_")
}
