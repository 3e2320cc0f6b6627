package config

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lucy-agent/lucy/signing"
)

// env is a configuration of kv, with a LUCY_SECRETS_KEY unless kv sets one ("" to leave it out):
// lucy worker and lucy gateway need it, and the tests of other settings are not about it.
func env(kv ...string) func(string) string {
	m := map[string]string{"LUCY_SECRETS_KEY": testSecretsKey}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

const testSecretsKey = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="

func TestDefaults(t *testing.T) {
	c, err := Load(ModeDev, env("OPENAI_API_KEY", "sk-test"))
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct{ name, got, want string }{
		{"namespace", c.TemporalNamespace, "default"},
		{"data dir", c.DataDir, ".lucy"},
		{"http addr", c.HTTPAddr, "127.0.0.1:3000"}, // loopback in dev: /metrics and /readyz stay on this machine
		{"worker http addr", c.WorkerHTTPAddr, ":9090"},
		{"slack api", c.SlackAPIURL, "https://slack.com/api/"},
		{"gateway", string(c.Gateway), "terminal"},
		{"provider", c.Provider, "openai"},
		{"base url", c.LLMBaseURL, OpenAIBaseURL},
		{"log format", c.LogFormat, "console"},
		{"log level", c.LogLevel, "info"},
		{"temporal address (embedded)", c.TemporalAddress, ""},
	}
	for _, ch := range checks {
		if ch.got != ch.want {
			t.Errorf("%s = %q, want %q", ch.name, ch.got, ch.want)
		}
	}
	if c.TemporalPort != 7233 || c.UIPort != 8233 {
		t.Errorf("ports = %d/%d, want 7233/8233", c.TemporalPort, c.UIPort)
	}
	if !c.Embedded() {
		t.Error("dev without TEMPORAL_ADDRESS should be embedded")
	}
	for _, tier := range Tiers {
		if c.Models[tier] == "" {
			t.Errorf("no default model for tier %s", tier)
		}
	}
	w, err := Load(ModeWorker, env("OPENAI_API_KEY", "sk", "SLACK_BOT_TOKEN", "xoxb-1"))
	if err != nil {
		t.Fatal(err)
	}
	if w.TemporalAddress != "127.0.0.1:7233" || w.LogFormat != "json" {
		t.Errorf("worker defaults: address %q format %q", w.TemporalAddress, w.LogFormat)
	}
}

func TestModes(t *testing.T) {
	tests := []struct {
		name string
		env  func(string) string
		want GatewayMode
	}{
		{"socket", env("OPENAI_API_KEY", "k", "SLACK_BOT_TOKEN", "xoxb-1", "SLACK_APP_TOKEN", "xapp-1"), GatewaySocket},
		{"http", env("OPENAI_API_KEY", "k", "SLACK_BOT_TOKEN", "xoxb-1", "SLACK_SIGNING_SECRET", "s"), GatewayHTTP},
		{"socket wins over http", env("OPENAI_API_KEY", "k", "SLACK_BOT_TOKEN", "xoxb-1", "SLACK_APP_TOKEN", "xapp-1", "SLACK_SIGNING_SECRET", "s"), GatewaySocket},
		{"terminal", env("OPENAI_API_KEY", "k"), GatewayTerminal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Load(ModeDev, tt.env)
			if err != nil {
				t.Fatal(err)
			}
			if c.Gateway != tt.want {
				t.Errorf("gateway = %s, want %s", c.Gateway, tt.want)
			}
		})
	}
}

func TestProviders(t *testing.T) {
	tests := []struct {
		name                   string
		env                    func(string) string
		provider, base, model0 string
	}{
		{"openrouter", env("OPENROUTER_API_KEY", "or"), "openrouter", OpenRouterBaseURL, "minimax/minimax-m2.5"},
		{"openrouter beats openai", env("OPENROUTER_API_KEY", "or", "OPENAI_API_KEY", "sk"), "openrouter", OpenRouterBaseURL, "minimax/minimax-m2.5"},
		{"ollama", env("OPENAI_BASE_URL", "http://127.0.0.1:11434/v1", "LUCY_MODEL_DEFAULT", "llama3.1"), "custom", "http://127.0.0.1:11434/v1", "llama3.1"},
		{"model override", env("OPENAI_API_KEY", "sk", "LUCY_MODEL_DEFAULT", "gpt-x"), "openai", OpenAIBaseURL, "gpt-x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Load(ModeDev, tt.env)
			if err != nil {
				t.Fatal(err)
			}
			if c.Provider != tt.provider || c.LLMBaseURL != tt.base || c.Models["default"] != tt.model0 {
				t.Errorf("got %s %s %s, want %s %s %s", c.Provider, c.LLMBaseURL, c.Models["default"], tt.provider, tt.base, tt.model0)
			}
			if tt.provider == "custom" && c.Models["frontier"] != tt.model0 {
				t.Errorf("custom endpoint: frontier tier = %q, want the default model", c.Models["frontier"])
			}
		})
	}
}

func TestErrors(t *testing.T) {
	tests := []struct {
		name string
		mode Mode
		env  func(string) string
		want string
	}{
		{"no llm", ModeDev, env(), "no LLM configured"},
		{"bad bot token", ModeDev, env("OPENAI_API_KEY", "k", "SLACK_BOT_TOKEN", "xoxp-user"), "must be a bot token starting with xoxb-"},
		{"bad app token", ModeDev, env("OPENAI_API_KEY", "k", "SLACK_BOT_TOKEN", "xoxb-1", "SLACK_APP_TOKEN", "xoxb-2"), "starting with xapp-"},
		{"app token without bot token", ModeDev, env("OPENAI_API_KEY", "k", "SLACK_APP_TOKEN", "xapp-1"), "SLACK_BOT_TOKEN is missing"},
		{"bad port", ModeDev, env("OPENAI_API_KEY", "k", "LUCY_UI_PORT", "99999"), "LUCY_UI_PORT \"99999\" is not a port number"},
		{"same ports", ModeDev, env("OPENAI_API_KEY", "k", "LUCY_UI_PORT", "7233"), "pick two different ports"},
		{"bad temporal address", ModeWorker, env("OPENAI_API_KEY", "k", "SLACK_BOT_TOKEN", "xoxb-1", "TEMPORAL_ADDRESS", "localhost"), "TEMPORAL_ADDRESS \"localhost\" is not host:port"},
		{"bad http addr", ModeDev, env("OPENAI_API_KEY", "k", "LUCY_HTTP_ADDR", "3000"), "LUCY_HTTP_ADDR \"3000\" is not [host]:port"},
		{"bad slack url", ModeDev, env("OPENAI_API_KEY", "k", "SLACK_API_URL", "slack.com/api"), "SLACK_API_URL"},
		{"bad base url", ModeDev, env("OPENAI_BASE_URL", "localhost:11434", "LUCY_MODEL_DEFAULT", "x"), "OPENAI_BASE_URL \"localhost:11434\" is not an http(s) URL"},
		{"custom without model", ModeDev, env("OPENAI_BASE_URL", "http://127.0.0.1:11434/v1"), "LUCY_MODEL_DEFAULT is required"},
		{"bad worker http addr", ModeWorker, env("OPENAI_API_KEY", "k", "SLACK_BOT_TOKEN", "xoxb-1", "LUCY_WORKER_HTTP_ADDR", "9090"), "LUCY_WORKER_HTTP_ADDR \"9090\" is not [host]:port"},
		{"tls half", ModeWorker, env("OPENAI_API_KEY", "k", "SLACK_BOT_TOKEN", "xoxb-1", "TEMPORAL_TLS_CERT", "c.pem"), "must be set together"},
		{"tls half, standard name", ModeWorker, env("OPENAI_API_KEY", "k", "SLACK_BOT_TOKEN", "xoxb-1", "TEMPORAL_TLS_CLIENT_KEY_PATH", "k.pem"), "TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH must be set together"},
		{"log level", ModeDev, env("OPENAI_API_KEY", "k", "LUCY_LOG_LEVEL", "verbose"), "LUCY_LOG_LEVEL"},
		{"connect timeout", ModeDev, env("OPENAI_API_KEY", "k", "LUCY_TEMPORAL_CONNECT_TIMEOUT", "soon"), "LUCY_TEMPORAL_CONNECT_TIMEOUT"},
		{"log format", ModeDev, env("OPENAI_API_KEY", "k", "LUCY_LOG_FORMAT", "xml"), "LUCY_LOG_FORMAT"},
		{"worker needs slack", ModeWorker, env("OPENAI_API_KEY", "k"), "SLACK_BOT_TOKEN is required by `lucy worker`"},
		{"gateway needs slack", ModeGateway, env(), "`lucy gateway` needs Slack credentials"},
		{"short approval key", ModeWorker, env("OPENAI_API_KEY", "k", "SLACK_BOT_TOKEN", "xoxb-1", "LUCY_APPROVAL_KEY", "hunter2"), "LUCY_APPROVAL_KEY is too short: the secret has 7 characters, fewer than 32"},
		{"script timeout not a duration", ModeDev, env("OPENAI_API_KEY", "k", "LUCY_SCRIPT_TIMEOUT", "10"), "LUCY_SCRIPT_TIMEOUT \"10\" is not a duration"},
		{"script timeout too long", ModeDev, env("OPENAI_API_KEY", "k", "LUCY_SCRIPT_TIMEOUT", "1h"), "from 1s to 5m0s"},
		{"script memory too small", ModeDev, env("OPENAI_API_KEY", "k", "LUCY_SCRIPT_MEMORY_MB", "8"), "LUCY_SCRIPT_MEMORY_MB \"8\""},
		{"zero tool calls", ModeWorker, env("OPENAI_API_KEY", "k", "SLACK_BOT_TOKEN", "xoxb-1", "LUCY_MAX_TOOL_CALLS", "0"), "LUCY_MAX_TOOL_CALLS \"0\" is not a number from 1 to 64"},
		{"too many tool calls", ModeDev, env("OPENAI_API_KEY", "k", "LUCY_MAX_TOOL_CALLS", "65"), "LUCY_MAX_TOOL_CALLS \"65\" is not a number from 1 to 64"},
		{"setup create namespace", ModeSetup, env("LUCY_SETUP_CREATE_NAMESPACE", "never"), "LUCY_SETUP_CREATE_NAMESPACE \"never\" is not true or false"},
		{"tool calls not a number", ModeDev, env("OPENAI_API_KEY", "k", "LUCY_MAX_TOOL_CALLS", "ten"), "LUCY_MAX_TOOL_CALLS \"ten\""},
		{"negative run cap", ModeDev, env("OPENAI_API_KEY", "k", "LUCY_MAX_RUNS_PER_TEAM", "-1"), "LUCY_MAX_RUNS_PER_TEAM \"-1\" is not a number from 0 to 1000"},
		{"run cap not a number", ModeDev, env("OPENAI_API_KEY", "k", "LUCY_MAX_RUNS_PER_TEAM", "four"), "LUCY_MAX_RUNS_PER_TEAM \"four\""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(tt.mode, tt.env)
			if err == nil {
				t.Fatalf("no error, want %q", tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error is not one line: %q", err)
			}
		})
	}
}

func TestApprovalKey(t *testing.T) {
	const secret = "0123456789abcdef0123456789abcdef"
	load := func(mode Mode, kv ...string) *Config {
		t.Helper()
		c, err := Load(mode, env(append([]string{"OPENAI_API_KEY", "k"}, kv...)...))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	sig := func(c *Config) string {
		return c.ApprovalKey.SignMessage(signing.Message{Team: "T1", Channel: "C1", TS: "1.0", User: "U1", Text: "yes"})
	}

	// The worker and the gateway each derive the key from the bot token they both hold: the same
	// token gives the same key, so the worker verifies what the gateway signed.
	w := load(ModeWorker, "SLACK_BOT_TOKEN", "xoxb-1-a")
	g := load(ModeGateway, "SLACK_BOT_TOKEN", "xoxb-1-a", "SLACK_APP_TOKEN", "xapp-1")
	if w.ApprovalKey.IsZero() || !w.ApprovalKey.Equal(g.ApprovalKey) || w.ApprovalKeySource != "SLACK_BOT_TOKEN" {
		t.Fatalf("derived keys: worker %v (%s), gateway %v", w.ApprovalKey, w.ApprovalKeySource, g.ApprovalKey)
	}
	if rotated := load(ModeWorker, "SLACK_BOT_TOKEN", "xoxb-1-b"); rotated.ApprovalKey.Equal(w.ApprovalKey) {
		t.Fatal("a different token derived the same key")
	}

	// LUCY_APPROVAL_KEY wins over the token, and is used as given.
	e := load(ModeWorker, "SLACK_BOT_TOKEN", "xoxb-1-a", "LUCY_APPROVAL_KEY", "  "+secret+" ")
	want, _ := signing.FromSecret(secret)
	if !e.ApprovalKey.Equal(want) || e.ApprovalKeySource != "LUCY_APPROVAL_KEY" || sig(e) == sig(w) {
		t.Fatalf("explicit key not used: source %q", e.ApprovalKeySource)
	}

	// Without Slack and without LUCY_APPROVAL_KEY there is no key yet: cmd/lucy provides the file.
	if d := load(ModeDev); !d.ApprovalKey.IsZero() || d.ApprovalKeySource != "" {
		t.Fatalf("dev without Slack: key %v from %q, want none", d.ApprovalKey, d.ApprovalKeySource)
	}
	if c := load(ModeChat, "LUCY_APPROVAL_KEY", secret); !c.ApprovalKey.Equal(want) {
		t.Fatal("chat ignores LUCY_APPROVAL_KEY")
	}
}

func TestOpenAPIMaxDocumentMB(t *testing.T) {
	for _, tc := range []struct {
		v    string
		want int
	}{{"", DefaultOpenAPIMaxDocumentMB}, {"1", 1}, {" 256 ", 256}, {"64", 64}} {
		c, err := Load(ModeDev, env("OPENAI_API_KEY", "k", "LUCY_OPENAPI_MAX_DOCUMENT_MB", tc.v))
		if err != nil {
			t.Fatalf("LUCY_OPENAPI_MAX_DOCUMENT_MB=%q: %v", tc.v, err)
		}
		if c.OpenAPIMaxDocumentMB != tc.want {
			t.Errorf("LUCY_OPENAPI_MAX_DOCUMENT_MB=%q: OpenAPIMaxDocumentMB = %d, want %d", tc.v, c.OpenAPIMaxDocumentMB, tc.want)
		}
	}
	for _, v := range []string{"0", "257", "13MB"} {
		_, err := Load(ModeDev, env("OPENAI_API_KEY", "k", "LUCY_OPENAPI_MAX_DOCUMENT_MB", v))
		if err == nil || !strings.Contains(err.Error(), "LUCY_OPENAPI_MAX_DOCUMENT_MB") {
			t.Errorf("LUCY_OPENAPI_MAX_DOCUMENT_MB=%q: error = %v", v, err)
		}
	}
}

func TestOpenAPIMaxOperations(t *testing.T) {
	for _, tc := range []struct {
		v    string
		want int
	}{{"", DefaultOpenAPIMaxOperations}, {"1", 1}, {" 100 ", 100}, {"12", 12}} {
		c, err := Load(ModeDev, env("OPENAI_API_KEY", "k", "LUCY_OPENAPI_MAX_OPERATIONS", tc.v))
		if err != nil {
			t.Fatalf("LUCY_OPENAPI_MAX_OPERATIONS=%q: %v", tc.v, err)
		}
		if c.OpenAPIMaxOperations != tc.want {
			t.Errorf("LUCY_OPENAPI_MAX_OPERATIONS=%q: OpenAPIMaxOperations = %d, want %d", tc.v, c.OpenAPIMaxOperations, tc.want)
		}
	}
	for _, v := range []string{"0", "101", "many"} {
		_, err := Load(ModeDev, env("OPENAI_API_KEY", "k", "LUCY_OPENAPI_MAX_OPERATIONS", v))
		if err == nil || !strings.Contains(err.Error(), "LUCY_OPENAPI_MAX_OPERATIONS") {
			t.Errorf("LUCY_OPENAPI_MAX_OPERATIONS=%q: error = %v", v, err)
		}
	}
}

func TestMaxToolCalls(t *testing.T) {
	for _, tc := range []struct {
		v    string
		want int
	}{{"", DefaultMaxToolCalls}, {"1", 1}, {" 64 ", 64}, {"12", 12}} {
		c, err := Load(ModeDev, env("OPENAI_API_KEY", "k", "LUCY_MAX_TOOL_CALLS", tc.v))
		if err != nil {
			t.Fatalf("LUCY_MAX_TOOL_CALLS=%q: %v", tc.v, err)
		}
		if c.MaxToolCalls != tc.want {
			t.Errorf("LUCY_MAX_TOOL_CALLS=%q: MaxToolCalls = %d, want %d", tc.v, c.MaxToolCalls, tc.want)
		}
	}
}

func TestMCPConfig(t *testing.T) {
	for _, tc := range []struct{ v, want string }{{"", ""}, {" /etc/lucy/mcp.json ", "/etc/lucy/mcp.json"}} {
		c, err := Load(ModeDev, env("OPENAI_API_KEY", "k", "LUCY_MCP_CONFIG", tc.v))
		if err != nil {
			t.Fatalf("LUCY_MCP_CONFIG=%q: %v", tc.v, err)
		}
		if c.MCPConfig != tc.want {
			t.Errorf("LUCY_MCP_CONFIG=%q: MCPConfig = %q, want %q", tc.v, c.MCPConfig, tc.want)
		}
	}
	_, err := Load(ModeDev, env("OPENAI_API_KEY", "k", "LUCY_MCP_CONFIG", "/etc/lucy/"))
	if err == nil || !strings.Contains(err.Error(), "LUCY_MCP_CONFIG \"/etc/lucy/\" is not the path of a file") {
		t.Errorf("a folder: %v", err)
	}
}

func TestGatewayAndChatNeedNoLLM(t *testing.T) {
	if _, err := Load(ModeGateway, env("SLACK_BOT_TOKEN", "xoxb-1", "SLACK_APP_TOKEN", "xapp-1")); err != nil {
		t.Errorf("gateway: %v", err)
	}
	if _, err := Load(ModeChat, env()); err != nil {
		t.Errorf("chat: %v", err)
	}
}

// `lucy setup` touches only Temporal: no model, no Slack. It may create a missing namespace unless
// LUCY_SETUP_CREATE_NAMESPACE says false.
func TestSetupNeedsOnlyTemporal(t *testing.T) {
	c, err := Load(ModeSetup, env("TEMPORAL_ADDRESS", "temporal:7233"))
	if err != nil {
		t.Fatal(err)
	}
	if !c.SetupCreateNamespace || c.TemporalAddress != "temporal:7233" || c.TemporalNamespace != DefaultNamespace {
		t.Errorf("create %v, address %q, namespace %q", c.SetupCreateNamespace, c.TemporalAddress, c.TemporalNamespace)
	}
	if c, err = Load(ModeSetup, env("LUCY_SETUP_CREATE_NAMESPACE", "False")); err != nil || c.SetupCreateNamespace {
		t.Errorf("LUCY_SETUP_CREATE_NAMESPACE=False: %v, create %v", err, c != nil && c.SetupCreateNamespace)
	}
}

func TestRedactedHasNoSecrets(t *testing.T) {
	c, err := Load(ModeDev, env("OPENAI_API_KEY", "sk-secret", "SLACK_BOT_TOKEN", "xoxb-secret", "SLACK_APP_TOKEN", "xapp-secret",
		"LUCY_APPROVAL_KEY", "0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	if s := fmt.Sprintf("%v %+v", c, *c); strings.Contains(s, "0123456789abcdef") {
		t.Errorf("the config prints its approval key: %s", s)
	}
	for k, v := range c.Redacted() {
		s := strings.ToLower(strings.TrimSpace(stringOf(v)))
		if strings.Contains(s, "secret") {
			t.Errorf("Redacted()[%s] leaks a secret: %v", k, v)
		}
	}
}

func stringOf(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case map[string]string:
		var b strings.Builder
		for k, v := range x {
			b.WriteString(k + v)
		}
		return b.String()
	}
	return ""
}

func TestScriptLimits(t *testing.T) {
	c, err := Load(ModeDev, env("OPENAI_API_KEY", "k"))
	if err != nil {
		t.Fatal(err)
	}
	if c.ScriptTimeout != DefaultScriptTimeout || c.ScriptMemoryMB != DefaultScriptMemoryMB {
		t.Errorf("defaults: %s, %d MB", c.ScriptTimeout, c.ScriptMemoryMB)
	}
	c, err = Load(ModeDev, env("OPENAI_API_KEY", "k", "LUCY_SCRIPT_TIMEOUT", "30s", "LUCY_SCRIPT_MEMORY_MB", "1024"))
	if err != nil {
		t.Fatal(err)
	}
	if c.ScriptTimeout != 30*time.Second || c.ScriptMemoryMB != 1024 {
		t.Errorf("set: %s, %d MB", c.ScriptTimeout, c.ScriptMemoryMB)
	}
}

func TestSamplingPerTier(t *testing.T) {
	c, err := Load(ModeDev, env("OPENAI_API_KEY", "k", "LUCY_TEMPERATURE_CODE", "0.2", "LUCY_MAX_OUTPUT_TOKENS_FAST", "512"))
	if err != nil {
		t.Fatal(err)
	}
	if s := c.Sampling["code"]; s.Temperature != 0.2 || s.MaxOutputTokens != 4096 {
		t.Errorf("code: %+v", s)
	}
	if s := c.Sampling["fast"]; s.Temperature != 0.7 || s.MaxOutputTokens != 512 {
		t.Errorf("fast: %+v", s)
	}
	if s := c.Sampling["frontier"]; s.MaxOutputTokens != 16384 {
		t.Errorf("frontier: %+v", s)
	}
	for _, bad := range [][2]string{{"LUCY_TEMPERATURE_DEFAULT", "3"}, {"LUCY_TEMPERATURE_DEFAULT", "hot"}, {"LUCY_MAX_OUTPUT_TOKENS_FRONTIER", "0"}} {
		if _, err := Load(ModeDev, env("OPENAI_API_KEY", "k", bad[0], bad[1])); err == nil || !strings.Contains(err.Error(), bad[0]) {
			t.Errorf("%s=%s: %v", bad[0], bad[1], err)
		}
	}
}

func TestSearchSettings(t *testing.T) {
	c, err := Load(ModeDev, env("OPENROUTER_API_KEY", "sk-or-1"))
	if err != nil || c.SearchProvider != "openrouter" || c.SearchAPIKey != "sk-or-1" {
		t.Fatalf("OpenRouter default: %+v %v", c, err)
	}
	c, err = Load(ModeDev, env("OPENAI_API_KEY", "k"))
	if err != nil || c.SearchProvider != "" {
		t.Fatalf("no search by default with OpenAI: %q %v", c.SearchProvider, err)
	}
	c, err = Load(ModeDev, env("OPENAI_API_KEY", "k", "LUCY_SEARCH_PROVIDER", "Brave", "LUCY_SEARCH_API_KEY", "bk"))
	if err != nil || c.SearchProvider != "brave" || c.SearchAPIKey != "bk" {
		t.Fatalf("brave: %+v %v", c, err)
	}
	for _, tt := range []struct {
		kv   []string
		want string
	}{
		{[]string{"LUCY_SEARCH_PROVIDER", "google"}, "is not one of"},
		{[]string{"LUCY_SEARCH_PROVIDER", "tavily"}, "LUCY_SEARCH_API_KEY is not set"},
		{[]string{"LUCY_SEARCH_API_KEY", "x"}, "LUCY_SEARCH_PROVIDER is not"},
		{[]string{"LUCY_SEARCH_PROVIDER", "brave", "LUCY_SEARCH_API_KEY", "x", "LUCY_SEARCH_BASE_URL", "ftp://x"}, "not an http(s) URL"},
		{[]string{"SLACK_USER_TOKEN", "xoxb-1"}, "must be a user token"},
	} {
		_, err := Load(ModeDev, env(append([]string{"OPENAI_API_KEY", "k"}, tt.kv...)...))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: %v, want %q", tt.kv, err, tt.want)
		}
	}
}

func TestPayloadKeys(t *testing.T) {
	k := "k1:MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="
	c, err := Load(ModeDev, env("OPENAI_API_KEY", "k", "LUCY_PAYLOAD_KEYS", k))
	if err != nil || len(c.PayloadKeys) != 1 || c.PayloadKeys[0].ID != "k1" {
		t.Fatalf("%+v %v", c, err)
	}
	for _, tt := range []struct {
		kv   []string
		want string
	}{
		{[]string{"LUCY_PAYLOAD_KEYS", "k1:short"}, "not 32 bytes"},
		{[]string{"LUCY_CODEC_ADDR", "127.0.0.1:8234"}, "LUCY_PAYLOAD_KEYS is not"},
		{[]string{"LUCY_PAYLOAD_KEYS", k, "LUCY_CODEC_ADDR", "8234"}, "not host:port"},
	} {
		if _, err := Load(ModeDev, env(append([]string{"OPENAI_API_KEY", "k"}, tt.kv...)...)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%v: %v, want %q", tt.kv, err, tt.want)
		}
	}
}

// LUCY_ALLOWED_PRIVATE_HOSTS is read in every mode; a bad entry stops the process at start with the
// variable and the entry named.
func TestAllowedPrivateHosts(t *testing.T) {
	c, err := Load(ModeDev, env("OPENAI_API_KEY", "k"))
	if err != nil || !c.AllowedPrivateHosts.IsZero() {
		t.Fatalf("default: %v, %v; want none", c.AllowedPrivateHosts, err)
	}
	spec := "Wiki.Internal, jira.corp:443, 10.0.0.5:8443, [fd00::1]:8080, 10.20.0.0/16, fd00::/8"
	for _, m := range []Mode{ModeDev, ModeWorker} {
		c, err := Load(m, env("OPENAI_API_KEY", "k", "SLACK_BOT_TOKEN", "xoxb-1", "LUCY_ALLOWED_PRIVATE_HOSTS", spec))
		if err != nil {
			t.Fatalf("%s: %v", m, err)
		}
		want := "wiki.internal,jira.corp:443,10.0.0.5:8443,[fd00::1]:8080,10.20.0.0/16,fd00::/8"
		if got := c.AllowedPrivateHosts.String(); got != want {
			t.Errorf("%s: AllowedPrivateHosts = %q, want %q", m, got, want)
		}
		if got := c.Redacted()["allowedPrivateHosts"]; got != want {
			t.Errorf("%s: Redacted()[allowedPrivateHosts] = %v, want %q", m, got, want)
		}
	}
	_, err = Load(ModeWorker, env("OPENAI_API_KEY", "k", "SLACK_BOT_TOKEN", "xoxb-1", "LUCY_ALLOWED_PRIVATE_HOSTS", "wiki.internal, http://jira.corp/x"))
	if err == nil || !strings.Contains(err.Error(), "LUCY_ALLOWED_PRIVATE_HOSTS") || !strings.Contains(err.Error(), `"http://jira.corp/x" is a URL`) {
		t.Errorf("a URL entry: err = %v, want one naming the variable and the entry", err)
	}
	_, err = Load(ModeGateway, env("SLACK_BOT_TOKEN", "xoxb-1", "SLACK_APP_TOKEN", "xapp-1", "LUCY_ALLOWED_PRIVATE_HOSTS", "10.0.0.0/99"))
	if err == nil || !strings.Contains(err.Error(), `LUCY_ALLOWED_PRIVATE_HOSTS: "10.0.0.0/99" is not a host, host:port or CIDR`) {
		t.Errorf("a bad CIDR: err = %v", err)
	}
}

func TestWorkspaceStore(t *testing.T) {
	c, err := Load(ModeDev, env("OPENAI_API_KEY", "k"))
	if err != nil || c.S3Bucket != "" || c.WorkspaceStore() != "local" {
		t.Fatalf("default: %+v %v", c, err)
	}
	c, err = Load(ModeWorker, env("OPENAI_API_KEY", "k", "SLACK_BOT_TOKEN", "xoxb-1",
		"LUCY_WORKSPACE_STORE", "s3://acme-lucy/prod/workspaces/", "LUCY_S3_ENDPOINT", "http://minio:9000", "LUCY_S3_REGION", "eu-west-1",
		"AWS_ACCESS_KEY_ID", "AKIA", "AWS_SECRET_ACCESS_KEY", "secret-key"))
	if err != nil {
		t.Fatal(err)
	}
	if c.S3Bucket != "acme-lucy" || c.S3Prefix != "prod/workspaces" || c.S3Endpoint != "http://minio:9000" || c.S3Region != "eu-west-1" ||
		c.S3AccessKey != "AKIA" || c.S3SecretKey != "secret-key" || c.WorkspaceStore() != "s3://acme-lucy/prod/workspaces" {
		t.Errorf("s3 settings: %+v", c)
	}
	for k, v := range c.Redacted() {
		if strings.Contains(stringOf(v), "secret-key") {
			t.Errorf("Redacted()[%s] leaks the S3 secret", k)
		}
	}
	// No keys: the machine's role.
	if c, err = Load(ModeWorker, env("OPENAI_API_KEY", "k", "SLACK_BOT_TOKEN", "xoxb-1", "LUCY_WORKSPACE_STORE", "s3://acme-lucy")); err != nil || c.S3Prefix != "" {
		t.Errorf("bucket only: %+v %v", c, err)
	}

	tests := []struct {
		name string
		env  []string
		want string
	}{
		{"not a store", []string{"LUCY_WORKSPACE_STORE", "/mnt/shared"}, `LUCY_WORKSPACE_STORE "/mnt/shared" is not "local" or s3://bucket/prefix`},
		{"gcs scheme", []string{"LUCY_WORKSPACE_STORE", "gs://b"}, "is not \"local\" or s3://bucket/prefix"},
		{"no bucket", []string{"LUCY_WORKSPACE_STORE", "s3://"}, "is not a bucket name"},
		{"bad bucket", []string{"LUCY_WORKSPACE_STORE", "s3://Acme_Bucket/x"}, `"Acme_Bucket" is not a bucket name`},
		{"dot-dot prefix", []string{"LUCY_WORKSPACE_STORE", "s3://acme/a/../b"}, `".." segment`},
		{"bad endpoint", []string{"LUCY_WORKSPACE_STORE", "s3://acme", "LUCY_S3_ENDPOINT", "minio:9000"}, "LUCY_S3_ENDPOINT \"minio:9000\" is not an http(s) URL"},
		{"endpoint with path", []string{"LUCY_WORKSPACE_STORE", "s3://acme", "LUCY_S3_ENDPOINT", "https://host/acme"}, "without a path"},
		{"key without secret", []string{"LUCY_WORKSPACE_STORE", "s3://acme", "AWS_ACCESS_KEY_ID", "AKIA"}, "must be set together"},
		{"session token alone", []string{"LUCY_WORKSPACE_STORE", "s3://acme", "AWS_SESSION_TOKEN", "t"}, "AWS_SESSION_TOKEN is set without"},
		{"endpoint without store", []string{"LUCY_S3_ENDPOINT", "http://minio:9000"}, "LUCY_S3_ENDPOINT is set but LUCY_WORKSPACE_STORE is not s3://"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(ModeWorker, env(append([]string{"OPENAI_API_KEY", "k", "SLACK_BOT_TOKEN", "xoxb-1"}, tt.env...)...))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error is not one line: %q", err)
			}
		})
	}
}

func TestScheduleLimits(t *testing.T) {
	c, err := Load(ModeDev, env("OPENAI_API_KEY", "k"))
	if err != nil {
		t.Fatal(err)
	}
	want := ScheduleLimits{JobsPerTeam: 50, JobsPerUser: 10, MonitorsPerTeam: 50, MonitorsPerUser: 10,
		MinJobInterval: 15 * time.Minute, MinMonitorInterval: 5 * time.Minute}
	if c.Schedules != want {
		t.Errorf("defaults %+v, want %+v", c.Schedules, want)
	}
	c, err = Load(ModeDev, env("OPENAI_API_KEY", "k", "LUCY_MAX_JOBS_PER_TEAM", "200", "LUCY_MAX_JOBS_PER_USER", "20",
		"LUCY_MAX_MONITORS_PER_TEAM", "30", "LUCY_MAX_MONITORS_PER_USER", "3", "LUCY_MIN_JOB_INTERVAL", "1h", "LUCY_MIN_MONITOR_INTERVAL", "1m"))
	if err != nil {
		t.Fatal(err)
	}
	want = ScheduleLimits{JobsPerTeam: 200, JobsPerUser: 20, MonitorsPerTeam: 30, MonitorsPerUser: 3,
		MinJobInterval: time.Hour, MinMonitorInterval: time.Minute}
	if c.Schedules != want {
		t.Errorf("set %+v, want %+v", c.Schedules, want)
	}
	for _, tc := range []struct {
		kv   []string
		want string
	}{
		{[]string{"LUCY_MAX_JOBS_PER_TEAM", "0"}, `LUCY_MAX_JOBS_PER_TEAM "0" is not a number from 1 to 10000`},
		{[]string{"LUCY_MAX_MONITORS_PER_USER", "many"}, `LUCY_MAX_MONITORS_PER_USER "many" is not a number`},
		{[]string{"LUCY_MIN_JOB_INTERVAL", "30s"}, `LUCY_MIN_JOB_INTERVAL "30s" is not a whole number of minutes from 1m to 24h`},
		{[]string{"LUCY_MIN_MONITOR_INTERVAL", "90s"}, `LUCY_MIN_MONITOR_INTERVAL "90s"`},
		{[]string{"LUCY_MIN_JOB_INTERVAL", "15"}, `LUCY_MIN_JOB_INTERVAL "15"`},
		{[]string{"LUCY_MIN_MONITOR_INTERVAL", "48h"}, `LUCY_MIN_MONITOR_INTERVAL "48h"`},
		{[]string{"LUCY_MAX_JOBS_PER_USER", "60"}, "LUCY_MAX_JOBS_PER_USER (60) is above LUCY_MAX_JOBS_PER_TEAM (50)"},
		{[]string{"LUCY_MAX_MONITORS_PER_TEAM", "5"}, "LUCY_MAX_MONITORS_PER_USER (10) is above LUCY_MAX_MONITORS_PER_TEAM (5)"},
	} {
		_, err := Load(ModeDev, env(append([]string{"OPENAI_API_KEY", "k"}, tc.kv...)...))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.kv, err, tc.want)
		}
	}
}

// `lucy dev` keeps its HTTP listener (/metrics, /readyz, the Slack endpoints) on loopback unless told
// otherwise; `lucy gateway` listens on every interface, where Slack and the probes reach it.
func TestHTTPAddrDefaults(t *testing.T) {
	base := []string{"OPENAI_API_KEY", "k", "SLACK_BOT_TOKEN", "xoxb-1", "SLACK_SIGNING_SECRET", "s"}
	for _, tc := range []struct {
		mode  Mode
		extra []string
		want  string
	}{
		{ModeDev, nil, "127.0.0.1:3000"},
		{ModeDev, []string{"LUCY_HTTP_ADDR", ":3000"}, ":3000"},
		{ModeGateway, nil, ":3000"},
		{ModeGateway, []string{"LUCY_HTTP_ADDR", "127.0.0.1:4000"}, "127.0.0.1:4000"},
	} {
		c, err := Load(tc.mode, env(append(append([]string{}, base...), tc.extra...)...))
		if err != nil {
			t.Fatalf("%s %v: %v", tc.mode, tc.extra, err)
		}
		if c.HTTPAddr != tc.want {
			t.Errorf("%s %v: LUCY_HTTP_ADDR = %q, want %q", tc.mode, tc.extra, c.HTTPAddr, tc.want)
		}
	}
}

// LUCY_SECRETS_KEY: required where keys are opened or stored in production, parsed with an error
// that never repeats the value, optional for `lucy dev` (its key file) and `lucy chat`.
func TestSecretsKey(t *testing.T) {
	for _, mode := range []Mode{ModeWorker, ModeGateway} {
		_, err := Load(mode, env("OPENAI_API_KEY", "k", "SLACK_BOT_TOKEN", "xoxb-1", "SLACK_APP_TOKEN", "xapp-1", "LUCY_SECRETS_KEY", ""))
		if err == nil || !strings.Contains(err.Error(), "LUCY_SECRETS_KEY is required") || !strings.Contains(err.Error(), "openssl rand -base64 32") {
			t.Errorf("%s without LUCY_SECRETS_KEY: %v", mode, err)
		}
		c, err := Load(mode, env("OPENAI_API_KEY", "k", "SLACK_BOT_TOKEN", "xoxb-1", "SLACK_APP_TOKEN", "xapp-1"))
		if err != nil || c.SecretsKey[1] != 1 || c.SecretsKey[31] != 31 {
			t.Errorf("%s with LUCY_SECRETS_KEY: %v", mode, err)
		}
	}
	for _, mode := range []Mode{ModeDev, ModeChat} {
		c, err := Load(mode, env("OPENAI_API_KEY", "k", "LUCY_SECRETS_KEY", ""))
		if err != nil || c.SecretsKey != ([32]byte{}) {
			t.Errorf("%s without LUCY_SECRETS_KEY: %v", mode, err)
		}
	}
	const bad = "not-a-key-but-long-enough-to-see"
	_, err := Load(ModeWorker, env("OPENAI_API_KEY", "k", "SLACK_BOT_TOKEN", "xoxb-1", "LUCY_SECRETS_KEY", bad))
	if err == nil || !strings.Contains(err.Error(), "LUCY_SECRETS_KEY is not 32 bytes") || strings.Contains(err.Error(), bad) {
		t.Errorf("a bad LUCY_SECRETS_KEY: %v", err)
	}
}

func TestMemorySettings(t *testing.T) {
	for _, tc := range []struct {
		v    string
		want int
	}{{"", DefaultMemoryTokens}, {"200", 200}, {" 4000 ", 4000}} {
		c, err := Load(ModeDev, env("OPENAI_API_KEY", "k", "LUCY_MEMORY_TOKENS", tc.v, "LUCY_MODEL_EMBEDDING", " text-embedding-3-small "))
		if err != nil {
			t.Fatalf("LUCY_MEMORY_TOKENS=%q: %v", tc.v, err)
		}
		if c.MemoryTokens != tc.want || c.EmbeddingModel != "text-embedding-3-small" {
			t.Errorf("LUCY_MEMORY_TOKENS=%q: MemoryTokens = %d, EmbeddingModel = %q", tc.v, c.MemoryTokens, c.EmbeddingModel)
		}
	}
	for _, v := range []string{"0", "199", "20001", "lots"} {
		_, err := Load(ModeDev, env("OPENAI_API_KEY", "k", "LUCY_MEMORY_TOKENS", v))
		if err == nil || !strings.Contains(err.Error(), "LUCY_MEMORY_TOKENS") {
			t.Errorf("LUCY_MEMORY_TOKENS=%q: error = %v", v, err)
		}
	}
	if c, err := Load(ModeDev, env("OPENAI_API_KEY", "k")); err != nil || c.EmbeddingModel != "" {
		t.Fatalf("EmbeddingModel by default = %q, %v", c.EmbeddingModel, err)
	}
}

// LUCY_CHROMIUM names lucy_browse's browser; unset leaves the choice to the PATH (tools/browser.Find).
func TestChromium(t *testing.T) {
	c, err := Load(ModeDev, env("OPENAI_API_KEY", "k"))
	if err != nil || c.Chromium != "" {
		t.Fatalf("default: %q, %v; want empty", c.Chromium, err)
	}
	c, err = Load(ModeWorker, env("OPENAI_API_KEY", "k", "SLACK_BOT_TOKEN", "xoxb-1", "LUCY_CHROMIUM", " /opt/chrome/chrome "))
	if err != nil || c.Chromium != "/opt/chrome/chrome" || c.Redacted()["chromium"] != "/opt/chrome/chrome" {
		t.Fatalf("set: %q, %v, redacted %v", c.Chromium, err, c.Redacted()["chromium"])
	}
}

// LUCY_MAX_RUNS_PER_TEAM: no cap unless set, and the number set otherwise.
func TestMaxRunsPerTeam(t *testing.T) {
	for v, want := range map[string]int{"": 0, "0": 0, "4": 4, " 1000 ": 1000} {
		c, err := Load(ModeDev, env("OPENAI_API_KEY", "k", "LUCY_MAX_RUNS_PER_TEAM", v))
		if err != nil || c.MaxRunsPerTeam != want {
			t.Errorf("LUCY_MAX_RUNS_PER_TEAM=%q: %d, %v; want %d", v, c.MaxRunsPerTeam, err, want)
		}
	}
}
