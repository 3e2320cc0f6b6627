package web

import (
	"context"
	"net/http"
	"net/url"

	"github.com/lucy-agent/lucy/tools"
)

// What other domains use of the web (a monitor's check reads a URL a person or the model chose): the
// same guard against private addresses, the same client and the same reading of HTML as
// lucy_web_fetch.

// CheckAddress refuses a URL whose host is or resolves to a private, loopback, link-local or reserved
// address that LUCY_ALLOWED_PRIVATE_HOSTS does not list for its port (tools.PrivateHosts.CheckURL).
func (f *Fetcher) CheckAddress(ctx context.Context, u *url.URL) error {
	return f.hosts.CheckURL(ctx, u)
}

// Fetch sends req with Lucy's User-Agent through the client that refuses private addresses.
func (f *Fetcher) Fetch(req *http.Request) (*http.Response, error) {
	req.Header.Set("User-Agent", tools.UserAgent)
	return f.http.Do(req)
}

// PageText is the readable text of an HTML page (PageMarkdown).
func (f *Fetcher) PageText(page string, base *url.URL) string {
	_, text := PageMarkdown(page, base)
	return text
}

// CheckURL refuses a URL that carries credentials (an *tools.ArgError); shown is the URL as it may be
// quoted, credentials masked.
func (f *Fetcher) CheckURL(u *url.URL) (string, error) {
	shown := tools.RedactURL(u)
	if err := tools.RefuseCredentials(u, shown); err != nil {
		return shown, err
	}
	return shown, nil
}
