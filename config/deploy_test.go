package config

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
)

// workerEnv is the least a worker needs, plus kv.
func workerEnv(kv ...string) func(string) string {
	return env(append([]string{"OPENAI_API_KEY", "sk", "SLACK_BOT_TOKEN", "xoxb-1", "TEMPORAL_ADDRESS", "ns.acct.tmprl.cloud:7233"}, kv...)...)
}

func TestTemporalPlainConnection(t *testing.T) {
	c, err := Load(ModeWorker, workerEnv("TEMPORAL_NAMESPACE", "lucy"))
	if err != nil {
		t.Fatal(err)
	}
	o, err := c.TemporalClientOptions()
	if err != nil {
		t.Fatal(err)
	}
	if o.HostPort != "ns.acct.tmprl.cloud:7233" || o.Namespace != "lucy" {
		t.Errorf("HostPort %q Namespace %q", o.HostPort, o.Namespace)
	}
	if o.Credentials != nil || o.ConnectionOptions.TLS != nil {
		t.Errorf("no Temporal Cloud settings, yet credentials %v TLS %v", o.Credentials, o.ConnectionOptions.TLS)
	}
}

// Temporal Cloud with an API key: a bearer credential, over TLS.
func TestTemporalAPIKey(t *testing.T) {
	c, err := Load(ModeWorker, workerEnv("TEMPORAL_API_KEY", " key-123 ", "TEMPORAL_NAMESPACE", "ns.acct"))
	if err != nil {
		t.Fatal(err)
	}
	if c.TemporalAPIKey != "key-123" {
		t.Errorf("TemporalAPIKey = %q", c.TemporalAPIKey)
	}
	o, err := c.TemporalClientOptions()
	if err != nil {
		t.Fatal(err)
	}
	if o.Credentials == nil {
		t.Error("TEMPORAL_API_KEY set but no credentials")
	}
	if o.ConnectionOptions.TLS == nil {
		t.Fatal("TEMPORAL_API_KEY set but TLS is off: Temporal Cloud refuses an API key in clear text")
	}
	if len(o.ConnectionOptions.TLS.Certificates) != 0 {
		t.Error("client certificate presented with an API key alone")
	}
	if o.ConnectionOptions.TLS.InsecureSkipVerify {
		t.Error("server certificate not verified")
	}
	if _, ok := c.Redacted()["temporalApiKey"]; ok || strings.Contains(strings.Join(mapValues(c.Redacted()), " "), "key-123") {
		t.Error("the API key is in Redacted()")
	}
}

// Temporal Cloud (or a self-hosted server) with mTLS: the client certificate is loaded and presented.
func TestTemporalMTLS(t *testing.T) {
	certPath, keyPath := writeKeyPair(t)
	c, err := Load(ModeWorker, workerEnv("TEMPORAL_TLS_CERT", certPath, "TEMPORAL_TLS_KEY", keyPath))
	if err != nil {
		t.Fatal(err)
	}
	o, err := c.TemporalClientOptions()
	if err != nil {
		t.Fatal(err)
	}
	if o.ConnectionOptions.TLS == nil || len(o.ConnectionOptions.TLS.Certificates) != 1 {
		t.Fatalf("TLS %+v: want the client certificate", o.ConnectionOptions.TLS)
	}
	if o.Credentials != nil {
		t.Error("credentials set without TEMPORAL_API_KEY")
	}

	// Both: the key authenticates, the certificate is presented too.
	c, err = Load(ModeGateway, env("SLACK_BOT_TOKEN", "xoxb-1", "SLACK_APP_TOKEN", "xapp-1", "TEMPORAL_API_KEY", "k",
		"TEMPORAL_TLS_CERT", certPath, "TEMPORAL_TLS_KEY", keyPath))
	if err != nil {
		t.Fatal(err)
	}
	if o, err = c.TemporalClientOptions(); err != nil {
		t.Fatal(err)
	}
	if o.Credentials == nil || o.ConnectionOptions.TLS == nil || len(o.ConnectionOptions.TLS.Certificates) != 1 {
		t.Errorf("API key + mTLS: credentials %v TLS %+v", o.Credentials, o.ConnectionOptions.TLS)
	}
}

func TestTemporalMTLSErrors(t *testing.T) {
	certPath, keyPath := writeKeyPair(t)
	// Half a key pair is refused by Load, naming both variables as the operator spelt them.
	for _, tc := range []struct {
		kv   []string
		want string
	}{
		{[]string{"TEMPORAL_TLS_CERT", certPath}, "TEMPORAL_TLS_CERT and TEMPORAL_TLS_CLIENT_KEY_PATH"},
		{[]string{"TEMPORAL_TLS_KEY", keyPath}, "TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_KEY"},
		{[]string{"TEMPORAL_TLS_CLIENT_CERT_PATH", certPath}, "TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH must be set together"},
	} {
		_, err := Load(ModeWorker, workerEnv(tc.kv...))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s alone: err = %v, want %q", tc.kv[0], err, tc.want)
		}
	}
	// A path that does not exist, or the key in place of the certificate, fails at start with the
	// variables' names.
	for _, pair := range [][2]string{{filepath.Join(t.TempDir(), "missing.pem"), keyPath}, {keyPath, keyPath}} {
		c, err := Load(ModeWorker, workerEnv("TEMPORAL_TLS_CERT", pair[0], "TEMPORAL_TLS_KEY", pair[1]))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.TemporalClientOptions(); err == nil || !strings.Contains(err.Error(), "TEMPORAL_TLS_CERT") {
			t.Errorf("cert %s: err = %v", pair[0], err)
		}
	}
	// A CA file that is not PEM.
	c, err := Load(ModeWorker, workerEnv("TEMPORAL_TLS_SERVER_CA_CERT_PATH", keyPath))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.TemporalClientOptions(); err == nil || !strings.Contains(err.Error(), "TEMPORAL_TLS_SERVER_CA_CERT_PATH") {
		t.Errorf("CA not a certificate: err = %v", err)
	}
}

// Temporal's standard names: mTLS with a private CA and a server name, as a self-hosted cluster
// needs; the old names are aliases that log a deprecation line each, and refuse to disagree with
// the new ones.
func TestTemporalStandardNames(t *testing.T) {
	certPath, keyPath := writeKeyPair(t)
	c, err := Load(ModeWorker, workerEnv("TEMPORAL_TLS_CLIENT_CERT_PATH", certPath, "TEMPORAL_TLS_CLIENT_KEY_PATH", keyPath,
		"TEMPORAL_TLS_SERVER_CA_CERT_PATH", certPath, "TEMPORAL_TLS_SERVER_NAME", "temporal.internal"))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Deprecations) != 0 {
		t.Errorf("deprecations with the standard names: %v", c.Deprecations)
	}
	o, err := c.TemporalClientOptions()
	if err != nil {
		t.Fatal(err)
	}
	tl := o.ConnectionOptions.TLS
	if tl == nil || len(tl.Certificates) != 1 || tl.RootCAs == nil || tl.ServerName != "temporal.internal" || tl.InsecureSkipVerify {
		t.Fatalf("TLS %+v: want the client certificate, the CA, the server name, verification on", tl)
	}
	if !c.TemporalTLS() || c.Redacted()["temporalTLS"] != true {
		t.Error("TemporalTLS is false with TLS settings")
	}

	// The old names: same result, one deprecation line each.
	c, err = Load(ModeWorker, workerEnv("TEMPORAL_TLS_CERT", certPath, "TEMPORAL_TLS_KEY", keyPath))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Deprecations) != 2 || !strings.Contains(c.Deprecations[0], "TEMPORAL_TLS_CERT is deprecated: rename it TEMPORAL_TLS_CLIENT_CERT_PATH") ||
		!strings.Contains(c.Deprecations[1], "TEMPORAL_TLS_KEY is deprecated: rename it TEMPORAL_TLS_CLIENT_KEY_PATH") {
		t.Errorf("deprecations: %q", c.Deprecations)
	}
	// Both names, the same file: fine. Different files: which one wins would be a guess.
	if _, err := Load(ModeWorker, workerEnv("TEMPORAL_TLS_CERT", certPath, "TEMPORAL_TLS_CLIENT_CERT_PATH", certPath, "TEMPORAL_TLS_KEY", keyPath)); err != nil {
		t.Errorf("both names, same file: %v", err)
	}
	_, err = Load(ModeWorker, workerEnv("TEMPORAL_TLS_CERT", certPath, "TEMPORAL_TLS_CLIENT_CERT_PATH", keyPath, "TEMPORAL_TLS_KEY", keyPath))
	if err == nil || !strings.Contains(err.Error(), "TEMPORAL_TLS_CERT and TEMPORAL_TLS_CLIENT_CERT_PATH are both set, to different files") {
		t.Errorf("both names, different files: %v", err)
	}
	// TEMPORAL_TLS=true: TLS against the system's roots, nothing else.
	if c, err = Load(ModeWorker, workerEnv("TEMPORAL_TLS", "true")); err != nil || !c.TemporalTLS() {
		t.Errorf("TEMPORAL_TLS=true: %v, TLS %v", err, c != nil && c.TemporalTLS())
	}
}

// A temporal.toml profile (TEMPORAL_CONFIG_FILE, TEMPORAL_PROFILE), with the variables over it; a
// profile that is not in the file is an error naming both; `lucy dev` ignores the default file
// unless asked, so that its embedded server stays the default.
func TestTemporalProfiles(t *testing.T) {
	file := filepath.Join(t.TempDir(), "temporal.toml")
	toml := `[profile.default]
address = "default.example:7233"

[profile.prod]
address = "prod.example:7233"
namespace = "lucy-prod"
api_key = "prod-key"
`
	if err := os.WriteFile(file, []byte(toml), 0o600); err != nil {
		t.Fatal(err)
	}
	base := []string{"OPENAI_API_KEY", "sk", "SLACK_BOT_TOKEN", "xoxb-1", "TEMPORAL_CONFIG_FILE", file}
	c, err := Load(ModeWorker, env(append(base, "TEMPORAL_PROFILE", "prod")...))
	if err != nil {
		t.Fatal(err)
	}
	o, err := c.TemporalClientOptions()
	if err != nil {
		t.Fatal(err)
	}
	if o.HostPort != "prod.example:7233" || o.Namespace != "lucy-prod" || o.Credentials == nil || o.ConnectionOptions.TLS == nil {
		t.Errorf("profile prod: %q %q credentials %v TLS %v", o.HostPort, o.Namespace, o.Credentials, o.ConnectionOptions.TLS)
	}
	if c.Redacted()["temporalProfile"] != "prod" || strings.Contains(strings.Join(mapValues(c.Redacted()), " "), "prod-key") {
		t.Errorf("Redacted: %v", c.Redacted())
	}
	// The environment wins over the file.
	if c, err = Load(ModeWorker, env(append(base, "TEMPORAL_PROFILE", "prod", "TEMPORAL_NAMESPACE", "other")...)); err != nil || c.TemporalNamespace != "other" {
		t.Errorf("TEMPORAL_NAMESPACE over the profile: %v %v", err, c)
	}
	// The default profile, without TEMPORAL_PROFILE.
	if c, err = Load(ModeWorker, env(base...)); err != nil || c.TemporalAddress != "default.example:7233" || c.TemporalNamespace != DefaultNamespace {
		t.Errorf("default profile: %v %+v", err, c)
	}
	_, err = Load(ModeWorker, env(append(base, "TEMPORAL_PROFILE", "staging")...))
	if err == nil || !strings.Contains(err.Error(), "staging") || !strings.Contains(err.Error(), file) {
		t.Errorf("missing profile: %v", err)
	}
	if err := os.WriteFile(file, []byte("[profile.default\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err = Load(ModeWorker, env(base...)); err == nil || !strings.Contains(err.Error(), file) {
		t.Errorf("broken file: %v", err)
	}
	// `lucy dev` with TEMPORAL_CONFIG_FILE set reads it; TEMPORAL_CONFIG_FILE is what asks.
	if err := os.WriteFile(file, []byte(toml), 0o600); err != nil {
		t.Fatal(err)
	}
	if c, err = Load(ModeDev, env("OPENAI_API_KEY", "sk", "TEMPORAL_CONFIG_FILE", file)); err != nil || c.TemporalAddress != "default.example:7233" {
		t.Errorf("dev with TEMPORAL_CONFIG_FILE: %v %+v", err, c)
	}
}

// `lucy dev` without TEMPORAL_PROFILE or TEMPORAL_CONFIG_FILE runs its embedded server even when
// the user's default temporal.toml names another.
func TestDevIgnoresTheDefaultTemporalToml(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	if err := os.MkdirAll(filepath.Join(home, ".config", "temporalio"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".config", "temporalio", "temporal.toml"), []byte("[profile.default]\naddress = \"elsewhere:7233\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(ModeDev, env("OPENAI_API_KEY", "sk"))
	if err != nil {
		t.Fatal(err)
	}
	if !c.Embedded() {
		t.Errorf("lucy dev uses %q from the default temporal.toml instead of its embedded server", c.TemporalAddress)
	}
	if c, err = Load(ModeWorker, env("OPENAI_API_KEY", "sk", "SLACK_BOT_TOKEN", "xoxb-1")); err != nil || c.TemporalAddress != "elsewhere:7233" {
		t.Errorf("worker with the default temporal.toml: %v %+v", err, c)
	}
}

func TestWorkerStopTimeout(t *testing.T) {
	c, err := Load(ModeWorker, workerEnv())
	if err != nil {
		t.Fatal(err)
	}
	if c.WorkerStopTimeout != DefaultWorkerStopTimeout {
		t.Errorf("default WorkerStopTimeout = %s", c.WorkerStopTimeout)
	}
	if c, err = Load(ModeWorker, workerEnv("LUCY_WORKER_STOP_TIMEOUT", "90s")); err != nil || c.WorkerStopTimeout != 90*time.Second {
		t.Errorf("90s: %v %v", c, err)
	}
	for _, v := range []string{"soon", "-1s", "2h"} {
		if _, err := Load(ModeWorker, workerEnv("LUCY_WORKER_STOP_TIMEOUT", v)); err == nil || !strings.Contains(err.Error(), "LUCY_WORKER_STOP_TIMEOUT") {
			t.Errorf("%q: err = %v", v, err)
		}
	}
}

// Variables is exactly what Load reads: every read is listed (guard panics otherwise), and every
// listed variable is read by at least one mode, so the list has nothing stale that a deploy file
// could set in vain.
func TestVariablesAreWhatLoadReads(t *testing.T) {
	read := map[string]bool{}
	spy := func(base func(string) string) func(string) string {
		return func(k string) string { read[k] = true; return base(k) }
	}
	certPath, keyPath := writeKeyPair(t)
	full := []string{
		"OPENAI_API_KEY", "sk", "OPENAI_BASE_URL", "http://127.0.0.1:11434/v1", "LUCY_MODEL_DEFAULT", "m",
		"SLACK_BOT_TOKEN", "xoxb-1", "SLACK_APP_TOKEN", "xapp-1", "SLACK_USER_TOKEN", "xoxp-1",
		"LUCY_SEARCH_PROVIDER", "brave", "LUCY_SEARCH_API_KEY", "k",
		"LUCY_PAYLOAD_KEYS", "k1:" + strings.Repeat("A", 43) + "=", "LUCY_CODEC_ADDR", "127.0.0.1:8234",
		"TEMPORAL_TLS_CERT", certPath, "TEMPORAL_TLS_KEY", keyPath, "TEMPORAL_TLS", "true",
		"LUCY_WORKSPACE_STORE", "s3://bucket/prefix", "AWS_ACCESS_KEY_ID", "AKIA", "AWS_SECRET_ACCESS_KEY", "secret", "AWS_SESSION_TOKEN", "token",
	}
	for _, m := range []Mode{ModeDev, ModeWorker, ModeGateway, ModeChat, ModeSetup} {
		if _, err := Load(m, spy(env(full...))); err != nil {
			t.Fatalf("%s: %v", m, err)
		}
	}
	for _, v := range Variables() {
		if !read[v] {
			t.Errorf("%s is in Variables but Load never reads it", v)
		}
	}
	if !slices.IsSorted(Variables()) {
		t.Error("Variables is not sorted")
	}
	for _, v := range []string{"TEMPORAL_API_KEY", "LUCY_MODEL_FRONTIER", "LUCY_MAX_OUTPUT_TOKENS_FAST", "LUCY_WORKER_STOP_TIMEOUT"} {
		if !slices.Contains(Variables(), v) {
			t.Errorf("Variables lacks %s", v)
		}
	}
	if slices.Contains(Variables(), "LUCY_SANDBOX_CHILD") {
		t.Error("LUCY_SANDBOX_CHILD is the sandbox's, not an operator's")
	}
}

// The guard is what keeps Load and Variables one list: an unlisted read panics with the name.
func TestGuardRefusesUnlistedVariable(t *testing.T) {
	get := guard(env("LUCY_DATA_DIR", "/data"))
	if get("LUCY_DATA_DIR") != "/data" {
		t.Error("listed variable not passed through")
	}
	defer func() {
		r := recover()
		if r == nil || !strings.Contains(r.(string), "LUCY_NOT_A_SETTING") {
			t.Errorf("recover() = %v, want a panic naming LUCY_NOT_A_SETTING", r)
		}
	}()
	get("LUCY_NOT_A_SETTING")
}

func mapValues(m map[string]any) []string {
	var out []string
	for _, v := range m {
		if s, ok := v.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// writeKeyPair writes a self-signed client certificate and its key as PEM files.
func writeKeyPair(t *testing.T) (certPath, keyPath string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "lucy-test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certPath, keyPath = filepath.Join(dir, "client.pem"), filepath.Join(dir, "client.key")
	if err := os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certPath, keyPath
}

// gzip is for the network: a server on loopback (lucy dev, a worker beside its server) is reached
// without it, any other with the SDK's default.
func TestTemporalCompressionOnlyOffLoopback(t *testing.T) {
	for addr, off := range map[string]bool{
		"127.0.0.1:7233": true, "localhost:7233": true, "[::1]:7233": true,
		"ns.acct.tmprl.cloud:7233": false, "10.0.0.5:7233": false, "temporal-frontend:7233": false,
	} {
		c, err := Load(ModeWorker, workerEnv("TEMPORAL_ADDRESS", addr))
		if err != nil {
			t.Fatal(err)
		}
		o, err := c.TemporalClientOptions()
		if err != nil {
			t.Fatal(err)
		}
		_, none := o.ConnectionOptions.GrpcCompression.(*client.GrpcCompressionNone)
		if none != off || (!off && o.ConnectionOptions.GrpcCompression != nil) {
			t.Errorf("%s: compression %T, want none %v (else the SDK's default)", addr, o.ConnectionOptions.GrpcCompression, off)
		}
	}
}
