package localslack

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// Modals: views.open opens a form for the person whose click issued the trigger_id, as Slack does;
// Click makes that click (a block_actions payload with a fresh trigger_id) and SubmitView the form's
// submission (a view_submission payload), each exactly as Slack sends them to an app's interactivity
// endpoint, so that a gateway can be tested over signed HTTP, over Socket Mode or in process.

// View is a modal opened with views.open.
type View struct {
	ID              string
	Team            string
	User            string // the person it is open for: whoever clicked for the trigger_id
	TriggerID       string
	CallbackID      string
	PrivateMetadata string
	Hash            string
	// JSON is the view as the app sent it last (type, title, blocks, submit, …).
	JSON json.RawMessage
	// Updates counts the views.update calls that changed it.
	Updates int
}

// trigger is a trigger_id Click issued: valid once, for one person, for TriggerLifetime.
type trigger struct {
	user   string
	used   bool
	issued time.Time
}

// TriggerLifetime is how long a trigger_id can open a modal: "Pass a valid trigger_id within 3
// seconds of receiving it" (Bolt's "Opening modals" guide,
// https://docs.slack.dev/tools/bolt-js/concepts/opening-modals; views.open's reference page says the
// same of trigger_id). Later, views.open answers expired_trigger_id (ref:views.open errors). The
// clock is Options.Now, so that a test can let a slow step pass the deadline without sleeping.
const TriggerLifetime = 3 * time.Second

// Views returns the modals opened so far, in order.
func (s *Server) Views() []View {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]View, len(s.views))
	for i, v := range s.views {
		v.JSON = append(json.RawMessage(nil), v.JSON...)
		out[i] = v
	}
	return out
}

// clicked finds the message at ts in channel that a person clicks in (s.mu held).
func (s *Server) clicked(channel, ts string) (*channelState, *Message, error) {
	cs, ok := s.channels[channel]
	if !ok {
		return nil, nil, fmt.Errorf("localslack: no channel %s", channel)
	}
	m, ok := cs.byTS[ts]
	if !ok {
		return nil, nil, fmt.Errorf("localslack: no message %s in %s", ts, channel)
	}
	return cs, m, nil
}

// Click is user clicking the button actionID of the message at ts in channel: it returns the
// block_actions payload Slack sends the app (the JSON of the `payload` form field), with a new
// trigger_id that views.open accepts once.
func (s *Server) Click(user, channel, ts, actionID string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cs, m, err := s.clicked(channel, ts)
	if err != nil {
		return nil, err
	}
	var blocks []map[string]any
	_ = json.Unmarshal(m.Blocks, &blocks)
	var action map[string]any
	for _, b := range blocks {
		els, _ := b["elements"].([]any)
		for _, e := range els {
			el, _ := e.(map[string]any)
			if el["action_id"] == actionID {
				if el["type"] == "feedback_buttons" {
					return nil, fmt.Errorf("localslack: %s is a feedback_buttons element: use ClickFeedback", actionID)
				}
				action = map[string]any{"action_id": actionID, "block_id": b["block_id"], "type": el["type"], "value": el["value"],
					"text": el["text"], "action_ts": s.nextTS()}
			}
		}
	}
	if action == nil {
		return nil, fmt.Errorf("localslack: the message %s has no element %s", ts, actionID)
	}
	return s.blockActions(user, cs, m, action)
}

// ClickFeedback is user clicking the positive (or negative) button of the feedback_buttons element
// of the message at ts in channel (a context_actions block): the block_actions payload Slack sends
// the app. Its action has the element's action_id and block_id, type "feedback_buttons", and the
// clicked button's value and text (Bolt's FeedbackButtonsAction, bolt-js
// src/types/actions/block-action.ts: type, action_id, block_id, action_ts, value, text).
func (s *Server) ClickFeedback(user, channel, ts string, positive bool) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cs, m, err := s.clicked(channel, ts)
	if err != nil {
		return nil, err
	}
	var blocks []map[string]any
	_ = json.Unmarshal(m.Blocks, &blocks)
	side := "negative_button"
	if positive {
		side = "positive_button"
	}
	for _, b := range blocks {
		if b["type"] != "context_actions" {
			continue
		}
		els, _ := b["elements"].([]any)
		for _, e := range els {
			el, _ := e.(map[string]any)
			if el["type"] != "feedback_buttons" {
				continue
			}
			btn, _ := el[side].(map[string]any)
			action := map[string]any{"action_id": el["action_id"], "block_id": b["block_id"], "type": "feedback_buttons",
				"value": btn["value"], "text": btn["text"], "action_ts": s.nextTS()}
			return s.blockActions(user, cs, m, action)
		}
	}
	return nil, fmt.Errorf("localslack: the message %s has no feedback buttons", ts)
}

// blockActions is the block_actions payload of user's action on message m of cs, with a new
// trigger_id. Callers hold s.mu.
func (s *Server) blockActions(user string, cs *channelState, m *Message, action map[string]any) ([]byte, error) {
	channel, ts := cs.info.ID, m.TS
	if id, _ := action["block_id"].(string); id == "" {
		// "If not specified, block_id will be generated" (context-actions-block, and every block's
		// block_id field): a click always names its block. Derived from the message, so stable.
		action["block_id"] = "gen-" + strings.ReplaceAll(ts, ".", "")
	}
	s.triggerSeq++
	tid := fmt.Sprintf("%d.%d.local%06d", s.lastTS/1e6, s.triggerSeq, s.triggerSeq)
	if s.triggers == nil {
		s.triggers = map[string]*trigger{}
	}
	s.triggers[tid] = &trigger{user: user, issued: s.now()}
	u := s.users[user]
	container := map[string]any{"type": "message", "message_ts": ts, "channel_id": channel, "is_ephemeral": false}
	if m.ThreadTS != "" {
		container["thread_ts"] = m.ThreadTS
	}
	msg := map[string]any{"type": "message", "ts": ts, "text": m.Text, "user": m.User, "bot_id": m.BotID, "blocks": json.RawMessage(m.Blocks)}
	if m.ThreadTS != "" {
		msg["thread_ts"] = m.ThreadTS
	}
	payload := map[string]any{
		"type":                  "block_actions",
		"team":                  map[string]any{"id": s.opts.Team, "domain": strings.ToLower(s.opts.TeamName)},
		"user":                  map[string]any{"id": user, "username": u.Name, "name": u.Name, "team_id": s.opts.Team},
		"api_app_id":            s.opts.AppID,
		"token":                 "local-verification-token",
		"container":             container,
		"trigger_id":            tid,
		"channel":               map[string]any{"id": channel, "name": cs.info.Name},
		"message":               msg,
		"actions":               []any{action},
		"is_enterprise_install": false,
	}
	return json.Marshal(payload)
}

// SubmitView is the person the view is open for pressing its submit button with values typed into
// its inputs (block_id → action_id → text): it returns the view_submission payload Slack sends the
// app. Each input's type is read from the view's blocks, as Slack reports it.
func (s *Server) SubmitView(viewID string, values map[string]map[string]string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var v *View
	for i := range s.views {
		if s.views[i].ID == viewID {
			v = &s.views[i]
		}
	}
	if v == nil {
		return nil, fmt.Errorf("localslack: no view %s", viewID)
	}
	var view map[string]any
	if err := json.Unmarshal(v.JSON, &view); err != nil {
		return nil, err
	}
	types := map[string]string{}
	blocks, _ := view["blocks"].([]any)
	for _, b := range blocks {
		blk, _ := b.(map[string]any)
		if el, ok := blk["element"].(map[string]any); ok {
			id, _ := blk["block_id"].(string)
			aid, _ := el["action_id"].(string)
			typ, _ := el["type"].(string)
			types[id+"/"+aid] = typ
		}
	}
	state := map[string]any{}
	for block, actions := range values {
		vals := map[string]any{}
		for action, text := range actions {
			typ, ok := types[block+"/"+action]
			if !ok {
				return nil, fmt.Errorf("localslack: the view has no input %s/%s", block, action)
			}
			vals[action] = map[string]any{"type": typ, "value": text}
		}
		state[block] = vals
	}
	view["id"], view["team_id"], view["state"], view["hash"] = v.ID, v.Team, map[string]any{"values": state}, v.Hash
	view["root_view_id"], view["app_id"], view["bot_id"], view["app_installed_team_id"] = v.ID, s.opts.AppID, s.opts.BotID, s.opts.Team
	view["previous_view_id"], view["external_id"] = nil, ""
	u := s.users[v.User]
	return json.Marshal(map[string]any{
		"type":                  "view_submission",
		"team":                  map[string]any{"id": v.Team, "domain": strings.ToLower(s.opts.TeamName)},
		"user":                  map[string]any{"id": v.User, "username": u.Name, "name": u.Name, "team_id": v.Team},
		"api_app_id":            s.opts.AppID,
		"token":                 "local-verification-token",
		"trigger_id":            v.TriggerID + ".submit",
		"view":                  view,
		"response_urls":         []any{},
		"is_enterprise_install": false,
		"enterprise":            nil,
	})
}

// viewsOpen is views.open: a modal for the person whose click issued trigger_id, checked as Slack
// checks one (a trigger is valid once, for TriggerLifetime; a modal has a title of at most 24
// characters, at most 100 blocks, a submit button when it has inputs, private_metadata of at most
// 3,000 characters). The trigger's codes are views.open's documented ones (ref:views.open errors):
// invalid_trigger_id, exchanged_trigger_id ("The trigger_id was already exchanged in a previous
// call"), expired_trigger_id.
func (s *Server) viewsOpen(c *call) (reply, *apiError) {
	tid := c.p.Get("trigger_id")
	if tid == "" {
		return nil, errCode("invalid_arguments")
	}
	tr, ok := s.triggers[tid]
	switch {
	case !ok:
		return nil, errCode("invalid_trigger_id")
	case tr.used:
		return nil, errCode("exchanged_trigger_id")
	case s.now().Sub(tr.issued) > TriggerLifetime:
		return nil, errCode("expired_trigger_id")
	}
	raw, view, aerr := modalOf(c)
	if aerr != nil {
		return nil, aerr
	}
	tr.used = true
	s.viewSeq++
	v := View{
		ID: fmt.Sprintf("VLOCAL%04d", s.viewSeq), Team: s.opts.Team, User: tr.user, TriggerID: tid, CallbackID: view.CallbackID,
		PrivateMetadata: view.PrivateMetadata, Hash: fmt.Sprintf("%d.local%04d", s.lastTS/1e6, s.viewSeq), JSON: json.RawMessage(raw),
	}
	s.views = append(s.views, v)
	s.bump()
	return reply{"view": s.viewReply(v)}, nil
}

// modalOf is the call's view argument, checked as a modal (checkModal), with the fields the fake
// keeps of it: views.open and views.update take the same view.
func modalOf(c *call) (raw string, view struct {
	PrivateMetadata string `json:"private_metadata"`
	CallbackID      string `json:"callback_id"`
}, aerr *apiError) {
	raw = c.p.Get("view")
	if aerr = checkModal(raw); aerr != nil {
		return raw, view, aerr
	}
	_ = json.Unmarshal([]byte(raw), &view)
	return raw, view, nil
}

// viewsUpdate is views.update: the open view named by view_id gets a new content, checked as
// views.open checks one. A hash that is not the view's current one answers hash_conflict ("the
// provided hash doesn't match the current stored value"), an unknown view not_found
// (ref:views.update errors); each update gives the view a new hash. external_id is not supported
// by this fake (Lucy does not set one): it answers not_found.
func (s *Server) viewsUpdate(c *call) (reply, *apiError) {
	id := c.p.Get("view_id")
	var v *View
	for i := range s.views {
		if id != "" && s.views[i].ID == id {
			v = &s.views[i]
		}
	}
	if v == nil {
		return nil, errCode("not_found")
	}
	if h := c.p.Get("hash"); h != "" && h != v.Hash {
		return nil, errCode("hash_conflict")
	}
	raw, view, aerr := modalOf(c)
	if aerr != nil {
		return nil, aerr
	}
	s.viewSeq++
	v.JSON, v.PrivateMetadata, v.CallbackID = json.RawMessage(raw), view.PrivateMetadata, view.CallbackID
	v.Hash = fmt.Sprintf("%d.local%04d", s.lastTS/1e6, s.viewSeq)
	v.Updates++
	s.bump()
	return reply{"view": s.viewReply(*v)}, nil
}

// viewReply is the view object views.open and views.update answer with.
func (s *Server) viewReply(v View) map[string]any {
	out := map[string]any{}
	_ = json.Unmarshal(v.JSON, &out)
	out["id"], out["team_id"], out["hash"], out["app_id"], out["bot_id"] = v.ID, v.Team, v.Hash, s.opts.AppID, s.opts.BotID
	return out
}

// checkModal checks a modal view as Slack does before it opens or updates one.
func checkModal(raw string) *apiError {
	var view struct {
		Type            string                       `json:"type"`
		Title           *struct{ Type, Text string } `json:"title"`
		Submit          *struct{ Type, Text string } `json:"submit"`
		Blocks          []map[string]any             `json:"blocks"`
		PrivateMetadata string                       `json:"private_metadata"`
		CallbackID      string                       `json:"callback_id"`
	}
	if err := json.Unmarshal([]byte(raw), &view); err != nil {
		return invalidView("view is not a JSON object")
	}
	hasInput := false
	for _, b := range view.Blocks {
		if b["type"] == "input" {
			hasInput = true
			if _, ok := b["element"].(map[string]any); !ok {
				return invalidView("an input block has no element")
			}
		}
	}
	switch {
	case view.Type != "modal":
		return invalidView("view.type must be modal")
	case view.Title == nil || view.Title.Type != "plain_text" || view.Title.Text == "":
		return invalidView("view.title must be plain_text")
	case utf8.RuneCountInString(view.Title.Text) > 24:
		return invalidView("view.title must be at most 24 characters")
	case len(view.Blocks) == 0 || len(view.Blocks) > 100:
		return invalidView("view.blocks must have 1 to 100 blocks")
	case hasInput && (view.Submit == nil || view.Submit.Type != "plain_text"):
		return invalidView("a view with inputs needs a plain_text submit")
	case len(view.PrivateMetadata) > 3000:
		return invalidView("private_metadata must be at most 3000 characters")
	case len(view.CallbackID) > 255:
		return invalidView("callback_id must be at most 255 characters")
	}
	return nil
}

func invalidView(msg string) *apiError {
	return &apiError{code: "invalid_arguments", extra: map[string]any{"response_metadata": map[string]any{"messages": []string{"[ERROR] " + msg}}}}
}
