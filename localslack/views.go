package localslack

import (
	"encoding/json"
	"fmt"
	"strings"
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
	// JSON is the view as the app sent it (type, title, blocks, submit, …).
	JSON json.RawMessage
}

// trigger is a trigger_id Click issued: valid once, for one person.
type trigger struct {
	user string
	used bool
}

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

// Click is user clicking the button actionID of the message at ts in channel: it returns the
// block_actions payload Slack sends the app (the JSON of the `payload` form field), with a new
// trigger_id that views.open accepts once.
func (s *Server) Click(user, channel, ts, actionID string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cs, ok := s.channels[channel]
	if !ok {
		return nil, fmt.Errorf("localslack: no channel %s", channel)
	}
	m, ok := cs.byTS[ts]
	if !ok {
		return nil, fmt.Errorf("localslack: no message %s in %s", ts, channel)
	}
	var blocks []map[string]any
	_ = json.Unmarshal(m.Blocks, &blocks)
	var action map[string]any
	for _, b := range blocks {
		els, _ := b["elements"].([]any)
		for _, e := range els {
			el, _ := e.(map[string]any)
			if el["action_id"] == actionID {
				action = map[string]any{"action_id": actionID, "block_id": b["block_id"], "type": el["type"], "value": el["value"],
					"text": el["text"], "action_ts": s.nextTS()}
			}
		}
	}
	if action == nil {
		return nil, fmt.Errorf("localslack: the message %s has no element %s", ts, actionID)
	}
	s.triggerSeq++
	tid := fmt.Sprintf("%d.%d.local%06d", s.lastTS/1e6, s.triggerSeq, s.triggerSeq)
	if s.triggers == nil {
		s.triggers = map[string]*trigger{}
	}
	s.triggers[tid] = &trigger{user: user}
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
// checks one (a trigger is valid once; a modal has a title of at most 24 characters, at most 100
// blocks, a submit button when it has inputs, private_metadata of at most 3,000 characters).
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
		return nil, errCode("trigger_exchanged")
	}
	var view struct {
		Type            string                       `json:"type"`
		Title           *struct{ Type, Text string } `json:"title"`
		Submit          *struct{ Type, Text string } `json:"submit"`
		Blocks          []map[string]any             `json:"blocks"`
		PrivateMetadata string                       `json:"private_metadata"`
		CallbackID      string                       `json:"callback_id"`
	}
	raw := c.p.Get("view")
	if err := json.Unmarshal([]byte(raw), &view); err != nil {
		return nil, invalidView("view is not a JSON object")
	}
	hasInput := false
	for _, b := range view.Blocks {
		if b["type"] == "input" {
			hasInput = true
			if _, ok := b["element"].(map[string]any); !ok {
				return nil, invalidView("an input block has no element")
			}
		}
	}
	switch {
	case view.Type != "modal":
		return nil, invalidView("view.type must be modal")
	case view.Title == nil || view.Title.Type != "plain_text" || view.Title.Text == "":
		return nil, invalidView("view.title must be plain_text")
	case utf8.RuneCountInString(view.Title.Text) > 24:
		return nil, invalidView("view.title must be at most 24 characters")
	case len(view.Blocks) == 0 || len(view.Blocks) > 100:
		return nil, invalidView("view.blocks must have 1 to 100 blocks")
	case hasInput && (view.Submit == nil || view.Submit.Type != "plain_text"):
		return nil, invalidView("a view with inputs needs a plain_text submit")
	case len(view.PrivateMetadata) > 3000:
		return nil, invalidView("private_metadata must be at most 3000 characters")
	case len(view.CallbackID) > 255:
		return nil, invalidView("callback_id must be at most 255 characters")
	}
	tr.used = true
	s.viewSeq++
	v := View{
		ID: fmt.Sprintf("VLOCAL%04d", s.viewSeq), Team: s.opts.Team, User: tr.user, TriggerID: tid, CallbackID: view.CallbackID,
		PrivateMetadata: view.PrivateMetadata, Hash: fmt.Sprintf("%d.local%04d", s.lastTS/1e6, s.viewSeq), JSON: json.RawMessage(raw),
	}
	s.views = append(s.views, v)
	s.bump()
	out := map[string]any{}
	_ = json.Unmarshal([]byte(raw), &out)
	out["id"], out["team_id"], out["hash"], out["app_id"], out["bot_id"] = v.ID, v.Team, v.Hash, s.opts.AppID, s.opts.BotID
	return reply{"view": out}, nil
}

func invalidView(msg string) *apiError {
	return &apiError{code: "invalid_arguments", extra: map[string]any{"response_metadata": map[string]any{"messages": []string{"[ERROR] " + msg}}}}
}
