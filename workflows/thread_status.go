package workflows

import (
	"context"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/lucy-agent/lucy/activities"
	"github.com/lucy-agent/lucy/slackwire"
	"github.com/lucy-agent/lucy/workflows/agent"
)

// statusLine is the thread's status line (assistant.threads.setStatus) while a run works
// (changeThreadStatus): it says what the run does at each step and is cleared when the run ends.
// Where Slack does not offer it, the run's first attempt says so and the placeholder's progress
// edits (loop.go, progress) stay the fallback for the rest of the run.
type statusLine struct {
	statusOn    bool      // this execution sets the status line (versioned; never in a sub-agent)
	statusState int       // statusUndecided, statusWorks or statusUnavailable
	statusLast  string    // the status last set ("" when cleared or never set)
	statusAt    time.Time // when a step last set it
	// statusKeep: this execution sends a status it still shows again before Slack's two minutes
	// are up (keepStatus, RunInput.KeepStatus); statusSending: a SetThreadStatus call is in flight,
	// so that the keeper and a step never send at once (Slack could get them in either order);
	// statusWaits: the status was set while the run waited for a person (not kept); statusKeptAt:
	// when the keeper last sent it.
	statusKeep, statusSending, statusWaits bool
	statusKeptAt                           time.Time
}

const (
	statusUndecided = iota
	statusWorks
	statusUnavailable
)

// statusRefresh: Slack removes a status after two minutes without a message ("A two minute timeout
// applies, which will cause the status to be removed if no message has been sent",
// https://docs.slack.dev/reference/methods/assistant.threads.setStatus, argument status): a status
// the run still shows is sent again after this long, with room for the call's retries.
const statusRefresh = 90 * time.Second

// statusThrottle: a "thinking" step that follows another status within this time is not sent (a
// tool step always is: it is what the person wants to see).
const statusThrottle = time.Second

// statusOptions: a status is one cheap call, as a local activity (no task queue round trip); a
// failure after a few quick attempts is logged and the run goes on.
func statusOptions(ctx workflow.Context) workflow.Context {
	return workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: 5 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: 500 * time.Millisecond, BackoffCoefficient: 2, MaximumInterval: 2 * time.Second, MaximumAttempts: 3,
		},
	})
}

// statusShown reports whether the status line works for this run: the placeholder's progress edits
// are then not needed.
func (r *run) statusShown() bool { return r.statusOn && r.statusState == statusWorks }

// showStatus sets the status line to "is <words>". throttle lets a step that follows another within
// statusThrottle be skipped.
func (r *run) showStatus(ctx workflow.Context, words string, throttle bool) {
	if !r.statusOn || r.statusState == statusUnavailable {
		return
	}
	text := ""
	if words != "" {
		text = "is " + words
	}
	if text == r.statusLast && text != "" {
		return
	}
	now := workflow.Now(ctx)
	if throttle && r.statusLast != "" && now.Sub(r.statusAt) < statusThrottle {
		return
	}
	if text == "" && r.statusLast == "" {
		return // nothing to clear
	}
	if r.statusKeep {
		// The keeper may be sending the previous status: this one goes after it. (Await returns at
		// once when nothing is in flight, and adds nothing to the history.)
		_ = workflow.Await(ctx, func() bool { return !r.statusSending })
	}
	r.sendStatus(ctx, text, false)
}

// sendStatus sends text as the status line ("" clears it) and notes how it went; keeping: the
// keeper sends it again (which does not count as a step's status for the throttle).
func (r *run) sendStatus(ctx workflow.Context, text string, keeping bool) {
	now := workflow.Now(ctx)
	r.statusSending = true
	defer func() { r.statusSending = false }()
	var res activities.ThreadStatusResult
	if err := workflow.ExecuteLocalActivity(statusOptions(ctx), a.SetThreadStatus, threadStatusInput(r.in.Message.Key(), text)).Get(ctx, &res); err != nil {
		if ctx.Err() == nil {
			r.log.Warn("agent.status.failed", "run", r.id, "error", err)
		}
		return
	}
	if !res.Supported {
		r.statusState = statusUnavailable
		r.log.Info("agent.status.unavailable", "run", r.id, "code", res.Code)
		return
	}
	r.statusState = statusWorks
	r.statusLast = text
	if !keeping {
		r.statusAt, r.statusWaits = now, !r.pausedAt.IsZero()
	}
}

// keepStatus (RunInput.KeepStatus) keeps the status line up while a step runs longer than Slack
// shows a status without a message: a coroutine sends the status the run still shows again once it
// is statusRefresh old. It waits (no timer) while there is nothing to keep: no status, none
// available, the run paused for a person, or a status set while it was (an approval, a question:
// the prompt posted in the thread says what the run waits for, a wait of hours would otherwise wake
// the run every 90 seconds, and "waiting for your approval" must not come back once answered). A
// run's time limits bound how often it can fire (agent.AbsoluteMax / statusRefresh).
func (r *run) keepStatus(ctx workflow.Context) {
	if !r.statusOn || !r.in.KeepStatus {
		return
	}
	r.statusKeep = true
	keepable := func() bool {
		return r.statusState == statusWorks && r.statusLast != "" && r.pausedAt.IsZero() && !r.statusWaits && !r.statusSending
	}
	workflow.Go(ctx, func(gctx workflow.Context) {
		for {
			if workflow.Await(gctx, keepable) != nil {
				return
			}
			last := r.statusAt
			if r.statusKeptAt.After(last) {
				last = r.statusKeptAt
			}
			if d := last.Add(statusRefresh).Sub(workflow.Now(gctx)); d > 0 {
				if workflow.Sleep(gctx, d) != nil {
					return
				}
				continue // what the run shows, and whether it waits, may have changed meanwhile
			}
			text := r.statusLast
			r.sendStatus(gctx, text, true)
			// A failed call is not tried again at once: the next try comes a refresh later.
			r.statusKeptAt = workflow.Now(gctx)
			r.log.Debug("agent.status.kept", "run", r.id, "status", text)
		}
	})
}

// threadStatusInput sets key's thread's status line to text ("" clears it).
func threadStatusInput(key LaneKey, text string) activities.ThreadStatusInput {
	in := activities.ThreadStatusInput{Team: key.Team, Channel: key.Channel, ThreadTS: key.ThreadTS, Status: text}
	if text != "" {
		in.LoadingMessages = []string{text + "…"}
	}
	return in
}

// What the lane's status line did before it started a run (RunInput.ThreadStatus).
const (
	StatusLineSet         = "set"
	StatusLineUnavailable = "unavailable"
)

// thinkingStatus is the status line of a run that is thinking: the lane's first sign of life.
const thinkingStatus = "is " + agent.StatusThinking

// showThinking is the lane's first sign of life (changeLaneStatus): the status line says Lucy is
// thinking, set in the workflow task that starts the run, alongside the lane's other Slack calls,
// rather than after the run has started and opened (a child start, a workflow task and an activity
// later). The run is told how it went (RunInput.ThreadStatus) and does not set it again. A
// recurring job's run has nobody watching for it.
func (l *lane) showThinking(ctx workflow.Context, m Message) workflow.Future {
	if m.Kind == KindScheduled || !l.hardened || !hardened(ctx, changeLaneStatus) {
		return nil
	}
	return workflow.ExecuteLocalActivity(statusOptions(ctx), a.SetThreadStatus, threadStatusInput(m.Key(), thinkingStatus))
}

// thinkingShown is how the lane's status line went (RunInput.ThreadStatus); a failed call leaves it
// to the run.
func (l *lane) thinkingShown(ctx workflow.Context, f workflow.Future) string {
	if f == nil {
		return ""
	}
	var res activities.ThreadStatusResult
	if err := f.Get(ctx, &res); err != nil {
		l.log.Warn("lane.status_failed", "lane", l.id, "error", err)
		return ""
	}
	if !res.Supported {
		return StatusLineUnavailable
	}
	return StatusLineSet
}

// statusFromLane takes over the status line the lane set before it started the run.
func (r *run) statusFromLane(ctx workflow.Context) {
	switch {
	case !r.statusOn:
	case r.in.ThreadStatus == StatusLineSet:
		r.statusState, r.statusLast, r.statusAt = statusWorks, thinkingStatus, workflow.Now(ctx)
	case r.in.ThreadStatus == StatusLineUnavailable:
		r.statusState = statusUnavailable
	}
}

// stepStatus names a batch of tool calls for the status line.
func stepStatus(calls []activities.ToolCall) string {
	steps := make([]agent.Step, len(calls))
	for i, c := range calls {
		steps[i] = agent.Step{Name: c.Name, Arguments: c.Arguments}
	}
	return agent.StepStatus(steps)
}

// clearStatus clears the status line at the end of the run, on a context that survives its
// cancellation.
func (r *run) clearStatus(ctx workflow.Context) {
	if !r.statusOn || r.statusLast == "" {
		return
	}
	dctx, cancel := workflow.NewDisconnectedContext(ctx)
	defer cancel()
	r.showStatus(dctx, "", false)
}

// assistantThread runs one of the assistant thread's cosmetic calls (suggested prompts, the title)
// as a local activity; a failure is logged, never more.
func (l *lane) assistantThread(ctx workflow.Context, fn func(context.Context, activities.AssistantThreadInput) error, title string) {
	in := activities.AssistantThreadInput{Team: l.key.Team, Channel: l.key.Channel, ThreadTS: l.key.ThreadTS, Title: title}
	if l.key.ThreadTS == MessagesTabThreadTS {
		in.ThreadTS = "" // the DM's prompts (agent_view): no thread_ts, or the call silently fails
	}
	if err := workflow.ExecuteLocalActivity(statusOptions(ctx), fn, in).Get(ctx, nil); err != nil {
		l.log.Warn("lane.assistant_thread_failed", "lane", l.id, "error", err)
	}
}

// messagesTabPromptsEvery: a DM's suggested prompts stay until they are set again, and a person
// opens the DM often; the lane sets them again after this long at most (the team's skills and
// jobs, which they show, change slowly).
const messagesTabPromptsEvery = time.Hour

// offerDMPrompts sets the DM's suggested prompts when a person opens it under agent_view
// (KindMessagesTabOpened), unless this lane set them within messagesTabPromptsEvery. Only the DM's
// own lane (MessagesTabThreadTS) gets such a message; it never reaches a recorded history (the kind
// is newer than every one), so it needs no version.
func (l *lane) offerDMPrompts(ctx workflow.Context) {
	now := workflow.Now(ctx)
	if l.key.ThreadTS != MessagesTabThreadTS || (!l.promptsAt.IsZero() && now.Sub(l.promptsAt) < messagesTabPromptsEvery) {
		return
	}
	l.promptsAt = now
	l.assistantThread(ctx, a.StartAssistantThread, "")
}

// threadTitle is a thread's title from its first request: its words, mentions stripped, cut short.
func threadTitle(text string) string {
	return slackwire.HeadEllipsis(strings.Join(strings.Fields(slackwire.StripMentions(text)), " "), 60)
}
