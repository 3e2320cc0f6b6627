package config

import (
	"strings"
	"testing"
)

// LUCY_PUBLIC_URL: https anywhere, http only on loopback (the sign-in code would otherwise cross the
// network in clear), a base URL without query, fragment or user info; kept without its trailing
// slash so that the callback path is appended once.
func TestPublicURL(t *testing.T) {
	base := []string{"OPENAI_API_KEY", "k", "SLACK_BOT_TOKEN", "xoxb-1", "SLACK_APP_TOKEN", "xapp-1"}
	for _, tc := range []struct{ in, want, err string }{
		{"", "", ""},
		{"https://lucy.example.com", "https://lucy.example.com", ""},
		{"https://lucy.example.com/", "https://lucy.example.com", ""},
		{" https://example.com/lucy/ ", "https://example.com/lucy", ""},
		{"http://localhost:3000", "http://localhost:3000", ""},
		{"http://127.0.0.1:3000/", "http://127.0.0.1:3000", ""},
		{"http://[::1]:3000", "http://[::1]:3000", ""},
		{"http://lucy.example.com", "", "http on a host that is not loopback"},
		{"http://10.0.0.5:3000", "", "http on a host that is not loopback"},
		{"lucy.example.com", "", "not an absolute URL"},
		{"ftp://lucy.example.com", "", "not an absolute URL"},
		{"https://lucy.example.com/?x=1", "", "without user info, query or fragment"},
		{"https://user:pw@lucy.example.com", "", "without user info, query or fragment"},
	} {
		for _, mode := range []Mode{ModeGateway, ModeWorker} {
			c, err := Load(mode, env(append(append([]string{}, base...), "LUCY_PUBLIC_URL", tc.in)...))
			switch {
			case tc.err != "":
				if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "LUCY_PUBLIC_URL") {
					t.Errorf("%s %q: error %v, want one saying %q", mode, tc.in, err, tc.err)
				}
				if err != nil && strings.Contains(err.Error(), "pw@") {
					t.Errorf("%q: the error repeats the password: %v", tc.in, err)
				}
			case err != nil:
				t.Errorf("%s %q: %v", mode, tc.in, err)
			case c.PublicURL != tc.want:
				t.Errorf("%s %q: PublicURL = %q, want %q", mode, tc.in, c.PublicURL, tc.want)
			}
		}
	}
}
