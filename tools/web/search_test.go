package web

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/lucy-agent/lucy/tools"
)

// searchProvider is a fake of one provider's HTTP API: it checks the request as the real one would
// and answers with a body in that provider's real format.
func searchProvider(t *testing.T, status int, check func(r *http.Request, body map[string]any), reply string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		if b, _ := io.ReadAll(r.Body); len(b) > 0 {
			if err := json.Unmarshal(b, &body); err != nil {
				t.Errorf("request body is not JSON: %s", b)
			}
		}
		if check != nil {
			check(r, body)
		}
		if status == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", "4")
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, reply)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestWebSearchProviders(t *testing.T) {
	tests := []struct {
		provider, path, reply string
		check                 func(t *testing.T, r *http.Request, body map[string]any)
		want                  []string
	}{
		{SearchOpenRouter, "/chat/completions",
			`{"id":"gen-1","model":"google/gemini-2.5-flash","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant",` +
				`"content":"Acme raised Pro to $22 in May 2026 [acme.example].","annotations":[{"type":"url_citation","url_citation":` +
				`{"url":"https://acme.example/pricing","title":"Pricing - Acme","content":"Pro plan: $22 per user per month","start_index":0,"end_index":40}}]}}],` +
				`"usage":{"prompt_tokens":120,"completion_tokens":30,"total_tokens":150}}`,
			func(t *testing.T, r *http.Request, body map[string]any) {
				if r.Header.Get("Authorization") != "Bearer key-1" || body["model"] != "google/gemini-2.5-flash:online" {
					t.Errorf("auth %q, model %v", r.Header.Get("Authorization"), body["model"])
				}
			},
			[]string{"Acme raised Pro to $22", "1. Pricing - Acme", "https://acme.example/pricing", "Pro plan: $22"}},
		{SearchPerplexity, "/chat/completions",
			`{"id":"p1","model":"sonar","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"It is $22 [1]."}}],` +
				`"citations":["https://acme.example/pricing","https://news.example/acme"],` +
				`"search_results":[{"title":"Acme pricing","url":"https://acme.example/pricing","date":"2026-05-02"}]}`,
			func(t *testing.T, r *http.Request, body map[string]any) {
				if body["model"] != "sonar" {
					t.Errorf("model %v", body["model"])
				}
			},
			[]string{"It is $22", "1. Acme pricing", "(2026-05-02)", "2. https://news.example/acme"}},
		{SearchBrave, "/web/search",
			`{"type":"search","query":{"original":"acme pricing"},"web":{"type":"search","results":[` +
				`{"title":"<strong>Acme</strong> Pricing","url":"https://acme.example/pricing","description":"Plans from <strong>$9</strong>.","age":"May 2, 2026"},` +
				`{"title":"Acme review","url":"https://review.example/acme","description":"A review."}]}}`,
			func(t *testing.T, r *http.Request, body map[string]any) {
				if r.Method != http.MethodGet || r.URL.Query().Get("q") != "acme pricing" || r.URL.Query().Get("count") != "2" ||
					r.Header.Get("X-Subscription-Token") != "key-1" {
					t.Errorf("request %s %s token %q", r.Method, r.URL, r.Header.Get("X-Subscription-Token"))
				}
			},
			[]string{"1. Acme Pricing", "Plans from $9.", "(May 2, 2026)", "2. Acme review"}},
		{SearchTavily, "/search",
			`{"query":"acme pricing","answer":"Acme's Pro plan costs $22.","images":[],"results":[` +
				`{"title":"Pricing","url":"https://acme.example/pricing","content":"Pro $22","score":0.93,"raw_content":null}],"response_time":1.2}`,
			func(t *testing.T, r *http.Request, body map[string]any) {
				if r.Header.Get("Authorization") != "Bearer key-1" || body["query"] != "acme pricing" || body["max_results"] != 2.0 {
					t.Errorf("auth %q body %v", r.Header.Get("Authorization"), body)
				}
			},
			[]string{"Acme's Pro plan costs $22.", "1. Pricing", "https://acme.example/pricing", "Pro $22"}},
	}
	for _, tt := range tests {
		t.Run(tt.provider, func(t *testing.T) {
			srv := searchProvider(t, http.StatusOK, func(r *http.Request, body map[string]any) {
				if r.URL.Path != tt.path {
					t.Errorf("path %s, want %s", r.URL.Path, tt.path)
				}
				tt.check(t, r, body)
			}, tt.reply)
			r := newTestFetcher(t, testDeps{Search: SearchConfig{Provider: tt.provider, APIKey: "key-1", BaseURL: srv.URL}})
			out := mustRun(t, r, tools.WebSearch, `{"query": "acme pricing", "count": 2}`)
			wantOK(t, out, tt.want...)
		})
	}
}

func TestWebSearchFailures(t *testing.T) {
	r := newTestFetcher(t, testDeps{})
	out := mustRun(t, r, tools.WebSearch, `{"query": "x"}`)
	wantToolError(t, out, "web search is not configured", "LUCY_SEARCH_PROVIDER")

	srv := searchProvider(t, http.StatusUnauthorized, nil, `{"error":{"message":"Invalid API key","code":401}}`)
	r = newTestFetcher(t, testDeps{Search: SearchConfig{Provider: SearchOpenRouter, APIKey: "bad", BaseURL: srv.URL}})
	out = mustRun(t, r, tools.WebSearch, `{"query": "x"}`)
	wantToolError(t, out, "refused the request (HTTP 401: Invalid API key)", "LUCY_SEARCH_API_KEY")

	srv = searchProvider(t, http.StatusTooManyRequests, nil, `{"detail":{"error":"rate limited"}}`)
	r = newTestFetcher(t, testDeps{Search: SearchConfig{Provider: SearchTavily, APIKey: "k", BaseURL: srv.URL}})
	_, err := run(t, r, tools.WebSearch, `{"query": "x"}`)
	te := wantTransient(t, err)
	if te.RetryAfter != 4*time.Second {
		t.Errorf("retry after %s", te.RetryAfter)
	}

	srv = searchProvider(t, http.StatusBadGateway, nil, `<html>bad gateway</html>`)
	r = newTestFetcher(t, testDeps{Search: SearchConfig{Provider: SearchBrave, APIKey: "k", BaseURL: srv.URL}})
	_, err = run(t, r, tools.WebSearch, `{"query": "x"}`)
	wantTransient(t, err)

	_, err = run(t, r, tools.WebSearch, `{"query": ""}`)
	wantArgError(t, err, tools.WebSearch, `"query" must not be empty`)
}
