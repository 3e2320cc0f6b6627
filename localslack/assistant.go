package localslack

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"
)

// Slack's agent surface: assistant.threads.setStatus, .setSuggestedPrompts and .setTitle, as Slack
// takes them (form parameters or a JSON body; loading_messages as slack-go sends them, joined by
// commas, or as a JSON array; prompts as a JSON array of {title, message}).
//
// Sources of the rules below: the methods' reference pages and their machine-readable JSON
// (https://docs.slack.dev/reference/methods/assistant.threads.setStatus, .setSuggestedPrompts,
// .setTitle; the same as JSON in github.com/slack-ruby/slack-api-ref, docs.slack.dev/methods/*.json,
// snapshot f4837c0 of 2026-08-20), cited as ref:<method> beside each rule.

// Limits of assistant.threads.*.
const (
	// maxLoadingMessages: "loading_messages": {"maxItems": 10} (ref:assistant.threads.setStatus).
	maxLoadingMessages = 10
	// maxLoadingMessageChars: each item {"minLength": 1, "maxLength": 50} (ref:assistant.threads.setStatus).
	maxLoadingMessageChars = 50
	// maxSuggestedPrompts: "set up to four suggested prompts" (docs:assistant.threads.setSuggestedPrompts).
	maxSuggestedPrompts = 4
	// StatusTimeout is how long Slack shows a status without a message from the app: "A two minute
	// timeout applies, which will cause the status to be removed if no message has been sent"
	// (ref:assistant.threads.setStatus, argument status).
	StatusTimeout = 2 * time.Minute
)

// Messaging experiences of an agent app (Options.Experience), as the app's manifest sets them
// (https://docs.slack.dev/ai/migrating-to-agent-messaging).
const (
	// ExperienceAssistant is features.assistant_view, the "Assistant messaging experience" (the default).
	ExperienceAssistant = "assistant"
	// ExperienceAgent is features.agent_view: setSuggestedPrompts "should only be used [with thread_ts]
	// in the legacy assistant messaging experience. Including it in a call for an agent app will
	// cause the call to silently fail" (docs:assistant.threads.setSuggestedPrompts).
	ExperienceAgent = "agent"
	// ExperienceNone is an app without the agent feature: setSuggestedPrompts answers not_agent_app,
	// "This method requires the app to be configured as an agent" (ref:assistant.threads.setSuggestedPrompts).
	ExperienceNone = "none"
)

// StatusChange is one assistant.threads.setStatus call that Slack accepted ("" clears).
type StatusChange struct {
	Status          string
	LoadingMessages []string
	At              time.Time
}

// SuggestedPrompt is one of a thread's suggested prompts.
type SuggestedPrompt struct {
	Title   string `json:"title"`
	Message string `json:"message"`
}

// assistantThread is what the agent surface shows of one thread.
type assistantThread struct {
	statuses     []StatusChange
	shown        string    // the status shown now ("" when none)
	shownAt      time.Time // when it was set
	title        string
	promptsTitle string
	prompts      []SuggestedPrompt
	loading      []string // the loading messages of the status shown now
}

type threadKey struct{ channel, ts string }

func init() {
	handlers["assistant.threads.setStatus"] = (*Server).assistantSetStatus
	handlers["assistant.threads.setSuggestedPrompts"] = (*Server).assistantSetSuggestedPrompts
	handlers["assistant.threads.setTitle"] = (*Server).assistantSetTitle
	handlers["local.threadStatus"] = (*Server).localThreadStatus
}

// assistantTarget checks the channel_id and thread_ts of an assistant.threads.* call. thread_ts is
// required by setStatus and setTitle and optional for setSuggestedPrompts (each method's "required"
// list, ref:assistant.threads.*); without it the call is about the channel (an agent_view DM).
// Errors are the documented ones: channel_not_found ("Error returned when given an invalid
// channel_id", also for a channel the app is not in: no other code is documented for these
// methods) and invalid_thread_ts; not_allowed_token_type is generic (the same pages' error lists).
// A missing required argument answers invalid_arguments, which Slack does not document here.
func (s *Server) assistantTarget(c *call, threadOptional bool) (*assistantThread, *apiError) {
	if !c.who.bot {
		return nil, errCode("not_allowed_token_type")
	}
	chID, ts := c.p.Get("channel_id"), c.p.Get("thread_ts")
	if chID == "" || (ts == "" && !threadOptional) {
		return nil, errCode("invalid_arguments")
	}
	cs, ok := s.channels[chID] // an ID, not a name: Slack takes channel_id only
	if !ok || cs.info.BotNotMember {
		return nil, errCode("channel_not_found")
	}
	if _, ok := cs.byTS[ts]; ts != "" && !ok {
		return nil, errCode("invalid_thread_ts")
	}
	k := threadKey{chID, ts}
	if s.assistant == nil {
		s.assistant = map[threadKey]*assistantThread{}
	}
	t := s.assistant[k]
	if t == nil {
		t = &assistantThread{}
		s.assistant[k] = t
	}
	return t, nil
}

// listParam reads a list given as a JSON array or, as slack-go sends loading_messages, joined by commas.
func listParam(v string) ([]string, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return nil, true
	}
	if strings.HasPrefix(v, "[") {
		var l []string
		if json.Unmarshal([]byte(v), &l) != nil {
			return nil, false
		}
		return l, true
	}
	return strings.Split(v, ","), true
}

// assistantSetStatus is assistant.threads.setStatus. status is required (an empty one clears);
// loading_messages has 1 to 10 items of 1 to 50 characters each (ref:assistant.threads.setStatus,
// JSON schema). Slack does not document the code it answers to a loading message out of those
// bounds; invalid_arguments, its generic code for arguments its schema refuses, is the likely one.
// No limit on status is published, so none is enforced.
func (s *Server) assistantSetStatus(c *call) (reply, *apiError) {
	t, aerr := s.assistantTarget(c, false)
	if aerr != nil {
		return nil, aerr
	}
	if !c.p.Has("status") {
		return nil, errCode("invalid_arguments")
	}
	status := c.p.Get("status")
	msgs, ok := listParam(c.p.Get("loading_messages"))
	if !ok || len(msgs) > maxLoadingMessages {
		return nil, errCode("invalid_arguments")
	}
	for _, m := range msgs {
		if n := utf8.RuneCountInString(m); n < 1 || n > maxLoadingMessageChars {
			return nil, &apiError{code: "invalid_arguments", extra: map[string]any{"response_metadata": map[string]any{
				"messages": []string{fmt.Sprintf("[ERROR] loading_messages items must be 1 to %d characters", maxLoadingMessageChars)}}}}
		}
	}
	now := s.now()
	t.statuses = append(t.statuses, StatusChange{Status: status, LoadingMessages: msgs, At: now})
	t.shown, t.shownAt, t.loading = status, now, msgs
	s.bump()
	return reply{}, nil
}

// assistantSetSuggestedPrompts is assistant.threads.setSuggestedPrompts: up to four prompts for a
// thread or, without thread_ts, for the channel. Under agent_view a call with thread_ts answers ok
// and changes nothing ("will cause the call to silently fail"); an app without the agent feature
// gets not_agent_app (Experience… above).
func (s *Server) assistantSetSuggestedPrompts(c *call) (reply, *apiError) {
	if s.opts.Experience == ExperienceNone {
		return nil, errCode("not_agent_app")
	}
	t, aerr := s.assistantTarget(c, true)
	if aerr != nil {
		return nil, aerr
	}
	var prompts []SuggestedPrompt
	if json.Unmarshal([]byte(c.p.Get("prompts")), &prompts) != nil || len(prompts) == 0 || len(prompts) > maxSuggestedPrompts {
		return nil, errCode("invalid_arguments")
	}
	for _, p := range prompts {
		if strings.TrimSpace(p.Title) == "" || strings.TrimSpace(p.Message) == "" {
			return nil, errCode("invalid_arguments")
		}
	}
	if s.opts.Experience == ExperienceAgent && c.p.Get("thread_ts") != "" {
		return reply{}, nil // silently fails (docs:assistant.threads.setSuggestedPrompts)
	}
	t.promptsTitle, t.prompts = c.p.Get("title"), prompts
	s.bump()
	return reply{}, nil
}

func (s *Server) assistantSetTitle(c *call) (reply, *apiError) {
	t, aerr := s.assistantTarget(c, false)
	if aerr != nil {
		return nil, aerr
	}
	title := strings.TrimSpace(c.p.Get("title"))
	if title == "" {
		return nil, errCode("invalid_arguments")
	}
	t.title = title
	s.bump()
	return reply{}, nil
}

// botReplied clears a thread's status: Slack clears it when the app posts in the thread.
func (s *Server) botReplied(channel, threadTS string) {
	if t := s.assistant[threadKey{channel, threadTS}]; t != nil {
		t.shown = ""
	}
}

// StatusHistory is every status the app set on a thread, in order ("" for a clear).
func (s *Server) StatusHistory(channel, threadTS string) []StatusChange {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t := s.assistant[threadKey{channel, threadTS}]; t != nil {
		return append([]StatusChange(nil), t.statuses...)
	}
	return nil
}

// Status is the status line a person sees under the thread now: the last one set, unless it was
// cleared, the app replied in the thread since, or StatusTimeout passed without a message.
func (s *Server) Status(channel, threadTS string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.assistant[threadKey{channel, threadTS}]
	if t == nil || t.shown == "" || s.now().Sub(t.shownAt) > StatusTimeout {
		return ""
	}
	return t.shown
}

// LoadingMessages are the loading messages Slack rotates under the thread now, each shown whole
// (nil when the status is gone or had none). slack-go joins them with commas in form mode, and the
// fake splits them there as a form's list (listParam): a comma inside a message shows as fragments.
func (s *Server) LoadingMessages(channel, threadTS string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.assistant[threadKey{channel, threadTS}]
	if t == nil || t.shown == "" || s.now().Sub(t.shownAt) > StatusTimeout {
		return nil
	}
	return append([]string(nil), t.loading...)
}

// ThreadTitle is the title the app gave a thread ("" for none).
func (s *Server) ThreadTitle(channel, threadTS string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t := s.assistant[threadKey{channel, threadTS}]; t != nil {
		return t.title
	}
	return ""
}

// SuggestedPrompts are a thread's suggested prompts and their title (threadTS "": the channel's,
// set without thread_ts).
func (s *Server) SuggestedPrompts(channel, threadTS string) (string, []SuggestedPrompt) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t := s.assistant[threadKey{channel, threadTS}]; t != nil {
		return t.promptsTitle, append([]SuggestedPrompt(nil), t.prompts...)
	}
	return "", nil
}

// localThreadStatus is local.threadStatus (not a Slack method: Slack shows the status, it has no
// method to read it): the status line a person sees under a thread now, for the terminal.
func (s *Server) localThreadStatus(c *call) (reply, *apiError) {
	chID, ts := c.p.Get("channel_id"), c.p.Get("thread_ts")
	if chID == "" || ts == "" {
		return nil, errCode("invalid_arguments")
	}
	status := ""
	if t := s.assistant[threadKey{chID, ts}]; t != nil && t.shown != "" && s.now().Sub(t.shownAt) <= StatusTimeout {
		status = t.shown
	}
	return reply{"status": status}, nil
}

// ThreadStatusReader reads a thread's status line from a local workspace's Web API (local.threadStatus)
// at base (ending in /api/) with token: the terminal's view of the status line.
func ThreadStatusReader(client *http.Client, base, token string) func(ctx context.Context, channel, threadTS string) (string, error) {
	return func(ctx context.Context, channel, threadTS string) (string, error) {
		var out struct {
			Status string `json:"status"`
		}
		err := localCall(ctx, client, base, token, "local.threadStatus", url.Values{"channel_id": {channel}, "thread_ts": {threadTS}}, &out)
		return out.Status, err
	}
}

// localCall calls a local.* method of a local workspace's Web API at base with token and decodes
// its answer into out.
func localCall(ctx context.Context, client *http.Client, base, token, method string, form url.Values, out any) error {
	if client == nil {
		client = http.DefaultClient
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+method, strings.NewReader(form.Encode()))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return err
	}
	var status struct {
		OK    bool   `json:"ok"`
		Error string `json:"error"`
	}
	if err := json.Unmarshal(body, &status); err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	if !status.OK {
		return fmt.Errorf("%s: %s", method, status.Error)
	}
	return json.Unmarshal(body, out)
}
