package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"

	enumspb "go.temporal.io/api/enums/v1"
	querypb "go.temporal.io/api/query/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/mocks"
	"go.temporal.io/sdk/temporal"

	"github.com/stretchr/testify/mock"

	"github.com/lucy-agent/lucy/signing"
	"github.com/lucy-agent/lucy/workflows"
)

// jsonValue is a converter.EncodedValue holding a value, as a query result.
type jsonValue struct{ v any }

func (j jsonValue) HasValue() bool { return j.v != nil }

func (j jsonValue) Get(ptr any) error {
	b, err := json.Marshal(j.v)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, ptr)
}

var testKey = workflows.LaneKey{Team: "T1", Channel: "C1", ThreadTS: "1700000000.000100"}

const testLaneID = "lane:T1:C1:1700000000.000100"

func TestTemporalHandoffSignalsWithStart(t *testing.T) {
	ctx := context.Background()
	c := mocks.NewClient(t)
	h := NewTemporalHandoff(c, testApprovalKey)
	// The lane's one line in the Web UI: the first words of the message that starts it; a person's
	// priority on the task queue, shared by workspace (the fairness key).
	opts := client.StartWorkflowOptions{ID: testLaneID, TaskQueue: workflows.TaskQueue, StaticSummary: "Thread: hi",
		Priority: temporal.Priority{PriorityKey: workflows.PriorityInteractive, FairnessKey: "T1"}}
	input := workflows.LaneInput{Key: testKey}

	m := workflows.Message{EventID: "Ev1", Team: "T1", Channel: "C1", TS: "1700000000.000300", ThreadTS: testKey.ThreadTS, User: "U1", Text: "hi", Kind: "message"}
	signed := m
	signed.Sig = testApprovalKey.SignMessage(signing.Message{Team: "T1", Channel: "C1", ThreadTS: testKey.ThreadTS, TS: m.TS, User: "U1", Text: "hi"})
	c.On("SignalWithStartWorkflow", anyCtx, testLaneID, workflows.SignalMessage, signed, opts, workflows.LaneWorkflowName, input).
		Return(&mocks.WorkflowRun{}, nil).Once()
	if err := h.Message(ctx, m); err != nil {
		t.Fatal(err)
	}

}

// A cancel is a plain signal: it never starts a lane. A thread whose lane never ran or has closed
// (NotFound) yields ErrLaneGone; any other failure is returned for Slack to deliver again.
func TestTemporalHandoffCancelStartsNothing(t *testing.T) {
	ctx := context.Background()
	c := mocks.NewClient(t)
	h := NewTemporalHandoff(c, testApprovalKey)
	cr := workflows.CancelRequest{EventID: "Ev2", Channel: "C1", TS: "1700000000.000400", User: "U1", Text: "stop"}

	c.On("SignalWorkflow", anyCtx, testLaneID, "", workflows.SignalCancel, cr).Return(nil).Once()
	if err := h.Cancel(ctx, testKey, cr); err != nil {
		t.Fatal(err)
	}
	c.On("SignalWorkflow", anyCtx, testLaneID, "", workflows.SignalCancel, cr).Return(serviceerror.NewNotFound("workflow not found")).Once()
	if err := h.Cancel(ctx, testKey, cr); !errors.Is(err, ErrLaneGone) {
		t.Fatalf("Cancel err = %v, want ErrLaneGone", err)
	}
	c.On("SignalWorkflow", anyCtx, testLaneID, "", workflows.SignalCancel, cr).Return(serviceerror.NewUnavailable("down")).Once()
	var unavailable *serviceerror.Unavailable
	if err := h.Cancel(ctx, testKey, cr); !errors.As(err, &unavailable) || errors.Is(err, ErrLaneGone) {
		t.Fatalf("Cancel err = %v, want the Temporal error wrapped", err)
	}
	// (mocks.NewClient fails the test on any call not set up above, SignalWithStartWorkflow included.)
}

func TestTemporalHandoffApproval(t *testing.T) {
	ctx := context.Background()
	c := mocks.NewClient(t)
	h := NewTemporalHandoff(c, testApprovalKey)
	a := workflows.Approval{Fingerprint: "fp", Approved: true, User: "U1", Source: "button"}
	signed := a
	signed.Sig = testApprovalKey.SignApproval(signing.Approval{Lane: testLaneID, Fingerprint: "fp", User: "U1", Approved: true})

	c.On("SignalWorkflow", anyCtx, testLaneID, "", workflows.SignalApproval, signed).Return(nil).Once()
	if err := h.Approval(ctx, testLaneID, a); err != nil {
		t.Fatal(err)
	}
	c.On("SignalWorkflow", anyCtx, testLaneID, "", workflows.SignalApproval, signed).Return(serviceerror.NewNotFound("workflow execution already completed")).Once()
	if err := h.Approval(ctx, testLaneID, a); !errors.Is(err, ErrLaneGone) {
		t.Fatalf("err = %v, want ErrLaneGone", err)
	}
	c.On("SignalWorkflow", anyCtx, testLaneID, "", workflows.SignalApproval, signed).Return(serviceerror.NewUnavailable("down")).Once()
	if err := h.Approval(ctx, testLaneID, a); err == nil || errors.Is(err, ErrLaneGone) {
		t.Fatalf("err = %v, want a retryable error", err)
	}
}

// testApprovalKey is the key the gateway signs with in these tests.
var testApprovalKey = func() signing.Key {
	k, err := signing.FromSecret("gateway-test-approval-key-0123456789")
	if err != nil {
		panic(err)
	}
	return k
}()

// signalRecorder is a mocked Temporal client that keeps the payload of every message and approval
// signal, to check what the gateway vouched for.
type signalRecorder struct {
	*mocks.Client
	mu        sync.Mutex
	messages  []workflows.Message
	approvals map[string][]workflows.Approval // by lane
}

func newSignalRecorder(t *testing.T) *signalRecorder {
	r := &signalRecorder{Client: mocks.NewClient(t), approvals: map[string][]workflows.Approval{}}
	r.On("SignalWithStartWorkflow", mock.Anything, mock.Anything, workflows.SignalMessage, mock.Anything, mock.Anything, mock.Anything, mock.Anything).
		Run(func(args mock.Arguments) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.messages = append(r.messages, args.Get(3).(workflows.Message))
		}).Return(&mocks.WorkflowRun{}, nil).Maybe()
	r.On("SignalWorkflow", mock.Anything, mock.Anything, "", workflows.SignalApproval, mock.Anything).
		Run(func(args mock.Arguments) {
			r.mu.Lock()
			defer r.mu.Unlock()
			lane := args.String(1)
			r.approvals[lane] = append(r.approvals[lane], args.Get(4).(workflows.Approval))
		}).Return(nil).Maybe()
	return r
}

// The Temporal hand-off signs every message it signals; the signature covers team, channel, ts,
// user and text, and a caller cannot put its own signature in.
func TestTemporalHandoffSignsMessages(t *testing.T) {
	rec := newSignalRecorder(t)
	h := NewTemporalHandoff(rec, testApprovalKey)
	m := workflows.Message{EventID: "Ev1", Team: "T1", Channel: "C1", TS: "1700000000.000300", ThreadTS: testKey.ThreadTS,
		User: "U1", Text: "<@ULUCY> yes, do it", Kind: "message", Sig: "v1:forged"}
	if err := h.Message(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	if len(rec.messages) != 1 {
		t.Fatalf("%d message signals, want 1", len(rec.messages))
	}
	got := rec.messages[0]
	sm := signing.Message{Team: got.Team, Channel: got.Channel, ThreadTS: got.Key().ThreadTS, TS: got.TS, User: got.User, Text: got.Text}
	if err := testApprovalKey.VerifyMessage(sm, got.Sig); err != nil {
		t.Fatalf("signalled message's Sig %q does not verify: %v", got.Sig, err)
	}
	sm.User = "U2"
	if err := testApprovalKey.VerifyMessage(sm, got.Sig); err == nil {
		t.Fatal("the signature verifies for another user")
	}
}

// Without a key (misconfiguration) nothing is signed, so the worker refuses every approval rather
// than trusting a signature anyone could make.
func TestTemporalHandoffZeroKeySignsNothing(t *testing.T) {
	rec := newSignalRecorder(t)
	h := NewTemporalHandoff(rec, signing.Key{})
	if err := h.Message(context.Background(), workflows.Message{Team: "T1", Channel: "C1", TS: "1.0", User: "U1", Text: "yes"}); err != nil {
		t.Fatal(err)
	}
	if err := h.Approval(context.Background(), testLaneID, workflows.Approval{Fingerprint: "fp", User: "U1", Approved: true, Source: "button"}); err != nil {
		t.Fatal(err)
	}
	if rec.messages[0].Sig != "" || rec.approvals[testLaneID][0].Sig != "" {
		t.Fatalf("signed with the zero key: %q, %q", rec.messages[0].Sig, rec.approvals[testLaneID][0].Sig)
	}
}

func TestTemporalHandoffLaneStatus(t *testing.T) {
	ctx := context.Background()
	c := mocks.NewClient(t)
	h := NewTemporalHandoff(c, testApprovalKey)
	req := mock.MatchedBy(func(r *client.QueryWorkflowWithOptionsRequest) bool {
		return r.WorkflowID == testLaneID && r.QueryType == workflows.QueryStatus &&
			r.QueryRejectCondition == enumspb.QUERY_REJECT_CONDITION_NOT_OPEN
	})
	want := workflows.LaneStatus{Lane: testLaneID, Busy: true, CurrentRun: testLaneID + ":run:1", Runs: 1}

	c.On("QueryWorkflowWithOptions", ctx, req).Return(&client.QueryWorkflowWithOptionsResponse{QueryResult: jsonValue{want}}, nil).Once()
	st, ok, err := h.LaneStatus(ctx, testKey)
	if err != nil || !ok || st.CurrentRun != want.CurrentRun || !st.Busy {
		t.Fatalf("LaneStatus = %+v, %v, %v; want %+v, true", st, ok, err, want)
	}

	c.On("QueryWorkflowWithOptions", ctx, req).Return(&client.QueryWorkflowWithOptionsResponse{
		QueryRejected: &querypb.QueryRejected{Status: enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED}}, nil).Once()
	if _, ok, err := h.LaneStatus(ctx, testKey); ok || err != nil {
		t.Fatalf("closed lane: ok = %v, err = %v; want false, nil", ok, err)
	}

	c.On("QueryWorkflowWithOptions", ctx, req).Return(nil, serviceerror.NewNotFound("no such workflow")).Once()
	if _, ok, err := h.LaneStatus(ctx, testKey); ok || err != nil {
		t.Fatalf("missing lane: ok = %v, err = %v; want false, nil", ok, err)
	}
}

func TestTemporalHandoffLaneExistsRunStatusReady(t *testing.T) {
	ctx := context.Background()
	c := mocks.NewClient(t)
	h := NewTemporalHandoff(c, testApprovalKey)

	c.On("DescribeWorkflowExecution", ctx, testLaneID, "").Return(&workflowservice.DescribeWorkflowExecutionResponse{}, nil).Once()
	if ok, err := h.LaneExists(ctx, testKey); !ok || err != nil {
		t.Fatalf("LaneExists = %v, %v; want true", ok, err)
	}
	c.On("DescribeWorkflowExecution", ctx, testLaneID, "").Return(nil, serviceerror.NewNotFound("gone")).Once()
	if ok, err := h.LaneExists(ctx, testKey); ok || err != nil {
		t.Fatalf("LaneExists = %v, %v; want false, nil", ok, err)
	}
	c.On("DescribeWorkflowExecution", ctx, testLaneID, "").Return(nil, serviceerror.NewUnavailable("down")).Once()
	if _, err := h.LaneExists(ctx, testKey); err == nil {
		t.Fatal("LaneExists hid an unavailable Temporal")
	}

	run := testLaneID + ":run:2"
	c.On("QueryWorkflow", ctx, run, "", workflows.QueryStatus).Return(jsonValue{workflows.RunStatus{Run: run, Phase: "thinking", Turn: 3}}, nil).Once()
	if rs, err := h.RunStatus(ctx, run); err != nil || rs.Phase != "thinking" || rs.Turn != 3 {
		t.Fatalf("RunStatus = %+v, %v", rs, err)
	}

	c.On("CheckHealth", ctx, &client.CheckHealthRequest{}).Return(&client.CheckHealthResponse{}, nil).Once()
	if err := h.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	c.On("CheckHealth", ctx, &client.CheckHealthRequest{}).Return(nil, serviceerror.NewUnavailable("down")).Once()
	if err := h.Ready(ctx); err == nil {
		t.Fatal("Ready hid an unavailable Temporal")
	}
}

// anyCtx matches the context a hand-off passes on: the caller's, with the hand-off's span in it.
var anyCtx = mock.MatchedBy(func(context.Context) bool { return true })
