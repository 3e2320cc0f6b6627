package mcp

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.temporal.io/sdk/activity"

	"github.com/lucy-agent/lucy/tools"
)

// Naming. The model sees a server's tool as mcp__{server}__{tool}: OpenAI allows [a-zA-Z0-9_-] and
// 64 characters, so other characters become '_', and a name that is too long, or that two tools of a
// team would share once cleaned, gets a short hash of the original pair instead of its tail. The
// result depends only on the set of tools the team is offered, so every worker names them alike.
const (
	toolPrefix     = "mcp__"
	maxToolNameLen = 64
	// maxDescription bounds a description the model reads: a server may write a whole manual there.
	maxDescription = 1024
)

type named struct {
	server string
	tool   listedTool
	conn   *conn
	name   string
}

func cleanName(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r < utf8.RuneSelf && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// assignNames sets each tool's model-facing name.
func assignNames(all []named) {
	count := map[string]int{}
	for i := range all {
		all[i].name = toolPrefix + cleanName(all[i].server) + "__" + cleanName(all[i].tool.raw.Name)
		count[strings.ToLower(all[i].name)]++ // names differing in case only confuse models: treated as a clash
	}
	for i := range all {
		n := all[i].name
		if len(n) <= maxToolNameLen && count[strings.ToLower(n)] == 1 {
			continue
		}
		sum := sha256.Sum256([]byte(all[i].server + "\x00" + all[i].tool.raw.Name))
		suffix := "_" + hex.EncodeToString(sum[:3])
		if len(n) > maxToolNameLen-len(suffix) {
			n = n[:maxToolNameLen-len(suffix)]
		}
		all[i].name = n + suffix
	}
}

// tool is the tools.Tool of one listed tool under its model-facing name.
//
// Flags. The MCP specification calls annotations untrusted unless the server is. The operator's
// servers are trusted (the operator chose them and their hints): readOnlyHint makes a tool
// Idempotent (retried like Lucy's read-only tools) unless the server also calls it destructive, and
// a tool is Destructive (a person approves each call) unless it is read-only or says
// destructiveHint: false. A server a member connected from chat is not trusted: its hints are
// ignored, every call is Destructive and attempted once, except the tools the person who connected
// it named safe in the connect's approval (SafeTools). Its descriptions and results are a third
// party's text, fenced as data (tools.UntrustedDescription, UntrustedResult).
func (c *conn) tool(name string, lt listedTool) tools.Tool {
	t := lt.raw
	readOnly, destructive := false, true
	if a := t.Annotations; a != nil && !c.srv.FromChat() {
		readOnly = a.ReadOnlyHint
		if a.DestructiveHint != nil {
			destructive = *a.DestructiveHint
		}
		if readOnly && (a.DestructiveHint == nil || !*a.DestructiveHint) {
			destructive = false
		}
		if readOnly && destructive {
			readOnly = false // contradictory hints: the careful reading
		}
	}
	if c.srv.FromChat() && slices.Contains(c.srv.SafeTools, t.Name) {
		destructive = false // the person who connected it said so in the approval
	}
	title := t.Title
	if title == "" && t.Annotations != nil {
		title = t.Annotations.Title
	}
	if title == "" {
		title = t.Name
	}
	desc := strings.TrimSpace(t.Description)
	if desc == "" {
		desc = title
	}
	if c.srv.FromChat() {
		desc = tools.UntrustedDescription(c.from(), desc)
	} else {
		desc = fmt.Sprintf("[MCP server %s] %s", c.srv.Name, desc)
	}
	if utf8.RuneCountInString(desc) > maxDescription {
		desc = string([]rune(desc)[:maxDescription-1]) + "…"
	}
	spec := tools.Spec{
		Name: name, Description: desc, Parameters: cloneParams(lt.params),
		Idempotent: readOnly, Destructive: destructive, Long: true,
		Human: "using " + tools.Truncate(title, 60) + " on " + c.srv.Name,
	}
	return tools.Tool{Spec: spec, Run: func(ctx context.Context, inv tools.Invocation) (tools.Output, error) {
		return c.call(ctx, inv, lt, readOnly)
	}}
}

// from names the server as the author of text the model reads.
func (c *conn) from() string { return "the MCP server " + c.srv.Name }

// fenced is a result or error text of the server as the model reads it: a chat-connected server's
// is fenced as data.
func (c *conn) fenced(text string) string {
	if c.srv.FromChat() {
		return tools.UntrustedResult(c.from(), text)
	}
	return text
}

// cloneParams copies the schema (JSON round trip): a Spec's Parameters belong to its caller.
func cloneParams(p map[string]any) map[string]any {
	data, _ := json.Marshal(p)
	var out map[string]any
	_ = json.Unmarshal(data, &out)
	return out
}

var progressSeq atomic.Int64

// codeRejected is the go-sdk's error for a message its transport could not send (the connection is
// gone): a broken session, not an answer of the server.
const codeRejected = -32005

// call runs one tool call on the server. A read-only tool's failure to reach the server is a
// *tools.TransientError (the workflow retries it); any other tool is attempted once, and a failure
// is a result that says whether it may have run. Cancelling ctx ("cancel that") cancels the call on
// the server: the SDK sends notifications/cancelled for a call whose context ends.
func (c *conn) call(ctx context.Context, inv tools.Invocation, lt listedTool, readOnly bool) (tools.Output, error) {
	args, err := c.arguments(inv, lt)
	if err != nil {
		return tools.Output{}, err
	}
	c.setRequester(inv.User)
	params := &sdk.CallToolParams{Name: lt.raw.Name, Arguments: json.RawMessage(args)}
	token := fmt.Sprintf("lucy-%d", progressSeq.Add(1))
	params.SetProgressToken(token)
	c.mu.Lock()
	c.progress[token] = func(p *sdk.ProgressNotificationParams) {
		// The activity already heartbeats while the tool runs; this adds what the server says it is
		// at, which the Web UI shows as the heartbeat's details.
		if activity.IsActivity(ctx) {
			activity.RecordHeartbeat(ctx, progressText(p))
		}
	}
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.progress, token)
		c.mu.Unlock()
	}()

	// A server that takes only so many calls at once (MaxConcurrent) has the call wait here for a
	// slot of this worker's; the activity heartbeats meanwhile, so "cancel that" ends the wait.
	release, err := c.s.slots.Acquire(ctx, inv.Team, c.srv.Name, c.srv.MaxConcurrent)
	if err != nil {
		return tools.Output{}, err
	}
	defer release()
	// The HTTP transport notes a 429 or 503 with Retry-After to this call's request (noteThrottle).
	throttle := &throttleNote{}
	callCtx := withThrottleNote(ctx, throttle)

	var res *sdk.CallToolResult
	var cs *sdk.ClientSession
	for attempt := 0; ; attempt++ {
		var out tools.Output
		cs, out, err = c.callSession(ctx, inv, readOnly)
		if cs == nil {
			return out, err
		}
		ht, mark := c.authMark()
		res, err = cs.CallTool(callCtx, params)
		if err == nil || ctx.Err() != nil {
			break
		}
		if th := throttle.get(); th != nil {
			// The server asked to be called again later (429 or 503 with Retry-After): the session is
			// fine (the SDK keeps it on these statuses), and the run decides whether to wait and call
			// again: only a read-only tool's call is repeated (an MCP call is an HTTP POST).
			th.Tool, th.Service = inv.Name, "the MCP server "+c.srv.Name
			return tools.Output{}, th
		}
		serr := c.signInAfter(ctx, cs, ht, mark)
		if serr == nil {
			break
		}
		if errors.Is(serr, errTokenRefreshed) && attempt == 0 {
			continue // the server refused the call before running it: once more with the fresh token
		}
		// The server refused the call for want of a sign-in or of scope: nothing ran.
		var sign *needSignIn
		if errors.As(serr, &sign) {
			return tools.ToolError("the MCP server %s needs a person of this workspace to sign in (again, if the tool needs "+
				"more access) before it runs this tool; the call was not made. Give the person this: %s. Then try again.",
				c.srv.Name, c.scrubbed(sign.Error())), nil
		}
		return tools.ToolError("the MCP server %s refused the call (%s); the call was not made", c.srv.Name, c.scrubbed(serr.Error())), nil
	}
	if err != nil {
		if ctx.Err() != nil {
			return tools.Output{}, ctx.Err()
		}
		var wire *jsonrpc.Error
		if errors.As(err, &wire) && wire.Code != codeRejected {
			msg := c.scrubbed(wire.Message)
			if c.srv.FromChat() {
				msg = strconv.Quote(tools.Truncate(msg, 300)) // the server's words, short, as a quotation
			}
			switch {
			case wire.Code >= jsonrpc.CodeInvalidParams && wire.Code <= jsonrpc.CodeInvalidRequest, wire.Code == jsonrpc.CodeParseError:
				// The server refused the call (unknown tool, bad arguments): nothing ran.
				return tools.ToolError("the MCP server %s refused the call: %s", c.srv.Name, msg), nil
			case readOnly:
				// The server failed while handling it (an internal error): worth another attempt.
				return tools.Output{}, &tools.TransientError{Tool: inv.Name, Err: fmt.Errorf("MCP server %s: %s", c.srv.Name, msg)}
			}
			return tools.ToolError("the MCP server %s failed during the call (%s): it may or may not have done part of it. "+
				"Check its effect before trying again.", c.srv.Name, msg), nil
		}
		// The session broke: the server went away or the connection dropped mid-call.
		c.drop(cs)
		msg := c.scrubbed(err.Error())
		if readOnly {
			return tools.Output{}, &tools.TransientError{Tool: inv.Name, Err: fmt.Errorf("MCP server %s: %s", c.srv.Name, msg)}
		}
		return tools.ToolError("the MCP server %s stopped answering during the call (%s): the call may or may not have "+
			"completed. Check its effect before trying again, and tell the person if you cannot.", c.srv.Name, brokenReason(err, msg)), nil
	}
	text := c.fenced(c.scrubbed(resultText(res)))
	if res.IsError {
		return tools.Output{Content: "Error from the MCP server " + c.srv.Name + ": " + text, IsError: true}, nil
	}
	return tools.Output{Content: text}, nil
}

// callSession is the session a call uses, connecting if need be. Without one, it returns the
// output or error the call ends with (cs nil).
func (c *conn) callSession(ctx context.Context, inv tools.Invocation, readOnly bool) (*sdk.ClientSession, tools.Output, error) {
	cctx, cancel := context.WithTimeout(ctx, c.s.limits.ConnectTimeout)
	cs, _, err := c.sessionFor(cctx)
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return nil, tools.Output{}, ctx.Err()
		}
		msg := c.scrubbed(plainError(err, cctx))
		var sign *needSignIn
		if errors.As(err, &sign) {
			// Retrying cannot help until a person signs in: the model passes the link on.
			return nil, tools.ToolError("the MCP server %s needs a person of this workspace to sign in before it can be used; the call "+
				"was not made. Give the person this: %s. Then try again.", c.srv.Name, msg), nil
		}
		if readOnly {
			return nil, tools.Output{}, &tools.TransientError{Tool: inv.Name, Err: fmt.Errorf("MCP server %s: %s", c.srv.Name, msg)}
		}
		return nil, tools.ToolError("the MCP server %s could not be reached (%s); the call was not made", c.srv.Name, msg), nil
	}
	return cs, tools.Output{}, nil
}

func brokenReason(err error, msg string) string {
	var ne net.Error
	switch {
	case errors.Is(err, sdk.ErrConnectionClosed), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "its connection closed"
	case errors.As(err, &ne):
		return "network error: " + msg
	}
	return msg
}

// arguments are the model's arguments, checked against the tool's schema: a mistake is an
// *tools.ArgError the model can correct, and the server never sees it.
func (c *conn) arguments(inv tools.Invocation, lt listedTool) (string, error) {
	raw := strings.TrimSpace(inv.Arguments)
	if raw == "" || raw == "null" {
		raw = "{}"
	}
	var v any
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return "", tools.ArgErrorf(inv.Name, "the arguments are not valid JSON (%v); give a JSON object", err)
	}
	if dec.More() {
		return "", tools.ArgErrorf(inv.Name, "unexpected data after the JSON object")
	}
	if _, ok := v.(map[string]any); !ok {
		return "", tools.ArgErrorf(inv.Name, "the arguments must be a JSON object")
	}
	var plain any // the validator wants float64 numbers, not json.Number
	_ = json.Unmarshal([]byte(raw), &plain)
	if err := lt.schema.Validate(plain); err != nil {
		return "", tools.ArgErrorf(inv.Name, "the arguments do not match the tool's schema: %s", c.scrubbed(err.Error()))
	}
	return raw, nil
}

func progressText(p *sdk.ProgressNotificationParams) string {
	var b strings.Builder
	if p.Total > 0 {
		fmt.Fprintf(&b, "%g/%g", p.Progress, p.Total)
	} else {
		fmt.Fprintf(&b, "%g", p.Progress)
	}
	if p.Message != "" {
		b.WriteString(" " + tools.Truncate(p.Message, 200))
	}
	return b.String()
}

// resultText turns a tool's result into text for the model: text as it is, structured content as
// JSON (unless the text already is that JSON), and images, audio and binary resources described,
// never inlined (the model reads text; base64 would only fill the transcript).
func resultText(res *sdk.CallToolResult) string {
	var parts []string
	for _, ct := range res.Content {
		switch v := ct.(type) {
		case *sdk.TextContent:
			parts = append(parts, v.Text)
		case *sdk.ImageContent:
			parts = append(parts, fmt.Sprintf("[image: %s, %s; not shown]", orUnknown(v.MIMEType), tools.ByteSize(int64(len(v.Data)))))
		case *sdk.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio: %s, %s; not shown]", orUnknown(v.MIMEType), tools.ByteSize(int64(len(v.Data)))))
		case *sdk.ResourceLink:
			s := "[resource link: " + v.URI
			if v.Name != "" {
				s += " (" + v.Name + ")"
			}
			if v.Description != "" {
				s += ": " + v.Description
			}
			parts = append(parts, s+"]")
		case *sdk.EmbeddedResource:
			r := v.Resource
			switch {
			case r == nil:
			case r.Text != "":
				parts = append(parts, fmt.Sprintf("[resource %s]\n%s", r.URI, r.Text))
			default:
				parts = append(parts, fmt.Sprintf("[resource %s: %s, %s of binary data; not shown]", r.URI, orUnknown(r.MIMEType), tools.ByteSize(int64(len(r.Blob)))))
			}
		default:
			if data, err := json.Marshal(ct); err == nil {
				parts = append(parts, string(data))
			}
		}
	}
	if res.StructuredContent != nil {
		data, err := json.Marshal(res.StructuredContent)
		if err == nil && !slices.ContainsFunc(parts, func(p string) bool { return sameJSON(p, data) }) {
			parts = append(parts, string(data))
		}
	}
	if len(parts) == 0 {
		return "(the tool returned nothing)"
	}
	return strings.Join(parts, "\n\n")
}

// sameJSON reports whether text is the JSON value data is: the MCP specification asks a tool that
// returns structured content to return it serialized in a text block too, for clients without
// structured output (modelcontextprotocol.io/specification/2025-06-18/server/tools#structured-content),
// and a server serializes it its own way (key order, spacing, 1.0 for 1), so both are decoded and
// compared as values, never as bytes: one copy reaches the model.
func sameJSON(text string, data []byte) bool {
	a, ok := decodeJSON([]byte(text)) // prose fails at its first word
	if !ok {
		return false
	}
	b, ok := decodeJSON(data)
	return ok && reflect.DeepEqual(a, b)
}

// decodeJSON decodes one JSON value, and nothing after it. Numbers become float64s, as RFC 8785's
// canonical form reads them (IEEE 754 doubles: 1, 1.0 and 1e0 are one number) and as the go-sdk
// decodes structuredContent already, so two decoded values are the same JSON value exactly when
// reflect.DeepEqual says so (objects compare whatever their key order).
func decodeJSON(data []byte) (any, bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var v any
	if dec.Decode(&v) != nil {
		return nil, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, false
	}
	return v, true
}

func orUnknown(mime string) string {
	if mime == "" {
		return "unknown type"
	}
	return mime
}
