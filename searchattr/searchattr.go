// Package searchattr names Lucy's custom search attributes and registers or checks them on a
// Temporal namespace.
//
// Search attributes are indexed and shown in clear everywhere (the Web UI's list, the CLI, every
// visibility query), and they are not encrypted by LUCY_PAYLOAD_KEYS. So they hold identifiers and
// labels only (workspace, channel and user IDs, intent, tier, outcome), never what anybody wrote:
// the text goes into memos and summaries, which travel through the data converter.
//
// A workflow that sets an attribute the namespace does not know fails its workflow task (the
// server rejects the command) and retries it forever. That must never happen to a person's run,
// so a worker checks at start that every attribute exists and refuses to start otherwise (Check);
// `lucy setup` registers them on a cluster and `lucy dev` on its embedded server (Register).
package searchattr

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
)

// The attributes, all of type Keyword (exact match, which is what filters on IDs and labels need).
var (
	// Workspace is the Slack team ID (T…); set on lanes, runs, sub-agents, jobs and monitors.
	Workspace = temporal.NewSearchAttributeKeyKeyword("LucyWorkspace")
	// Channel is the Slack channel ID (C…, D…).
	Channel = temporal.NewSearchAttributeKeyKeyword("LucyChannel")
	// User is the Slack user ID of the requester (runs, sub-agents) or of a job's creator.
	User = temporal.NewSearchAttributeKeyKeyword("LucyUser")
	// Intent is the router's intent of a run, once routed.
	Intent = temporal.NewSearchAttributeKeyKeyword("LucyIntent")
	// Tier is the model tier of a run: the routed one, then the one it ended on (escalations).
	Tier = temporal.NewSearchAttributeKeyKeyword("LucyTier")
	// Outcome is how a run, a sub-agent or a job's firing ended: completed, needs_input, partial,
	// cancelled, failed, refused (a used-up spend budget, package spend); a firing also skipped (no free job slot) or unfinished (it stopped
	// waiting for its run before the next firing).
	Outcome = temporal.NewSearchAttributeKeyKeyword("LucyOutcome")
	// Feedback is what people thought of a thread's answers, set on its lane: down once any answer
	// got a 👎, else up once one got a 👍 (the lane's memo lists each vote and its run).
	Feedback = temporal.NewSearchAttributeKeyKeyword("LucyFeedback")
)

// All are every attribute Lucy sets, in the order docs/operating.md lists them.
var All = []temporal.SearchAttributeKeyKeyword{Workspace, Channel, User, Intent, Tier, Outcome, Feedback}

// want is All as the operator service spells it.
func want() map[string]enumspb.IndexedValueType {
	m := make(map[string]enumspb.IndexedValueType, len(All))
	for _, k := range All {
		m[k.GetName()] = enumspb.INDEXED_VALUE_TYPE_KEYWORD
	}
	return m
}

// CreateCommands are the CLI commands that register the attributes on a real cluster, one a line.
func CreateCommands(namespace string) string {
	var b strings.Builder
	for _, k := range All {
		fmt.Fprintf(&b, "  temporal operator search-attribute create --namespace %s --name %s --type Keyword\n", namespace, k.GetName())
	}
	return b.String()
}

// Missing lists the attributes the namespace lacks (sorted), and those registered with another
// type, which are just as unusable.
func Missing(ctx context.Context, c client.Client, namespace string) ([]string, error) {
	resp, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	if err != nil {
		return nil, err
	}
	var missing []string
	for name, typ := range want() {
		got, ok := resp.GetCustomAttributes()[name]
		if !ok {
			missing = append(missing, name)
		} else if got != typ {
			missing = append(missing, fmt.Sprintf("%s (registered as %s, want Keyword)", name, got))
		}
	}
	sort.Strings(missing)
	return missing, nil
}

// Check returns an actionable error unless every attribute is registered on the namespace. A
// worker calls it before it polls: a run that sets an unknown attribute would be stuck.
func Check(ctx context.Context, c client.Client, namespace string) error {
	missing, err := Missing(ctx, c, namespace)
	if err != nil {
		return fmt.Errorf("cannot list the search attributes of namespace %q (%v): the worker needs Lucy's search attributes "+
			"registered before it starts; run `lucy setup` once with the same TEMPORAL_ variables, or register them with\n%s", namespace, firstLine(err), CreateCommands(namespace))
	}
	if len(missing) > 0 {
		return fmt.Errorf("namespace %q lacks Lucy's search attributes %s; a run that set them would be stuck, so the worker does not start. "+
			"Run `lucy setup` once with the same TEMPORAL_ variables (`lucy dev` does it by itself), or register them yourself:\n%s", namespace, strings.Join(missing, ", "), CreateCommands(namespace))
	}
	return nil
}

// Register adds the missing attributes to the namespace (an attribute that exists already is
// fine) and waits until the frontend accepts them in a query, which is also what it checks when a
// workflow sets them: the server caches a namespace's attributes and sees new ones a few seconds
// later. ctx bounds the wait.
func Register(ctx context.Context, c client.Client, namespace string) error {
	missing, err := Missing(ctx, c, namespace)
	if err != nil {
		return fmt.Errorf("list search attributes: %w", err)
	}
	if len(missing) > 0 {
		_, err := c.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
			Namespace: namespace, SearchAttributes: want(),
		})
		var exists *serviceerror.AlreadyExists
		if err != nil && !errors.As(err, &exists) {
			// One registered meanwhile by another process makes the batch fail: add them one by one.
			for name, typ := range want() {
				_, err := c.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
					Namespace: namespace, SearchAttributes: map[string]enumspb.IndexedValueType{name: typ},
				})
				if err != nil && !errors.As(err, &exists) {
					return fmt.Errorf("register search attribute %s on namespace %q: %w", name, namespace, err)
				}
			}
		}
	}
	return waitUsable(ctx, c, namespace)
}

// waitUsable polls until a visibility query on every attribute is accepted.
func waitUsable(ctx context.Context, c client.Client, namespace string) error {
	var q []string
	for _, k := range All {
		q = append(q, k.GetName()+" = ''")
	}
	query := strings.Join(q, " AND ")
	for {
		_, err := c.WorkflowService().CountWorkflowExecutions(ctx, &workflowservice.CountWorkflowExecutionsRequest{Namespace: namespace, Query: query})
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("search attributes registered on %q but not usable yet: %v", namespace, firstLine(err))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func firstLine(err error) string {
	s := err.Error()
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

// Quotable reports whether a Slack ID (a workspace's) can go into a visibility query between quotes
// as it is: letters, digits, '_' and '-', at most 64.
func Quotable(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
