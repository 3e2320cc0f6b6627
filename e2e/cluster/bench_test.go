package cluster

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/lucy-agent/lucy/internal/fakellm"
	"github.com/lucy-agent/lucy/localslack"
)

// convRate is the rate BenchmarkClusterConversationsPerSecond sends new conversations at. Package
// e2e sends at 200 a second, far above what `lucy dev` answers (about 20): a backlog on a single
// process costs nothing but time. On the cluster a backlog that deep makes the gateway's hand-off
// miss its acknowledgement budget (Slack then retries), so the default is the highest rate this
// machine took without a refusal: 100 a second cost 225 retries of 300 events (deploy/README.md).
var convRate = flag.Int("conv-rate", 50, "new conversations a second in BenchmarkClusterConversationsPerSecond")

// The benchmarks of docs/benchmarks.md (package e2e, on the embedded server `lucy dev` runs) on the
// cluster instead: PostgreSQL, the Temporal server process, two workers and a gateway, all on this
// machine's CPUs. Like those, they print figures and never fail on speed.

// loopTurn reads a request of the agent loop: which turn it is (the assistant replies so far), or,
// for the supervisor's and a summary's calls, the reply to give (as package e2e's loopTurn).
func loopTurn(req fakellm.Request) (turn int, side *fakellm.Reply) {
	if len(req.Messages) > 0 && req.Messages[0].Role == "system" && strings.Contains(req.Messages[0].Text(), "You supervise") {
		return 0, &fakellm.Reply{Content: "C"}
	}
	if len(req.Tools) == 0 {
		return 0, &fakellm.Reply{Content: "summary"}
	}
	for _, m := range req.Messages {
		if m.Role == "assistant" {
			turn++
		}
	}
	return turn, nil
}

// turnClock answers a run of `turns` turns, one local tool call per turn, at once, and records when
// the loop's calls arrive (package e2e's turnClock with an instant model).
type turnClock struct {
	turns       int
	mu          sync.Mutex
	calls       int
	first, last time.Time
}

func (c *turnClock) handle(_ int, req fakellm.Request) fakellm.Reply {
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	turn, side := loopTurn(req)
	if side != nil {
		return *side
	}
	if c.first.IsZero() {
		c.first = now
	}
	c.last = now
	if turn >= c.turns-1 {
		return fakellm.Reply{Content: "All done: nothing needs your attention."}
	}
	name, args := []string{"lucy_current_time", "lucy_list_files", "lucy_read_file"}[turn%3], `{}`
	switch name {
	case "lucy_current_time":
		args = `{"timezone":"Europe/Paris"}`
	case "lucy_read_file":
		args = `{"path":"notes.md"}`
	}
	return fakellm.Reply{ToolCalls: []fakellm.ToolCall{fakellm.Call(fmt.Sprint("c", turn), name, args)}}
}

// BenchmarkClusterTurnOverhead is the orchestration time of one turn (a model call and one tool
// call) of a 50-turn run, with a model and tools that answer at once: package e2e's
// BenchmarkTurnOverhead on the cluster.
func BenchmarkClusterTurnOverhead(b *testing.B) {
	for range b.N {
		clock := &turnClock{turns: 50}
		c := startCluster(b, clock.handle)
		dir := filepath.Join(c.dataDir, "workspaces", team)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "notes.md"), []byte(strings.Repeat("note line\n", 200)), 0o644); err != nil {
			b.Fatal(err)
		}
		root := c.say("<@ULUCY> check the time, the files and the notes, one per step")
		c.mustEvent(b, "Ev-bench", root)
		waitFor(b, "the run's answer", 5*time.Minute, func() bool { return c.answers(root, "All done") == 1 })
		clock.mu.Lock()
		wall := clock.last.Sub(clock.first)
		perTurn := wall / time.Duration(clock.turns-1)
		calls := clock.calls
		clock.mu.Unlock()
		b.Logf("%d turns in %s: %.1f ms of orchestration per turn (%d model calls)", clock.turns, wall.Round(time.Millisecond), ms(perTurn), calls)
		b.ReportMetric(ms(perTurn), "ms/turn")
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// slackDelivery is what the gateway's answers to one event cost: Slack's retries.
type slackDelivery struct {
	retries     atomic.Int64 // deliveries after the first
	undelivered atomic.Int64 // events still refused after Slack's last retry
}

// deliver sends one app_mention the way Slack's Events API does: an answer other than 200, or none
// within 3 s, is a failure, and Slack sends the same event again (same body, same event_id) with
// X-Slack-Retry-Num 1, 2 and 3 and the reason in X-Slack-Retry-Reason, then gives up. Slack retries
// almost at once, then after 1 and 5 minutes; the benchmark waits 1 s each time, which only makes a
// retried event arrive sooner, while the backlog that refused it is still there.
func (c *cluster) deliver(d *slackDelivery, id, text, ts string) {
	body, _ := json.Marshal(map[string]any{
		"token": "x", "team_id": team, "api_app_id": localslack.DefaultAppID, "type": "event_callback", "event_id": id,
		"event_time": time.Now().Unix(),
		"event":      map[string]any{"type": "app_mention", "user": human, "text": text, "ts": ts, "channel": channel, "event_ts": ts},
	})
	client := &http.Client{Timeout: 3 * time.Second}
	reason := ""
	for attempt := 0; attempt <= 3; attempt++ {
		if attempt > 0 {
			d.retries.Add(1)
			time.Sleep(time.Second)
		}
		req, _ := http.NewRequest(http.MethodPost, "http://"+c.gwAddr+"/slack/events", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		localslack.Sign(req, body, secret, time.Now())
		if attempt > 0 {
			req.Header.Set("X-Slack-Retry-Num", strconv.Itoa(attempt))
			req.Header.Set("X-Slack-Retry-Reason", reason)
		}
		resp, err := client.Do(req)
		if err != nil {
			reason = "http_timeout"
			continue
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return
		}
		reason = "http_error"
	}
	d.undelivered.Add(1)
}

// BenchmarkClusterConversationsPerSecond: 300 new conversations at -conv-rate a second, each
// delivered as Slack delivers (retried on a 5xx or a timeout) and answered by an instant model:
// conversations answered end to end per second (package e2e's BenchmarkConversationsPerSecond on
// the cluster), with what it cost in retries, and every conversation answered exactly once.
func BenchmarkClusterConversationsPerSecond(b *testing.B) {
	rate := *convRate
	for range b.N {
		c := startCluster(b, func(int, fakellm.Request) fakellm.Reply { return fakellm.Reply{Content: "Answer to question."} })
		var d slackDelivery
		n := 300
		threads := make([]string, n)
		tick := time.NewTicker(time.Second / time.Duration(rate))
		start := time.Now()
		var wg sync.WaitGroup
		for i := range n {
			<-tick.C
			wg.Add(1)
			go func() {
				defer wg.Done()
				text := fmt.Sprintf("<@ULUCY> question number %d", i)
				_, ts, err := c.person.PostMessage(channel, slack.MsgOptionText(text, false))
				if err != nil {
					b.Error(err)
					return
				}
				threads[i] = ts
				c.deliver(&d, fmt.Sprintf("Ev-load-%d", i), text, ts)
			}()
		}
		tick.Stop()
		wg.Wait()
		sent := time.Since(start)

		// Every thread answered, or 3 minutes without: then the missing ones are lost.
		pending := map[string]bool{}
		for _, ts := range threads {
			pending[ts] = true
		}
		deadline := time.Now().Add(3 * time.Minute)
		for len(pending) > 0 && time.Now().Before(deadline) {
			for ts := range pending {
				if c.answers(ts, "Answer to question") > 0 {
					delete(pending, ts)
				}
			}
			if len(pending) > 0 {
				time.Sleep(50 * time.Millisecond)
			}
		}
		last := time.Now()
		lost, dup := 0, 0
		for _, ts := range threads {
			switch k := c.answers(ts, "Answer to question"); {
			case k == 0:
				lost++
			case k > 1:
				dup++
			}
		}
		answered := float64(n-lost) / last.Sub(start).Seconds()
		b.Logf("%d conversations sent at %d/s (in %.1f s), answered in %.1f s: %.1f a second end to end; %d Slack retries, %d events refused after the last retry; %d lost, %d duplicated",
			n, rate, sent.Seconds(), last.Sub(start).Seconds(), answered, d.retries.Load(), d.undelivered.Load(), lost, dup)
		b.ReportMetric(answered, "conversations/s")
		b.ReportMetric(float64(d.retries.Load()), "retries")
		b.ReportMetric(float64(lost), "lost")
		b.ReportMetric(float64(dup), "duplicated")
	}
}
