package spend

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lucy-agent/lucy/tools"
)

// SetLimitTool is the admins' tool that raises (or lowers, or lifts) one of a team's budgets.
const SetLimitTool = "lucy_set_spend_limit"

// Tools is the domain of lucy_set_spend_limit: the ledger and who the admins are (LUCY_ADMIN_USERS).
type Tools struct {
	ledger *Ledger
	admins []string
	now    func() time.Time
}

// NewTools returns the spend tools over ledger (nil: the tool says spend limits are not kept here).
func NewTools(ledger *Ledger, admins []string, now func() time.Time) *Tools {
	if now == nil {
		now = time.Now
	}
	return &Tools{ledger: ledger, admins: admins, now: now}
}

// lucy_set_spend_limit is not declared Destructive: like lucy_save_skill it asks for approval itself
// (Output.NeedsApproval), after it has checked that the requester is an admin, so that a member's
// request is refused at once, before anyone is asked, and the prompt shows the limit in force now
// beside the new one, which only a read of the store knows. The approval is the admin's own
// confirmation: it stops a change that text injected into the run would ask for.
var _ = tools.Register(tools.Def{
	Spec: tools.Spec{
		Name: SetLimitTool,
		Description: "Admins only: set one of this team's model spend budgets, which new requests are refused over. " +
			"budget is team_daily or team_monthly (the whole team's spend) or person_daily or person_monthly (each person's own). " +
			"limit is dollars (\"50\", \"$50\"; estimated at list prices), tokens (\"2M tokens\"), \"none\" for no limit, or " +
			"\"default\" to go back to the operator's default. Days and months are UTC. The admin approves the change before it is made.",
		Human: "setting a spend limit",
	},
	Required: []string{"budget", "limit"},
	Props: func() []tools.Prop {
		return []tools.Prop{
			tools.EnumProp("budget", "Which budget.", string(TeamDaily), string(TeamMonthly), string(PersonDaily), string(PersonMonthly)),
			tools.StrProp("limit", "The new limit: \"50\" or \"$50\" (dollars), \"2M tokens\", \"none\", or \"default\".", 1, 40),
		}
	},
}, (*Tools).setLimit)

func (t *Tools) isAdmin(user string) bool { return user != "" && slices.Contains(t.admins, user) }

// setLimit checks the call and the requester, asks the admin to approve with what changes, and sets it.
func (t *Tools) setLimit(ctx context.Context, inv tools.Invocation) (tools.Output, error) {
	var args struct {
		Budget string `json:"budget"`
		Limit  string `json:"limit"`
	}
	if err := tools.DecodeArgs(inv, &args); err != nil {
		return tools.Output{}, err
	}
	b, err := ParseBudget(args.Budget)
	if err != nil {
		return tools.Output{}, tools.ArgErrorf(SetLimitTool, "%v", err)
	}
	reset := strings.EqualFold(strings.TrimSpace(args.Limit), "default")
	var lim Limit
	if !reset {
		if lim, err = ParseLimit(args.Limit); err != nil {
			return tools.Output{}, tools.ArgErrorf(SetLimitTool, "%v", err)
		}
	}
	if t.ledger == nil {
		return tools.Output{}, errors.New("spend limits need Lucy's state store, and this worker has none")
	}
	if !t.isAdmin(inv.User) {
		return tools.ToolError("Nothing was changed: only an admin (LUCY_ADMIN_USERS) can set a spend limit. Ask one of them, or the operator (`lucy usage`)."), nil
	}
	cur, o, err := t.ledger.Limits(ctx, inv.Team)
	if err != nil {
		return tools.Output{}, fmt.Errorf("read the team's spend limits: %w", err)
	}
	next := lim
	if reset {
		next = t.ledger.Defaults()[b]
	}
	now := describe(b, cur[b], o)
	to := next.String()
	if reset {
		to += " (the operator's default)"
	}
	// The guard is what the admin approves: this budget, from what it is now, to this value. Should
	// another admin change it meanwhile, the admin is asked again.
	sum := sha256.Sum256(fmt.Appendf(nil, "%s\x00%s\x00%s\x00%t", b, cur[b], next, reset))
	guard := "sha256:" + hex.EncodeToString(sum[:16])
	if !inv.Approved || inv.Guard != guard {
		return tools.Output{
			Content: fmt.Sprintf("Nothing was changed: setting %s needs the admin's approval.", b.Human()),
			NeedsApproval: &tools.ApprovalNeed{
				Summary: fmt.Sprintf("set %s for this workspace to %s", b.Human(), to),
				Details: fmt.Sprintf("%s: %s → %s", b, now, to),
				Guard:   guard,
			},
		}, nil
	}
	if err := t.ledger.SetLimit(ctx, inv.Team, b, lim, reset, inv.User, t.now()); err != nil {
		return tools.Output{}, fmt.Errorf("set the spend limit: %w", err)
	}
	return tools.Output{Content: fmt.Sprintf("Set %s to %s (was %s), for new requests from now on; requests already running were never stopped by it.",
		b.Human(), to, now)}, nil
}

// describe says what a budget is now and where it comes from.
func describe(b Budget, l Limit, o Overrides) string {
	if by, ok := o.SetBy[b]; ok {
		return fmt.Sprintf("%s, set by <@%s> %s", l, by, o.SetAt[b])
	}
	return l.String() + ", the operator's default"
}

// ReportTool shows the spend against the budgets: the whole report to an admin, the requester's own
// and the team's totals to anyone else.
const ReportTool = "lucy_spend_report"

var _ = tools.Register(tools.Def{
	Spec: tools.Spec{
		Name: ReportTool,
		Description: "Show the model spend (estimated dollars and tokens) against the spend budgets, for this month or a given " +
			"month (UTC): the requester's own and the team's totals, today and this month; for an admin, also each person's and " +
			"each model's. Use it when someone asks how much they or the team have used, or why a request was refused for a budget.",
		Idempotent: true,
		Human:      "reading the spend",
	},
	Props: func() []tools.Prop {
		return []tools.Prop{tools.StrProp("month", "yyyy-mm, such as 2026-11; absent: this month.", 0, 7)}
	},
}, (*Tools).report)

func (t *Tools) report(ctx context.Context, inv tools.Invocation) (tools.Output, error) {
	var args struct {
		Month string `json:"month"`
	}
	if err := tools.DecodeArgs(inv, &args); err != nil {
		return tools.Output{}, err
	}
	now := t.now().UTC()
	at := now
	if m := strings.TrimSpace(args.Month); m != "" {
		p, err := time.Parse(monthLayout, m)
		if err != nil {
			return tools.Output{}, tools.ArgErrorf(ReportTool, "month %q is not yyyy-mm, such as %s", m, now.Format(monthLayout))
		}
		at = p
	}
	if t.ledger == nil {
		return tools.Output{}, errors.New("spend is not kept here: this worker has no state store")
	}
	lim, o, err := t.ledger.Limits(ctx, inv.Team)
	if err != nil {
		return tools.Output{}, fmt.Errorf("read the team's spend limits: %w", err)
	}
	m, err := t.ledger.Month(ctx, inv.Team, at)
	if err != nil {
		return tools.Output{}, fmt.Errorf("read the team's spend: %w", err)
	}
	var b strings.Builder
	if t.isAdmin(inv.User) {
		b.WriteString("```\n")
		if err := Report(&b, inv.Team, m, lim, o, nil, now); err != nil {
			return tools.Output{}, err
		}
		b.WriteString("```")
	} else {
		PersonReport(&b, personKey(inv.User), m, lim, now)
	}
	return tools.Output{Content: b.String()}, nil
}
