// Package fakellm is an OpenAI-compatible Chat Completions server for tests. It speaks the real wire
// format (JSON, and SSE when the request asks for a stream) so the real openai-go client, with its
// real error handling, talks to it exactly as it would to a provider.
package fakellm

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Request is the part of a Chat Completions request tests look at.
type Request struct {
	Model      string          `json:"model"`
	Messages   []Message       `json:"messages"`
	Tools      []Tool          `json:"tools"`
	ToolChoice json.RawMessage `json:"tool_choice"`
	Stream     bool            `json:"stream"`
	// StreamOptions: include_usage asks for a last chunk with the usage.
	StreamOptions struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	// Received is when the request reached the server, before its body was read: the time a
	// provider spends on a call starts there (the benchmarks count it as the model's).
	Received time.Time `json:"-"`
}

// Message is a chat message as sent by the client.
type Message struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
	ToolCalls  []ToolCall      `json:"tool_calls,omitempty"`
}

// Text returns the message content as plain text (string or array of text parts).
func (m Message) Text() string {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(m.Content, &parts) == nil {
		out := ""
		for _, p := range parts {
			out += p.Text
		}
		return out
	}
	return ""
}

// Tool is a tool definition sent by the client.
type Tool struct {
	Type     string `json:"type"`
	Function struct {
		Name string `json:"name"`
	} `json:"function"`
}

// ToolCall is a tool call, in requests (assistant history) and replies.
type ToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// Reply is what the fake answers to one request.
type Reply struct {
	Content   string
	ToolCalls []ToolCall
	// Status, when non-zero, makes the server answer with an OpenAI error of that HTTP status.
	Status     int
	RetryAfter int
	// Hold, when set, is waited on before answering (to test cancellation of in-flight calls).
	Hold <-chan struct{}
	// Cancelled, when set, is closed if the client gives up on the request while it is held.
	Cancelled chan<- struct{}
	// PromptTokens/CompletionTokens are reported as usage.
	PromptTokens, CompletionTokens int

	// Streaming (the request asks for stream: true). ChunkChars sends the content in deltas of that
	// many characters (0: one delta). StallAt, with Stall, stops after that many characters of
	// content until Stall is closed or the client goes away (a provider that stalls mid-answer; a
	// test kills the worker meanwhile). BreakAt, when > 0, drops the connection after that many
	// characters, with no [DONE]: a stream broken mid-answer, which openai-go reports as an error.
	ChunkChars int
	// ChunkEvery, when set, is the pause before each content delta after the first: a model that
	// writes as fast as a real one (the benchmarks time what the person sees of it).
	ChunkEvery time.Duration
	StallAt    int
	Stall      <-chan struct{}
	BreakAt    int
	// Stalled, when set, is closed when the stream reaches StallAt.
	Stalled chan<- struct{}
}

// Call builds a tool call reply entry.
func Call(id, name, args string) ToolCall {
	var c ToolCall
	c.ID, c.Type, c.Function.Name, c.Function.Arguments = id, "function", name, args
	return c
}

// Handler decides the reply to a request; n counts requests from 1.
type Handler func(n int, req Request) Reply

// IsMemoryStep reports whether req is the call of a run's post-run memory step (its system prompt is
// prompts/MEMORY_NOTES.md): one per run that a person asked, after its answer.
func IsMemoryStep(req Request) bool {
	return len(req.Messages) > 0 && req.Messages[0].Role == "system" &&
		strings.Contains(req.Messages[0].Text(), "You keep Lucy's team memory")
}

// WithoutNotes wraps h for a test of something other than memory: the memory step's calls are
// answered with no notes, and h sees the other calls only, numbered from 1 among themselves.
func WithoutNotes(h Handler) Handler {
	var mu sync.Mutex
	n := 0
	return func(_ int, req Request) Reply {
		if IsMemoryStep(req) {
			return Reply{Content: `{"notes": []}`}
		}
		mu.Lock()
		n++
		k := n
		mu.Unlock()
		return h(k, req)
	}
}

// EmbedFunc returns the vector of one input text of an embeddings request for model.
type EmbedFunc func(model, text string) []float32

// EmbeddingRequest is an embeddings request as the client sent it.
type EmbeddingRequest struct {
	Model          string   `json:"model"`
	Input          []string `json:"-"` // the input, one string or an array of strings
	EncodingFormat string   `json:"encoding_format"`
}

// Server is a running fake.
type Server struct {
	*httptest.Server
	mu         sync.Mutex
	handler    Handler
	requests   []Request
	embed      EmbedFunc
	embedFail  int // status of the embeddings endpoint's error answers; 0 answers
	embeddings []EmbeddingRequest
}

// SetEmbed serves OpenAI's embeddings endpoint (POST /v1/embeddings) with f; without it the endpoint
// is unknown (404), as on a provider that has none.
func (s *Server) SetEmbed(f EmbedFunc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.embed = f
}

// FailEmbeddings makes the embeddings endpoint answer an OpenAI error of HTTP status (0: answer again).
func (s *Server) FailEmbeddings(status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.embedFail = status
}

// EmbeddingRequests returns every embeddings request received so far.
func (s *Server) EmbeddingRequests() []EmbeddingRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]EmbeddingRequest(nil), s.embeddings...)
}

// New starts a fake; URL() + "/v1" is the base URL for openai-go.
func New(tb testing.TB, h Handler) *Server {
	tb.Helper()
	s := &Server{handler: h}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	tb.Cleanup(s.Close)
	return s
}

// BaseURL is the OPENAI_BASE_URL for this fake.
func (s *Server) BaseURL() string { return s.URL + "/v1" }

// Requests returns every request received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// RunRequests returns the requests of the runs themselves, without the memory steps' (IsMemoryStep).
func (s *Server) RunRequests() []Request {
	var out []Request
	for _, r := range s.Requests() {
		if !IsMemoryStep(r) {
			out = append(out, r)
		}
	}
	return out
}

// SetHandler replaces the handler.
func (s *Server) SetHandler(h Handler) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.handler = h
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost && r.URL.Path == "/v1/embeddings" {
		s.serveEmbeddings(w, r)
		return
	}
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		writeError(w, http.StatusNotFound, "unknown endpoint "+r.URL.Path, 0)
		return
	}
	received := time.Now()
	body, _ := io.ReadAll(r.Body)
	var req Request
	if err := json.Unmarshal(body, &req); err != nil {
		writeError(w, http.StatusBadRequest, "invalid JSON: "+err.Error(), 0)
		return
	}
	req.Received = received
	s.mu.Lock()
	s.requests = append(s.requests, req)
	n := len(s.requests)
	h := s.handler
	s.mu.Unlock()
	reply := h(n, req)
	if reply.Hold != nil {
		select {
		case <-reply.Hold:
		case <-r.Context().Done():
			if reply.Cancelled != nil {
				close(reply.Cancelled)
			}
			return
		}
	}
	if reply.Status != 0 {
		writeError(w, reply.Status, "scripted error", reply.RetryAfter)
		return
	}
	if reply.PromptTokens == 0 {
		reply.PromptTokens = 100
	}
	if reply.CompletionTokens == 0 {
		reply.CompletionTokens = 20
	}
	finish := "stop"
	if len(reply.ToolCalls) > 0 {
		finish = "tool_calls"
	}
	id := "chatcmpl-" + strconv.Itoa(n)
	if req.Stream {
		writeSSE(r.Context(), w, id, req.Model, reply, finish, req.StreamOptions.IncludeUsage)
		return
	}
	msg := map[string]any{"role": "assistant", "content": reply.Content}
	if len(reply.ToolCalls) > 0 {
		msg["tool_calls"] = reply.ToolCalls
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"id": id, "object": "chat.completion", "created": 1700000000, "model": req.Model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
		"usage": map[string]any{
			"prompt_tokens": reply.PromptTokens, "completion_tokens": reply.CompletionTokens,
			"total_tokens": reply.PromptTokens + reply.CompletionTokens,
		},
	})
}

func writeSSE(ctx context.Context, w http.ResponseWriter, id, model string, reply Reply, finish string, includeUsage bool) {
	w.Header().Set("Content-Type", "text/event-stream")
	flusher, _ := w.(http.Flusher)
	send := func(v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "data: %s\n\n", b)
		if flusher != nil {
			flusher.Flush()
		}
	}
	chunk := func(delta map[string]any, fin any) map[string]any {
		return map[string]any{"id": id, "object": "chat.completion.chunk", "created": 1700000000, "model": model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": fin}}}
	}
	send(chunk(map[string]any{"role": "assistant", "content": ""}, nil))
	content := []rune(reply.Content)
	size := reply.ChunkChars
	if size <= 0 {
		size = len(content)
	}
	for i := 0; i < len(content); {
		if i > 0 && reply.ChunkEvery > 0 {
			select {
			case <-time.After(reply.ChunkEvery):
			case <-ctx.Done():
				return
			}
		}
		end := min(i+size, len(content))
		if reply.StallAt > i && reply.StallAt < end {
			end = reply.StallAt
		}
		if reply.BreakAt > i && reply.BreakAt < end {
			end = reply.BreakAt
		}
		send(chunk(map[string]any{"content": string(content[i:end])}, nil))
		i = end
		if reply.BreakAt > 0 && i >= reply.BreakAt {
			panic(http.ErrAbortHandler) // the connection drops mid-stream
		}
		if reply.Stall != nil && reply.StallAt > 0 && i == reply.StallAt {
			if reply.Stalled != nil {
				close(reply.Stalled)
			}
			select {
			case <-reply.Stall:
			case <-ctx.Done():
				return
			}
		}
	}
	for i, c := range reply.ToolCalls {
		send(chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": c.ID, "type": "function",
			"function": map[string]any{"name": c.Function.Name, "arguments": c.Function.Arguments}}}}, nil))
	}
	send(chunk(map[string]any{}, finish))
	if includeUsage {
		send(map[string]any{"id": id, "object": "chat.completion.chunk", "created": 1700000000, "model": model, "choices": []any{},
			"usage": map[string]any{"prompt_tokens": reply.PromptTokens, "completion_tokens": reply.CompletionTokens,
				"total_tokens": reply.PromptTokens + reply.CompletionTokens}})
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
}

func writeError(w http.ResponseWriter, status int, msg string, retryAfter int) {
	if retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(retryAfter))
	}
	writeJSON(w, status, map[string]any{"error": map[string]any{"message": msg, "type": "invalid_request_error", "code": nil}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// serveEmbeddings answers POST /v1/embeddings in OpenAI's format: "input" is a string or an array of
// strings (token arrays are refused), each answered by one {"object": "embedding", "index": i,
// "embedding": [...]} in "data", as floats or, with "encoding_format": "base64", as the base64 of
// the little-endian float32s.
func (s *Server) serveEmbeddings(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	embed, fail := s.embed, s.embedFail
	s.mu.Unlock()
	if embed == nil {
		writeError(w, http.StatusNotFound, "unknown endpoint "+r.URL.Path, 0)
		return
	}
	body, _ := io.ReadAll(r.Body)
	var req EmbeddingRequest
	var raw struct {
		Input json.RawMessage `json:"input"`
	}
	if err := json.Unmarshal(body, &req); err != nil || json.Unmarshal(body, &raw) != nil {
		writeError(w, http.StatusBadRequest, "invalid JSON", 0)
		return
	}
	var one string
	if json.Unmarshal(raw.Input, &one) == nil {
		req.Input = []string{one}
	} else if err := json.Unmarshal(raw.Input, &req.Input); err != nil || len(req.Input) == 0 {
		writeError(w, http.StatusBadRequest, "'input' must be a string or a non-empty array of strings", 0)
		return
	}
	if req.Model == "" {
		writeError(w, http.StatusBadRequest, "'model' is required", 0)
		return
	}
	s.mu.Lock()
	s.embeddings = append(s.embeddings, req)
	s.mu.Unlock()
	if fail != 0 {
		writeError(w, fail, "scripted error", 0)
		return
	}
	data := make([]any, len(req.Input))
	tokens := 0
	for i, text := range req.Input {
		v := embed(req.Model, text)
		tokens += len(strings.Fields(text))
		var vec any = v
		if req.EncodingFormat == "base64" {
			b := make([]byte, 4*len(v))
			for j, x := range v {
				binary.LittleEndian.PutUint32(b[4*j:], math.Float32bits(x))
			}
			vec = base64.StdEncoding.EncodeToString(b)
		}
		data[i] = map[string]any{"object": "embedding", "index": i, "embedding": vec}
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data, "model": req.Model,
		"usage": map[string]any{"prompt_tokens": tokens, "total_tokens": tokens}})
}
