package config

import (
	"strings"
	"testing"
)

// The OAuth clients of mailbox sign-ins: each ID goes with its secret, a tenant needs a Microsoft
// client and must look like one; set right, they are kept as given.
func TestMailOAuthClients(t *testing.T) {
	c, err := Load(ModeDev, env("OPENAI_API_KEY", "k", "LUCY_GOOGLE_CLIENT_ID", " 123.apps.googleusercontent.com ", "LUCY_GOOGLE_CLIENT_SECRET", "GOCSPX-x",
		"LUCY_MICROSOFT_CLIENT_ID", "11111111-2222-3333-4444-555555555555", "LUCY_MICROSOFT_CLIENT_SECRET", "s~x", "LUCY_MICROSOFT_TENANT", "contoso.onmicrosoft.com"))
	if err != nil {
		t.Fatal(err)
	}
	if c.GoogleClientID != "123.apps.googleusercontent.com" || c.GoogleClientSecret != "GOCSPX-x" || c.MicrosoftTenant != "contoso.onmicrosoft.com" {
		t.Fatalf("loaded %+v", c)
	}
	for _, r := range []string{c.GoogleClientSecret, c.MicrosoftClientSecret} {
		for k, v := range c.Redacted() {
			if s, ok := v.(string); ok && strings.Contains(s, r) {
				t.Errorf("Redacted()[%s] shows a client secret", k)
			}
		}
	}
	for _, tt := range []struct {
		kv   []string
		want string
	}{
		{[]string{"LUCY_GOOGLE_CLIENT_ID", "x"}, "LUCY_GOOGLE_CLIENT_ID and LUCY_GOOGLE_CLIENT_SECRET go together"},
		{[]string{"LUCY_GOOGLE_CLIENT_SECRET", "x"}, "LUCY_GOOGLE_CLIENT_ID and LUCY_GOOGLE_CLIENT_SECRET go together"},
		{[]string{"LUCY_MICROSOFT_CLIENT_ID", "x"}, "LUCY_MICROSOFT_CLIENT_ID and LUCY_MICROSOFT_CLIENT_SECRET go together"},
		{[]string{"LUCY_MICROSOFT_TENANT", "contoso.com"}, "LUCY_MICROSOFT_TENANT is set without LUCY_MICROSOFT_CLIENT_ID"},
		{[]string{"LUCY_MICROSOFT_CLIENT_ID", "x", "LUCY_MICROSOFT_CLIENT_SECRET", "y", "LUCY_MICROSOFT_TENANT", "https://login.microsoftonline.com/x"}, "is not a tenant"},
	} {
		_, err := Load(ModeDev, env(append([]string{"OPENAI_API_KEY", "k"}, tt.kv...)...))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: got %v, want %q", tt.kv, err, tt.want)
		}
	}
}
