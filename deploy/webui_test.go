package deploy

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/compose-spec/compose-go/v2/cli"
	uiserver "github.com/temporalio/ui-server/v2/plugins/fs_config_provider"
	uiserverpkg "github.com/temporalio/ui-server/v2/server"
	uiconfig "github.com/temporalio/ui-server/v2/server/config"
	uiserveroptions "github.com/temporalio/ui-server/v2/server/server_options"

	"github.com/lucy-agent/lucy/internal/fakeoidc"
)

// The Web UI's login, as the deployment files configure it. No container engine runs here, so the
// tests take the temporalio/ui image's own path from environment to server: ui-server v2.54.1's
// config/docker.yaml template (what the image renders at start, Dockerfile: COPY config/docker.yaml),
// rendered by ui-server's own loader (plugins/fs_config_provider) with the environment compose or
// Kubernetes gives the container, then ui-server itself started with that configuration against a
// fake OpenID Connect issuer on loopback.

const uiClientID = "lucy-temporal-ui"

// envFileValues reads KEY=value lines (compose's env_file format: comments and blanks skipped).
func envFileValues(t *testing.T, path string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, _ := strings.Cut(line, "=")
		out[k] = v
	}
	return out
}

// operatorUIEnv is temporal-ui.env.example as an operator fills it in for the fake issuer.
func operatorUIEnv(t *testing.T, issuer, callback string) map[string]string {
	t.Helper()
	env := envFileValues(t, "compose/temporal-ui.env.example")
	for _, k := range []string{"TEMPORAL_AUTH_PROVIDER_URL", "TEMPORAL_AUTH_CLIENT_ID", "TEMPORAL_AUTH_CLIENT_SECRET", "TEMPORAL_AUTH_CALLBACK_URL", "TEMPORAL_CORS_ORIGINS"} {
		if _, ok := env[k]; !ok {
			t.Errorf("temporal-ui.env.example does not set %s", k)
		}
	}
	env["TEMPORAL_AUTH_PROVIDER_URL"] = issuer
	env["TEMPORAL_AUTH_CLIENT_ID"] = uiClientID
	env["TEMPORAL_AUTH_CLIENT_SECRET"] = "s3cret"
	env["TEMPORAL_AUTH_CALLBACK_URL"] = callback
	return env
}

// composeUIEnv is the environment docker compose gives the temporal-ui container: compose.yaml
// loaded by compose-go (Docker Compose's loader) with lucy.env and temporal-ui.env next to it.
func composeUIEnv(t *testing.T, uiEnv map[string]string) map[string]string {
	t.Helper()
	dir := t.TempDir()
	for from, to := range map[string]string{"compose/compose.yaml": "compose.yaml", "compose/lucy.env.example": "lucy.env", "compose/dynamicconfig.yaml": "dynamicconfig.yaml"} {
		data, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, to), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var b strings.Builder
	for k, v := range uiEnv {
		fmt.Fprintf(&b, "%s=%s\n", k, v)
	}
	if err := os.WriteFile(filepath.Join(dir, "temporal-ui.env"), []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	opts, err := cli.NewProjectOptions([]string{filepath.Join(dir, "compose.yaml")},
		cli.WithWorkingDirectory(dir), cli.WithEnv([]string{}), cli.WithConsistency(true))
	if err != nil {
		t.Fatal(err)
	}
	p, err := opts.LoadProject(context.Background())
	if err != nil {
		t.Fatalf("docker compose would refuse compose.yaml: %v", err)
	}
	s, err := p.GetService("temporal-ui")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for k, v := range s.Environment {
		if v != nil {
			out[k] = *v
		}
	}
	return out
}

// k8sUIEnv is the environment Kubernetes gives the temporal-ui container: the Secret temporal-ui
// (made from the env file) through envFrom, then the container's env, which wins on a clash
// (https://kubernetes.io/docs/tasks/inject-data-application/define-environment-variable-container/:
// "Environment variables set using the env or envFrom field override any environment variables
// specified in the container image"; of the two, env takes precedence over envFrom).
func k8sUIEnv(t *testing.T, secret map[string]string) map[string]string {
	t.Helper()
	data, err := os.ReadFile("k8s/temporal-ui.yaml")
	if err != nil {
		t.Fatal(err)
	}
	docs, err := parseManifests(data)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		if d.Kind != "Deployment" || d.Metadata.Name != "temporal-ui" {
			continue
		}
		c := d.Spec.Template.Spec.Containers[0]
		out := map[string]string{}
		fromSecret := false
		for _, ef := range c.EnvFrom {
			if ef.SecretRef != nil && ef.SecretRef.Name == "temporal-ui" {
				fromSecret = true
				for k, v := range secret {
					out[k] = v
				}
			}
		}
		if !fromSecret {
			t.Error("k8s temporal-ui does not read the Secret temporal-ui")
		}
		for _, e := range c.Env {
			out[e.Name] = e.Value
		}
		return out
	}
	t.Fatal("k8s/temporal-ui.yaml: no Deployment temporal-ui")
	return nil
}

// moduleDir is where the go command keeps a module of this build.
func moduleDir(t *testing.T, module string) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", module).Output()
	if err != nil || strings.TrimSpace(string(out)) == "" {
		t.Skipf("cannot locate %s in the module cache (go list: %v)", module, err)
	}
	return strings.TrimSpace(string(out))
}

var templateEnvRE = regexp.MustCompile(`env "([A-Z0-9_]+)"`)

// renderUIConfig renders the image's config/docker.yaml with exactly env (every other variable the
// template reads unset) through ui-server's loader, as `ui-server --env docker start` does.
func renderUIConfig(t *testing.T, env map[string]string) *uiconfig.Config {
	t.Helper()
	tpl, err := os.ReadFile(filepath.Join(moduleDir(t, "github.com/temporalio/ui-server/v2"), "config", "docker.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "docker.yaml"), tpl, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, m := range templateEnvRE.FindAllStringSubmatch(string(tpl), -1) {
		t.Setenv(m[1], "")
		os.Unsetenv(m[1]) // t.Setenv restores the original at the end
	}
	for k, v := range env {
		t.Setenv(k, v)
	}
	cfg, err := uiserver.LoadConfig(dir, "docker")
	if err != nil {
		t.Fatalf("ui-server refuses the rendered configuration: %v", err)
	}
	return cfg
}

// startUI runs ui-server with cfg on a free loopback port and returns its base URL. Temporal's
// frontend is a closed loopback port: what is checked here (login) happens before any call to it.
func startUI(t *testing.T, cfg *uiconfig.Config) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	closed, _ := net.Listen("tcp", "127.0.0.1:0")
	frontend := closed.Addr().String()
	closed.Close()
	_ = ln.Close()
	cfg.Host, cfg.Port, cfg.TemporalGRPCAddress = "127.0.0.1", port, frontend
	cfg.HideLogs, cfg.DisableNewsFetch = true, true
	s := uiserverpkg.NewServer(uiserveroptions.WithConfigProvider(cfg))
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Start() }()
	t.Cleanup(func() { s.Stop(); <-done })
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get(base + "/healthz")
		if err == nil {
			resp.Body.Close()
			return base
		}
		if time.Now().After(deadline) {
			t.Fatalf("ui-server did not start: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// checkUIBehindLogin checks one deployment's rendered configuration and the running UI: the
// settings say login, the Temporal API refuses without a token and lets a valid one through, and
// /auth/sso sends the browser to the issuer with the registered client and callback.
func checkUIBehindLogin(t *testing.T, env map[string]string, issuer *fakeoidc.Issuer, callback string) {
	t.Helper()
	for k, want := range map[string]string{"TEMPORAL_AUTH_ENABLED": "true", "TEMPORAL_CODEC_PASS_ACCESS_TOKEN": "true"} {
		if env[k] != want {
			t.Errorf("%s=%q, want %q", k, env[k], want)
		}
	}
	cfg := renderUIConfig(t, env)
	if !cfg.Auth.Enabled || len(cfg.Auth.Providers) != 1 {
		t.Fatalf("rendered auth: %+v", cfg.Auth)
	}
	p := cfg.Auth.Providers[0]
	if p.Type != "oidc" || p.ProviderURL != issuer.URL || p.ClientID != uiClientID || p.ClientSecret != "s3cret" || p.CallbackURL != callback || !slices.Contains(p.Scopes, "openid") {
		t.Errorf("rendered provider: %+v", p)
	}
	if !cfg.Codec.PassAccessToken {
		t.Error("the UI does not pass the person's token to the codec endpoint")
	}

	base := startUI(t, cfg)
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(path string, header map[string]string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, base+path, nil)
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	// The workflow list (what shows every conversation) without login: 401.
	const list = "/api/v1/namespaces/default/workflows"
	if resp := get(list, nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("%s without login: %d, want 401", list, resp.StatusCode)
	}
	if resp := get(list, map[string]string{"Authorization": "Bearer " + issuer.Token(t, "another-app", "eve", time.Hour, nil)}); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("%s with another app's token: %d, want 401", list, resp.StatusCode)
	}
	// With a valid login the request passes the check and reaches for Temporal (closed here),
	// so the 401 above was the login's.
	if resp := get(list, map[string]string{"Authorization": "Bearer " + issuer.Token(t, uiClientID, "ada", time.Hour, nil)}); resp.StatusCode == http.StatusUnauthorized {
		t.Errorf("%s with a valid login: 401", list)
	}
	// Signing in: to the issuer's authorization endpoint (from its discovery document) with the
	// client ID and the registered callback (OpenID Connect Core 1.0 §3.1.2.1).
	resp := get("/auth/sso", nil)
	loc, _ := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusFound || loc == nil || !strings.HasPrefix(loc.String(), issuer.URL+"/authorize?") {
		t.Fatalf("/auth/sso: %d to %q, want 302 to the issuer", resp.StatusCode, resp.Header.Get("Location"))
	}
	q := loc.Query()
	if q.Get("client_id") != uiClientID || q.Get("redirect_uri") != callback || q.Get("response_type") != "code" || !strings.Contains(q.Get("scope"), "openid") {
		t.Errorf("/auth/sso asks the issuer for %v", q)
	}
	// The settings the UI's page reads say login, straight to the provider.
	req, _ := http.NewRequest(http.MethodGet, base+"/api/v1/settings", nil)
	sresp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer sresp.Body.Close()
	var settings struct {
		Auth  struct{ Enabled, RedirectToProvider bool }
		Codec struct{ PassAccessToken bool }
	}
	if err := json.NewDecoder(sresp.Body).Decode(&settings); err != nil || !settings.Auth.Enabled || !settings.Codec.PassAccessToken {
		t.Errorf("settings: %+v %v", settings, err)
	}
}

// TestComposeUIBehindLogin: the compose file's Web UI, with temporal-ui.env filled in, signs people
// in through the issuer and answers its API only to them.
func TestComposeUIBehindLogin(t *testing.T) {
	issuer := fakeoidc.New(t)
	callback := "http://127.0.0.1:8233/auth/sso/callback"
	env := composeUIEnv(t, operatorUIEnv(t, issuer.URL, callback))
	checkUIBehindLogin(t, env, issuer, callback)
}

// TestK8sUIBehindLogin: the same for the Kubernetes manifests, with the Secret temporal-ui made from
// the env file.
func TestK8sUIBehindLogin(t *testing.T) {
	issuer := fakeoidc.New(t)
	callback := "https://temporal.example.com/auth/sso/callback"
	env := k8sUIEnv(t, operatorUIEnv(t, issuer.URL, callback))
	checkUIBehindLogin(t, env, issuer, callback)
}

// The rendering follows the environment it is given (so the tests above check the deployment
// files, not the template's defaults): login turned off renders off.
func TestUIRenderingFollowsTheEnvironment(t *testing.T) {
	issuer := fakeoidc.New(t)
	env := operatorUIEnv(t, issuer.URL, "http://127.0.0.1:8233/auth/sso/callback")
	env["TEMPORAL_AUTH_ENABLED"] = "false"
	if cfg := renderUIConfig(t, env); cfg.Auth.Enabled || cfg.Auth.Providers[0].ClientID != uiClientID {
		t.Errorf("rendered %+v from TEMPORAL_AUTH_ENABLED=false", cfg.Auth)
	}
}
