package integrations

import (
	"context"
	"fmt"
	"time"

	"github.com/slack-go/slack"

	"github.com/lucy-agent/lucy/slackwire"
	"github.com/lucy-agent/lucy/tools"
)

// SignInRequester asks one person to sign in to a service as themselves: it posts a Sign in button
// (a URL button to Lucy's start link, which sends the browser on to the provider) in the run's
// thread, addressed to them. The
// button's value is the link's state: Slack delivers the click to the gateway with the clicking
// user, and the sign-in's callback stores tokens only for a link its own person opened.
type SignInRequester interface {
	RequestSignIn(ctx context.Context, inv tools.Invocation, req SignInRequest) error
}

// SignInRequest is one link to offer: the service, the link (oauth.SignIn.URL), its state, until when it
// works, and for whom it is, in words ("your own requests only"). SignOut says how the sign-in is
// ended; "" is saying "sign me out of <service>". As is the account to sign in with, in words; ""
// is "yourself".
type SignInRequest struct {
	Service, URL, State string
	Expires             time.Time
	Serves              string
	SignOut, As         string
}

// RequestSignIn posts the Sign in button for inv.User, once per tool call and link (a retried call
// finds the message it posted by its metadata, docs/architecture.md rule 4). The URL carries no
// token and grants nothing by itself; the message says it is for inv.User alone.
func (s *SlackKeys) RequestSignIn(ctx context.Context, inv tools.Invocation, req SignInRequest) error {
	api, done, err := s.buttonThread(ctx, inv, "Sign in", slackwire.SignInMetadata)
	if err != nil || done {
		return err
	}
	signOut := req.SignOut
	if signOut == "" {
		signOut = "say \"sign me out of " + req.Service + "\" at any time"
	}
	as := req.As
	if as == "" {
		as = "yourself"
	}
	text := fmt.Sprintf("<@%s> sign in to *%s* as %s: click *Sign in* (the link works until %s UTC, for you only: "+
		"if someone else opens it, it stops working and nothing is connected). The sign-in is used for %s; "+
		"%s.", inv.User, escape(req.Service), escape(as), req.Expires.UTC().Format("15:04"), escape(req.Serves), escape(signOut))
	btn := slack.NewButtonBlockElement(slackwire.SignInAction, req.State, slack.NewTextBlockObject(slack.PlainTextType, "Sign in", false, false)).
		WithURL(req.URL).WithStyle(slack.StylePrimary)
	blocks := []slack.Block{
		slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, text, false, false), nil, nil),
		slack.NewActionBlock(slackwire.SignInBlock, btn),
	}
	_, _, err = api.PostMessageContext(ctx, inv.Channel,
		slack.MsgOptionText(fmt.Sprintf("Sign in to %s: click Sign in.", req.Service), false),
		slack.MsgOptionBlocks(blocks...),
		slack.MsgOptionTS(inv.ThreadTS),
		slack.MsgOptionMetadata(slack.SlackMetadata{
			EventType:    slackwire.SignInMetadata,
			EventPayload: map[string]any{"run": inv.RunID, "call": inv.CallID, "service": req.Service, "user": inv.User},
		}),
	)
	return err
}
