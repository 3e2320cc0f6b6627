package main

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func TestCheck(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/readyz" {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok"))
	}))
	defer srv.Close()
	if err := check(srv.URL+"/healthz", time.Second); err != nil {
		t.Errorf("/healthz: %v", err)
	}
	if err := check(srv.URL+"/readyz", time.Second); err == nil {
		t.Error("/readyz answered 503, yet check passed")
	}
	if err := check("http://127.0.0.1:1/healthz", time.Second); err == nil {
		t.Error("nothing listening, yet check passed")
	}
	if err := check("https://example.com/", time.Second); err == nil {
		t.Error("https accepted")
	}
}
