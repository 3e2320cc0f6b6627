package activities

// The model's streamed reply (Chat Completions over SSE, openai-go's ssestream): the model call reads
// it chunk by chunk, gives its text to a Sink as it arrives, and rebuilds the whole completion. What
// the sink does with the text (slackstream shows it in the thread) is not the model call's concern.

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
)

// ChatStreamer is the streaming part of openai-go's *openai.ChatCompletionService. A ChatModel
// without it never streams.
type ChatStreamer interface {
	NewStreaming(ctx context.Context, body openai.ChatCompletionNewParams, opts ...option.RequestOption) *ssestream.Stream[openai.ChatCompletionChunk]
}

// Sink receives a streamed reply while the model writes it (slackstream.Sink shows it in Slack).
type Sink interface {
	// Text is the next piece of the reply's text, in order, while the reply has called no tool.
	Text(ctx context.Context, delta string)
	// ToolCall: the reply calls tools (after every chunk once it does); no more Text comes.
	ToolCall(ctx context.Context)
	// Done: the model wrote the whole reply: its text, and whether it calls tools.
	Done(ctx context.Context, text string, toolCalls bool)
	// Abandon: the call failed (a broken stream, a reply that cannot be rebuilt) or was cancelled.
	Abandon(ctx context.Context)
}

// rawChunk is the part of a Chat Completions chunk the stream reads, from its raw JSON: provider
// extras (reasoning_details, a tool call's extra_content) are not in openai-go's types.
type rawChunk struct {
	Choices []struct {
		Delta struct {
			Content          *string           `json:"content"`
			ReasoningDetails []json.RawMessage `json:"reasoning_details"`
			ToolCalls        []struct {
				Index    int    `json:"index"`
				ID       string `json:"id"`
				Type     string `json:"type"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
				Extra json.RawMessage `json:"extra_content"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int64 `json:"prompt_tokens"`
		CompletionTokens int64 `json:"completion_tokens"`
	} `json:"usage"`
}

type rawCall struct {
	ID    string          `json:"id"`
	Type  string          `json:"type"`
	Fn    rawFn           `json:"function"`
	Extra json.RawMessage `json:"extra_content,omitempty"`
}

type rawFn struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// completeStreaming sends the request as a stream, gives the reply to sink as it arrives, and
// returns the whole completion as the non-streaming call would (rebuilt from the chunks, so that
// the provider's extras survive).
func (a *Activities) completeStreaming(ctx context.Context, model ChatStreamer, sink Sink, req modelRequest) (*openai.ChatCompletion, error) {
	req.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	params, opts, release, err := a.sendable(ctx, req)
	if err != nil {
		return nil, err
	}
	defer release()
	st := model.NewStreaming(ctx, params, opts...)
	defer st.Close()
	var (
		content   strings.Builder
		reasoning []json.RawMessage
		calls     []rawCall
		finish    string
		usage     struct{ p, c int64 }
		id        string
	)
	for st.Next() {
		ch := st.Current()
		if id == "" {
			id = ch.ID
		}
		var rc rawChunk
		if err := json.Unmarshal([]byte(ch.RawJSON()), &rc); err != nil {
			continue
		}
		if rc.Usage != nil {
			usage.p, usage.c = rc.Usage.PromptTokens, rc.Usage.CompletionTokens
		}
		if len(rc.Choices) == 0 {
			continue
		}
		c := rc.Choices[0]
		reasoning = append(reasoning, c.Delta.ReasoningDetails...)
		for _, tc := range c.Delta.ToolCalls {
			for len(calls) <= tc.Index {
				calls = append(calls, rawCall{Type: "function"})
			}
			x := &calls[tc.Index]
			if tc.ID != "" {
				x.ID = tc.ID
			}
			if tc.Type != "" {
				x.Type = tc.Type
			}
			x.Fn.Name += tc.Function.Name
			x.Fn.Arguments += tc.Function.Arguments
			if len(tc.Extra) > 0 && string(tc.Extra) != "null" {
				x.Extra = tc.Extra
			}
		}
		if c.FinishReason != nil && *c.FinishReason != "" {
			finish = *c.FinishReason
		}
		if c.Delta.Content != nil && *c.Delta.Content != "" {
			content.WriteString(*c.Delta.Content)
			if len(calls) == 0 {
				sink.Text(ctx, *c.Delta.Content)
			}
		}
		if len(calls) > 0 { // not the answer after all
			sink.ToolCall(ctx)
		}
	}
	if err := st.Err(); err != nil {
		sink.Abandon(ctx)
		return nil, modelError(ctx, err)
	}
	sink.Done(ctx, content.String(), len(calls) > 0)
	msg := map[string]any{"role": "assistant", "content": content.String()}
	if len(calls) > 0 {
		msg["tool_calls"] = calls
	}
	if len(reasoning) > 0 {
		msg["reasoning_details"] = reasoning
	}
	raw, err := json.Marshal(map[string]any{
		"id": id, "object": "chat.completion", "model": params.Model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
		"usage":   map[string]any{"prompt_tokens": usage.p, "completion_tokens": usage.c, "total_tokens": usage.p + usage.c},
	})
	if err != nil {
		sink.Abandon(ctx)
		return nil, err
	}
	var comp openai.ChatCompletion
	if err := json.Unmarshal(raw, &comp); err != nil {
		sink.Abandon(ctx)
		return nil, errors.New("rebuild the streamed completion: " + err.Error())
	}
	return &comp, nil
}
