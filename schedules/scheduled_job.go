package schedules

import (
	"errors"
	"fmt"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/lucy-agent/lucy/activities"
	"github.com/lucy-agent/lucy/searchattr"
	"github.com/lucy-agent/lucy/slackwire"
	"github.com/lucy-agent/lucy/workflows"
)

// Recurring jobs. A job is a Temporal Schedule (cron.go); each firing starts ScheduledJob,
// which
//
//  1. takes one of its workspace's job slots (at most MaxJobsPerTeam firings run at once,
//     MAX_BACKGROUND_TASKS), waiting for one up to half the time to the next firing;
//  2. posts a short header where the job reports: a new message in its channel, or a reply in its
//     thread;
//  3. hands the instruction to the lane of that thread as a message from the job's creator, so the
//     firing is an ordinary run: "cancel that" and "what are you working on?" in that thread reach
//     it, approvals go to the creator there, and it queues behind a request already running there;
//  4. waits for the lane to say the run is done (at most until just before the next firing, so that
//     the schedule's overlap policy never skips one), and reports a failure once, briefly.
//
// The next firing happens whatever this one did: the schedule does not pause on failure.

// MaxJobsPerTeam is how many firings of one workspace run at once.
const MaxJobsPerTeam = 5

// Job limits.
const (
	// JobSlotWaitMax bounds how long a firing waits for a slot (and half the time to the next
	// firing bounds it too): a firing that cannot start before the next one is skipped.
	JobSlotWaitMax = time.Hour
	// JobRunMax bounds how long a firing waits for its run: the run's own 4-hour safety net plus
	// time for approvals and a queue ahead of it.
	JobRunMax = 12 * time.Hour
)

// Internal signals of the job slots (the lane's "run ended" to a firing is workflows.SignalJobDone).
const (
	// SignalSlotAcquire and SignalSlotRelease go to a workspace's job slots (the firing's workflow
	// ID); SignalSlotGranted comes back to the firing.
	SignalSlotAcquire = "acquire"
	SignalSlotRelease = "release"
	SignalSlotGranted = "slot_granted"
)

// JobSlotsID is the workflow ID of a workspace's job slots: jobslots:{team}.
func JobSlotsID(team string) string { return "jobslots:" + team }

// ScheduledJob is one firing of a recurring job.
func ScheduledJob(ctx workflow.Context, job JobSpec) error {
	log := workflow.GetLogger(ctx)
	info := workflow.GetInfo(ctx)
	id := info.WorkflowExecution.ID
	// Posts are idempotent by (RunID, key). Two firings in the same second (a trigger beside the
	// schedule) share a workflow ID, so posts name the execution's first run ID too, which a Reset
	// keeps.
	postID := id + "/" + info.FirstRunID
	// How the firing ended, as LucyOutcome (the schedule's action set workspace, channel and
	// creator): "skipped", "unfinished" (it stopped waiting), or its run's outcome.
	outcome := func(string) {}
	if hardened(ctx, workflows.ChangeSearchAttributes) {
		outcome = func(o string) { upsertAttrs(ctx, searchattr.Outcome.ValueSet(o)) }
	}
	if err := job.Validate(); err != nil {
		// A hand-made schedule with a bad input: nothing to post to, so the failure is the
		// workflow's, visible in the Web UI; the schedule goes on.
		return temporal.NewNonRetryableApplicationError(err.Error(), "BadJob", nil)
	}
	log.Info("job.fired", "job", id, "team", job.Team, "name", job.DisplayName())

	// A firing runs as the job's creator, so it may only use the job's channel while the creator
	// still may: someone who left the channel loses their job's access to it. Checked at each
	// firing, before anything is posted or a slot is taken.
	if workflow.GetVersion(ctx, changeJobAccess, workflow.DefaultVersion, 1) >= 1 {
		var acc ScheduleAccess
		if err := workflow.ExecuteActivity(workflows.QuickOptions(ctx, "access"), acts.CheckScheduleAccess, ScheduleAccessInput{
			Team: job.Team, Channel: job.Channel, Creator: job.Creator,
		}).Get(ctx, &acc); err != nil {
			// Not known: this firing does not run on a guess, and says nothing in a channel it
			// may no longer use. The failure is the workflow's, visible in the Web UI; the next
			// firing checks again.
			outcome(workflows.RunFailed)
			return fmt.Errorf("check the creator's access to the job's channel: %w", err)
		}
		if acc.Denied != "" {
			log.Warn("job.skipped_no_access", "job", id, "creator", job.Creator)
			outcome("skipped")
			if strings.HasPrefix(job.Channel, "D") {
				return nil // someone else's DM: nobody there asked for this job
			}
			postJobNote(ctx, job, postID, "no-access", fmt.Sprintf("⏭️ Skipped this run of *%s*: %s Its creator or an "+
				"admin can move it to another channel or delete it.", job.DisplayName(), acc.Denied))
			return nil
		}
	}

	// When the next firing comes, an approval asked in this one expires before it (a job that
	// runs every hour does not wait a day for a click).
	var timing JobTiming
	if job.Cron != "" {
		if err := workflow.ExecuteActivity(workflows.QuickOptions(ctx, "timing"), acts.JobTiming, JobTimingInput{
			Cron: job.Cron, TZ: job.TZ, From: workflow.Now(ctx),
		}).Get(ctx, &timing); err != nil {
			log.Warn("job.timing_failed", "job", id, "error", err)
		}
	}
	untilNext := JobSlotWaitMax * 2
	if !timing.Next.IsZero() {
		untilNext = timing.Next.Sub(workflow.Now(ctx))
	}

	if !acquireJobSlot(ctx, job.Team, id, min(JobSlotWaitMax, untilNext/2)) {
		log.Warn("job.skipped_no_slot", "job", id)
		outcome("skipped")
		postJobNote(ctx, job, postID, "skipped", fmt.Sprintf("⏭️ Skipped this run of *%s*: %d scheduled jobs of this workspace were "+
			"already running. The next run happens as scheduled.", job.DisplayName(), MaxJobsPerTeam))
		return nil
	}
	defer releaseJobSlot(ctx, job.Team, id)

	var header activities.PostResult
	err := workflow.ExecuteActivity(workflows.SlackOptions(ctx, "header"), core.PostMessage, activities.PostInput{
		Team: job.Team, Channel: job.Channel, ThreadTS: job.ThreadTS, RunID: postID, Key: "header",
		Text: "⏰ Scheduled job *" + job.DisplayName() + "*",
	}).Get(ctx, &header)
	if err != nil {
		// Lucy cannot post where the job reports (removed from the channel, a deleted channel):
		// the failure is visible in the Web UI, and the next firing tries again.
		outcome(workflows.RunFailed)
		return fmt.Errorf("post the job's header: %w", err)
	}
	thread := job.ThreadTS
	if thread == "" {
		thread = header.TS
	}
	ttl := workflows.DefaultApprovalTTL
	if untilNext/2 < ttl { // two prompts (one re-prompt) must fit before the next firing
		ttl = max(untilNext/2, time.Minute)
	}
	m := workflows.Message{
		EventID: "job:" + postID, Team: job.Team, Channel: job.Channel, TS: header.TS, ThreadTS: thread,
		User: job.Creator, Text: job.Instruction, Kind: workflows.KindScheduled, Job: id, ApprovalTTL: ttl,
	}
	key := m.Key()
	if err := signalOrStartLane(ctx, key, m); err != nil {
		outcome(workflows.RunFailed)
		return fmt.Errorf("hand the job to its thread: %w", err)
	}

	var done workflows.JobDone
	got := false
	timerCtx, cancelTimer := workflow.WithCancel(ctx)
	sel := workflow.NewSelector(ctx)
	sel.AddReceive(workflow.GetSignalChannel(ctx, workflows.SignalJobDone), func(c workflow.ReceiveChannel, _ bool) {
		c.Receive(ctx, &done)
		got = true
	})
	// Stop waiting before the next firing: with overlap SKIP, a firing still open then would skip
	// it. The run itself goes on in its thread (a run parked for an operator stays parked there).
	wait := JobRunMax
	if d := untilNext - time.Minute; d > 0 && d < wait {
		wait = d
	}
	sel.AddFuture(workflow.NewTimer(timerCtx, wait), func(workflow.Future) {})
	sel.Select(ctx)
	cancelTimer()
	switch {
	case !got:
		outcome("unfinished")
	case done.Status != "":
		outcome(done.Status)
	}
	switch {
	case !got:
		log.Warn("job.run_unfinished", "job", id)
	case done.Status == workflows.RunFailed:
		postJobNote(ctx, job, postID, "failed", "⚠️ This run of *"+job.DisplayName()+"* failed ("+slackwire.Head(done.Reason, 200)+
			"). The next run happens as scheduled.", thread)
	default:
		log.Info("job.done", "job", id, "status", done.Status)
	}
	return nil
}

// postJobNote posts a short note about a firing (skipped, failed), once: the key makes it
// idempotent. thread is where; none means the job's own thread, or the channel.
func postJobNote(ctx workflow.Context, job JobSpec, id, key, text string, thread ...string) {
	ts := job.ThreadTS
	if len(thread) > 0 {
		ts = thread[0]
	}
	if err := workflow.ExecuteActivity(workflows.SlackOptions(ctx, "note-"+key), core.PostMessage, activities.PostInput{
		Team: job.Team, Channel: job.Channel, ThreadTS: ts, RunID: id, Key: "note-" + key, Text: text,
	}).Get(ctx, nil); err != nil {
		workflow.GetLogger(ctx).Warn("job.note_failed", "job", id, "error", err)
	}
}

// signalOrStartLane hands m to its thread's lane: a signal when the lane runs, else the lane is
// started (with m queued) as an abandoned child, so that it lives on after this firing. A lane that
// the gateway starts in between makes the start fail; the signal then goes through.
func signalOrStartLane(ctx workflow.Context, key workflows.LaneKey, m workflows.Message) error {
	id := workflows.LaneID(key)
	for attempt := 0; attempt < 3; attempt++ {
		err := workflow.SignalExternalWorkflow(ctx, id, "", workflows.SignalMessage, m).Get(ctx, nil)
		if err == nil {
			return nil
		}
		cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
			WorkflowID: id, TaskQueue: workflows.TaskQueue, ParentClosePolicy: enumspb.PARENT_CLOSE_POLICY_ABANDON,
			// The lane's own tasks: shared by workspace, at the priority of what started it (a job's
			// firing, or new mail); each run sets its own (workflows/priority.go).
			Priority: workflows.Priority(key.Team, workflows.PriorityOf(m)),
		})
		st := &workflows.LaneState{Queue: []workflows.Message{m}, Seen: m.DedupeKeys()}
		f := workflow.ExecuteChildWorkflow(cctx, workflows.LaneWorkflowName, workflows.LaneInput{Key: key, State: st})
		var exec workflow.Execution
		if err := f.GetChildWorkflowExecution().Get(ctx, &exec); err == nil {
			return nil
		} else if !isAlreadyStarted(err) {
			return err
		}
	}
	return errors.New("the thread's lane neither took the message nor could be started")
}

func isAlreadyStarted(err error) bool {
	var ae *temporal.ChildWorkflowExecutionAlreadyStartedError
	return errors.As(err, &ae)
}

// acquireJobSlot takes one of the workspace's job slots, waiting at most wait. It asks the
// workspace's JobSlots workflow (starting it when none runs) and waits for its grant.
func acquireJobSlot(ctx workflow.Context, team, id string, wait time.Duration) bool {
	slotsID := JobSlotsID(team)
	granted := workflow.GetSignalChannel(ctx, SignalSlotGranted)
	asked := false
	for attempt := 0; attempt < 3 && !asked; attempt++ {
		if workflow.SignalExternalWorkflow(ctx, slotsID, "", SignalSlotAcquire, id).Get(ctx, nil) == nil {
			asked = true
			break
		}
		cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
			WorkflowID: slotsID, TaskQueue: workflows.TaskQueue, ParentClosePolicy: enumspb.PARENT_CLOSE_POLICY_ABANDON,
		})
		f := workflow.ExecuteChildWorkflow(cctx, JobSlotsWorkflow, JobSlotsInput{Team: team, Waiting: []string{id}})
		var exec workflow.Execution
		if err := f.GetChildWorkflowExecution().Get(ctx, &exec); err == nil {
			asked = true
		} else if !isAlreadyStarted(err) {
			workflow.GetLogger(ctx).Warn("job.slots_unavailable", "job", id, "error", err)
			return true // the limit is a courtesy to the workspace: its failure must not stop jobs
		}
	}
	if !asked {
		return true
	}
	ok := false
	timerCtx, cancel := workflow.WithCancel(ctx)
	defer cancel()
	sel := workflow.NewSelector(ctx)
	sel.AddReceive(granted, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, nil); ok = true })
	sel.AddFuture(workflow.NewTimer(timerCtx, max(wait, time.Minute)), func(workflow.Future) {})
	sel.Select(ctx)
	if !ok {
		releaseJobSlot(ctx, team, id) // withdraw the request: a grant that comes later is handed back
	}
	return ok
}

// releaseJobSlot gives the slot back (or withdraws a request), on a disconnected context so that a
// cancelled firing still does it.
func releaseJobSlot(ctx workflow.Context, team, id string) {
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	if err := workflow.SignalExternalWorkflow(dctx, JobSlotsID(team), "", SignalSlotRelease, id).Get(dctx, nil); err != nil {
		workflow.GetLogger(ctx).Warn("job.slot_release_failed", "job", id, "error", err)
	}
}

// JobSlotsInput is the state of a workspace's job slots, carried across continue-as-new.
type JobSlotsInput struct {
	Team    string   `json:"team"`
	Holders []string `json:"holders,omitempty"`
	Waiting []string `json:"waiting,omitempty"`
}

// jobSlotsCheck is how often, while firings wait, the slots check that their holders still run
// (an operator may terminate a firing, which then never gives its slot back).
const jobSlotsCheck = 10 * time.Minute

// JobSlots grants a workspace's job slots, first come first served, MaxJobsPerTeam at a time. It
// ends when nobody holds or waits for one; the next request starts it again.
func JobSlots(ctx workflow.Context, in JobSlotsInput) error {
	log := workflow.GetLogger(ctx)
	acquire := workflow.GetSignalChannel(ctx, SignalSlotAcquire)
	release := workflow.GetSignalChannel(ctx, SignalSlotRelease)
	holders, waiting := in.Holders, in.Waiting
	remove := func(list []string, id string) ([]string, bool) {
		for i, x := range list {
			if x == id {
				return append(list[:i:i], list[i+1:]...), true
			}
		}
		return list, false
	}
	for {
		for len(holders) < MaxJobsPerTeam && len(waiting) > 0 {
			next := waiting[0]
			waiting = waiting[1:]
			if err := workflow.SignalExternalWorkflow(ctx, next, "", SignalSlotGranted, nil).Get(ctx, nil); err != nil {
				log.Warn("job_slots.grant_failed", "job", next, "error", err) // it ended meanwhile
				continue
			}
			holders = append(holders, next)
		}
		pending := acquire.Len() > 0 || release.Len() > 0
		if len(holders) == 0 && len(waiting) == 0 && !pending {
			return nil
		}
		if workflow.GetInfo(ctx).GetContinueAsNewSuggested() && !pending {
			return workflow.NewContinueAsNewError(ctx, JobSlotsWorkflow, JobSlotsInput{Team: in.Team, Holders: holders, Waiting: waiting})
		}
		check := false
		checks := 0
		timerCtx, cancel := workflow.WithCancel(ctx)
		sel := workflow.NewSelector(ctx)
		sel.AddReceive(acquire, func(c workflow.ReceiveChannel, _ bool) {
			var id string
			c.Receive(ctx, &id)
			waiting, _ = remove(waiting, id)
			if _, held := remove(append([]string(nil), holders...), id); !held {
				waiting = append(waiting, id)
			}
		})
		sel.AddReceive(release, func(c workflow.ReceiveChannel, _ bool) {
			var id string
			c.Receive(ctx, &id)
			holders, _ = remove(holders, id)
			waiting, _ = remove(waiting, id)
		})
		if len(waiting) > 0 {
			sel.AddFuture(workflow.NewTimer(timerCtx, jobSlotsCheck), func(workflow.Future) { check = true })
		}
		sel.Select(ctx)
		cancel()
		if check {
			checks++
			var closed []string
			if err := workflow.ExecuteActivity(workflows.QuickOptions(ctx, fmt.Sprintf("closed-%d", checks)), core.ClosedWorkflows, holders).Get(ctx, &closed); err != nil {
				log.Warn("job_slots.check_failed", "error", err)
				continue
			}
			for _, id := range closed {
				log.Warn("job_slots.reclaimed", "job", id)
				holders, _ = remove(holders, id)
			}
		}
	}
}

// SignalOrStartLane hands m to its thread's lane as a job's firing does (signalOrStartLane): the
// new-mail listener hands a mailbox's instruction the same way.
func SignalOrStartLane(ctx workflow.Context, key workflows.LaneKey, m workflows.Message) error {
	return signalOrStartLane(ctx, key, m)
}
