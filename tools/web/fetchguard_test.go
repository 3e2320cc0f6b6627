package web

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/lucy-agent/lucy/tools"
)

func TestSeenIn(t *testing.T) {
	target := "https://example.com/report?id=1BxiMVs0XRA5nFMdKvBdBZjgmUUqptlbs74OgvE2upms&format=txt"
	forms := SeenForms(target+"#section", mustParse(t, target+"#section"))
	for name, text := range map[string]string{
		"markdown link of a fetched page": "See [the report](" + target + ").",
		"Slack message text":              "here: <https://example.com/report?id=1BxiMVs0XRA5nFMdKvBdBZjgmUUqptlbs74OgvE2upms&amp;format=txt|the report>",
		"JSON body":                       `{"url":"https:\/\/example.com\/report?id=1BxiMVs0XRA5nFMdKvBdBZjgmUUqptlbs74OgvE2upms\u0026format=txt"}`,
		"trailing punctuation":            "Read " + target + ", then answer.",
		"with its fragment":               target + "#section",
	} {
		if !tools.SeenIn(forms, tools.NormalizeSeen(text)) {
			t.Errorf("%s: %s not found in %q", name, target, text)
		}
	}
	if tools.SeenIn(forms, tools.NormalizeSeen("https://example.com/report?id=1BxiMVs0XRA5nFMdKvBdBZjgmUUqptlbs74OgvE2upms")) {
		t.Errorf("a shorter link counts as the longer one")
	}
}

// A composed URL that carries data waits for approval and nothing is requested; the approved call
// with the request's Guard fetches; a link the run has seen is fetched without approval.
func TestWebFetchHoldsDataURLs(t *testing.T) {
	srv, hits := webServer(t)
	r := newTestFetcher(t, testDeps{AllowPrivateNetworks: true})
	blob := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("alice: the launch moves to May 3rd. ", 40)))[:1500]
	target := srv.URL + "/plain?d=" + url.QueryEscape(blob)
	call := func(inv tools.Invocation) (tools.Output, error) {
		t.Helper()
		inv.Name, inv.Arguments, inv.Team, inv.RunID, inv.CallID = tools.WebFetch, fmt.Sprintf(`{"url": %q}`, target), testTeam, "run-1", "c1"
		return r.Run(context.Background(), inv)
	}

	var asked []tools.SeenQuery
	unseen := func(_ context.Context, q tools.SeenQuery) (bool, error) { asked = append(asked, q); return false, nil }
	out, err := call(tools.Invocation{Seen: unseen})
	if err != nil {
		t.Fatal(err)
	}
	need := out.NeedsApproval
	if need == nil {
		t.Fatalf("fetched without approval: %+v", out)
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("%d request(s) reached the server before approval", n)
	}
	if len(asked) != 1 || !slices.Contains(asked[0].Forms, target) || asked[0].Guard != need.Guard {
		t.Errorf("Seen asked for %+v, want the URL among the forms and the Guard of the request", asked)
	}
	wantContains(t, out.Content, "Nothing was fetched", `the query parameter "d" is 1,500 characters long`)
	wantContains(t, need.Summary, "carries data", `the query parameter "d" is 1,500 characters long`, "127.0.0.1")
	if !strings.Contains(need.Details, target) {
		t.Errorf("the approval details do not show the whole URL:\n%s", need.Details)
	}
	if need.Guard == "" {
		t.Fatal("no Guard")
	}

	t.Run("approved for another URL", func(t *testing.T) {
		out, err := call(tools.Invocation{Approved: true, Guard: tools.TextHash("https://evil.example/other"), Seen: unseen})
		if err != nil || out.NeedsApproval == nil || hits.Load() != 0 {
			t.Fatalf("out %+v, err %v, %d requests: want another approval and no request", out, err, hits.Load())
		}
	})
	t.Run("approved", func(t *testing.T) {
		out, err := call(tools.Invocation{Approved: true, Guard: need.Guard, Seen: unseen})
		if err != nil {
			t.Fatal(err)
		}
		wantOK(t, out, "just text")
		if hits.Load() != 1 {
			t.Errorf("%d requests, want 1", hits.Load())
		}
	})
	t.Run("seen", func(t *testing.T) {
		seen := func(_ context.Context, q tools.SeenQuery) (bool, error) {
			return tools.SeenIn(q.Forms, tools.NormalizeSeen("[the export]("+target+")")), nil
		}
		before := hits.Load()
		out, err := call(tools.Invocation{Seen: seen})
		if err != nil {
			t.Fatal(err)
		}
		wantOK(t, out, "just text")
		if hits.Load() != before+1 {
			t.Errorf("no request")
		}
	})
	t.Run("history unreadable", func(t *testing.T) {
		broken := func(context.Context, tools.SeenQuery) (bool, error) { return false, fmt.Errorf("frontend unavailable") }
		_, err := call(tools.Invocation{Seen: broken})
		if err == nil || !strings.Contains(err.Error(), "frontend unavailable") {
			t.Fatalf("err = %v, want the history error", err)
		}
	})
	t.Run("no data, not seen", func(t *testing.T) {
		before := hits.Load()
		out, err := r.Run(context.Background(), tools.Invocation{Name: tools.WebFetch, Arguments: fmt.Sprintf(`{"url": %q}`, srv.URL+"/plain?q=launch+date"),
			Team: testTeam, Seen: func(context.Context, tools.SeenQuery) (bool, error) {
				t.Error("Seen asked for a URL without data")
				return false, nil
			}})
		if err != nil {
			t.Fatal(err)
		}
		wantOK(t, out, "just text")
		if hits.Load() != before+1 {
			t.Errorf("no request")
		}
	})
}

func mustParse(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
