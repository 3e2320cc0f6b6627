package mcp

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/lucy-agent/lucy/tools"
)

// The tools a person signs in to and out of a service with, as themselves (per-person sign-ins,
// docs/security.md rule 16).
const (
	SignInService     = "lucy_sign_in_service"
	DisconnectService = "lucy_disconnect_service"
)

var _ = tools.Register(tools.Def{
	Spec: tools.Spec{
		Name: SignInService,
		Description: "Sign the requester in to a connected service that uses OAuth (an MCP server that asks for a sign-in), as " +
			"themselves: Lucy posts a Sign in button in this thread that works for the requester only, and their requests then " +
			"use their own account there. Use it when a person asks to sign in or connect their account, or when a service's " +
			"tools are not offered because nobody signed in yet. An admin can set share_with_team to sign in once as the " +
			"team's service account, used by every member's requests that have no sign-in of their own.",
		Human: "offering a sign-in",
	},
	Required: []string{"service"},
	Props: func() []tools.Prop {
		return []tools.Prop{
			tools.StrProp("service", "The service's name, as lucy_list_integrations shows it (e.g. \"linear\").", 1, 32),
			{Name: "share_with_team", Schema: map[string]any{"type": "boolean",
				"description": "Admins only: the account signed in with becomes the team's service account, used by every " +
					"member's requests that have no sign-in of their own. Omit for the requester's own sign-in."}},
		}
	},
}, (*Source).signInService)

var _ = tools.Register(tools.Def{
	Spec: tools.Spec{
		Name: DisconnectService,
		Description: "Sign the requester out of a connected service (\"sign me out of Linear\"): their own sign-in (tokens) is " +
			"deleted, and their requests no longer act as them there; the service stays connected for the others. An admin " +
			"can set team_wide to remove the team's service account instead. Signing in again undoes it.",
		Human: "signing out of a service",
	},
	Required: []string{"service"},
	Props: func() []tools.Prop {
		return []tools.Prop{
			tools.StrProp("service", "The service's name, as lucy_list_integrations shows it (e.g. \"linear\").", 1, 32),
			{Name: "team_wide", Schema: map[string]any{"type": "boolean",
				"description": "Admins only: remove the team's service account (the sign-in every member without their own uses), " +
					"not the requester's own sign-in."}},
		}
	},
}, (*Source).disconnectService)

type signInArgs struct {
	Service string `json:"service"`
	Share   bool   `json:"share_with_team"`
}

type signOutArgs struct {
	Service  string `json:"service"`
	TeamWide bool   `json:"team_wide"`
}

// signInServer finds the server named service that inv's requester may sign in to, or says why not.
func (s *Source) signInServer(ctx context.Context, inv tools.Invocation, service string) (scoped, *tools.Output) {
	name := strings.TrimSpace(service)
	var names []string
	for _, sc := range s.servers(ctx, inv.Team) {
		srv := sc.srv
		if srv.FromChat() && !srv.Shared && srv.AddedBy != inv.User {
			continue // another person's own server: not theirs to sign in to
		}
		if strings.EqualFold(srv.Name, name) {
			return sc, nil
		}
		names = append(names, srv.Name)
	}
	out := tools.ToolError("no connected service is named %q; connected: %s", name, orNoneListed(names))
	return scoped{}, &out
}

func orNoneListed(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

func (s *Source) signInService(ctx context.Context, inv tools.Invocation) (tools.Output, error) {
	var args signInArgs
	if err := tools.DecodeArgs(inv, &args); err != nil {
		return tools.Output{}, err
	}
	if inv.User == "" {
		return tools.ToolError("this request has no Slack user to sign in: a sign-in is a person's own, made from their request in Slack"), nil
	}
	if args.Share && !s.admin(inv.User) {
		return tools.ToolError("only an admin can sign in as the team's service account (share_with_team); offer the person their own sign-in instead"), nil
	}
	sc, out := s.signInServer(ctx, inv, args.Service)
	if out != nil {
		return *out, nil
	}
	if sc.key.team == "" {
		// The operator's server listed with one session for every team: a sign-in is a team's, so
		// its session is the team's (as after the 401 that marks it per team).
		sc.key = connKey{team: inv.Team, name: sc.srv.Name}
	}
	base := s.conn(sc.key, sc.srv)
	if !base.signInEligible() {
		return tools.ToolError("%s does not use a sign-in: it is reached with a stored credential or needs none", sc.srv.Name), nil
	}
	if !s.d.OAuth.SignInPossible() {
		return tools.ToolError("signing in needs Lucy's public URL (LUCY_PUBLIC_URL), which is not set: ask an operator"), nil
	}
	person := inv.User
	if args.Share {
		person = ""
	}
	if !args.Share && s.d.OAuth.SignedIn(ctx, inv.Team, sc.srv.Name, person) {
		return tools.Output{Content: fmt.Sprintf("<@%s> is already signed in to %s as themselves. To use another account, sign out first (%s), "+
			"then sign in again.", inv.User, sc.srv.Name, DisconnectService)}, nil
	}
	c := s.callConn(base, inv.User)
	err := c.offerSignIn(withInvocation(ctx, inv), inv, base.lastChallenge(), args.Share)
	var need *needSignIn
	if errors.As(err, &need) {
		if need.posted {
			return tools.Output{Content: need.Error()}, nil
		}
		return tools.ToolError("%s", need.Error()), nil
	}
	return tools.ToolError("a sign-in to %s cannot be offered: %s", sc.srv.Name, c.scrubbed(err.Error())), nil
}

// disconnectService deletes the requester's own sign-in to a service (or, for an admin with
// team_wide, the team's service account). It asks for no approval: it removes nobody's access but
// the requester's own (or, by an admin, the account an admin lent), deletes no data at the service,
// and signing in again undoes it.
func (s *Source) disconnectService(ctx context.Context, inv tools.Invocation) (tools.Output, error) {
	var args signOutArgs
	if err := tools.DecodeArgs(inv, &args); err != nil {
		return tools.Output{}, err
	}
	if s.d.OAuth == nil {
		return tools.ToolError("signing in to services is not available in this Lucy, so there is no sign-in to remove"), nil
	}
	if inv.User == "" {
		return tools.ToolError("this request has no Slack user whose sign-in to remove"), nil
	}
	if args.TeamWide && !s.admin(inv.User) {
		return tools.ToolError("only an admin can remove the team's service account; a member can sign out of their own sign-in"), nil
	}
	sc, out := s.signInServer(ctx, inv, args.Service)
	if out != nil {
		return *out, nil
	}
	name := sc.srv.Name
	person := inv.User
	if args.TeamWide {
		person = ""
	}
	had, err := s.d.OAuth.SignOut(ctx, inv.Team, name, person)
	if err != nil {
		return tools.Output{}, fmt.Errorf("sign out of %s: %w", name, err)
	}
	if !had && !args.TeamWide && sc.srv.FromChat() && !sc.srv.Shared && sc.srv.AddedBy == inv.User {
		// Their own server's sign-in from before sign-ins were per person is kept as the team's
		// record of it, and serves them alone: it is theirs to remove.
		if had, err = s.d.OAuth.SignOut(ctx, inv.Team, name, ""); err != nil {
			return tools.Output{}, fmt.Errorf("sign out of %s: %w", name, err)
		}
	}
	s.dropSignIns(inv.Team, name, person)
	teamWide := s.d.OAuth.SignedIn(ctx, inv.Team, name, "")
	switch {
	case args.TeamWide && had:
		return tools.Output{Content: fmt.Sprintf("Removed the team's service account for %s: requests of members who have not signed in "+
			"themselves now ask them to sign in.", name)}, nil
	case args.TeamWide:
		return tools.Output{Content: fmt.Sprintf("%s has no team service account: nothing was removed.", name)}, nil
	case had && teamWide:
		return tools.Output{Content: fmt.Sprintf("Signed <@%s> out of %s: their own sign-in is deleted. Their requests now use the team's "+
			"service account (an admin's); to stop that, an admin can remove it.", inv.User, name)}, nil
	case had:
		return tools.Output{Content: fmt.Sprintf("Signed <@%s> out of %s: their own sign-in is deleted, and their requests will ask them to "+
			"sign in again before using it.", inv.User, name)}, nil
	case teamWide:
		return tools.Output{Content: fmt.Sprintf("<@%s> has no sign-in of their own to %s: nothing was removed. Their requests use the "+
			"team's service account, which only an admin can remove (team_wide).", inv.User, name)}, nil
	}
	return tools.Output{Content: fmt.Sprintf("<@%s> is not signed in to %s: nothing was removed.", inv.User, name)}, nil
}
