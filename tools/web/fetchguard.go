package web

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/lucy-agent/lucy/tools"
)

// What lucy_web_fetch does with a URL that carries data (tools.URLCarriesData): it fetches it only
// when the run has seen it (Invocation.Seen, which the activities answer from the run's history with
// SeenForms, and the core's tools.NormalizeSeen, SeenIn and LinkSource) or a person approved this very URL; otherwise it
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
