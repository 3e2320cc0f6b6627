package schedules

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/slack-go/slack"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/lucy-agent/lucy/activities"
	"github.com/lucy-agent/lucy/localslack"
	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/tools/web"
)

// firing is what one monitor firing did.
type firing struct {
	posts []activities.PostInput
	saved []MonitorState
	// order is "check", "post", "save" as the activities ran.
	order []string
	err   error
}

// fireMonitor runs one firing of the monitor workflow in the test environment: the check is the
// real one (Manager.CheckMonitor against the test's server), the post and the save to the
// schedule are recorded. postErr, when set, fails every post.
func fireMonitor(t *testing.T, reg *Manager, spec MonitorSpec, last MonitorState, postErr error) firing {
	t.Helper()
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(sdklog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(Monitor, workflow.RegisterOptions{Name: MonitorWorkflow})
	var f firing
	acts := &Activities{Manager: reg}
	env.RegisterActivityWithOptions(func(ctx context.Context, in MonitorInput) (MonitorResult, error) {
		f.order = append(f.order, "check")
		return acts.CheckMonitor(ctx, in)
	}, activity.RegisterOptions{Name: "CheckMonitor"})
	env.RegisterActivityWithOptions(func(ctx context.Context, in activities.PostInput) (activities.PostResult, error) {
		f.order = append(f.order, "post")
		if postErr != nil {
			return activities.PostResult{}, postErr
		}
		f.posts = append(f.posts, in)
		return activities.PostResult{TS: "300.1"}, nil
	}, activity.RegisterOptions{Name: "PostMessage"})
	env.RegisterActivityWithOptions(func(ctx context.Context, in MonitorInput) error {
		f.order = append(f.order, "save")
		f.saved = append(f.saved, in.Last)
		return nil
	}, activity.RegisterOptions{Name: "SaveMonitorState"})
	env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: "heartbeat:" + spec.Team + ":" + spec.Slug + "-2026-05-01T18:00:00Z"})
	env.ExecuteWorkflow(MonitorWorkflow, spec, last)
	if !env.IsWorkflowCompleted() {
		t.Fatal("the firing did not complete")
	}
	f.err = env.GetWorkflowError()
	return f
}

func monitorRegistry(t *testing.T) *Manager {
	_, base := monitorSlack(t)
	return monitorRegistryOn(base)
}

// monitorSlack is a Slack workspace for monitors: team T1, where U1 and U2 are in #ops (C9). Each
// firing checks that the creator may still use the monitor's channel.
func monitorSlack(t *testing.T) (*localslack.Server, string) {
	return localslack.NewTestServer(t, localslack.Options{
		Team:     "T1",
		Users:    []localslack.User{{ID: "U1", Name: "ada"}, {ID: "U2", Name: "bob"}},
		Channels: []localslack.Channel{{ID: "C9", Name: "ops"}},
	})
}

// monitorRegistryOn is the schedules domain whose Slack is the workspace at base.
func monitorRegistryOn(base string) *Manager {
	bot := slack.New(localslack.DefaultToken, slack.OptionAPIURL(base))
	// The test's site is on loopback; production refuses private addresses.
	return New(Deps{Slack: testSlack(func(string) tools.SlackAPI { return bot }, nil),
		Web: web.New(nil, tools.AllowAllPrivate(), web.SearchConfig{})})
}

// A monitor posts as its creator: once the creator has left its channel, the firing checks nothing,
// says once in the channel that the monitor stopped, and stays quiet after that.
func TestMonitorStopsWhenItsCreatorLeavesTheChannel(t *testing.T) {
	var hits atomic.Int32
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer site.Close()
	slackSrv, base := monitorSlack(t)
	reg := monitorRegistryOn(base)
	spec := MonitorSpec{Team: "T1", Slug: "api", Name: "api", Channel: "C9", Creator: "U1", EveryMinutes: 5,
		Check: MonitorCheck{Kind: CheckHTTP, URL: site.URL}}

	f := fireMonitor(t, reg, spec, MonitorState{Status: "ok"}, nil)
	if f.err != nil || len(f.posts) != 0 || hits.Load() != 1 {
		t.Fatalf("a member's monitor: err %v, posts %v, checks %d", f.err, f.posts, hits.Load())
	}

	slackSrv.SetMembers("C9", []string{"U2", localslack.DefaultBotUserID})
	reg = monitorRegistryOn(base) // a fresh registry: no membership cached
	f = fireMonitor(t, reg, spec, MonitorState{Status: "ok"}, nil)
	if f.err != nil || len(f.posts) != 1 || !strings.Contains(f.posts[0].Text, "stopped checking") ||
		!strings.Contains(f.posts[0].Text, "<@U1> is not a member of <#C9>") {
		t.Fatalf("after the creator left: err %v, posts %+v", f.err, f.posts)
	}
	if hits.Load() != 1 {
		t.Errorf("the monitor still checked its URL after its creator left (%d checks)", hits.Load())
	}
	f = fireMonitor(t, reg, spec, f.saved[len(f.saved)-1], nil)
	if f.err != nil || len(f.posts) != 0 {
		t.Errorf("the next firing: err %v, posts %+v (want none: said once)", f.err, f.posts)
	}
}

// A monitor's firings carry the state from one to the next through the schedule (here: the state
// one firing saves is the next one's input). Only a change posts, once, with the evidence; the
// state is saved after the post.
func TestMonitorFiringsAlertOnChange(t *testing.T) {
	var status atomic.Int32
	status.Store(200)
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(int(status.Load()))
		fmt.Fprint(w, "hello")
	}))
	t.Cleanup(site.Close)
	reg := monitorRegistry(t)
	spec := MonitorSpec{Team: "T1", Slug: "api", Name: "api", Channel: "C9", ThreadTS: "500.1", Creator: "U1", EveryMinutes: 5,
		Check: MonitorCheck{Kind: CheckHTTP, URL: site.URL}}

	codes := []int32{200, 200, 503, 500, 200, 200}
	wantPost := []string{"", "", "is failing: HTTP 503", "", "is OK again: HTTP 200", ""}
	wantStatus := []string{"ok", "ok", "alert", "alert", "ok", "ok"}
	var last MonitorState
	for i, code := range codes {
		status.Store(code)
		f := fireMonitor(t, reg, spec, last, nil)
		if f.err != nil {
			t.Fatalf("firing %d: %v", i, f.err)
		}
		if len(f.saved) != 1 {
			t.Fatalf("firing %d saved %d states", i, len(f.saved))
		}
		st := f.saved[0]
		if st.Status != wantStatus[i] {
			t.Errorf("firing %d: status %q, want %q", i, st.Status, wantStatus[i])
		}
		switch {
		case wantPost[i] == "" && len(f.posts) != 0:
			t.Errorf("firing %d posted %q though nothing changed", i, f.posts[0].Text)
		case wantPost[i] != "":
			if len(f.posts) != 1 || !strings.Contains(f.posts[0].Text, wantPost[i]) {
				t.Fatalf("firing %d posted %+v, want one post with %q", i, f.posts, wantPost[i])
			}
			p := f.posts[0]
			if p.Team != "T1" || p.Channel != "C9" || p.ThreadTS != "500.1" || p.Key != "alert" ||
				!strings.HasPrefix(p.RunID, "heartbeat:T1:api-2026-05-01T18:00:00Z/") {
				// The test environment has no first run ID; the e2e test runs on a real server.
				t.Errorf("firing %d: the alert is not keyed to the firing's workflow: %+v", i, p)
			}
			if got := strings.Join(f.order, ","); got != "check,post,save" {
				t.Errorf("firing %d ran %s; the state must be saved after the alert is posted", i, got)
			}
		}
		// Since moves only when the status does.
		if i > 0 && st.Status == last.Status && !st.Since.Equal(last.Since) {
			t.Errorf("firing %d: since moved from %s to %s without a change", i, last.Since, st.Since)
		}
		last = st
	}
}

// A firing whose alert cannot be posted fails without saving the new state, so the next firing
// still sees the change and alerts then: a change is never lost. A monitor that fails from its
// first check says so at once.
func TestMonitorFiringKeepsTheChangeWhenThePostFails(t *testing.T) {
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down", http.StatusBadGateway)
	}))
	t.Cleanup(site.Close)
	reg := monitorRegistry(t)
	spec := MonitorSpec{Team: "T1", Slug: "gw", Name: "gateway", Channel: "C9", Creator: "U1",
		Check: MonitorCheck{Kind: CheckHTTP, URL: site.URL, ExpectStatus: 200}}
	up := MonitorState{Status: "ok"}

	f := fireMonitor(t, reg, spec, up, temporal.NewNonRetryableApplicationError("channel_not_found", "SlackError", nil))
	if f.err == nil || !strings.Contains(f.err.Error(), "post the alert") {
		t.Fatalf("a failed post: workflow error %v", f.err)
	}
	if len(f.saved) != 0 {
		t.Fatalf("the state was saved though the alert was not posted: %+v", f.saved)
	}
	f = fireMonitor(t, reg, spec, up, nil)
	if f.err != nil || len(f.posts) != 1 || !strings.Contains(f.posts[0].Text, "HTTP 502") || !strings.Contains(f.posts[0].Text, "expected 200") {
		t.Fatalf("the next firing: err %v, posts %+v", f.err, f.posts)
	}

	f = fireMonitor(t, reg, spec, MonitorState{}, nil)
	if f.err != nil || len(f.posts) != 1 || !strings.Contains(f.posts[0].Text, "from its first check") {
		t.Fatalf("first check already failing: err %v, posts %+v", f.err, f.posts)
	}
}

// A schedule whose action lost its arguments (an operator's edit) fails at once, checking nothing.
func TestMonitorRefusesAnIncompleteSpec(t *testing.T) {
	f := fireMonitor(t, monitorRegistry(t), MonitorSpec{Team: "T1", Slug: "x", Check: MonitorCheck{Kind: CheckHTTP, URL: "https://example.com"}}, MonitorState{}, nil)
	var app *temporal.ApplicationError
	if f.err == nil || !errors.As(f.err, &app) || app.Type() != "BadMonitor" || !app.NonRetryable() {
		t.Fatalf("error %v, want a non-retryable BadMonitor", f.err)
	}
	if len(f.order) != 0 {
		t.Errorf("activities ran: %v", f.order)
	}
}
