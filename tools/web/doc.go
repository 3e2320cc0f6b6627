// Package web holds the web tools: lucy_web_fetch, which reads a public page as text, and
// lucy_web_search, which asks the operator's search provider. Each tool is declared beside its
// handler (tools.Register) and runs on a *Fetcher, which holds only what they need: the fetch client
// that refuses private addresses, the search provider's settings and its client. Its reading of HTML
// (PageMarkdown: go-readability and html-to-markdown) is shared with lucy_browse (tools/browser) and
// page monitors.
//
// It is its own package so that the web tools and their dependencies sit together, apart from the
// other domains; package toolset builds the *Fetcher a worker runs.
//
// # Guards
//
// A URL the model chose must not reach the internal network or a cloud metadata endpoint, except the
// internal hosts the operator lists (tools.PrivateHosts, LUCY_ALLOWED_PRIVATE_HOSTS): the address
// guard (PrivateHosts.CheckURL, tools.NewGuardedClient) checks it before the request, at each
// redirect and when the connection is dialed. It must not carry credentials (refused, not sent
// masked), and a URL the model composed that carries data (tools.URLCarriesData) waits for a
// person's approval unless the run has seen it (fetchguard.go).
package web

import (
	"net/http"
	"time"

	"github.com/lucy-agent/lucy/tools"
)

// Fetcher is the domain of the web tools. It is safe for concurrent use.
type Fetcher struct {
	http         *http.Client // for URLs the model chose: tools.NewGuardedClient
	hosts        tools.PrivateHosts
	fetchTimeout time.Duration // 20 s; tests shorten it
	search       SearchConfig
	// searchHTTP reaches the operator's search provider (not a URL the model chose, so no private
	// address checks).
	searchHTTP *http.Client
}

// New returns the web tools' domain. given is the client for lucy_web_fetch: nil means one that also
// checks, at dial time, that it connects to no private address (so DNS rebinding cannot reach one);
// a client given here gets the redirect checks, and the address checks before each request.
// hosts are the private addresses lucy_web_fetch and monitors may reach nonetheless
// (LUCY_ALLOWED_PRIVATE_HOSTS; tools.AllowAllPrivate in tests that fetch from httptest); search is
// lucy_web_search's provider (zero means not configured).
func New(given *http.Client, hosts tools.PrivateHosts, search SearchConfig) *Fetcher {
	return &Fetcher{
		http:         tools.NewGuardedClient(given, hosts),
		hosts:        hosts,
		fetchTimeout: 20 * time.Second,
		search:       search,
		searchHTTP:   &http.Client{Timeout: time.Minute},
	}
}

// Client is the client lucy_web_fetch uses for URLs the model chose (tools.NewGuardedClient): another
// domain that reads such URLs (a monitor's check) may share it.
func (f *Fetcher) Client() *http.Client { return f.http }
