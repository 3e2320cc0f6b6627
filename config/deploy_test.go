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
	// Half a key pair is refused by Load, naming both variables.
	for _, kv := range [][]string{{"TEMPORAL_TLS_CERT", certPath}, {"TEMPORAL_TLS_KEY", keyPath}} {
		_, err := Load(ModeWorker, workerEnv(kv...))
		if err == nil || !strings.Contains(err.Error(), "TEMPORAL_TLS_CERT and TEMPORAL_TLS_KEY") {
			t.Errorf("%s alone: err = %v", kv[0], err)
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
		"TEMPORAL_TLS_CERT", certPath, "TEMPORAL_TLS_KEY", keyPath,
		"LUCY_WORKSPACE_STORE", "s3://bucket/prefix", "AWS_ACCESS_KEY_ID", "AKIA", "AWS_SECRET_ACCESS_KEY", "secret", "AWS_SESSION_TOKEN", "token",
	}
	for _, m := range []Mode{ModeDev, ModeWorker, ModeGateway, ModeChat} {
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
