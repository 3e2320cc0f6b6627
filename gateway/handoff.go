package gateway

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/lucy-agent/lucy/signing"
	"github.com/lucy-agent/lucy/slackwire"
	"github.com/lucy-agent/lucy/workflows"
)

// Handoff is everything the gateway asks of Temporal. The gateway depends on this interface rather than
// on client.Client so that tests can record hand-offs and make them fail.
type Handoff interface {
	// Message signals a human message to its thread's lane, starting the lane if it is not running.
	// It returns once the signal is persisted by Temporal (no worker needed), which is what makes it
	// safe to acknowledge Slack afterwards. The message is signed (Message.Sig): a "yes, do it" in it
	// can then approve a proposal, which an unsigned one sent straight to Temporal cannot.
	Message(ctx context.Context, m workflows.Message) error
	// Cancel signals a cancel request to the thread's running lane, which decides what there is to
	// stop and who may stop it. It never starts a lane: a "stop" in a fresh DM or a new top-level
	// mention would otherwise open a lane that lives a week for nothing. A thread without a running
	// lane yields ErrLaneGone: there is nothing to cancel.
	Cancel(ctx context.Context, key workflows.LaneKey, c workflows.CancelRequest) error
	// Approval signals a button click to a running lane, signed over (lane, fingerprint, user,
	// decision) (Approval.Sig). A lane that is gone (closed or never existed) yields ErrLaneGone:
	// there is nobody left to approve anything for.
	Approval(ctx context.Context, laneID string, a workflows.Approval) error
	// Feedback signals a 👍/👎 on an answer, or a 👎's reason, to the lane that ran it
	// (workflows.SignalFeedback). A lane that is gone yields ErrLaneGone.
	Feedback(ctx context.Context, laneID string, f workflows.Feedback) error
	// LaneStatus queries a lane. ok is false when the lane does not exist or is not running.
	LaneStatus(ctx context.Context, key workflows.LaneKey) (st workflows.LaneStatus, ok bool, err error)
	// RunStatus queries an agent run by its workflow ID.
	RunStatus(ctx context.Context, runID string) (workflows.RunStatus, error)
	// LaneExists reports whether the thread has a lane, running or closed: if it does, Lucy is part of
	// the conversation and replies in it are meant for her even without a mention.
	LaneExists(ctx context.Context, key workflows.LaneKey) (bool, error)
	// Ready reports whether Temporal is reachable (for /readyz).
	Ready(ctx context.Context) error
}

// ErrLaneGone is returned by Handoff.Approval and Handoff.Cancel when the lane workflow does not run
// (it closed, or never existed).
var ErrLaneGone = errors.New("lane workflow is not running")

// NewTemporalHandoff returns the Handoff backed by a Temporal client. It signs every message and
// approval it signals with key, the approval key the worker shares (config.Config.ApprovalKey): the
// gateway is where Slack's word on who said or clicked what is known, so it is the one that vouches
// for it. With the zero key nothing is signed and the worker refuses every approval.
func NewTemporalHandoff(c client.Client, key signing.Key) Handoff {
	return temporalHandoff{c: c, key: key}
}

type temporalHandoff struct {
	c   client.Client
	key signing.Key
}

func laneStartOptions(id, team, summary string) client.StartWorkflowOptions {
	// SignalWithStart defaults to WorkflowIDReusePolicy AllowDuplicate and conflict policy
	// UseExisting: a running lane gets the signal, a closed one is started afresh. The summary is
	// the Web UI's one line for the lane (it goes through the data converter, so it is encrypted
	// with the payloads). No search attributes here: the lane upserts its own, so that a hand-off
	// never depends on the namespace having them (the worker checks that before it polls).
	// The priority and fairness key are the task queue's (workflows/priority.go): a lane the gateway
	// starts is a person's, ahead of scheduled work, and shares the queue by workspace. They apply
	// to a lane it starts, not to one it signals; each run sets its own.
	return client.StartWorkflowOptions{ID: id, TaskQueue: workflows.TaskQueue, StaticSummary: summary,
		Priority: workflows.Priority(team, workflows.PriorityInteractive)}
}

// laneSummary is the first words of the message that starts a lane ("Thread: what is 2+2?").
func laneSummary(m workflows.Message) string {
	return slackwire.Clip("Thread: "+strings.Join(strings.Fields(slackwire.StripMentions(m.Text)), " "), 80)
}

// tracer is OpenTelemetry's global tracer: a no-op unless package tracing turned tracing on.
var tracer = otel.Tracer("github.com/lucy-agent/lucy/gateway")

// handoffSpan starts the span of one hand-off: the root of the trace that the Temporal client's
// tracing interceptor continues into the lane, the run and their activities (through the
// signal-with-start's headers). IDs only as attributes: never what anybody wrote.
func handoffSpan(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	return tracer.Start(ctx, "lucy.handoff."+name, trace.WithSpanKind(trace.SpanKindProducer), trace.WithAttributes(attrs...))
}

// endSpan records err on span and ends it.
func endSpan(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, "hand-off failed")
	}
	span.End()
}

func (h temporalHandoff) Message(ctx context.Context, m workflows.Message) (err error) {
	ctx, span := handoffSpan(ctx, "message", attribute.String("slack.team", m.Team), attribute.String("slack.channel", m.Channel),
		attribute.String("slack.ts", m.TS), attribute.String("slack.event_id", m.EventID), attribute.String("slack.event_type", m.Kind))
	defer func() { endSpan(span, err) }()
	// Whatever Sig the caller set is replaced: only this signature is the gateway's word.
	m.Sig = h.key.SignMessage(signing.Message{Team: m.Team, Channel: m.Channel, ThreadTS: m.Key().ThreadTS, TS: m.TS, User: m.User, Text: m.Text})
	key := m.Key()
	id := workflows.LaneID(key)
	if _, err := h.c.SignalWithStartWorkflow(ctx, id, workflows.SignalMessage, m, laneStartOptions(id, key.Team, laneSummary(m)),
		workflows.LaneWorkflowName, workflows.LaneInput{Key: key}); err != nil {
		return fmt.Errorf("signal %s to %s: %w", workflows.SignalMessage, id, err)
	}
	return nil
}

func (h temporalHandoff) Cancel(ctx context.Context, key workflows.LaneKey, c workflows.CancelRequest) error {
	ctx, span := handoffSpan(ctx, "cancel", attribute.String("slack.team", key.Team), attribute.String("slack.channel", key.Channel),
		attribute.String("slack.ts", c.TS), attribute.String("slack.event_id", c.EventID))
	id := workflows.LaneID(key)
	// A plain signal: Temporal answers NotFound for a lane that never ran and for one that closed,
	// authoritatively and in the one call the hand-off makes anyway.
	err := h.c.SignalWorkflow(ctx, id, "", workflows.SignalCancel, c)
	if isNotFound(err) {
		endSpan(span, nil) // nothing to cancel is not a failed hand-off
		return fmt.Errorf("signal %s to %s: %w", workflows.SignalCancel, id, ErrLaneGone)
	}
	endSpan(span, err)
	if err != nil {
		return fmt.Errorf("signal %s to %s: %w", workflows.SignalCancel, id, err)
	}
	return nil
}

func (h temporalHandoff) Approval(ctx context.Context, laneID string, a workflows.Approval) error {
	// Signed as a button click whatever a.Source says: a message's approval carries the message's own
	// signature, which the lane copies; a button signature never verifies as a message's.
	a.Sig = h.key.SignApproval(signing.Approval{Lane: laneID, Fingerprint: a.Fingerprint, User: a.User, Approved: a.Approved})
	ctx, span := handoffSpan(ctx, "approval", attribute.String("lucy.lane", laneID), attribute.String("slack.event_id", a.EventID))
	var err error
	defer func() { endSpan(span, err) }()
	err = h.c.SignalWorkflow(ctx, laneID, "", workflows.SignalApproval, a)
	if isNotFound(err) {
		return fmt.Errorf("signal %s to %s: %w", workflows.SignalApproval, laneID, ErrLaneGone)
	}
	if err != nil {
		return fmt.Errorf("signal %s to %s: %w", workflows.SignalApproval, laneID, err)
	}
	return nil
}

func (h temporalHandoff) Feedback(ctx context.Context, laneID string, f workflows.Feedback) error {
	ctx, span := handoffSpan(ctx, "feedback", attribute.String("lucy.lane", laneID), attribute.String("slack.event_id", f.EventID))
	var err error
	defer func() { endSpan(span, err) }()
	err = h.c.SignalWorkflow(ctx, laneID, "", workflows.SignalFeedback, f)
	if isNotFound(err) {
		return fmt.Errorf("signal %s to %s: %w", workflows.SignalFeedback, laneID, ErrLaneGone)
	}
	if err != nil {
		return fmt.Errorf("signal %s to %s: %w", workflows.SignalFeedback, laneID, err)
	}
	return nil
}

func (h temporalHandoff) LaneStatus(ctx context.Context, key workflows.LaneKey) (workflows.LaneStatus, bool, error) {
	id := workflows.LaneID(key)
	resp, err := h.c.QueryWorkflowWithOptions(ctx, &client.QueryWorkflowWithOptionsRequest{
		WorkflowID: id,
		QueryType:  workflows.QueryStatus,
		// A closed lane has nothing to report, and answering would need a worker to replay it.
		QueryRejectCondition: enumspb.QUERY_REJECT_CONDITION_NOT_OPEN,
	})
	if isNotFound(err) {
		return workflows.LaneStatus{}, false, nil
	}
	if err != nil {
		return workflows.LaneStatus{}, false, fmt.Errorf("query %s: %w", id, err)
	}
	if resp.QueryRejected != nil || resp.QueryResult == nil {
		return workflows.LaneStatus{}, false, nil
	}
	var st workflows.LaneStatus
	if err := resp.QueryResult.Get(&st); err != nil {
		return workflows.LaneStatus{}, false, fmt.Errorf("decode status of %s: %w", id, err)
	}
	return st, true, nil
}

func (h temporalHandoff) RunStatus(ctx context.Context, runID string) (workflows.RunStatus, error) {
	v, err := h.c.QueryWorkflow(ctx, runID, "", workflows.QueryStatus)
	if err != nil {
		return workflows.RunStatus{}, fmt.Errorf("query %s: %w", runID, err)
	}
	var st workflows.RunStatus
	if err := v.Get(&st); err != nil {
		return workflows.RunStatus{}, fmt.Errorf("decode status of %s: %w", runID, err)
	}
	return st, nil
}

func (h temporalHandoff) LaneExists(ctx context.Context, key workflows.LaneKey) (bool, error) {
	id := workflows.LaneID(key)
	_, err := h.c.DescribeWorkflowExecution(ctx, id, "")
	if isNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("describe %s: %w", id, err)
	}
	return true, nil
}

func (h temporalHandoff) Ready(ctx context.Context) error {
	if _, err := h.c.CheckHealth(ctx, &client.CheckHealthRequest{}); err != nil {
		return fmt.Errorf("temporal health check: %w", err)
	}
	return nil
}

func isNotFound(err error) bool {
	var nf *serviceerror.NotFound
	return errors.As(err, &nf)
}
