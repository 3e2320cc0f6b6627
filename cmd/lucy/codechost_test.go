package main

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/lucy-agent/lucy/codec"
	"github.com/lucy-agent/lucy/config"
)

// The codec endpoint of `lucy dev` decrypts for whoever reaches it: a DNS-rebinding page, which
// sends its own name in Host, is refused before anything is decoded; the Web UI, which calls it as
// 127.0.0.1 or localhost, is answered.
func TestDevCodecRefusesForeignHost(t *testing.T) {
	keys, err := codec.ParseKeys("k1:" + strings.Repeat("A", 43) + "=")
	if err != nil {
		t.Fatal(err)
	}
	cfg := &config.Config{PayloadKeys: keys, UIPort: 8233}
	endpoint, stop, err := serveCodec(cfg, true, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	u, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	const body = `{"payloads":[{"metadata":{"encoding":"anNvbi9wbGFpbg=="},"data":"ImhlbGxvIg=="}]}`
	post := func(host string) (int, string) {
		t.Helper()
		req, err := http.NewRequest("POST", endpoint+"/encode", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, host := range []string{"evil.example", "evil.example:" + u.Port(), "localhost.evil.example"} {
		if code, b := post(host); code != http.StatusForbidden || strings.Contains(b, "payloads") {
			t.Errorf("Host %s: %d %.200s, want 403 and nothing encoded", host, code, b)
		}
	}
	for _, host := range []string{u.Host, "localhost:" + u.Port(), "[::1]:" + u.Port()} {
		if code, b := post(host); code != http.StatusOK || !strings.Contains(b, "binary/encrypted") && !strings.Contains(b, "YmluYXJ5L2VuY3J5cHRlZA") {
			t.Errorf("Host %s: %d %.200s, want 200 with an encrypted payload", host, code, b)
		}
	}
}

// `lucy worker` with the Web UI's login configured serves a codec endpoint that refuses a caller
// without a token; `lucy dev` with the same configuration serves its loopback endpoint as before,
// without login.
func TestWorkerCodecRequiresLoginDevDoesNot(t *testing.T) {
	keys, err := codec.ParseKeys("k1:" + strings.Repeat("A", 43) + "=")
	if err != nil {
		t.Fatal(err)
	}
	const body = `{"payloads":[{"metadata":{"encoding":"anNvbi9wbGFpbg=="},"data":"ImhlbGxvIg=="}]}`
	login := &codec.Login{Issuer: "http://127.0.0.1:1/unreachable", Audience: "temporal-ui"}
	for _, dev := range []bool{false, true} {
		cfg := &config.Config{PayloadKeys: keys, UIPort: 8233, CodecAddr: "127.0.0.1:0", CodecLogin: login}
		endpoint, stop, err := serveCodec(cfg, dev, zerolog.Nop())
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.Post(endpoint+"/encode", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		want := http.StatusUnauthorized
		if dev {
			want = http.StatusOK
		}
		if resp.StatusCode != want {
			t.Errorf("dev=%v: %d, want %d", dev, resp.StatusCode, want)
		}
		stop()
	}
}
