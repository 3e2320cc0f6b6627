package workflows

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// A workspace's cap on concurrent agent runs (LUCY_MAX_RUNS_PER_TEAM; docs/operating.md, "Fairness
// across teams"). The slots of one workspace are the state of one workflow, RunSlots, with the ID
// RunSlotsID(team): every lane of the workspace, on whatever worker, asks it for a slot before it
// starts a run and gives the slot back when the run ends. Slots are held by lanes, which are durable:
// a worker that crashes while a lane holds one only delays the lane, which goes on on another worker
// and gives the slot back when its run ends (completed, failed, cancelled or terminated: the lane sees
// its child close in every case). Only a lane that is itself terminated never gives its slot back;
// while requests wait, RunSlots checks every RunSlotsCheck that its holders still run and takes back
// the slots of those that do not.
const (
	// RunSlotsWorkflowName is the workflow type of a workspace's run slots.
	RunSlotsWorkflowName = "run_slots"
	// SignalSlotAcquire asks a workspace's run slots for a slot (SlotRequest).
	SignalSlotAcquire = "run_slot_acquire"
	// SignalSlotRelease gives a slot back, or withdraws a request still waiting (SlotRelease).
	SignalSlotRelease = "run_slot_release"
	// SignalSlot is the run slots' answer to a lane (SlotReply): granted, or its place in line.
	SignalSlot = "run_slot"
	// RunSlotsCheck is how often, while requests wait, the slots check that their holders still run.
	RunSlotsCheck = time.Minute
)

// RunSlotsID is the workflow ID of a workspace's run slots: runslots:{team}.
func RunSlotsID(team string) string { return "runslots:" + team }

// SlotRequest is a lane's request for a run slot. A lane has at most one request or slot at a time,
// so the lane's ID names it; Request (the message's ts) tells a late answer from the current one.
type SlotRequest struct {
	Lane    string `json:"lane"`
	Request string `json:"request"`
	// User is who asked: the next free slot goes to the person holding fewest.
	User string `json:"user,omitempty"`
	// Priority is the run's priority key (PriorityOf): lower goes first.
	Priority int `json:"priority,omitempty"`
	// Cap is LUCY_MAX_RUNS_PER_TEAM as the asking lane's worker has it: the newest request's wins.
	Cap int `json:"cap"`
}

// SlotRelease gives back the slot of (or withdraws the request of) Lane's Request.
type SlotRelease struct {
	Lane    string `json:"lane"`
	Request string `json:"request"`
}

// SlotReply answers a SlotRequest: Granted, or Place in line (1 is next).
type SlotReply struct {
	Request string `json:"request"`
	Granted bool   `json:"granted,omitempty"`
	Place   int    `json:"place,omitempty"`
}

// RunSlotsInput is a workspace's run slots, carried across continue-as-new.
type RunSlotsInput struct {
	Team    string        `json:"team"`
	Cap     int           `json:"cap"`
	Holders []SlotRequest `json:"holders,omitempty"`
	Waiting []SlotRequest `json:"waiting,omitempty"`
}

// nextInLine orders waiting requests: by priority key (a person's message before a scheduled job),
// then the person holding fewer slots first (a person's share within the workspace: Temporal's
// fairness has one level, the workspace), then first come. It returns the order as indexes.
func nextInLine(holders, waiting []SlotRequest) []int {
	held := map[string]int{}
	for _, h := range holders {
		held[h.User]++
	}
	order := make([]int, len(waiting))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(i, j int) int {
		a, b := waiting[i], waiting[j]
		if pa, pb := priorityRank(a.Priority), priorityRank(b.Priority); pa != pb {
			return pa - pb
		}
		return held[a.User] - held[b.User]
	})
	return order
}

// priorityRank is a priority key's rank: 0 is Temporal's default, the middle level.
func priorityRank(k int) int {
	if k == 0 {
		return PriorityScheduled
	}
	return k
}

// RunSlots grants a workspace's run slots, Cap at a time, in nextInLine's order, and tells each
// request that has to wait its place. It ends when nobody holds or waits for a slot; the next
// request starts it again.
func RunSlots(ctx workflow.Context, in RunSlotsInput) error {
	log := workflow.GetLogger(ctx)
	acquire := workflow.GetSignalChannel(ctx, SignalSlotAcquire)
	release := workflow.GetSignalChannel(ctx, SignalSlotRelease)
	st := in
	reply := func(r SlotRequest, rep SlotReply) bool {
		err := workflow.SignalExternalWorkflow(ctx, r.Lane, "", SignalSlot, rep).Get(ctx, nil)
		if err != nil {
			log.Warn("run_slots.reply_failed", "lane", r.Lane, "error", err) // the lane ended meanwhile
		}
		return err == nil
	}
	drop := func(list []SlotRequest, lane, request string) ([]SlotRequest, bool) {
		for i, x := range list {
			if x.Lane == lane && (request == "" || x.Request == request) {
				return slices.Delete(slices.Clone(list), i, i+1), true
			}
		}
		return list, false
	}
	checks := 0
	// nextCheck is when the holders are next checked: a deadline, not a fresh timer per signal, so
	// that a busy workspace's requests cannot put the check off for ever.
	var nextCheck time.Time
	for {
		for (st.Cap <= 0 || len(st.Holders) < st.Cap) && len(st.Waiting) > 0 {
			next := st.Waiting[nextInLine(st.Holders, st.Waiting)[0]]
			st.Waiting, _ = drop(st.Waiting, next.Lane, next.Request)
			if reply(next, SlotReply{Request: next.Request, Granted: true}) {
				st.Holders = append(st.Holders, next)
			}
		}
		pending := acquire.Len() > 0 || release.Len() > 0
		if len(st.Holders) == 0 && len(st.Waiting) == 0 && !pending {
			return nil
		}
		if workflow.GetInfo(ctx).GetContinueAsNewSuggested() && !pending {
			return workflow.NewContinueAsNewError(ctx, RunSlotsWorkflowName, st)
		}
		check := false
		timerCtx, cancel := workflow.WithCancel(ctx)
		sel := workflow.NewSelector(ctx)
		sel.AddReceive(acquire, func(c workflow.ReceiveChannel, _ bool) {
			var r SlotRequest
			c.Receive(ctx, &r)
			if r.Cap > 0 {
				st.Cap = r.Cap
			}
			// A lane asks only when it holds nothing and waits for nothing: what these lists still
			// say of it is stale (a lane terminated and started again), and goes.
			st.Holders, _ = drop(st.Holders, r.Lane, "")
			st.Waiting, _ = drop(st.Waiting, r.Lane, "")
			if st.Cap <= 0 || len(st.Holders) < st.Cap {
				if reply(r, SlotReply{Request: r.Request, Granted: true}) {
					st.Holders = append(st.Holders, r)
				}
				return
			}
			st.Waiting = append(st.Waiting, r)
			place := slices.Index(nextInLine(st.Holders, st.Waiting), len(st.Waiting)-1) + 1
			if !reply(r, SlotReply{Request: r.Request, Place: place}) {
				st.Waiting = st.Waiting[:len(st.Waiting)-1]
			}
		})
		sel.AddReceive(release, func(c workflow.ReceiveChannel, _ bool) {
			var r SlotRelease
			c.Receive(ctx, &r)
			st.Holders, _ = drop(st.Holders, r.Lane, r.Request)
			st.Waiting, _ = drop(st.Waiting, r.Lane, r.Request)
		})
		if len(st.Waiting) == 0 {
			nextCheck = time.Time{}
		} else {
			if nextCheck.IsZero() {
				nextCheck = workflow.Now(ctx).Add(RunSlotsCheck)
			}
			sel.AddFuture(workflow.NewTimer(timerCtx, max(nextCheck.Sub(workflow.Now(ctx)), time.Millisecond)), func(workflow.Future) { check = true })
		}
		sel.Select(ctx)
		cancel()
		if !check {
			continue
		}
		nextCheck = time.Time{}
		checks++
		lanes := make([]string, 0, len(st.Holders)+len(st.Waiting))
		for _, h := range slices.Concat(st.Holders, st.Waiting) {
			lanes = append(lanes, h.Lane)
		}
		var closed []string
		if err := workflow.ExecuteActivity(quick(ctx, "closed-"+strconv.Itoa(checks)), a.ClosedWorkflows, lanes).Get(ctx, &closed); err != nil {
			log.Warn("run_slots.check_failed", "error", err)
			continue
		}
		for _, lane := range closed {
			log.Warn("run_slots.reclaimed", "lane", lane)
			st.Holders, _ = drop(st.Holders, lane, "")
			st.Waiting, _ = drop(st.Waiting, lane, "")
		}
	}
}

// laneSlot is a lane's side of its workspace's run slots: the message waiting for a slot, or the
// request whose slot the running run holds.
type laneSlot struct {
	// waiting is the message whose run waits for a slot (nil: none).
	waiting *Message
	// held is the request (message ts) whose slot the current run holds ("": none).
	held string
	ch   workflow.ReceiveChannel
}

// admit decides whether m's run may start now. Without a cap (or before changeRunSlots) it may. With
// one, the lane asks its workspace's run slots and waits for the answer among its other signals
// (onSlot): it returns false, and m waits in l.slot.waiting.
func (l *lane) admit(ctx workflow.Context, m Message) bool {
	if !l.slots {
		return true
	}
	var limit int
	if err := workflow.ExecuteLocalActivity(local(ctx), a.RunCap).Get(ctx, &limit); err != nil {
		// The cap is a courtesy to the other teams: a failure to read it must not stop the thread.
		l.log.Warn("lane.run_cap_unknown", "lane", l.id, "error", err)
		return true
	}
	if limit <= 0 {
		return true
	}
	r := SlotRequest{Lane: l.id, Request: m.TS, User: m.User, Priority: PriorityOf(m), Cap: limit}
	if err := askSlot(ctx, l.key.Team, r); err != nil {
		l.log.Warn("lane.run_slots_unavailable", "lane", l.id, "error", err)
		return true
	}
	l.slot.waiting = &m
	return false
}

// askSlot signals r to the workspace's run slots, starting them (as an abandoned child, so that
// they outlive this lane) when none run. Slots started by another lane in between make the start
// fail; the signal then goes through.
func askSlot(ctx workflow.Context, team string, r SlotRequest) error {
	id := RunSlotsID(team)
	for attempt := 0; attempt < 3; attempt++ {
		if workflow.SignalExternalWorkflow(ctx, id, "", SignalSlotAcquire, r).Get(ctx, nil) == nil {
			return nil
		}
		cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
			WorkflowID: id, TaskQueue: TaskQueue, ParentClosePolicy: enums.PARENT_CLOSE_POLICY_ABANDON,
			// The slots decide who runs next: ahead of the runs themselves.
			Priority: Priority(team, PriorityInteractive),
		})
		f := workflow.ExecuteChildWorkflow(cctx, RunSlotsWorkflowName, RunSlotsInput{Team: team, Cap: r.Cap, Waiting: []SlotRequest{r}})
		var exec workflow.Execution
		err := f.GetChildWorkflowExecution().Get(ctx, &exec)
		if err == nil {
			return nil
		}
		var ae *temporal.ChildWorkflowExecutionAlreadyStartedError
		if !errors.As(err, &ae) {
			return err
		}
	}
	return fmt.Errorf("the run slots %s neither took the request nor could be started", id)
}

// onSlot takes the run slots' answer: a grant starts the waiting run; a place in line is told in the
// thread. An answer to a request the lane no longer has (it was cancelled meanwhile) is given back.
func (l *lane) onSlot(ctx workflow.Context, rep SlotReply) {
	w := l.slot.waiting
	if w == nil || w.TS != rep.Request {
		if rep.Granted {
			l.releaseSlot(ctx, rep.Request)
		}
		return
	}
	if !rep.Granted {
		l.post(ctx, *w, "queued-"+w.TS, placeText(rep.Place))
		return
	}
	l.slot.waiting = nil
	l.slot.held = w.TS
	l.startRun(ctx, *w)
}

// placeText is what a request over the workspace's cap is told.
func placeText(place int) string {
	return "This workspace has as many requests running as it may at once. You're " + ordinal(place) +
		" in line for this workspace; I'll start as soon as a slot frees."
}

// ordinal is 1st, 2nd, 3rd, 4th, …, 11th, 12th, 13th, 21st.
func ordinal(n int) string {
	suffix := "th"
	if n%100 < 11 || n%100 > 13 {
		switch n % 10 {
		case 1:
			suffix = "st"
		case 2:
			suffix = "nd"
		case 3:
			suffix = "rd"
		}
	}
	return strconv.Itoa(n) + suffix
}

// releaseSlot gives back the slot of (or withdraws) request, on a disconnected context so that it
// is given back whatever happens to the lane's own context.
func (l *lane) releaseSlot(ctx workflow.Context, request string) {
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	err := workflow.SignalExternalWorkflow(dctx, RunSlotsID(l.key.Team), "", SignalSlotRelease, SlotRelease{Lane: l.id, Request: request}).Get(dctx, nil)
	if err != nil {
		l.log.Warn("lane.slot_release_failed", "lane", l.id, "error", err)
	}
}

// runEnded gives back the slot the ended run held.
func (l *lane) runEnded(ctx workflow.Context) {
	if l.slot.held != "" {
		l.releaseSlot(ctx, l.slot.held)
		l.slot.held = ""
	}
}

// withdrawWaiting drops the request waiting for a slot (its person cancelled it) and reports whether
// there was one.
func (l *lane) withdrawWaiting(ctx workflow.Context) bool {
	w := l.slot.waiting
	if w == nil {
		return false
	}
	l.slot.waiting = nil
	l.releaseSlot(ctx, w.TS)
	l.log.Info("lane.slot_request_withdrawn", "lane", l.id, "request", w.TS)
	return true
}
