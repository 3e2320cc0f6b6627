package activities

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func approvalInput(thread string) ApprovalPromptInput {
	return ApprovalPromptInput{
		Team: "T1", Channel: "C1", ThreadTS: thread, RunID: "run:lane:T1:C1:1.0:1",
		LaneID: "lane:T1:C1:1700000000.000100", Fingerprint: "fp-42", Requester: "U1",
		Summary:   "I'd like to *send an email* to the whole team.",
		Details:   "• To: team@acme.test\n• Subject: Friday demo\n• Body: 3 paragraphs (see above)",
		ExpiresAt: time.Date(2026, 2, 21, 23, 59, 0, 0, time.UTC),
	}
}

func TestApprovalPromptBlocks(t *testing.T) {
	parts, err := approvalParts(approvalInput("1700000000.000100"))
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) != 1 || parts[0].key != "approval-fp-42" {
		t.Fatalf("a short prompt is one message keyed by its fingerprint: %+v", parts)
	}
	text := parts[0].text
	golden(t, "approval_prompt.golden.json", indentJSON(t, parts[0].blocks))
	if !strings.HasPrefix(text, "Approval needed: I'd like to") {
		t.Errorf("fallback text = %q", text)
	}

	resolved, text := resolvedApprovalBlocks(ResolveApprovalInput{Summary: "I'd like to *send an email* to the whole team.", Outcome: "Approved by <@U1>"})
	golden(t, "approval_resolved.golden.json", indentJSON(t, resolved))
	if !strings.HasSuffix(text, "Approved by <@U1>") {
		t.Errorf("resolved fallback text = %q", text)
	}
}

func TestApprovalPromptPostAndResolve(t *testing.T) {
	f := newSlackFixture(t)
	root := f.say(t, "U1", "", "<@ULUCY> email the team")
	in := approvalInput(root)
	var res PostResult
	if err := f.run(t, f.a.PostApprovalPrompt, in, &res); err != nil {
		t.Fatal(err)
	}
	bots := f.botMessages(root)
	if len(bots) != 1 || bots[0].TS != res.TS || metaKey(bots[0]) != "approval-fp-42" {
		t.Fatalf("bot messages = %+v", bots)
	}
	// What Slack stored is the golden layout, and the buttons carry what the gateway decodes.
	if want, err := os.ReadFile(filepath.Join("testdata", "approval_prompt.golden.json")); err != nil || !bytes.Equal(indentJSON(t, bots[0].Blocks), want) {
		t.Errorf("stored blocks differ from the golden file (%v):\n%s", err, indentJSON(t, bots[0].Blocks))
	}
	var stored []map[string]any
	if err := json.Unmarshal(bots[0].Blocks, &stored); err != nil {
		t.Fatal(err)
	}
	actions := stored[len(stored)-1]
	if actions["block_id"] != ApprovalBlockID {
		t.Errorf("last block = %v", actions)
	}
	els := actions["elements"].([]any)
	for i, want := range []struct{ id, style string }{{ApproveActionID, "primary"}, {DenyActionID, "danger"}} {
		b := els[i].(map[string]any)
		var v ApprovalValue
		if err := json.Unmarshal([]byte(b["value"].(string)), &v); err != nil || v.Lane != in.LaneID || v.Fingerprint != "fp-42" {
			t.Errorf("button %d value %v (%v)", i, b["value"], err)
		}
		if b["action_id"] != want.id || b["style"] != want.style {
			t.Errorf("button %d = %v", i, b)
		}
	}
	ctxBlock := indentJSON(t, stored[len(stored)-2])
	wantCtx := fmt.Sprintf("Only <@U1> or an admin can approve · expires <!date^%d^{time}|23:59 UTC>", in.ExpiresAt.Unix())
	if !strings.Contains(string(ctxBlock), wantCtx) {
		t.Errorf("context block = %s", ctxBlock)
	}

	if err := f.run(t, f.a.ResolveApprovalPrompt, ResolveApprovalInput{Team: "T1", Channel: "C1", TS: res.TS, Summary: in.Summary, Outcome: "Denied by <@U1>"}, nil); err != nil {
		t.Fatal(err)
	}
	m := f.botMessages(root)[0]
	if b := string(indentJSON(t, m.Blocks)); strings.Contains(b, "lucy_approve") || !strings.Contains(b, "Denied by <@U1>") || !strings.Contains(m.Text, "Denied") {
		t.Errorf("resolved prompt = %s / %q", m.Blocks, m.Text)
	}
}
