package workflows

import (
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/temporal"

	"github.com/lucy-agent/lucy/searchattr"
)

// upserts records every UpsertTypedSearchAttributes of the workflows under test (a lane's
// children included), as "Key=value" strings sorted by key, one entry per upsert.
func (h *harness) recordUpserts() func() []string {
	var mu sync.Mutex
	var got []string
	h.env.OnUpsertTypedSearchAttributes(mock.Anything).Run(func(args mock.Arguments) {
		sa := args.Get(0).(temporal.SearchAttributes)
		var kv []string
		for _, k := range searchattr.All {
			if v, ok := sa.GetKeyword(k); ok {
				kv = append(kv, k.GetName()+"="+v)
			}
		}
		mu.Lock()
		got = append(got, strings.Join(kv, " "))
		mu.Unlock()
	}).Return(nil)
	return func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), got...) }
}

// A run upserts its intent and tier once routed, then its outcome and the tier it ended on.
func TestRunUpsertsIntentTierAndOutcome(t *testing.T) {
	h := newHarness(t)
	h.route.Intent, h.route.Tier = "lookup", "fast"
	upserts := h.recordUpserts()
	if _, err := h.runAgent(runInput("what is the capital of France?")); err != nil {
		t.Fatal(err)
	}
	want := []string{"LucyIntent=lookup LucyTier=fast", "LucyTier=fast LucyOutcome=completed"}
	if got := upserts(); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("upserts %q, want %q", got, want)
	}
}

// A run that fails still says so: `LucyOutcome='failed'` finds it in the Web UI.
func TestFailedRunUpsertsFailedOutcome(t *testing.T) {
	h := newHarness(t)
	h.threadErr = temporal.NewNonRetryableApplicationError("no such channel", "SlackPermanent", nil)
	upserts := h.recordUpserts()
	if _, err := h.runAgent(runInput("what is the capital of France?")); err == nil {
		t.Fatal("the run did not fail")
	}
	got := upserts()
	if len(got) == 0 || got[len(got)-1] != "LucyTier=default LucyOutcome=failed" {
		t.Fatalf("upserts %q, want the last to say failed", got)
	}
}

// A lane upserts its workspace and channel; its run adds its own.
func TestLaneUpsertsWorkspaceAndChannel(t *testing.T) {
	h := newHarness(t)
	upserts := h.recordUpserts()
	h.runLane(msg("100.1", "U1", "<@ULUCY> summarize the launch plan"))
	got := upserts()
	want := "LucyWorkspace=" + laneKey.Team + " LucyChannel=" + laneKey.Channel
	if len(got) == 0 || got[0] != want {
		t.Fatalf("upserts %q, want the lane's %q first", got, want)
	}
	if got[len(got)-1] != "LucyTier=default LucyOutcome=completed" {
		t.Errorf("upserts %q: the run's outcome is missing", got)
	}
}

// What a run starts with: IDs in the attributes, the words in the memo and the summary.
func TestRunStartAttributesMemoAndSummary(t *testing.T) {
	in := runInput("<@ULUCY> what is   the capital of France? " + strings.Repeat("and more ", 20))
	in.UserName, in.ChannelName = "Ada Lovelace", "general"
	sa := runStartAttrs(in)
	for k, want := range map[string]string{"LucyWorkspace": "T1", "LucyChannel": "C1", "LucyUser": "U1"} {
		if v, ok := sa.GetKeyword(temporal.NewSearchAttributeKeyKeyword(k)); !ok || v != want {
			t.Errorf("%s = %q, want %q", k, v, want)
		}
	}
	if sa.Size() != 3 {
		t.Errorf("%d attributes at start, want 3 (no text in search attributes)", sa.Size())
	}
	s := runSummary(in)
	if !strings.HasPrefix(s, "Ada Lovelace: what is the capital of France?") || len([]rune(s)) > summaryLen || strings.Contains(s, "\n") {
		t.Errorf("summary %q", s)
	}
	m := runMemo(in)
	if !strings.HasPrefix(m["objective"].(string), "what is the capital of France?") || m["lane"] != LaneID(in.Lane) || m["channel"] != "general" {
		t.Errorf("memo %v", m)
	}
}
