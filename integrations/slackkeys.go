package integrations

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/slack-go/slack"

	"github.com/lucy-agent/lucy/secrets"
	"github.com/lucy-agent/lucy/slackwire"
	"github.com/lucy-agent/lucy/tools"
)

// SlackKeys asks for a key with an Add key button in the run's thread, posted through the Slack
// client the tools use (the local workspace's for the terminal, whose gateway asks for the key
// without echo when it sees the button).
type SlackKeys struct {
	slack func(team string) tools.SlackAPI
}

// NewSlackKeys returns the KeyRequester over the tools' Slack clients.
func NewSlackKeys(slack func(team string) tools.SlackAPI) *SlackKeys { return &SlackKeys{slack: slack} }

// RequestKey posts the button, once per tool call: a retried call finds the message it posted by its
// metadata (docs/architecture.md rule 4). Nothing it posts holds a key: the value names the service,
// the requester and the thread, and why has been through secrets.RemovePasted.
func (s *SlackKeys) RequestKey(ctx context.Context, inv tools.Invocation, service, why string, for_ secrets.Binding) error {
	api, done, err := s.buttonThread(ctx, inv, "Add key", slackwire.AddKeyMetadata)
	if err != nil || done {
		return err
	}
	if secrets.Reserved(service) && (for_.Kind == "" || for_.Kind == secrets.KindKey) {
		// Only an integration asks for its own reserved name (a mailbox's password, with its kind).
		return secrets.ErrReserved
	}
	origin := ""
	if len(for_.Origins) > 0 {
		origin = for_.Origins[0]
	}
	value, err := json.Marshal(slackwire.AddKey{Team: inv.Team, Channel: inv.Channel, ThreadTS: inv.ThreadTS, Service: service, Requester: inv.User,
		Origin: origin, Integration: for_.Integration, Kind: for_.Kind})
	if err != nil {
		return err
	}
	text := fmt.Sprintf("<@%s> Lucy needs a key for *%s*", inv.User, escape(service))
	if why != "" {
		text += ": " + escape(why)
	}
	text += ".\nClick *Add key* and paste it into the private form that opens: it is stored encrypted for this workspace, " +
		"never posted here and never shown to the AI model. Please do not paste keys into messages."
	blocks := []slack.Block{
		slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, text, false, false), nil, nil),
		slack.NewActionBlock(slackwire.AddKeyBlock,
			slack.NewButtonBlockElement(slackwire.AddKeyAction, string(value), slack.NewTextBlockObject(slack.PlainTextType, "Add key", false, false)).
				WithStyle(slack.StylePrimary)),
	}
	_, _, err = api.PostMessageContext(ctx, inv.Channel,
		slack.MsgOptionText(fmt.Sprintf("Lucy needs a key for %s: click Add key.", service), false),
		slack.MsgOptionBlocks(blocks...),
		slack.MsgOptionTS(inv.ThreadTS),
		slack.MsgOptionMetadata(slack.SlackMetadata{
			EventType:    slackwire.AddKeyMetadata,
			EventPayload: map[string]any{"run": inv.RunID, "call": inv.CallID, "service": service},
		}),
	)
	return err
}

// posted looks for the button this very call already posted in the thread (a message with the
// metadata event): an Add key or a Sign in button. Any failure means "not found": the check must not
// stop a first post.
// buttonThread is the Slack client a button for inv is posted with, in inv's thread; done is true
// when this tool call posted it already (event is the button's metadata event type).
func (s *SlackKeys) buttonThread(ctx context.Context, inv tools.Invocation, button, event string) (api tools.SlackAPI, done bool, err error) {
	if s.slack != nil {
		api = s.slack(inv.Team)
	}
	if api == nil {
		return nil, false, errors.New("slack is not connected for this workspace")
	}
	if inv.Channel == "" || inv.ThreadTS == "" || inv.User == "" {
		return nil, false, errors.New("there is no conversation to post the " + button + " button in")
	}
	return api, posted(ctx, api, inv, event), nil
}

func posted(ctx context.Context, api tools.SlackAPI, inv tools.Invocation, event string) bool {
	if inv.RunID == "" || inv.CallID == "" {
		return false
	}
	params := &slack.GetConversationRepliesParameters{ChannelID: inv.Channel, Timestamp: inv.ThreadTS, Limit: 200, IncludeAllMetadata: true}
	for range 10 {
		msgs, more, cursor, err := api.GetConversationRepliesContext(ctx, params)
		if err != nil {
			return false
		}
		for _, m := range msgs {
			md := m.Metadata
			if md.EventType == event && md.EventPayload["run"] == inv.RunID && md.EventPayload["call"] == inv.CallID {
				return true
			}
		}
		if !more || cursor == "" {
			return false
		}
		params.Cursor = cursor
	}
	return false
}

// escape makes text shown as mrkdwn literal: no mention, link or channel ping from the model's words.
func escape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}
