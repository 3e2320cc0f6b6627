package web

import (
	"context"
	"fmt"
	"html"
	"net/url"
	"slices"
	"strings"

	"github.com/lucy-agent/lucy/tools"
)

// What lucy_web_fetch does with a URL that carries data (tools.URLCarriesData): it fetches it only
// when the run has seen it (Invocation.Seen, which the activities answer from the run's history with
// SeenForms, NormalizeSeen, SeenIn and LinkSource) or a person approved this very URL; otherwise it
// holds the fetch and asks, showing the URL whole.

// urlGuard is the Guard of a fetch a person approves: a hash of exactly the URL requested.
func urlGuard(target string) string { return tools.TextHash(target) }

// SeenForms returns the spellings under which the URL target (as the model gave it, trimmed) is
// looked for in what the run has seen: as given and as the request will send it, without the
// fragment (which is never sent). A link found under any of them came from there.
func SeenForms(target string, u *url.URL) []string {
	var forms []string
	add := func(s string) {
		if s != "" && !slices.Contains(forms, s) {
			forms = append(forms, s)
		}
	}
	raw, _, _ := strings.Cut(target, "#")
	add(raw)
	bare := *u
	bare.Fragment, bare.RawFragment = "", ""
	add(bare.String())
	if dec, err := url.PathUnescape(raw); err == nil {
		add(dec) // a page that shows /wiki/Müller while the model sends /wiki/M%C3%BCller
	}
	return forms
}

// NormalizeSeen prepares a text the run has seen (a message, a page, a tool result) for the search
// of SeenForms: HTML entities decoded (Slack writes & as &amp; in message text; a page's text or a
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

// SeenIn reports whether one of forms (SeenForms) occurs in text (normalized by NormalizeSeen).
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
	case tools.WebFetch, tools.WebSearch, tools.GetChannelHistory, tools.GetThread, tools.SearchSlackHistory,
		"lucy_read_emails", "lucy_search_emails", "lucy_get_email_thread", "lucy_browse":
		return true
	}
	return strings.HasPrefix(tool, "mcp__") || strings.HasPrefix(tool, "lucy_custom_")
}

// holdFetch is lucy_web_fetch's answer to a URL that carries data and that the run has not seen:
// nothing fetched, and a request for the person's approval that shows the whole URL.
func holdFetch(u *url.URL, target, why string) tools.Output {
	summary := fmt.Sprintf("I'd like to open a web address I put together myself, and it carries data: %s. "+
		"Opening it sends that data to *%s*. Approve only if you expect me to send this there.",
		tools.MrkdwnEscape(why), tools.MrkdwnEscape(u.Hostname()))
	details := "The whole address (" + tools.BytesAsChars(len(target)) + "):\n```\n" +
		strings.ReplaceAll(tools.MrkdwnEscape(target), "```", "`\u200b`\u200b`") + "\n```"
	content := fmt.Sprintf("Nothing was fetched: %s carries data (%s), and it is not a link from the person's messages, "+
		"the thread, a search result or a page of this request, so it needs the person's approval. If you meant to follow "+
		"a link, use it exactly as it appears.", tools.Truncate(target, 200), why)
	return tools.Output{Content: content, NeedsApproval: &tools.ApprovalNeed{Summary: summary, Details: details, Guard: urlGuard(target)}}
}

// mayFetch decides a URL that carries data: approved for exactly this URL, or seen by the run.
// seen is asked only when needed: it reads the run's history.
func mayFetch(ctx context.Context, inv tools.Invocation, target string, forms []string) (bool, error) {
	guard := urlGuard(target)
	if inv.Approved && inv.Guard == guard {
		return true, nil
	}
	if inv.Seen == nil {
		return false, nil
	}
	return inv.Seen(ctx, tools.SeenQuery{Forms: forms, Guard: guard})
}

// MayFetch and HoldFetch are mayFetch and holdFetch for lucy_browse, which opens a URL by the same
// rule: a URL that carries data and that the run has not seen waits for a person's approval.
func MayFetch(ctx context.Context, inv tools.Invocation, target string, forms []string) (bool, error) {
	return mayFetch(ctx, inv, target, forms)
}

// HoldFetch: see MayFetch.
func HoldFetch(u *url.URL, target, why string) tools.Output { return holdFetch(u, target, why) }

// RefusePrivate is the refusal of a URL that leads to an address Lucy may not reach.
func RefusePrivate(shown string) *tools.ArgError { return refusePrivate(shown) }
