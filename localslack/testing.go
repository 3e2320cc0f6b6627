package localslack

import (
	"net/http/httptest"
	"testing"
)

// NewTestServer starts a workspace on an httptest server that ends with the test. It returns the server
// and the API base URL, ending in /api/, for slack.OptionAPIURL or SLACK_API_URL.
func NewTestServer(t testing.TB, opts Options) (*Server, string) {
	t.Helper()
	s := New(opts)
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	return s, ts.URL + "/api/"
}
