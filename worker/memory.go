package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/rs/zerolog"

	"github.com/lucy-agent/lucy/config"
	"github.com/lucy-agent/lucy/memory"
	"github.com/lucy-agent/lucy/workspace"
)

// Memory returns the teams' notes in Lucy's state store (package memory), with semantic recall
// through LUCY_MODEL_EMBEDDING on the configured OpenAI-compatible endpoint when it is set. The
// worker, `lucy memory` and the tests build it; state nil builds the state store from cfg.
func Memory(cfg *config.Config, state workspace.Store, log zerolog.Logger) (*memory.Store, error) {
	if state == nil {
		var err error
		if state, err = StateStore(cfg); err != nil {
			return nil, err
		}
	}
	var embed memory.Embedder
	if cfg.EmbeddingModel != "" {
		embed = NewEmbedder(cfg, log)
	}
	s, err := memory.New(state, embed)
	if err != nil {
		return nil, fmt.Errorf("memory: %w", err)
	}
	return s, nil
}

// embedTimeout bounds one embeddings call: it runs inside a tool call or the prompt's assembly,
// which must not wait long for an aid.
const embedTimeout = 10 * time.Second

// embedder is memory.Embedder over the OpenAI-compatible embeddings endpoint.
type embedder struct {
	svc   openai.EmbeddingService
	model string
	log   zerolog.Logger
}

// NewEmbedder returns the embedder of LUCY_MODEL_EMBEDDING on the endpoint of the chat models (the
// same key and base URL), without the client's own retries (a failed embedding leaves a note to
// lexical search).
func NewEmbedder(cfg *config.Config, log zerolog.Logger) memory.Embedder {
	c := openai.NewClient(option.WithMaxRetries(0), option.WithBaseURL(cfg.LLMBaseURL), option.WithAPIKey(cfg.LLMAPIKey))
	return &embedder{svc: c.Embeddings, model: cfg.EmbeddingModel, log: log}
}

func (e *embedder) Model() string { return e.model }

func (e *embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	ctx, cancel := context.WithTimeout(ctx, embedTimeout)
	defer cancel()
	res, err := e.svc.New(ctx, openai.EmbeddingNewParams{Model: e.model, Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: texts}})
	if err != nil {
		// The error of the endpoint may quote the request: log its kind, never the texts.
		var apiErr *openai.Error
		status := 0
		if errors.As(err, &apiErr) {
			status = apiErr.StatusCode
		}
		e.log.Warn().Str("model", e.model).Int("status", status).Msg("embeddings call failed; memory search is lexical for this call")
		return nil, fmt.Errorf("embeddings (%s): status %d", e.model, status)
	}
	if len(res.Data) != len(texts) {
		return nil, fmt.Errorf("embeddings (%s): %d vectors for %d texts", e.model, len(res.Data), len(texts))
	}
	out := make([][]float32, len(texts))
	for _, d := range res.Data {
		if d.Index < 0 || int(d.Index) >= len(out) {
			return nil, fmt.Errorf("embeddings (%s): index %d out of range", e.model, d.Index)
		}
		v := make([]float32, len(d.Embedding))
		for i, x := range d.Embedding {
			v[i] = float32(x)
		}
		out[d.Index] = v
	}
	return out, nil
}
