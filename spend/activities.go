package spend

import (
	"context"
	"fmt"
	"slices"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/lucy-agent/lucy/steps"
)

// Activities are the run's two spend steps, registered by the worker under steps.CheckSpend and
// steps.RecordSpend: the workflow calls them by name with steps' payloads, so it links no store.
type Activities struct {
	Ledger *Ledger
	// Admins (LUCY_ADMIN_USERS) are never refused: they are who raises a limit, and they do it by
	// asking Lucy (lucy_set_spend_limit) in a request that a used-up team budget would otherwise
	// refuse. Their spend counts like anyone's.
	Admins []string
}

// CheckSpend refuses a new run whose team or requester used up a budget. A store that cannot be read
// is an error (retried by the run's policy); the run decides what a failed check means.
func (a *Activities) CheckSpend(ctx context.Context, in steps.CheckSpendInput) (steps.CheckSpendResult, error) {
	now, err := time.Parse(time.RFC3339, in.Now)
	if err != nil {
		return steps.CheckSpendResult{}, temporal.NewNonRetryableApplicationError(fmt.Sprintf("spend check: time %q: %v", in.Now, err), "BadInput", nil)
	}
	if in.Person != "" && slices.Contains(a.Admins, in.Person) {
		return steps.CheckSpendResult{}, nil
	}
	r, err := a.Ledger.Check(ctx, in.Team, in.Person, now)
	if err != nil || r == nil {
		return steps.CheckSpendResult{}, err
	}
	return steps.CheckSpendResult{Refused: true, Budget: string(r.Budget), Message: r.Message(now)}, nil
}

// RecordSpend adds a run's usage to its requester's spend on its day, once per run.
func (a *Activities) RecordSpend(ctx context.Context, in steps.RecordSpendInput) error {
	day, err := time.Parse(dayLayout, in.Day)
	if err != nil {
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf("spend record: day %q: %v", in.Day, err), "BadInput", nil)
	}
	usage := make(map[string]Usage, len(in.Usage))
	for m, u := range in.Usage {
		usage[m] = Usage(u)
	}
	return a.Ledger.Record(ctx, in.Team, in.Person, in.RunID, day, usage)
}
