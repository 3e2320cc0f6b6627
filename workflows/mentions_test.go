package workflows

import (
	"slices"
	"testing"
	"time"

	"github.com/lucy-agent/lucy/activities"
	"github.com/lucy-agent/lucy/subagents"
)

// The special mentions of the requester's message travel to the answer and to the tools; a
// sub-agent's tools get its parent's requester's, not those of the task the parent model wrote.
func TestRunPassesTheRequestersMentions(t *testing.T) {
	h := newHarness(t)
	h.route.Tools = append(h.route.Tools, subagents.DelegateResearch)
	h.modelBy = func(wf string, n int, in activities.CallModelInput) (activities.ModelReply, error) {
		if isChild(wf) {
			if in.Transcript.Base == "" {
				return calls(toolCall("c1", "lucy_web_fetch", map[string]any{"url": "https://acme.example/pricing"})), nil
			}
			return text("```json\n" + goodReport + "\n```"), nil
		}
		switch n {
		case 1:
			return calls(toolCall("f1", "lucy_web_fetch", map[string]any{"url": "https://acme.example"})), nil
		case 2:
			return calls(toolCall("d1", subagents.DelegateResearch, map[string]any{"task": "Ask <!channel> and <!everyone> about prices"})), nil
		}
		return text("Done <!here>."), nil
	}
	if _, err := h.runAgent(runInput("<@ULUCY> tell <!here> and <!subteam^S1|@eng> the prices")); err != nil {
		t.Fatal(err)
	}
	want := []string{"here", "subteam^S1"}
	if len(h.toolCalls) != 2 {
		t.Fatalf("tool calls %+v", h.toolCalls)
	}
	for _, c := range h.toolCalls {
		if !slices.Equal(c.AllowedMentions, want) {
			t.Errorf("%s of %s allows %q, want %q", c.Name, c.RunID, c.AllowedMentions, want)
		}
	}
	if len(h.deliveries) != 1 || !slices.Equal(h.deliveries[0].AllowedMentions, want) {
		t.Errorf("deliveries %+v, want the answer to allow %q", h.deliveries, want)
	}
}

// The approval's fingerprint, which the gateway signs with the decision, covers exactly what the
// prompt shows: the same call with other details shown is another proposal.
func TestApprovalFingerprintCoversTheDetailsShown(t *testing.T) {
	fingerprintFor := func(details string) string {
		t.Helper()
		h := newHarness(t)
		h.env.SetStartTime(time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC))
		h.tool = func(in activities.ExecuteToolInput) (activities.ToolResult, error) {
			return activities.ToolResult{Content: "No change made: needs approval.", NeedsApproval: &activities.ApprovalNeed{
				Summary: "I'd like to overwrite `a.md`", Details: details, Guard: "g1",
			}}, nil
		}
		h.model = func(n int, in activities.CallModelInput) (activities.ModelReply, error) {
			if n == 1 {
				return calls(toolCall("w1", "lucy_write_file", map[string]string{"path": "a.md", "content": "new"})), nil
			}
			return text("done"), nil
		}
		h.env.RegisterDelayedCallback(func() {
			h.env.SignalWorkflow(SignalApproval, Approval{Fingerprint: h.fp(0), Approved: false, User: "U1", Source: "button", Sig: "signed"})
		}, time.Minute)
		if _, err := h.runAgent(runInput("rewrite a.md")); err != nil {
			t.Fatal(err)
		}
		if len(h.prompts) != 1 || h.prompts[0].Details != details {
			t.Fatalf("prompts %+v", h.prompts)
		}
		return h.prompts[0].Fingerprint
	}
	a, again, b := fingerprintFor("old: 3 lines, new: 1 line"), fingerprintFor("old: 3 lines, new: 1 line"), fingerprintFor("old: 3 lines, new: 2 lines")
	if a != again {
		t.Fatalf("the same proposal has two fingerprints: %s, %s", a, again)
	}
	if a == b {
		t.Errorf("other details shown, same fingerprint %s: an approval of one would approve the other", a)
	}
}

func TestFingerprintShownCoversEachField(t *testing.T) {
	at := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	base := fingerprintShown("lucy_post_message", `{"text":"a  b"}`, "post", "a  b", "U1", at)
	for name, fp := range map[string]string{
		"arguments, not normalized": fingerprintShown("lucy_post_message", `{"text":"a b"}`, "post", "a  b", "U1", at),
		"summary":                   fingerprintShown("lucy_post_message", `{"text":"a  b"}`, "post!", "a  b", "U1", at),
		"details":                   fingerprintShown("lucy_post_message", `{"text":"a  b"}`, "post", "a b", "U1", at),
		"field boundaries":          fingerprintShown("lucy_post_message", `{"text":"a  b"}`, "posta", "  b", "U1", at),
		"actor":                     fingerprintShown("lucy_post_message", `{"text":"a  b"}`, "post", "a  b", "U2", at),
		"time":                      fingerprintShown("lucy_post_message", `{"text":"a  b"}`, "post", "a  b", "U1", at.Add(time.Nanosecond)),
	} {
		if fp == base {
			t.Errorf("%s: same fingerprint", name)
		}
	}
	if len(base) != 32 {
		t.Errorf("fingerprint %q: want 128 bits in hex", base)
	}
}
