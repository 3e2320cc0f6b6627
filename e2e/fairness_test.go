package e2e

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lucy-agent/lucy/internal/fakellm"
)

// With LUCY_MAX_RUNS_PER_TEAM=2, two threads' runs hold the workspace's two slots; a third
// thread's request is told its place in its thread and waits, and starts when one of the two
// finishes (docs/operating.md, "Fairness across teams"). The slots are the run_slots workflow on a
// real server, asked by three lanes.
func TestThirdRunWaitsForASlot(t *testing.T) {
	releaseAlpha, releaseBeta := make(chan struct{}), make(chan struct{})
	s := newStackOpts(t, func(n int, req fakellm.Request) fakellm.Reply {
		text := lastUserText(req)
		switch {
		case strings.Contains(text, "alpha"):
			<-releaseAlpha
		case strings.Contains(text, "beta"):
			<-releaseBeta
		}
		return fakellm.Reply{Content: "Done with it."}
	}, stackOptions{maxRunsPerTeam: 2})
	defer func() {
		select {
		case <-releaseBeta:
		default:
			close(releaseBeta)
		}
	}()
	ask := func(eventID, text string) string {
		ts := s.say(text, "")
		if resp := s.event("app_mention", eventID, text, ts, "", human); resp.StatusCode != http.StatusOK {
			t.Fatalf("gateway answered %d", resp.StatusCode)
		}
		return ts
	}
	alpha := ask("EvA", "<@ULUCY> summarise the alpha launch")
	s.waitFor("alpha's run at the model", 60*time.Second, func() bool { return len(s.llm.Requests()) > 0 })
	beta := ask("EvB", "<@ULUCY> summarise the beta launch")
	time.Sleep(time.Second) // beta's run takes the second slot
	gamma := ask("EvC", "<@ULUCY> summarise the gamma launch")
	told := func() bool {
		for _, m := range s.botMessages(gamma) {
			if strings.Contains(m.Text, "You're 1st in line for this workspace; I'll start as soon as a slot frees.") {
				return true
			}
		}
		return false
	}
	s.waitFor("gamma told its place", 60*time.Second, told)
	time.Sleep(2 * time.Second)
	if s.answered(gamma, "Done with it.") {
		t.Fatal("gamma answered while alpha and beta held both slots")
	}
	close(releaseAlpha)
	s.waitFor("alpha's answer", 60*time.Second, func() bool { return s.answered(alpha, "Done with it.") })
	s.waitFor("gamma's answer once alpha's slot freed", 60*time.Second, func() bool { return s.answered(gamma, "Done with it.") })
	if s.answered(beta, "Done with it.") {
		t.Error("beta answered before it was released")
	}
	close(releaseBeta)
	s.waitFor("beta's answer", 60*time.Second, func() bool { return s.answered(beta, "Done with it.") })
}
