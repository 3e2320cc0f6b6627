package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/lucy-agent/lucy/audit"
	"github.com/lucy-agent/lucy/secrets"
	"github.com/lucy-agent/lucy/slackwire"
	"github.com/lucy-agent/lucy/workflows"
)

// The Add key flow. A run posts an Add key button (lucy_store_api_key); a click opens a form (a
// Slack modal) with views.open, the one Slack Web API call the gateway makes: it still never posts.
// The form's submission is checked (who may add or replace the key: secrets.MayWrite), stored
// encrypted in the team's credential store, and the thread's lane is handed a message from the
// submitter, "I added the key for `service`.", never the key: a run waiting for it (ask_human)
// continues, otherwise a new run starts. The key itself enters no workflow, history or log.

// ViewOpener opens a modal for the person who clicked (slack.Client.OpenViewContext) and changes it
// once open (slack.Client.UpdateViewContext).
type ViewOpener interface {
	OpenViewContext(ctx context.Context, triggerID string, view slack.ModalViewRequest) (*slack.ViewResponse, error)
	UpdateViewContext(ctx context.Context, view slack.ModalViewRequest, externalID, hash, viewID string) (*slack.ViewResponse, error)
}

// KeyAddedText is the message the lane gets from the person who submitted the form.
func KeyAddedText(service string) string { return slackwire.KeyAddedText(service) }

// outcomeKey is the outcome of an Add key click that opened the form, and of a stored key handed
// to its lane.
const outcomeKey = "key"

// maxKeyInput is the most a Slack plain_text_input takes; secrets.MaxValueBytes bounds what is
// stored whatever the client.
const maxKeyInput = 3000

// openKeyForm answers a click on Add key with the form, or with a form that says why the person
// may not add this key. The form opens first: a click's trigger_id opens a modal only within 3
// seconds ("Pass a valid trigger_id within 3 seconds of receiving it", Bolt's "Opening modals"
// guide; views.open answers expired_trigger_id after), and the credential store, which says whether
// a key is already there and whether this person may replace it, can be slower than that. So the
// form that opens is the one whose content is known without the store (the input), and what the
// store says is added after (views.update, with the opened view's id and hash): a notice that
// saving replaces a key, or the refusal in place of the input. If the store cannot be read, the
// form stays as it opened: the submission checks again (HandleViewSubmission), so nothing is
// stored that the person may not store. A Slack error (an expired trigger) is logged and
// acknowledged: the person clicks again. A network failure of views.open is returned, so that
// Slack shows the click failed.
func (g *Gateway) openKeyForm(ctx context.Context, cb slack.InteractionCallback, a *slack.BlockAction) error {
	typ := string(cb.Type)
	log := g.log.With().Str("actionId", a.ActionID).Str("user", cb.User.ID).Logger()
	var v slackwire.AddKey
	service, okService := "", false
	if err := json.Unmarshal([]byte(a.Value), &v); err == nil {
		service, okService = secrets.NormalizeService(v.Service)
	}
	if !okService || v.Team == "" || v.Channel == "" || v.ThreadTS == "" || v.Requester == "" || (cb.Team.ID != "" && v.Team != cb.Team.ID) {
		g.metrics.GatewayEvent(typ, outcomeMalformed)
		log.Warn().Msg("Add key button with a malformed value ignored")
		return nil
	}
	v.Service = service
	if g.views == nil {
		g.metrics.GatewayEvent(typ, outcomeIgnored)
		log.Warn().Msg("Add key clicked, but this gateway has no Slack client to open the form with")
		return nil
	}
	meta, _ := json.Marshal(v)
	intro := fmt.Sprintf("Lucy asked <@%s> for a key for *%s*. It is stored encrypted for this workspace: never posted in the "+
		"thread, never shown to the AI model.", v.Requester, service)
	refusal := ""
	if g.creds == nil {
		refusal = "This Lucy cannot store keys (no credential store is configured): ask an operator to run `lucy secrets set`."
	}
	start := g.now()
	opened, err := g.views.OpenViewContext(ctx, cb.TriggerID, keyForm(string(meta), service, intro, refusal))
	g.metrics.Handoff(g.now().Sub(start))
	var slackErr slack.SlackErrorResponse
	if errors.As(err, &slackErr) {
		g.metrics.GatewayEvent(typ, outcomeMalformed)
		log.Warn().Str("error", slackErr.Err).Msg("Slack refused to open the Add key form; the person can click again")
		return nil
	}
	if err != nil {
		return fmt.Errorf("open the Add key form: %w", err)
	}
	g.metrics.GatewayEvent(typ, outcomeKey)
	if refusal == "" {
		refusal = g.keyFormNotice(ctx, cb, v, service, opened, string(meta), intro)
	}
	log.Info().Str("service", service).Bool("refused", refusal != "").Msg("Add key form opened")
	return nil
}

// keyFormNotice reads the credential store once the form is open and updates the form with what it
// says: the refusal when the person may not write the key (returned), or a notice that saving
// replaces the key already stored. A store or Slack failure is logged and leaves the form as it
// opened (the submission checks again).
func (g *Gateway) keyFormNotice(ctx context.Context, cb slack.InteractionCallback, v slackwire.AddKey, service string, opened *slack.ViewResponse, meta, intro string) string {
	log := g.log.With().Str("user", cb.User.ID).Str("service", service).Logger()
	existing, err := g.existingKey(ctx, v.Team, service)
	if err != nil {
		log.Warn().Err(err).Msg("could not read the credential store for the open Add key form; its submission checks again")
		return ""
	}
	refusal := ""
	if err := secrets.MayWrite(existing, cb.User.ID, v.Requester, g.isAdmin(cb.User.ID)); err != nil {
		refusal = err.Error() + "."
	} else if existing != nil {
		intro += fmt.Sprintf("\nA key is already stored (added by <@%s>): saving replaces it.", existing.Owner)
	} else {
		return "" // the form as it opened is the right one
	}
	if opened == nil || opened.ID == "" {
		return refusal
	}
	if _, err := g.views.UpdateViewContext(ctx, keyForm(meta, service, intro, refusal), "", opened.Hash, opened.ID); err != nil {
		log.Warn().Err(err).Msg("could not update the open Add key form; its submission checks again")
	}
	return refusal
}

// keyForm is the Add key form: the input for the key, or, with a refusal, the reason instead.
func keyForm(meta, service, intro, refusal string) slack.ModalViewRequest {
	view := slack.ModalViewRequest{
		Type: slack.VTModal, Title: plain("Add a key"), Close: plain("Cancel"),
		CallbackID: slackwire.AddKeyView, PrivateMetadata: meta,
	}
	if refusal != "" {
		view.Close = plain("OK")
		view.Blocks = slack.Blocks{BlockSet: []slack.Block{section(intro), section(refusal)}}
		return view
	}
	input := slack.NewPlainTextInputBlockElement(plain("Paste the key or token"), slackwire.AddKeyInputAction)
	input.Multiline, input.MaxLength = true, maxKeyInput // a PEM key has lines
	view.Submit = plain("Save key")
	view.Blocks = slack.Blocks{BlockSet: []slack.Block{
		section(intro),
		slack.NewInputBlock(slackwire.AddKeyInputBlock, plain("Key for "+service), nil, input),
	}}
	return view
}

// HandleViewSubmission checks and stores what the Add key form submitted. A refusal, an empty or
// oversized key comes back as the form's errors (response_action "errors"), with nothing stored. On
// success the key is stored and the lane is handed "I added the key for `service`." from the
// submitter; the answer is nil and the form closes. An error means the store or the hand-off
// failed: nothing the person can fix, so the caller answers 500 (Slack shows the form's error and
// the person can submit again: the key is then stored again and the lane, which knows the view's
// ID from the first hand-off, deduplicates). Submissions of other forms are ignored.
func (g *Gateway) HandleViewSubmission(ctx context.Context, cb slack.InteractionCallback) (*slack.ViewSubmissionResponse, error) {
	typ := string(cb.Type)
	if cb.View.CallbackID == FeedbackReasonView {
		return g.feedbackReason(ctx, cb)
	}
	if cb.View.CallbackID != slackwire.AddKeyView {
		g.metrics.GatewayEvent(typ, outcomeIgnored)
		return nil, nil
	}
	log := g.log.With().Str("user", cb.User.ID).Str("view", cb.View.ID).Logger()
	formError := func(msg string) (*slack.ViewSubmissionResponse, error) {
		g.metrics.GatewayEvent(typ, outcomeIgnored)
		return slack.NewErrorsViewSubmissionResponse(map[string]string{slackwire.AddKeyInputBlock: msg}), nil
	}
	var v slackwire.AddKey
	service, ok := "", false
	if err := json.Unmarshal([]byte(cb.View.PrivateMetadata), &v); err == nil {
		service, ok = secrets.NormalizeService(v.Service)
	}
	if !ok || v.Team == "" || v.Channel == "" || v.ThreadTS == "" || !slackwire.IsMessageTS(v.ThreadTS) {
		log.Warn().Msg("Add key form with malformed metadata refused")
		return formError("This form is damaged: close it and click Add key again.")
	}
	if (g.team != "" && v.Team != g.team) || (cb.Team.ID != "" && cb.Team.ID != v.Team) {
		g.metrics.GatewayEvent(typ, outcomeOtherTeam)
		log.Warn().Str("workspace", cb.Team.ID).Str("installed", g.team).Msg("Add key form from another workspace refused")
		return formError("This form belongs to another workspace.")
	}
	if g.creds == nil {
		return formError("This Lucy cannot store keys (no credential store is configured).")
	}
	value := strings.TrimSpace(cb.View.State.Values[slackwire.AddKeyInputBlock][slackwire.AddKeyInputAction].Value)
	switch {
	case value == "":
		return formError("Paste the key.")
	case len(value) > secrets.MaxValueBytes:
		return formError(fmt.Sprintf("That is %d bytes; a key is at most %d.", len(value), secrets.MaxValueBytes))
	}
	existing, err := g.existingKey(ctx, v.Team, service)
	if err != nil {
		return nil, err
	}
	if err := secrets.MayWrite(existing, cb.User.ID, v.Requester, g.isAdmin(cb.User.ID)); err != nil {
		log.Info().Str("service", service).Msg("Add key refused: the submitter may not write this key")
		return formError(err.Error() + ".")
	}
	if secrets.Reserved(service) && (v.Kind == "" || v.Kind == secrets.KindKey) {
		log.Warn().Str("service", service).Msg("Add key form for a reserved name refused")
		return formError("This name belongs to one of Lucy's mailboxes or sign-ins and cannot be given a key here.")
	}
	bind := secrets.Binding{Integration: v.Integration, Kind: v.Kind}
	if v.Origin != "" {
		bind.Origins = []string{v.Origin}
	}
	if _, err := g.creds.PutBound(ctx, v.Team, service, value, cb.User.ID, bind); err != nil {
		return nil, fmt.Errorf("store the key for %s: %w", service, err)
	}
	log.Info().Str("service", service).Bool("replaced", existing != nil).Msg("key stored")
	g.recordKey(ctx, cb.View.ID, v, service, cb.User.ID, existing != nil)
	now := g.now()
	m := workflows.Message{
		// The view's ID names this submission: a redelivery hands the same event, which the lane
		// drops. There is no Slack message behind it (the gateway never posts), so its ts is the
		// time of the submission, after the button's. (Not the button's own ts: the run reads its
		// request back from the thread by ts, and would read the button's text instead.)
		EventID: "view:" + cb.View.ID, Team: v.Team, Channel: v.Channel, TS: submissionTS(now), ThreadTS: v.ThreadTS,
		User: cb.User.ID, Text: KeyAddedText(service), Kind: "message", IsDM: strings.HasPrefix(v.Channel, "D"),
		ReceivedAt: now.UTC().Format(time.RFC3339Nano),
	}
	outcome, err := handOff(ctx, g.h, m)
	g.metrics.Handoff(g.now().Sub(now))
	if err != nil {
		g.metrics.GatewayEvent(typ, outcomeError)
		return nil, err
	}
	g.metrics.GatewayEvent(typ, outcomeKey)
	g.lanes.remember(m.Key(), true, g.now())
	log.Info().Str("service", service).Str("outcome", outcome).Str("channel", v.Channel).Str("thread", v.ThreadTS).Msg("key added, lane told")
	return nil, nil
}

// existingKey is the Meta of team's key for service, nil when there is none.
func (g *Gateway) existingKey(ctx context.Context, team, service string) (*secrets.Meta, error) {
	m, err := g.creds.Stat(ctx, team, service)
	if errors.Is(err, secrets.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the stored key for %s: %w", service, err)
	}
	return &m, nil
}

func (g *Gateway) isAdmin(user string) bool { return user != "" && slices.Contains(g.admins, user) }

// submissionTS is a Slack ts for t, for a message that has no Slack message behind it.
func submissionTS(t time.Time) string {
	us := t.UnixMicro()
	return fmt.Sprintf("%d.%06d", us/1e6, us%1e6)
}

func plain(s string) *slack.TextBlockObject {
	return slack.NewTextBlockObject(slack.PlainTextType, s, false, false)
}

func section(mrkdwn string) *slack.SectionBlock {
	return slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, mrkdwn, false, false), nil, nil)
}

// removePasted takes a key pasted into a message out of it before the message enters Temporal
// (secrets.RemovePasted). The person is told by the run: the text keeps the marker
// secrets.Removed where the key was, and the system prompt says what to answer to it.
func (g *Gateway) removePasted(m *workflows.Message, eventID string) {
	text, removed := secrets.RemovePasted(m.Text)
	if !removed {
		return
	}
	m.Text = text
	g.log.Warn().Str("eventId", eventID).Str("workspace", m.Team).Str("channel", m.Channel).Str("user", m.User).
		Msg("a key pasted into a message was removed before the hand-off")
}

// recordKey adds a key stored with the Add key form to the record of what Lucy did (its name and
// who added it, never the key). The key is stored by then: a record that fails is logged, not the
// form's error, which would make the person paste it again.
func (g *Gateway) recordKey(ctx context.Context, viewID string, v slackwire.AddKey, service, user string, replaced bool) {
	if g.audit == nil {
		return
	}
	what := "added the key for " + service
	if replaced {
		what = "replaced the key for " + service
	}
	e := audit.Entry{ID: "view:" + viewID, Team: v.Team, Channel: v.Channel, ThreadTS: v.ThreadTS, User: user,
		Kind: audit.KindConnect, Summary: what + " (Add key form)", Outcome: "ok", By: user}
	if err := g.audit.Record(ctx, e); err != nil {
		g.log.Error().Err(err).Str("team", v.Team).Str("service", service).Str("user", user).
			Msg("a key added with the Add key form could not be added to the audit record")
	}
}
