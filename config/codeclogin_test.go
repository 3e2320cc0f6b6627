package config

import (
	"slices"
	"strings"
	"testing"
)

// The worker's codec endpoint beyond loopback needs the Web UI's login; lucy dev's never does.
func TestCodecLogin(t *testing.T) {
	k := "k1:MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="
	base := []string{"OPENAI_API_KEY", "k", "SLACK_BOT_TOKEN", "xoxb-1", "LUCY_PAYLOAD_KEYS", k}
	load := func(mode Mode, kv ...string) (*Config, error) {
		return Load(mode, env(append(slices.Clone(base), kv...)...))
	}

	c, err := load(ModeWorker, "LUCY_CODEC_ADDR", ":8234",
		"LUCY_CODEC_OIDC_ISSUER", "https://accounts.google.com", "LUCY_CODEC_OIDC_AUDIENCE", "123.apps.googleusercontent.com",
		"LUCY_CODEC_ORIGINS", "https://temporal.example.com, https://ui.example.com:8443/")
	if err != nil || c.CodecLogin == nil || c.CodecLogin.Issuer != "https://accounts.google.com" || c.CodecLogin.Audience != "123.apps.googleusercontent.com" {
		t.Fatalf("%+v %v", c, err)
	}
	if want := []string{"https://temporal.example.com", "https://ui.example.com:8443"}; !slices.Equal(c.CodecOrigins, want) {
		t.Errorf("origins %v, want %v", c.CodecOrigins, want)
	}
	// Loopback needs no login, for the worker as for dev; dev needs none on any address (its Host
	// check stays what protects it).
	for _, tt := range []struct {
		mode Mode
		addr string
	}{{ModeWorker, "127.0.0.1:8234"}, {ModeWorker, "localhost:8234"}, {ModeWorker, "[::1]:8234"}, {ModeDev, ":8234"}, {ModeDev, "127.0.0.1:8234"}} {
		if c, err := load(tt.mode, "LUCY_CODEC_ADDR", tt.addr); err != nil || c.CodecLogin != nil {
			t.Errorf("%s %s: %v", tt.mode, tt.addr, err)
		}
	}
	for _, tt := range []struct {
		kv   []string
		want string
	}{
		{[]string{"LUCY_CODEC_ADDR", ":8234"}, "beyond loopback"},
		{[]string{"LUCY_CODEC_ADDR", "0.0.0.0:8234"}, "beyond loopback"},
		{[]string{"LUCY_CODEC_ADDR", "10.0.0.5:8234"}, "beyond loopback"},
		{[]string{"LUCY_CODEC_ADDR", ":8234", "LUCY_CODEC_OIDC_ISSUER", "https://accounts.google.com"}, "LUCY_CODEC_OIDC_AUDIENCE is not"},
		{[]string{"LUCY_CODEC_ADDR", ":8234", "LUCY_CODEC_OIDC_AUDIENCE", "ui"}, "LUCY_CODEC_OIDC_ISSUER is not"},
		{[]string{"LUCY_CODEC_ADDR", ":8234", "LUCY_CODEC_OIDC_ISSUER", "http://idp.example.com", "LUCY_CODEC_OIDC_AUDIENCE", "ui"}, "not an https URL"},
		{[]string{"LUCY_CODEC_ADDR", ":8234", "LUCY_CODEC_OIDC_ISSUER", "accounts.google.com", "LUCY_CODEC_OIDC_AUDIENCE", "ui"}, "not an https URL"},
		{[]string{"LUCY_CODEC_OIDC_ISSUER", "https://accounts.google.com", "LUCY_CODEC_OIDC_AUDIENCE", "ui"}, "LUCY_CODEC_ADDR is not"},
		{[]string{"LUCY_CODEC_ORIGINS", "temporal.example.com"}, "not an origin"},
		{[]string{"LUCY_CODEC_ORIGINS", "https://temporal.example.com/ui"}, "not an origin"},
	} {
		if _, err := load(ModeWorker, tt.kv...); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: %v, want %q", tt.kv, err, tt.want)
		}
	}
	// http is accepted for a loopback issuer (a test's or a local provider's).
	if c, err := load(ModeWorker, "LUCY_CODEC_ADDR", ":8234", "LUCY_CODEC_OIDC_ISSUER", "http://127.0.0.1:5556/dex", "LUCY_CODEC_OIDC_AUDIENCE", "ui"); err != nil || c.CodecLogin == nil {
		t.Errorf("loopback issuer: %v", err)
	}
}
