package activities

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
	"github.com/rs/zerolog"
	"github.com/tidwall/sjson"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/lucy-agent/lucy/activities/slackstream"
	"github.com/lucy-agent/lucy/slackwire"
	"github.com/lucy-agent/lucy/tools"
)

// HeartbeatEvery is how soon an activity first heartbeats, and how often a long tool call does
// while it runs (heartbeatFast); the workflows set a HeartbeatTimeout a few times larger. The worker
// lets the SDK send heartbeats this often (worker.Options).
const HeartbeatEvery = 1 * time.Second

// ToolCall is a tool call requested by the model.
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
	// Oversize is the size in bytes of arguments that were too large to keep in workflow history
	// (Temporal refuses payloads over 2 MiB); Arguments is then "{}" and the workflow answers the call
	// with an error that tells the model to send less at once.
	Oversize int `json:"oversize,omitempty"`
	// Extra is provider metadata of the call that must go back with it in the next request, opaque:
	// Gemini's thought signature (extra_content.google.thought_signature). Without it Gemini refuses
	// the next turn of a tool-calling conversation.
	Extra json.RawMessage `json:"extra,omitempty"`
}

// TokenUsage of one call.
type TokenUsage struct {
	Prompt     int64 `json:"prompt"`
	Completion int64 `json:"completion"`
}

// CallModelInput is one turn of the agent loop.
type CallModelInput struct {
	Tier       string     `json:"tier"`
	System     []Entry    `json:"system"` // the system prompt (by reference) and small per-call additions
	Transcript Transcript `json:"transcript"`
	Tools      []string   `json:"tools,omitempty"`
	// Team is the workspace of the run: the tools of its run-time sources are described for it. Empty
	// in histories recorded before it existed: then only compiled-in tools are described.
	Team string `json:"team,omitempty"`
	// ToolChoice: "" (auto), "none", "required", or a tool name the model must call.
	ToolChoice string `json:"toolChoice,omitempty"`
	// MaxTokens and Temperature, when set, replace the tier's settings for this call (a sub-agent's
	// registry row); a model that rejects a setting does not get it.
	MaxTokens   int64    `json:"maxTokens,omitempty"`
	Temperature *float64 `json:"temperature,omitempty"`
	// Stream, when set, shows a text reply in that thread as the model writes it (slackstream).
	Stream *StreamTarget `json:"stream,omitempty"`
}

// ModelReply is the model's answer.
type ModelReply struct {
	Content      string     `json:"content,omitempty"`
	ToolCalls    []ToolCall `json:"toolCalls,omitempty"`
	FinishReason string     `json:"finishReason,omitempty"`
	Model        string     `json:"model"`
	Usage        TokenUsage `json:"usage"`
	// Window is the operator's context-window override (LUCY_CONTEXT_WINDOW), 0 when unset.
	Window int `json:"window,omitempty"`
	// ReasoningDetails is the reasoning metadata of a reasoning model, as OpenRouter returns it
	// (reasoning_details: text, summaries, encrypted blocks with signatures), kept opaque and sent back
	// on this message in every later request: providers that reason across tool calls (Anthropic,
	// Gemini, OpenAI o-series through OpenRouter) need it to continue. Empty for other models, and
	// dropped when larger than maxReasoningBytes (then the provider reasons afresh).
	ReasoningDetails json.RawMessage `json:"reasoningDetails,omitempty"`
	// StreamTS is the streamed message that shows Content (stopped, keyed "stream"): delivery turns
	// it into the answer or deletes it. Empty when the reply was not streamed.
	StreamTS string `json:"streamTS,omitempty"`
	// StreamUnavailable: chat.startStream failed, so the run delivers by post-and-update from now on.
	StreamUnavailable bool `json:"streamUnavailable,omitempty"`
	// Nonce is drawn anew by every attempt. The workflow passes it on with its reference to this
	// reply (Entry.Nonce): the worker that returned the reply then reads it from memory, and only
	// the attempt whose result history recorded has that nonce.
	Nonce string `json:"nonce,omitempty"`
	// TimelineTS is the open stream that showed the text of a reply with tool calls, kept as the
	// run's timeline (StreamTarget.KeepNarration).
	TimelineTS string `json:"timelineTS,omitempty"`
	// TimelineRenewed is the run's timeline this call stopped because it was near the end of its
	// life on Slack (StreamTarget.Renew); TimelineTS is then the one that carries on (empty: none
	// could start now). TimelineOpened is when TimelineTS started.
	TimelineRenewed string    `json:"timelineRenewed,omitempty"`
	TimelineOpened  time.Time `json:"timelineOpened,omitzero"`
}

// apiKeyRE matches API keys as providers echo them in error messages (OpenAI sk-…, OpenRouter
// sk-or-…, Anthropic sk-ant-…).
var apiKeyRE = regexp.MustCompile(`\b(sk)-[A-Za-z0-9_*.\-]{2,}`)

// maxReasoningBytes bounds the reasoning metadata kept per reply: it is stored in workflow history.
const maxReasoningBytes = 64 << 10

// providerExtras reads the opaque metadata a reply carries for the next request: the message's
// reasoning_details and each tool call's extra_content (same order as calls).
func providerExtras(log zerolog.Logger, msg openai.ChatCompletionMessage) (reasoning json.RawMessage, calls []json.RawMessage) {
	var m struct {
		Details json.RawMessage `json:"reasoning_details"`
	}
	if json.Unmarshal([]byte(msg.RawJSON()), &m) == nil {
		switch raw := strings.TrimSpace(string(m.Details)); {
		case raw == "" || raw == "null" || raw == "[]":
		case len(raw) > maxReasoningBytes:
			log.Warn().Int("bytes", len(raw)).Msg("reasoning_details too large to keep; the provider will reason afresh")
		default:
			reasoning = json.RawMessage(raw)
		}
	}
	for _, tc := range msg.ToolCalls {
		var x struct {
			Extra json.RawMessage `json:"extra_content"`
		}
		if json.Unmarshal([]byte(tc.RawJSON()), &x) != nil || string(x.Extra) == "null" || len(x.Extra) > maxReasoningBytes {
			x.Extra = nil
		}
		calls = append(calls, x.Extra)
	}
	return reasoning, calls
}

// CallModel calls the model of the given tier with the resolved transcript and tools, top-down:
// the transcript and the request (modelRequestFor), the call, its text streamed to a sink when the
// run asked for it (in.Stream: a slackstream.Reply shows it in the thread), and the result
// (modelReply). The reply is kept within replyBudget once encoded (see fitReply).
func (a *Activities) CallModel(ctx context.Context, in CallModelInput) (ModelReply, error) {
	streamer, modelStreams := a.Model.(ChatStreamer)
	// The Slack side of a streaming call: what earlier attempts left, named in this attempt's
	// heartbeats (StreamBeat) until it is deleted.
	stream := a.streamer().Reply(ctx, in.Stream, modelStreams)
	// Heartbeat from the start, not only around the HTTP call: reading the run's history to resolve
	// the transcript can take seconds on a long run, and a silence longer than the workflow's
	// heartbeat timeout (5 s) makes Temporal time the attempt out and repeat the whole call.
	stop := heartbeatWith(ctx, stream.Beat())
	defer stop()
	defer stream.Close(ctx)
	if err := stream.Open(ctx); err != nil {
		var se *slackstream.Error
		if errors.As(err, &se) {
			return ModelReply{}, a.slackFail(se.Op, in.Stream.Team, in.Stream.Channel, se.Err)
		}
		return ModelReply{}, err
	}
	req, res, err := a.modelRequestFor(ctx, in)
	if err != nil {
		return ModelReply{}, err
	}
	var comp *openai.ChatCompletion
	if sink := stream.Sink(); sink != nil {
		comp, err = a.completeStreaming(ctx, streamer, sink, req)
	} else {
		comp, err = a.complete(ctx, req)
	}
	model := string(req.Model)
	a.countModelCall(model, comp, err)
	if err != nil {
		return ModelReply{}, err
	}
	out, err := a.modelReply(ctx, comp, model, res)
	if err != nil {
		return ModelReply{}, err
	}
	o := stream.Settle(ctx, len(out.ToolCalls) == 0 && out.Content != "", len(out.ToolCalls) > 0)
	out.StreamTS, out.StreamUnavailable = o.StreamTS, o.Unavailable
	out.TimelineTS, out.TimelineOpened, out.TimelineRenewed = o.TimelineTS, o.TimelineOpened, o.TimelineRenewed
	if res.memo != nil {
		res.memo.RememberReply(res.wid, res.runID, activity.GetInfo(ctx).ActivityID, out)
	}
	a.Log.Debug().Str("tier", in.Tier).Str("model", model).Int("messages", len(req.messages)).
		Int("toolCalls", len(out.ToolCalls)).Int64("promptTokens", out.Usage.Prompt).Msg("model call")
	return out, nil
}

// modelRequestFor resolves the call's system prompt and transcript and builds its request: the
// messages (encoded once, remembered for the run's next call), the tools and the sampling.
func (a *Activities) modelRequestFor(ctx context.Context, in CallModelInput) (modelRequest, *resolver, error) {
	res, err := a.newResolver(ctx, needsHistory(in.Transcript, in.System))
	if err != nil {
		return modelRequest{}, nil, err
	}
	sys, err := res.entries(in.System)
	if err != nil {
		return modelRequest{}, nil, err
	}
	msgs, err := res.transcript(in.Transcript, 0)
	if err != nil {
		return modelRequest{}, nil, err
	}
	model, err := a.model(in.Tier)
	if err != nil {
		return modelRequest{}, nil, err
	}
	// The run's messages are encoded (and so remembered encoded) before the memo keeps them.
	req := modelRequest{ChatCompletionNewParams: openai.ChatCompletionNewParams{Model: model}}
	// Each in place: a message keeps its encoding for the next call (Message.wire).
	wireSys, err := wireMessages(sys)
	if err != nil {
		return modelRequest{}, nil, err
	}
	wireMsgs, err := wireMessages(msgs)
	if err != nil {
		return modelRequest{}, nil, err
	}
	req.messages = append(wireSys, wireMsgs...)
	res.remember(ctx, msgs)
	if len(in.Tools) > 0 && a.Tools != nil {
		req.tools = a.toolParams(ctx, in.Team, in.Tools)
		switch in.ToolChoice {
		case "":
		case "none", "required", "auto":
			req.ToolChoice = openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String(in.ToolChoice)}
		default:
			req.ToolChoice = openai.ToolChoiceOptionFunctionToolChoice(openai.ChatCompletionNamedToolChoiceFunctionParam{Name: in.ToolChoice})
		}
	}
	a.sample(&req.ChatCompletionNewParams, in.Tier, model, in.MaxTokens, in.Temperature)
	return req, res, nil
}

// modelReply is the call's result from the completion: the first choice's text and tool calls,
// credentials masked, with usage and the provider's extras, within its payload budget (fitReply).
func (a *Activities) modelReply(ctx context.Context, comp *openai.ChatCompletion, model string, res *resolver) (ModelReply, error) {
	if len(comp.Choices) == 0 {
		return ModelReply{}, temporal.NewApplicationError("the model returned no choices", ErrModelEmpty)
	}
	ch := comp.Choices[0]
	// The reply is the activity's result, so it is stored in workflow history (readable by everyone with
	// Web UI access), shown in approval prompts and logged. A credential the model copied from the
	// person's message into its text or a tool call (https://user:pass@…, ?token=…, xoxb-…) is masked
	// here, before any of that. lucy_web_fetch refuses URLs with credentials anyway; a file or message the
	// model writes keeps REDACTED where the secret was, which is the point.
	out := ModelReply{
		Content: tools.RedactCredentials(ch.Message.Content), FinishReason: string(ch.FinishReason), Model: model,
		Window: a.ContextWindow, Usage: TokenUsage{Prompt: comp.Usage.PromptTokens, Completion: comp.Usage.CompletionTokens},
	}
	reasoning, extras := providerExtras(a.Log, ch.Message)
	out.ReasoningDetails = reasoning
	for i, tc := range ch.Message.ToolCalls {
		if tc.Type != "" && tc.Type != "function" {
			continue
		}
		out.ToolCalls = append(out.ToolCalls, ToolCall{
			ID: tc.ID, Name: tc.Function.Name, Arguments: tools.RedactCredentials(tc.Function.Arguments), Extra: extras[i],
		})
	}
	uniqueCallIDs(ctx, out.ToolCalls)
	if res.memo != nil {
		out.Nonce = rand.Text()
	}
	if err := a.fitReply(&out); err != nil {
		return ModelReply{}, err
	}
	return out, nil
}

// toolParams describes the named tools to the model, in the given order, each as openai-go encodes
// it. A compiled-in tool's description never changes in a process, so it is encoded once: openai-go
// encodes a schema by reflection, and Lucy's tools took about 0.7 ms of every model call's CPU, on
// the turn's path (the profile of BenchmarkTurnOverhead). A tool that a source offers is described
// as the source offers it now.
func (a *Activities) toolParams(ctx context.Context, team string, names []string) []json.RawMessage {
	var fresh []string
	for _, name := range names {
		if _, ok := compiledToolParam(name); !ok {
			fresh = append(fresh, name)
		}
	}
	described := map[string]json.RawMessage{}
	if len(fresh) > 0 {
		for _, s := range a.Tools.Schemas(ctx, team, fresh) {
			if raw, err := json.Marshal(toolParam(s)); err == nil {
				described[s.Name] = raw
			} else {
				// A schema a source sent that does not encode (a number that is not one): the
				// model is not offered that tool, and the call goes on.
				a.Log.Warn().Err(err).Str("tool", s.Name).Msg("a tool's description does not encode; not offered")
			}
		}
	}
	// A name no longer known (a source that dropped it) is skipped.
	out := make([]json.RawMessage, 0, len(names))
	for _, name := range names {
		if p, ok := compiledToolParam(name); ok {
			out = append(out, p)
		} else if p, ok := described[name]; ok {
			out = append(out, p)
		}
	}
	return out
}

// compiledTools holds the encoded description of each compiled-in tool (toolParams), by name.
var compiledTools sync.Map

// compiledToolParam is the encoded description of the compiled-in tool name (false for any other).
func compiledToolParam(name string) (json.RawMessage, bool) {
	if p, ok := compiledTools.Load(name); ok {
		return p.(json.RawMessage), true
	}
	spec, ok := tools.Lookup(name)
	if !ok {
		return nil, false
	}
	raw, err := json.Marshal(toolParam(tools.Schema{Name: spec.Name, Description: spec.Description, Parameters: spec.Parameters}))
	if err != nil {
		return nil, false // not expected of a schema of maps and strings: the tool is not offered
	}
	compiledTools.Store(name, json.RawMessage(raw))
	return raw, true
}

// toolParam is a tool's description as openai-go sends it.
func toolParam(s tools.Schema) openai.ChatCompletionToolUnionParam {
	return openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
		Name: s.Name, Description: openai.String(s.Description), Parameters: shared.FunctionParameters(s.Parameters),
	})
}

// uniqueCallIDs gives every tool call an ID of its own. Some OpenAI-compatible servers (Ollama-style)
// send "" or the same ID for every call, and a result must match exactly one call. The new IDs derive
// from the activity's ID and the call's position, so a retried attempt produces the same ones.
func uniqueCallIDs(ctx context.Context, calls []ToolCall) {
	prefix := "call"
	if activity.IsActivity(ctx) {
		prefix += "_" + activity.GetInfo(ctx).ActivityID
	}
	seen := map[string]bool{}
	for i := range calls {
		if calls[i].ID == "" || seen[calls[i].ID] {
			calls[i].ID = fmt.Sprintf("%s_%d", prefix, i)
		}
		seen[calls[i].ID] = true
	}
}

// CompleteInput asks a model for one plain-text completion: an internal judgement (supervisor,
// planner) or a summary (tool result, compaction).
type CompleteInput struct {
	Tier string `json:"tier"`
	// Prompt is a file of prompts/ used as the system message, e.g. "SUMMARIZER.md".
	Prompt string `json:"prompt"`
	// Inline is the user content written by the workflow.
	Inline string `json:"inline,omitempty"`
	// Document is rendered as text after Inline (by reference: bodies stay out of history).
	Document Transcript `json:"document,omitempty"`
	// DocumentMaxChars caps the rendered document (0: no cap): every message gets an equal share,
	// so that a compaction's input fits the cheap model's window instead of failing on it.
	DocumentMaxChars int `json:"documentMaxChars,omitempty"`
	// MaxTokens caps the answer; leave it 0 unless the tier's model is known to accept max_tokens
	// (OpenAI's reasoning models reject it and want max_completion_tokens, which local servers lack).
	MaxTokens int64 `json:"maxTokens,omitempty"`
}

// Completion is a plain-text answer.
type Completion struct {
	Text  string     `json:"text"`
	Model string     `json:"model"`
	Usage TokenUsage `json:"usage"`
}

// Complete runs a one-shot completion.
func (a *Activities) Complete(ctx context.Context, in CompleteInput) (Completion, error) {
	// From the start, for the reason given in CallModel: the document is read from history first.
	stop := heartbeat(ctx)
	defer stop()
	sys, err := a.prompt(in.Prompt)
	if err != nil {
		return Completion{}, err
	}
	res, err := a.newResolver(ctx, needsHistory(in.Document))
	if err != nil {
		return Completion{}, err
	}
	doc, err := res.transcript(in.Document, 0)
	if err != nil {
		return Completion{}, err
	}
	user := in.Inline
	if len(doc) > 0 {
		user = strings.TrimSpace(user + "\n\n" + renderDocument(capMessages(doc, in.DocumentMaxChars)))
	}
	if strings.TrimSpace(user) == "" {
		return Completion{}, temporal.NewNonRetryableApplicationError("nothing to complete", ErrBadInput, nil)
	}
	model, err := a.model(in.Tier)
	if err != nil {
		return Completion{}, err
	}
	params := openai.ChatCompletionNewParams{Model: model, Messages: []openai.ChatCompletionMessageParamUnion{
		openai.SystemMessage(sys), openai.UserMessage(user),
	}}
	a.sample(&params, in.Tier, model, in.MaxTokens, nil)
	comp, err := a.complete(ctx, modelRequest{ChatCompletionNewParams: params})
	a.countModelCall(model, comp, err)
	if err != nil {
		return Completion{}, err
	}
	if len(comp.Choices) == 0 {
		return Completion{}, temporal.NewApplicationError("the model returned no choices", ErrModelEmpty)
	}
	return Completion{
		Text: strings.TrimSpace(comp.Choices[0].Message.Content), Model: model,
		Usage: TokenUsage{Prompt: comp.Usage.PromptTokens, Completion: comp.Usage.CompletionTokens},
	}, nil
}

func (a *Activities) model(tier string) (string, error) {
	if m := a.Models[tier]; m != "" {
		return m, nil
	}
	if m := a.Models["default"]; m != "" {
		return m, nil
	}
	return "", temporal.NewNonRetryableApplicationError(fmt.Sprintf("no model configured for tier %q (set LUCY_MODEL_%s)", tier, strings.ToUpper(tier)), ErrConfig, nil)
}

// countModelCall counts one call to the provider with the tokens it reported (per attempt: a
// retried call costs again).
func (a *Activities) countModelCall(model string, comp *openai.ChatCompletion, err error) {
	if err != nil || comp == nil {
		a.Metrics.ModelCall(model, err, 0, 0)
		return
	}
	a.Metrics.ModelCall(model, nil, comp.Usage.PromptTokens, comp.Usage.CompletionTokens)
}

// complete sends the request. The caller heartbeats throughout (CallModel, Complete), so that
// cancelling the run cancels the HTTP call.
func (a *Activities) complete(ctx context.Context, req modelRequest) (*openai.ChatCompletion, error) {
	if a.Model == nil {
		return nil, temporal.NewNonRetryableApplicationError("no LLM client configured", ErrConfig, nil)
	}
	params, opts, release, err := a.sendable(ctx, req)
	if err != nil {
		return nil, err
	}
	defer release()
	comp, err := a.Model.New(ctx, params, opts...)
	if err != nil {
		return nil, modelError(ctx, err)
	}
	return comp, nil
}

// sendable is the request as openai-go takes it (modelRequest.send), once this worker has a slot
// for its model (modelSlots); release gives the slot back.
func (a *Activities) sendable(ctx context.Context, req modelRequest) (openai.ChatCompletionNewParams, []option.RequestOption, func(), error) {
	params, opts, err := req.send()
	if err != nil {
		return params, nil, nil, err
	}
	release, err := a.modelSlots.acquire(ctx, string(params.Model), a.ModelConcurrency)
	if err != nil {
		return params, nil, nil, err
	}
	return params, opts, release, nil
}

// heartbeat records a heartbeat from a goroutine of its own until stopped, so that the server hears
// from the attempt however long any one step of the caller takes: the first after HeartbeatEvery,
// then every beatEvery. Outside an activity (unit tests of helpers) it does nothing.
//
// The first beat is after HeartbeatEvery, not at once: the server counts the heartbeat timeout from
// the attempt's start, so a beat at once gains nothing, and it cost every model and tool call a
// synchronous round trip and a write of the run's state on the server before its work began
// (measured: BenchmarkTurnOverhead and BenchmarkConversationsPerSecond, docs/benchmarks.md). A
// cancellation reaches the attempt with the first beat's answer, a second in, as it did before
// with the second beat.
func heartbeat(ctx context.Context) (stop func()) {
	return heartbeatWith(ctx, nil)
}

// heartbeatWith is heartbeat whose every beat carries details() (nil: none), so that no beat
// replaces the details an attempt recorded with nothing (a stream's ts: slackstream.Reply.Beat).
func heartbeatWith(ctx context.Context, details func() any) (stop func()) {
	return heartbeatEvery(ctx, details, beatEvery(ctx))
}

// beatEvery is how often an attempt's heartbeats reach the server after the first: every 80 % of
// its HeartbeatTimeout, as the SDK throttles them by default (internal_task_handlers.go,
// getHeartbeatThrottleInterval), and never more often than HeartbeatEvery. The worker lowers that
// throttle to HeartbeatEvery (worker.Options: MaxHeartbeatThrottleInterval) so that a call that must
// hear of "cancel that" at once can beat every second (heartbeatFast); the others beat as before,
// and cost the server no more writes.
func beatEvery(ctx context.Context) time.Duration {
	timeout := activity.GetInfo(ctx).HeartbeatTimeout
	if timeout == 0 {
		return sdkDefaultThrottle // no heartbeat timeout: the SDK's default throttle applied
	}
	return max(time.Duration(0.8*float64(timeout)), HeartbeatEvery)
}

// sdkDefaultThrottle is the SDK's heartbeat throttle for an activity without a heartbeat timeout
// (worker.Options.DefaultHeartbeatThrottleInterval's default).
const sdkDefaultThrottle = 30 * time.Second

// heartbeatFast is heartbeat every HeartbeatEvery: an activity learns of its cancellation only in
// a heartbeat's answer, so a long tool call (an MCP server's, a script) hears "cancel that" within
// a second instead of 80 % of its heartbeat timeout later, and passes it on at once (the MCP client
// sends notifications/cancelled when the call's context ends). One heartbeat a second while such a
// call runs is the price (TestCancelReachesMCPServerAtOnce measures it).
func heartbeatFast(ctx context.Context) (stop func()) {
	return heartbeatEvery(ctx, nil, HeartbeatEvery)
}

func heartbeatEvery(ctx context.Context, details func() any, every time.Duration) (stop func()) {
	if !activity.IsActivity(ctx) || activity.GetInfo(ctx).IsLocalActivity {
		return func() {} // a local activity's heartbeat is a no-op (its workflow task is heartbeated)
	}
	record := func() {
		if details == nil {
			activity.RecordHeartbeat(ctx)
			return
		}
		activity.RecordHeartbeat(ctx, details())
	}
	done := make(chan struct{})
	go func() {
		t := time.NewTimer(HeartbeatEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				record()
				t.Reset(every)
			}
		}
	}()
	return func() { close(done) }
}

// modelError classifies an openai-go error. Its text never goes into history verbatim: provider error
// bodies can echo request content; we keep the status and a short message.
func modelError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) {
		// Network errors, timeouts, broken streams: retryable.
		return temporal.NewApplicationError("model call failed: "+slackwire.HeadEllipsis(err.Error(), 200), ErrModelUnavailable)
	}
	// Providers echo the key in some errors ("Incorrect API key provided: sk-…"): mask it.
	msg := fmt.Sprintf("model call failed: HTTP %d: %s", apiErr.StatusCode, slackwire.HeadEllipsis(apiKeyRE.ReplaceAllString(apiErr.Message, "$1-…"), 200))
	switch code := apiErr.StatusCode; {
	case code == http.StatusBadRequest:
		return temporal.NewNonRetryableApplicationError(msg, badRequestType(apiErr), nil)
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		return temporal.NewNonRetryableApplicationError(msg+" (check OPENAI_API_KEY / OPENROUTER_API_KEY)", ErrModelPermanent, nil)
	case code == http.StatusNotFound:
		return temporal.NewNonRetryableApplicationError(msg+" (check the model names LUCY_MODEL_* and OPENAI_BASE_URL)", ErrModelPermanent, nil)
	case code == http.StatusUnprocessableEntity:
		return temporal.NewNonRetryableApplicationError(msg, ErrModelPermanent, nil)
	case code == http.StatusTooManyRequests:
		opts := temporal.ApplicationErrorOptions{}
		if apiErr.Response != nil {
			if s, err := strconv.Atoi(apiErr.Response.Header.Get("Retry-After")); err == nil && s > 0 {
				opts.NextRetryDelay = time.Duration(s) * time.Second
			}
		}
		return temporal.NewApplicationErrorWithOptions(msg, ErrModelRateLimited, opts)
	default:
		return temporal.NewApplicationError(msg, ErrModelUnavailable)
	}
}

// badRequestType tells HTTP 400s apart: the transcript is too long for the model's window (the
// workflow compacts it), Lucy's request is malformed (a bug: no model can fix it), or anything else,
// which a stronger model may get past (the workflow escalates).
func badRequestType(e *openai.Error) string {
	msg := strings.ToLower(e.Message)
	switch {
	case e.Code == "context_length_exceeded" || e.Code == "string_above_max_length" ||
		strings.Contains(msg, "context length") || strings.Contains(msg, "context window") ||
		strings.Contains(msg, "maximum context") || strings.Contains(msg, "too many tokens") ||
		strings.Contains(msg, "prompt is too long") || strings.Contains(msg, "reduce the length"):
		return ErrModelContextLength
	case e.Param == "tool_choice" || strings.HasPrefix(e.Param, "tools") || strings.HasPrefix(e.Param, "messages") ||
		e.Param == "response_format" || e.Code == "invalid_type" || strings.Contains(msg, "tool_choice"):
		return ErrModelMalformed
	}
	return ErrModelBadRequest
}

// wireMessages is msgs as openai-go encodes them, each message encoded once: a message keeps its
// encoding (Message.wire), and a run's next model call starts from this call's messages (the
// transcript memo), so a turn encodes only the messages it adds. openai-go encodes params by
// reflection, and encoding the whole transcript again on every call cost about 0.7 ms of CPU a
// call at 50 turns, and more the longer the run (the profile of BenchmarkTurnOverhead).
func wireMessages(msgs []Message) ([]json.RawMessage, error) {
	out := make([]json.RawMessage, 0, len(msgs))
	for i := range msgs {
		m := &msgs[i]
		if m.wire == nil {
			raw, err := json.Marshal(openAIMessage(*m))
			if err != nil { // not expected: strings, and JSON the provider sent
				return nil, fmt.Errorf("encode the transcript's message %d (%s): %w", i, m.Role, err)
			}
			m.wire = raw
		}
		out = append(out, m.wire)
	}
	return out, nil
}

// modelRequest is one model call's request: openai-go's params, and the messages and tools already
// encoded (wireMessages, toolParams), which go into the body as they are. Given as params, openai-go
// would walk each of them again by reflection and re-compact its JSON: 0.5 ms of CPU for 40 messages
// and Lucy's tools, on the turn's path (BenchmarkRequestBody), more as the transcript grows.
type modelRequest struct {
	openai.ChatCompletionNewParams // all but the encoded messages and tools
	messages, tools                []json.RawMessage
}

// send is what openai-go is given: the params, and the body with the encoded parts put in, when
// there are any (option.WithRequestBody; the streaming call still adds "stream" to it).
func (r modelRequest) send() (openai.ChatCompletionNewParams, []option.RequestOption, error) {
	if r.messages == nil && r.tools == nil {
		return r.ChatCompletionNewParams, nil, nil
	}
	body, err := r.body()
	if err != nil {
		return r.ChatCompletionNewParams, nil, err
	}
	return r.ChatCompletionNewParams, []option.RequestOption{option.WithRequestBody("application/json", body)}, nil
}

// body is the request's JSON: the params as openai-go encodes them, with "messages" and "tools" set
// to the encoded ones.
func (r modelRequest) body() ([]byte, error) {
	body, err := json.Marshal(r.ChatCompletionNewParams)
	if err != nil {
		return nil, fmt.Errorf("encode the model request: %w", err)
	}
	if body, err = sjson.SetRawBytes(body, "messages", jsonArray(r.messages)); err != nil {
		return nil, fmt.Errorf("encode the model request's messages: %w", err)
	}
	if len(r.tools) > 0 {
		if body, err = sjson.SetRawBytes(body, "tools", jsonArray(r.tools)); err != nil {
			return nil, fmt.Errorf("encode the model request's tools: %w", err)
		}
	}
	return body, nil
}

// jsonArray is the JSON array of the given values.
func jsonArray(items []json.RawMessage) []byte {
	n := 2 + len(items)
	for _, it := range items {
		n += len(it)
	}
	b := make([]byte, 0, n)
	b = append(b, '[')
	for i, it := range items {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, it...)
	}
	return append(b, ']')
}

// openAIMessage is one message as openai-go's params.
func openAIMessage(m Message) openai.ChatCompletionMessageParamUnion {
	switch m.Role {
	case "system":
		return openai.SystemMessage(m.Content)
	case "assistant":
		am := openai.ChatCompletionAssistantMessageParam{}
		if m.Content != "" {
			am.Content.OfString = openai.String(m.Content)
		}
		for _, c := range m.ToolCalls {
			fc := &openai.ChatCompletionMessageFunctionToolCallParam{
				ID: c.ID, Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: c.Name, Arguments: c.Arguments},
			}
			if len(c.Extra) > 0 {
				fc.SetExtraFields(map[string]any{"extra_content": c.Extra})
			}
			am.ToolCalls = append(am.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{OfFunction: fc})
		}
		if len(m.ReasoningDetails) > 0 {
			am.SetExtraFields(map[string]any{"reasoning_details": m.ReasoningDetails})
		}
		return openai.ChatCompletionMessageParamUnion{OfAssistant: &am}
	case "tool":
		return openai.ToolMessage(m.Content, m.ToolCallID)
	}
	return openai.UserMessage(m.Content)
}

func (a *Activities) prompt(name string) (string, error) {
	if a.Prompts == nil {
		return "", temporal.NewNonRetryableApplicationError("no prompts configured", ErrConfig, nil)
	}
	b, err := fsReadFile(a.Prompts, name)
	if err != nil {
		return "", temporal.NewNonRetryableApplicationError(fmt.Sprintf("prompt %s: %v", name, err), ErrConfig, nil)
	}
	return string(b), nil
}

// Sampling is one tier's temperature and output cap (config.Sampling, LUCY_TEMPERATURE_<TIER>,
// LUCY_MAX_OUTPUT_TOKENS_<TIER>).
type Sampling struct {
	Temperature     float64
	MaxOutputTokens int
}

// sample sets the temperature and the output cap of a request: the tier's, or the call's own
// (a sub-agent's registry row, a judge's short answer). Reasoning models (OpenAI's o-series and
// gpt-5, also behind OpenRouter's "openai/" prefix) reject temperature and max_tokens: they get no
// temperature and max_completion_tokens, which also counts their reasoning.
func (a *Activities) sample(p *openai.ChatCompletionNewParams, tier, model string, maxTokens int64, temperature *float64) {
	s := a.Sampling[tier]
	if maxTokens <= 0 {
		maxTokens = int64(s.MaxOutputTokens)
	}
	t := s.Temperature
	hasT := s.Temperature > 0 || s.MaxOutputTokens > 0 // a configured tier (tests may leave it out)
	if temperature != nil {
		t, hasT = *temperature, true
	}
	if isReasoningModel(model) {
		if maxTokens > 0 {
			p.MaxCompletionTokens = openai.Int(maxTokens)
		}
		return
	}
	if maxTokens > 0 {
		p.MaxTokens = openai.Int(maxTokens)
	}
	if hasT {
		p.Temperature = openai.Float(t)
	}
}

// isReasoningModel: OpenAI's reasoning families, by name, with or without a provider prefix.
func isReasoningModel(model string) bool {
	m := strings.ToLower(model)
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:]
	}
	for _, p := range []string{"o1", "o3", "o4", "gpt-5"} {
		if m == p || strings.HasPrefix(m, p+"-") || strings.HasPrefix(m, p+".") {
			return true
		}
	}
	return false
}
