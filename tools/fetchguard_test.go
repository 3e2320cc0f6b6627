package tools

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
)

// Ordinary links, seen or composed, carry no data by URLCarriesData; links that smuggle a page of
// text or an encoded blob do.
func TestURLCarriesData(t *testing.T) {
	blob := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("#general: alice: the launch moves to May 3rd. ", 25)))[:1500]
	words := strings.Repeat("alice said the launch moves to may third and bob agreed ", 2)
	free := []struct{ name, url string }{
		{"Google Docs (44-character ID)", "https://docs.google.com/document/d/1BxiMVs0XRA5nFMdKvBdBZjgmUUqptlbs74OgvE2upms/edit"},
		{"Google Docs export composed from a Docs link", "https://docs.google.com/document/d/1BxiMVs0XRA5nFMdKvBdBZjgmUUqptlbs74OgvE2upms/export?format=txt"},
		{"Google Sheets with gid", "https://docs.google.com/spreadsheets/d/1BxiMVs0XRA5nFMdKvBdBZjgmUUqptlbs74OgvE2upms/edit#gid=0"},
		{"Google Drive file", "https://drive.google.com/file/d/1a2B3c4D5e6F7g8H9i0JkLmNoPqRsTuVw/view?usp=sharing"},
		{"GitHub commit (40 hex)", "https://github.com/temporalio/sdk-go/commit/6b8a1f3e9c2d4b5a7e0f1c3d5e7a9b2c4d6e8f0a"},
		{"GitHub blob at a SHA", "https://github.com/temporalio/sdk-go/blob/6b8a1f3e9c2d4b5a7e0f1c3d5e7a9b2c4d6e8f0a/internal/workflow.go#L120"},
		{"GitHub compare of two SHAs", "https://github.com/o/r/compare/6b8a1f3e9c2d4b5a7e0f1c3d5e7a9b2c4d6e8f0a...0f9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e"},
		{"GitHub issue", "https://github.com/temporalio/sdk-go/issues/1234"},
		{"GitHub search API", "https://api.github.com/search/issues?q=repo:temporalio/sdk-go+is:issue+is:open+label:bug&sort=created&order=desc&per_page=20"},
		{"YouTube", "https://www.youtube.com/watch?v=dQw4w9WgXcQ&t=42s"},
		{"youtu.be", "https://youtu.be/dQw4w9WgXcQ?si=Ab12Cd34Ef56Gh78"},
		{"Jira issue", "https://acme.atlassian.net/browse/PROJ-1234"},
		{"Jira search", "https://acme.atlassian.net/issues/?jql=project%20%3D%20PROJ%20AND%20status%20%3D%20%22In%20Progress%22%20ORDER%20BY%20updated%20DESC"},
		{"search with a few words", "https://www.google.com/search?q=temporal+workflow+versioning+best+practices&hl=en"},
		{"DuckDuckGo question", "https://html.duckduckgo.com/html/?q=how%20do%20I%20replay%20a%20temporal%20workflow%20history%20in%20a%20unit%20test"},
		{"UTM parameters", "https://www.example.com/blog/launch?utm_source=newsletter&utm_medium=email&utm_campaign=spring_sale_2024&utm_content=hero_button"},
		{"weather API", "https://api.open-meteo.com/v1/forecast?latitude=52.52&longitude=13.41&hourly=temperature_2m,relative_humidity_2m,wind_speed_10m&timezone=Europe%2FBerlin"},
		{"Wikipedia API", "https://en.wikipedia.org/w/api.php?action=query&format=json&prop=extracts&exintro=1&explaintext=1&titles=Albert%20Einstein"},
		{"Wikipedia in Japanese", "https://ja.wikipedia.org/wiki/%E6%9D%B1%E4%BA%AC%E9%83%BD"},
		{"news slug", "https://www.nytimes.com/2024/05/12/technology/ai-chatbots-regulation-europe-lawmakers.html"},
		{"Medium post with hex suffix", "https://medium.com/@someone/building-durable-agents-with-temporal-8f3c2a1b9d4e"},
		{"Notion page (32 hex)", "https://www.notion.so/acme/Launch-Plan-1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d"},
		{"Slack permalink", "https://acme.slack.com/archives/C0123ABCD/p1700000000123456"},
		{"X status", "https://x.com/someone/status/1790000000000000000"},
		{"Amazon product", "https://www.amazon.com/dp/B08N5WRWNW/ref=sr_1_1?keywords=usb+c+hub&qid=1700000000&sr=8-1"},
		{"Stack Overflow", "https://stackoverflow.com/questions/12345678/how-to-cancel-a-temporal-activity-from-a-workflow"},
		{"arXiv", "https://arxiv.org/abs/2401.12345v2"},
		{"UUID in a REST path", "https://api.example.com/v2/orders/550e8400-e29b-41d4-a716-446655440000/items"},
		{"CDN host", "https://d111111abcdef8.cloudfront.net/images/logo.png"},
		{"S3 object (without signature)", "https://my-bucket.s3.us-east-1.amazonaws.com/reports/2024/q3-summary.pdf"},
		{"CamelCase API path", "https://api.example.com/GetWorkflowExecutionHistory/InternationalBusinessMachines"},
		{"IP address host", "https://93.184.216.34/index.html"},
	}
	for _, tt := range free {
		t.Run("free/"+tt.name, func(t *testing.T) {
			u := mustParse(t, tt.url)
			if data, why := URLCarriesData(u); data {
				t.Errorf("%s carries data (%s), want free", tt.url, why)
			}
		})
	}
	carries := []struct{ name, url, why string }{
		{"base64 in a query value", "https://evil.example/x?d=" + url.QueryEscape(blob), `the query parameter "d" is 1,500 characters long`},
		{"base64 in the path", "https://evil.example/c/" + strings.ReplaceAll(blob[:300], "/", "_"), "path segment 2 is 300 characters long"},
		{"plain text in a query", "https://evil.example/log?m=" + url.QueryEscape(words), `the query parameter "m" is 112 characters long`},
		{"data spread over short segments", "https://evil.example/" + strings.Repeat("launch-may-third/", 13), "hold 208 characters of data in all"},
		{"data spread over parameters", "https://evil.example/?" + strings.Repeat("a=the+launch+moves&", 12), "of data in all"},
		{"data in a parameter name", "https://evil.example/x?" + url.QueryEscape(blob[:200]), "a query parameter's name is 200 characters long"},
		{"hex in two segments", "https://evil.example/" + fmt.Sprintf("%x/%x", "alice: the launch mov", "es to May 3rd, tell bob"), "look like encoded data"},
		{"a SHA and a Docs ID", "https://evil.example/6b8a1f3e9c2d4b5a7e0f1c3d5e7a9b2c4d6e8f0a/1BxiMVs0XRA5nFMdKvBdBZjgmUUqptlbs74OgvE2upms", "84 characters of it look like encoded data"},
		{"digits", "https://evil.example/n?a=12345678901234567890123456789012345678901234&b=123456789012345678901234567890123456789", "look like encoded data"},
		{"data in subdomains", "https://" + strings.Repeat("bGF1bmNoIG1vdmVzIHRvIE1heSAzcmQ.", 3) + "evil.example/", "look like encoded data"},
		{"long subdomains of words", "https://" + strings.Repeat("thelaunchmovestomaythirdtellbobandcarol.", 6) + "evil.example/", "of data in all"},
		{"non-ASCII counted in bytes", "https://evil.example/" + url.PathEscape(strings.Repeat("東京", 20)), "path segment 1 is 120 characters long"},
	}
	for _, tt := range carries {
		t.Run("carries/"+tt.name, func(t *testing.T) {
			u := mustParse(t, tt.url)
			data, why := URLCarriesData(u)
			if !data {
				t.Fatalf("%s carries no data by URLCarriesData, want it to", tt.url)
			}
			if !strings.Contains(why, tt.why) {
				t.Errorf("why = %q, want it to contain %q", why, tt.why)
			}
			if len(why) > 200 {
				t.Errorf("why repeats the data: %q", why)
			}
		})
	}
}

func mustParse(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestRandomRun(t *testing.T) {
	for run, want := range map[string]bool{
		"6b8a1f3e9c2d4b5a7e0f1c3d5e7a9b2c4d6e8f0a":     true, // SHA
		"1BxiMVs0XRA5nFMdKvBdBZjgmUUqptlbs74OgvE2upms": true, // Docs ID
		"SGVsbG8gd29ybGQgYW5kIGV2ZXJ5b25lIGluIGl0":     true, // base64 of text
		"1790000000000000000":                          true,
		"how-to-cancel-a-temporal-activity-from-a":     false,
		"internationalization":                         false,
		"GetWorkflowExecutionHistory":                  false,
		"temperature_2m":                               false, // too short once the separator is dropped
		"dQw4w9WgXcQ":                                  false,
		"deadbeefcafebabe":                             false, // hex letters only: could be words
	} {
		if got := randomRun(run); got != want {
			t.Errorf("randomRun(%q) = %v, want %v", run, got, want)
		}
	}
}

// A page's links, Slack's escaped text and JSON bodies are matched after trivial normalization.
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
		if !SeenIn(forms, NormalizeSeen(text)) {
			t.Errorf("%s: %s not found in %q", name, target, text)
		}
	}
	if SeenIn(forms, NormalizeSeen("https://example.com/report?id=1BxiMVs0XRA5nFMdKvBdBZjgmUUqptlbs74OgvE2upms")) {
		t.Errorf("a shorter link counts as the longer one")
	}
}

func TestLinkSource(t *testing.T) {
	for name, want := range map[string]bool{
		WebFetch: true, WebSearch: true, GetChannelHistory: true, GetThread: true, SearchSlackHistory: true,
		"mcp__github__get_issue": true, "lucy_custom_jira_search": true,
		RunScript: false, ReadFile: false, WriteFile: false, EditFile: false, "lucy_list_crons": false, PostMessage: false,
	} {
		if got := LinkSource(name); got != want {
			t.Errorf("LinkSource(%s) = %v, want %v", name, got, want)
		}
	}
}

// A composed URL that carries data waits for approval and nothing is requested; the approved call
// with the request's Guard fetches; a link the run has seen is fetched without approval.
func TestWebFetchHoldsDataURLs(t *testing.T) {
	srv, hits := webServer(t)
	r := newTestRegistry(t, Deps{AllowPrivateNetworks: true})
	blob := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("alice: the launch moves to May 3rd. ", 40)))[:1500]
	target := srv.URL + "/plain?d=" + url.QueryEscape(blob)
	call := func(inv Invocation) (Output, error) {
		t.Helper()
		inv.Name, inv.Arguments, inv.Team, inv.RunID, inv.CallID = WebFetch, fmt.Sprintf(`{"url": %q}`, target), testTeam, "run-1", "c1"
		return r.Run(context.Background(), inv)
	}

	var asked []SeenQuery
	unseen := func(_ context.Context, q SeenQuery) (bool, error) { asked = append(asked, q); return false, nil }
	out, err := call(Invocation{Seen: unseen})
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
		out, err := call(Invocation{Approved: true, Guard: textHash("https://evil.example/other"), Seen: unseen})
		if err != nil || out.NeedsApproval == nil || hits.Load() != 0 {
			t.Fatalf("out %+v, err %v, %d requests: want another approval and no request", out, err, hits.Load())
		}
	})
	t.Run("approved", func(t *testing.T) {
		out, err := call(Invocation{Approved: true, Guard: need.Guard, Seen: unseen})
		if err != nil {
			t.Fatal(err)
		}
		wantOK(t, out, "just text")
		if hits.Load() != 1 {
			t.Errorf("%d requests, want 1", hits.Load())
		}
	})
	t.Run("seen", func(t *testing.T) {
		seen := func(_ context.Context, q SeenQuery) (bool, error) {
			return SeenIn(q.Forms, NormalizeSeen("[the export]("+target+")")), nil
		}
		before := hits.Load()
		out, err := call(Invocation{Seen: seen})
		if err != nil {
			t.Fatal(err)
		}
		wantOK(t, out, "just text")
		if hits.Load() != before+1 {
			t.Errorf("no request")
		}
	})
	t.Run("history unreadable", func(t *testing.T) {
		broken := func(context.Context, SeenQuery) (bool, error) { return false, fmt.Errorf("frontend unavailable") }
		_, err := call(Invocation{Seen: broken})
		if err == nil || !strings.Contains(err.Error(), "frontend unavailable") {
			t.Fatalf("err = %v, want the history error", err)
		}
	})
	t.Run("no data, not seen", func(t *testing.T) {
		before := hits.Load()
		out, err := r.Run(context.Background(), Invocation{Name: WebFetch, Arguments: fmt.Sprintf(`{"url": %q}`, srv.URL+"/plain?q=launch+date"),
			Team: testTeam, Seen: func(context.Context, SeenQuery) (bool, error) {
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
