package workflows

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/lucy-agent/lucy/activities"
)

// slotsEnv runs a workspace's RunSlots alone: the lanes are the signals the test sends and the
// answers the mock records (lane -> answers, in order); closed says which lanes ClosedWorkflows finds gone.
type slotsEnv struct {
	env     *testsuite.TestWorkflowEnvironment
	mu      sync.Mutex
	answers map[string][]SlotReply
	closed  map[string]bool
	checked int
}

func newSlotsEnv(t *testing.T) *slotsEnv {
	var suite testsuite.WorkflowTestSuite
	s := &slotsEnv{env: suite.NewTestWorkflowEnvironment(), answers: map[string][]SlotReply{}, closed: map[string]bool{}}
	s.env.RegisterWorkflowWithOptions(RunSlots, workflow.RegisterOptions{Name: RunSlotsWorkflowName})
	acts := &activities.Activities{}
	s.env.RegisterActivityWithOptions(acts.ClosedWorkflows, activity.RegisterOptions{Name: "ClosedWorkflows"})
	s.env.OnActivity("ClosedWorkflows", mock.Anything, mock.Anything).Return(func(_ context.Context, ids []string) ([]string, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.checked++
		var out []string
		for _, id := range ids {
			if s.closed[id] {
				out = append(out, id)
			}
		}
		return out, nil
	})
	s.env.OnSignalExternalWorkflow(mock.Anything, mock.Anything, "", SignalSlot, mock.Anything).Return(
		func(_, id, _, _ string, arg any) error {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.answers[id] = append(s.answers[id], arg.(SlotReply))
			return nil
		})
	return s
}

func (s *slotsEnv) at(d time.Duration, f func()) { s.env.RegisterDelayedCallback(f, d) }

func (s *slotsEnv) ask(lane, user string, prio int) func() {
	return func() {
		s.env.SignalWorkflow(SignalSlotAcquire, SlotRequest{Lane: lane, Request: "ts-" + lane, User: user, Priority: prio, Cap: 2})
	}
}

func (s *slotsEnv) give(lane string) func() {
	return func() { s.env.SignalWorkflow(SignalSlotRelease, SlotRelease{Lane: lane, Request: "ts-" + lane}) }
}

// granted reports whether lane was granted, and at which of its answers.
func (s *slotsEnv) granted(lane string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.ContainsFunc(s.answers[lane], func(r SlotReply) bool { return r.Granted })
}

func (s *slotsEnv) place(lane string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.answers[lane] {
		if !r.Granted {
			return r.Place
		}
	}
	return 0
}

// Two runs hold a workspace's two slots; the requests after them are told their place and get the
// slots as the runs end. Within the line, a person's message goes before a scheduled job, and the
// person holding fewest slots before one holding more, whoever came first.
func TestRunSlotsTellPlaceAndGrantInOrder(t *testing.T) {
	s := newSlotsEnv(t)
	s.at(0, s.ask("A", "U1", PriorityInteractive))
	s.at(time.Second, s.ask("B", "U2", PriorityInteractive))
	s.at(2*time.Second, s.ask("C", "U3", PriorityScheduled))   // a job: behind every person in line
	s.at(3*time.Second, s.ask("D", "U1", PriorityInteractive)) // U1 holds A already
	s.at(4*time.Second, s.ask("E", "U4", PriorityInteractive)) // U4 holds nothing: ahead of U1's D
	s.at(5*time.Second, func() {
		if !s.granted("A") || !s.granted("B") {
			t.Error("A and B not granted at once")
		}
		for _, lane := range []string{"C", "D", "E"} {
			if s.granted(lane) {
				t.Errorf("%s granted while two hold the workspace's two slots", lane)
			}
		}
		if s.place("C") != 1 || s.place("D") != 1 || s.place("E") != 1 {
			t.Errorf("places told C %d, D %d, E %d; want 1 (alone), 1 (a person's message goes before a job), 1 (its person holds nothing, D's holds A)", s.place("C"), s.place("D"), s.place("E"))
		}
	})
	s.at(30*time.Second, s.give("B")) // U1 still holds A: U4's E goes before U1's D
	s.at(31*time.Second, func() {
		if !s.granted("E") || s.granted("D") || s.granted("C") {
			t.Errorf("after B ended: E %v, D %v, C %v; want E only", s.granted("E"), s.granted("D"), s.granted("C"))
		}
	})
	s.at(32*time.Second, s.give("A"))
	s.at(33*time.Second, func() {
		if !s.granted("D") || s.granted("C") {
			t.Errorf("after A ended: D %v, C %v; want D (a person) before C (a job)", s.granted("D"), s.granted("C"))
		}
	})
	s.at(34*time.Second, s.give("E"))
	s.at(35*time.Second, func() {
		if !s.granted("C") {
			t.Error("C not granted when E ended")
		}
	})
	s.at(36*time.Second, s.give("D"))
	s.at(37*time.Second, s.give("C"))
	s.env.ExecuteWorkflow(RunSlotsWorkflowName, RunSlotsInput{Team: "T1"})
	if !s.env.IsWorkflowCompleted() || s.env.GetWorkflowError() != nil {
		t.Fatalf("run slots did not end once nobody held or waited: %v", s.env.GetWorkflowError())
	}
}

// A lane that is terminated while it holds a slot never gives it back: while someone waits, the
// slots check their holders every RunSlotsCheck and take back those of lanes no longer running.
func TestRunSlotsReclaimASlotWhoseLaneIsGone(t *testing.T) {
	s := newSlotsEnv(t)
	s.at(0, s.ask("A", "U1", PriorityInteractive))
	s.at(time.Second, s.ask("B", "U2", PriorityInteractive))
	s.at(2*time.Second, s.ask("C", "U3", PriorityInteractive))
	s.at(3*time.Second, func() {
		s.mu.Lock()
		s.closed["A"] = true // terminated by an operator: its run was cancelled, nobody released
		s.mu.Unlock()
	})
	s.at(RunSlotsCheck-time.Second, func() {
		if s.granted("C") {
			t.Error("C granted before the check")
		}
	})
	s.at(RunSlotsCheck+5*time.Second, func() {
		if !s.granted("C") {
			t.Errorf("C not granted after the check took A's slot back (checks: %d)", s.checked)
		}
	})
	s.at(RunSlotsCheck+6*time.Second, s.give("B"))
	s.at(RunSlotsCheck+7*time.Second, s.give("C"))
	s.env.ExecuteWorkflow(RunSlotsWorkflowName, RunSlotsInput{Team: "T1"})
	if !s.env.IsWorkflowCompleted() || s.env.GetWorkflowError() != nil {
		t.Fatalf("run slots: %v", s.env.GetWorkflowError())
	}
}

// capped makes the lane's worker say LUCY_MAX_RUNS_PER_TEAM=2 and records what the lane signals to
// its workspace's run slots.
func capped(h *harness) (asked *[]SlotRequest, released *[]SlotRelease) {
	asked, released = &[]SlotRequest{}, &[]SlotRelease{}
	h.env.OnActivity("RunCap", mock.Anything).Return(2, nil)
	h.env.OnSignalExternalWorkflow(mock.Anything, RunSlotsID("T1"), "", SignalSlotAcquire, mock.Anything).Return(
		func(_, _, _, _ string, arg any) error {
			h.mu.Lock()
			defer h.mu.Unlock()
			*asked = append(*asked, arg.(SlotRequest))
			return nil
		})
	h.env.OnSignalExternalWorkflow(mock.Anything, RunSlotsID("T1"), "", SignalSlotRelease, mock.Anything).Return(
		func(_, _, _, _ string, arg any) error {
			h.mu.Lock()
			defer h.mu.Unlock()
			*released = append(*released, arg.(SlotRelease))
			return nil
		})
	return asked, released
}

// A request over the workspace's cap is told its place in its thread, starts when the slots grant
// it, and gives the slot back when its run ends.
func TestLaneWaitsForARunSlotAndIsToldItsPlace(t *testing.T) {
	h := newHarness(t)
	asked, released := capped(h)
	h.runLane(msg("100.1", "U1", "summarise the incident channel"),
		signalAt(5*time.Second, SignalSlot, SlotReply{Request: "100.1", Place: 3}),
		step{at: 6 * time.Second, do: func(h *harness) {
			if len(h.delivered) != 0 {
				t.Errorf("a run answered before its slot was granted: %v", h.delivered)
			}
			v, err := h.env.QueryWorkflow(QueryStatus)
			var st LaneStatus
			if err == nil {
				err = v.Get(&st)
			}
			if err != nil || !st.WaitingForSlot || len(st.Queued) != 1 || st.Queued[0].TS != "100.1" {
				t.Errorf("status while waiting: %+v, %v", st, err)
			}
			if got := FormatStatus(st, nil, time.Time{}); !strings.Contains(got, "waiting in line for this workspace") {
				t.Errorf("status text while waiting: %q", got)
			}
		}},
		signalAt(time.Minute, SignalSlot, SlotReply{Request: "100.1", Granted: true}))
	if len(*asked) != 1 || (*asked)[0] != (SlotRequest{Lane: LaneID(laneKey), Request: "100.1", User: "U1", Priority: PriorityInteractive, Cap: 2}) {
		t.Errorf("asked %+v", *asked)
	}
	told := false
	for _, p := range h.posts {
		told = told || strings.Contains(p.Text, "You're 3rd in line for this workspace; I'll start as soon as a slot frees.")
	}
	if !told {
		t.Errorf("the waiting request was not told its place: %+v", h.posts)
	}
	if len(h.delivered) != 1 {
		t.Errorf("delivered %v, want the run's answer once granted", h.delivered)
	}
	if len(*released) != 1 || (*released)[0] != (SlotRelease{Lane: LaneID(laneKey), Request: "100.1"}) {
		t.Errorf("released %+v, want the run's slot given back when it ended", *released)
	}
}

// A run cancelled while it holds a slot gives it back; a request cancelled while it waits
// withdraws itself, and a grant that comes too late is handed back.
func TestLaneCancelFreesItsRunSlot(t *testing.T) {
	t.Run("running", func(t *testing.T) {
		h := newHarness(t)
		h.modelMock.After(time.Hour)
		_, released := capped(h)
		h.runLane(msg("100.1", "U1", "draft the quarterly plan"),
			signalAt(time.Second, SignalSlot, SlotReply{Request: "100.1", Granted: true}),
			signalAt(time.Minute, SignalCancel, CancelRequest{Channel: "C1", TS: "100.5", User: "U1", Text: "cancel that"}))
		if len(h.delivered) != 0 {
			t.Errorf("delivered %v from a cancelled run", h.delivered)
		}
		if len(*released) != 1 || (*released)[0].Request != "100.1" {
			t.Errorf("released %+v, want the cancelled run's slot", *released)
		}
	})
	t.Run("waiting", func(t *testing.T) {
		h := newHarness(t)
		_, released := capped(h)
		h.runLane(msg("100.1", "U1", "draft the quarterly plan"),
			signalAt(time.Second, SignalSlot, SlotReply{Request: "100.1", Place: 1}),
			signalAt(time.Minute, SignalCancel, CancelRequest{Channel: "C1", TS: "100.5", User: "U1", Text: "cancel that"}),
			signalAt(2*time.Minute, SignalSlot, SlotReply{Request: "100.1", Granted: true}))
		if len(h.delivered) != 0 {
			t.Errorf("delivered %v from a withdrawn request", h.delivered)
		}
		// Withdrawn at the cancel, and the late grant handed back.
		if len(*released) != 2 || (*released)[0].Request != "100.1" || (*released)[1].Request != "100.1" {
			t.Errorf("released %+v, want the withdrawal and the late grant handed back", *released)
		}
	})
}

// The run a lane starts carries its workspace's fairness key and its priority: a person's message
// PriorityInteractive, a recurring job's firing PriorityScheduled. Its activities inherit them on
// the server (priorities.Merge); devserver's TestFairnessAcrossTeams shows that on a real one.
func TestLaneRunCarriesPriorityAndFairnessKey(t *testing.T) {
	for _, tc := range []struct {
		kind string
		want int
	}{{"message", PriorityInteractive}, {KindScheduled, PriorityScheduled}} {
		h := newHarness(t)
		seen := &childOptions{}
		h.env.SetWorkerOptions(worker.Options{Interceptors: []interceptor.WorkerInterceptor{seen}})
		m := msg("100.1", "U1", "summarise the incident channel")
		m.Kind = tc.kind
		if tc.kind == KindScheduled {
			m.Job, m.EventID = "cron:T1:standup-1", "job:1"
			h.env.OnSignalExternalWorkflow(mock.Anything, m.Job, "", SignalJobDone, mock.Anything).Return(nil)
		}
		h.runLane(m)
		want := temporal.Priority{PriorityKey: tc.want, FairnessKey: "T1"}
		if len(seen.got) != 1 || seen.got[0] != (childStart{AgentRunWorkflowName, want}) {
			t.Errorf("%s: children started %+v, want one %s with %+v", tc.kind, seen.got, AgentRunWorkflowName, want)
		}
	}
}

// childOptions records the type and priority of every child workflow a workflow starts, from the
// options the SDK turns into the StartChildWorkflowExecution command (workflow.GetChildWorkflowOptions).
type childOptions struct {
	interceptor.WorkerInterceptorBase
	mu  sync.Mutex
	got []childStart
}

type childStart struct {
	Type     string
	Priority temporal.Priority
}

func (c *childOptions) InterceptWorkflow(_ workflow.Context, next interceptor.WorkflowInboundInterceptor) interceptor.WorkflowInboundInterceptor {
	return &childOptionsIn{WorkflowInboundInterceptorBase: interceptor.WorkflowInboundInterceptorBase{Next: next}, root: c}
}

type childOptionsIn struct {
	interceptor.WorkflowInboundInterceptorBase
	root *childOptions
}

func (i *childOptionsIn) Init(out interceptor.WorkflowOutboundInterceptor) error {
	return i.Next.Init(&childOptionsOut{WorkflowOutboundInterceptorBase: interceptor.WorkflowOutboundInterceptorBase{Next: out}, root: i.root})
}

type childOptionsOut struct {
	interceptor.WorkflowOutboundInterceptorBase
	root *childOptions
}

func (o *childOptionsOut) ExecuteChildWorkflow(ctx workflow.Context, name string, args ...any) workflow.ChildWorkflowFuture {
	if !workflow.IsReplaying(ctx) {
		o.root.mu.Lock()
		o.root.got = append(o.root.got, childStart{name, workflow.GetChildWorkflowOptions(ctx).Priority})
		o.root.mu.Unlock()
	}
	return o.Next.ExecuteChildWorkflow(ctx, name, args...)
}

func TestOrdinal(t *testing.T) {
	for n, want := range map[int]string{1: "1st", 2: "2nd", 3: "3rd", 4: "4th", 11: "11th", 12: "12th", 13: "13th", 21: "21st", 22: "22nd", 101: "101st", 111: "111th"} {
		if got := ordinal(n); got != want {
			t.Errorf("ordinal(%d) = %q, want %q", n, got, want)
		}
	}
}
